"""``wanwide lab run | clean``."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def _run(args: argparse.Namespace) -> int:
    """Read and plan the files once (a one-line UserError naming the file), then run the trials."""
    from wanwide.core.errors import UserError, UserErrors
    from wanwide.core.plan.rounds import BatchError, BenchmarkPlanError, plan_campaign
    from wanwide.core.plan.selection import select
    from wanwide.inputs import load_files, problem_lines
    from wanwide.providers.lab.quiet import QuietGate
    from wanwide.providers.lab.run import run

    if args.stop_between_trials and args.stop_after is None:
        raise UserError("--stop-between-trials: needs --stop-after DURATION (the time after which no trial starts)")
    specs = load_files(args.file)
    benches = specs.docs.benchmarks
    try:
        whole = plan_campaign(benches, specs.docs.topology_for, args.more_rounds or ())
    except BatchError as e:  # the campaign's bound: the same for every Benchmark, named by the first's file
        raise UserError(f"{specs.origin(benches[0])}: --more-rounds {e.size}: {e}") from None
    except BenchmarkPlanError as e:
        raise UserErrors(problem_lines(specs.origin(e.bench), e.error)) from None
    try:  # planned whole (the rounds numbered as for the campaign), then the sitting's part of it
        trials = select(whole, args.benchmark or (), [n - 1 for n in args.repetition or ()])
    except ValueError as e:
        raise UserError(str(e)) from None
    gate = QuietGate(threshold_pct=args.quiet_threshold, settle_s=args.quiet_settle,
                     max_wait_s=args.quiet_max_wait, enabled=not args.no_quiet_gate)
    return run(trials, args.out, shaper=args.shaper, report=not args.no_report, fresh=args.fresh, gate=gate,
               layout=args.layout, stop_after_s=args.stop_after, done=args.done, planned=whole,
               between_trials=args.stop_between_trials)


def _clean(args: argparse.Namespace) -> int:
    """Undo killed runs: all of this state dir's, or only those of the Benchmarks named (``-f``, ``--benchmark``)."""
    from wanwide.providers.lab import state

    names = set(args.benchmark or [])
    if args.file:
        from wanwide.inputs import load_files

        names |= {b.metadata.name for b in load_files(args.file).docs.benchmarks}
    removed = state.cleanup_all(prefix="ww-" if args.strays else None, benchmarks=names or None)
    scope = f" of {', '.join(sorted(names))}" if names else ""
    print(f"removed {len(removed)} thing(s) left by earlier lab runs{scope}" + (":" if removed else ""))
    for r in removed:
        print(f"  {r}")
    return 0


def _above_zero(parse: Callable[[str], float], form: str) -> Callable[[str], float]:
    """An argparse type: ``parse`` the text, refusing what it cannot read (shown ``form``) and values ≤ 0."""

    def convert(text: str) -> float:
        try:
            v = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: {form}") from None
        if v <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be greater than 0")
        return v

    return convert


def _seconds(text: str) -> float:
    from wanwide.core.api.units import seconds

    return seconds(text)


_positive = _above_zero(float, "not a number")

_duration = _above_zero(_seconds, "a duration such as 90m or 2h")


def add_lab_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lab", help="run a Benchmark for real on this machine (namespaces, netem/linkemu/wirefilter)")
    lab = p.add_subparsers(dest="lab_command", required=True)
    r = lab.add_parser("run", help="run every trial of a Benchmark, then write the report")
    r.add_argument("-f", "--file", action="append", required=True,
                   help="YAML file(s) with the Benchmarks and their Topologies (repeatable; - = stdin)")
    r.add_argument("-o", "--out", required=True, help="output directory (bundles/, report/)")
    r.add_argument("--shaper", choices=["auto", "netem", "linkemu", "wirefilter"], default="auto",
                   help="what shapes the links: netem (the kernel's), linkemu, wirefilter; auto: netem when the "
                   "kernel has it, else the first installed")
    r.add_argument("--layout", choices=["auto", "mesh", "star", "two-level"], default="auto",
                   help="how the WAN is wired: a link per region pair (mesh), every region on one hub (star), "
                   "regions on their group's hub and group hubs on a core (two-level); auto: the fewest links "
                   "that give every pair exactly its shaping (docs/lab-layout.md)")
    r.add_argument("--no-report", action="store_true",
                   help="do not write the report (OUT/report) after the trials; the bundles stay in OUT/bundles")
    r.add_argument("--stop-after", type=_duration, metavar="DURATION",
                   help="start no new deployment after this long (e.g. 150m); the trials left run when the same "
                        "command is given again: it skips every trial whose bundles are complete in -o")
    r.add_argument("--stop-between-trials", action="store_true",
                   help="with --stop-after: start no new trial after that long either, also of a deployment "
                        "shared by several trials (it is torn down; the trials left run on a deployment of their "
                        "own next time), so a sitting overruns by at most one trial")
    r.add_argument("--done", action="append", metavar="DATASET",
                   help="a data set (`wanwide results export`) whose trials count as done (repeatable): those "
                        "with a succeeded run in every load region are skipped, as complete bundles in -o are; "
                        "one holding a trial under other parameters stops the run before it starts")
    r.add_argument("--more-rounds", type=_above_zero(int, "a whole number of rounds, such as 3"), metavar="N",
                   action="append",
                   help="add N rounds to a finished campaign (with --done DATASET holding it): every Benchmark "
                        "of the files runs rounds R … R+N−1, R the most rounds any of them has, its trials numbered "
                        "and ordered after the old ones (spec.matrix.firstRepetition). Repeatable, one batch each: "
                        "a campaign that added 3 rounds goes on with --more-rounds 3 --more-rounds 1, which keeps the "
                        "3 rounds' trial ids (--more-rounds 4 would number them otherwise; --done refuses that)")
    r.add_argument("--benchmark", action="append", metavar="NAME",
                   help="run only this Benchmark's trials (repeatable); the files are planned whole first, so "
                        "rounds number as for the whole campaign")
    r.add_argument("--repetition", action="append", type=_above_zero(int, "a whole number such as 7"), metavar="N",
                   help="run only the trials of repetition N (repeatable), counted from 1 as the progress lines "
                        "count them ('repetition 7/8'; the manifests' trial.repetition is N-1): one round of "
                        "several Benchmarks in one sitting on one machine")
    r.add_argument("--fresh", action="store_true",
                   help="deploy anew for every trial (default: trials that differ only in the network, "
                        "faults or load share one deployment, re-shaped between them)")
    g = r.add_argument_group("quiet-machine gate", "before each trial's load is released, wait until the CPU "
                             "pressure (/proc/pressure/cpu, some) and the CPU used by processes outside the "
                             "experiment both stay under a threshold for a settle period")
    g.add_argument("--quiet-threshold", type=_positive, default=10.0, metavar="PCT",
                   help="threshold in %% for both (default 10; the report marks trials above it as noisy)")
    g.add_argument("--quiet-settle", type=_positive, default=20.0, metavar="S",
                   help="seconds both must stay under the threshold (default 20)")
    g.add_argument("--quiet-max-wait", type=_positive, default=600.0, metavar="S",
                   help="wait at most this long, then start anyway and say so (default 600)")
    g.add_argument("--no-quiet-gate", action="store_true", help="release the load as soon as the runners are ready")
    r.set_defaults(func=_run)
    c = lab.add_parser("clean", help="remove namespaces, links and processes a killed run left")
    c.add_argument("-f", "--file", action="append",
                   help="only the runs of the Benchmarks in this file (runs of other Benchmarks stay)")
    c.add_argument("--benchmark", action="append", help="only the runs of this Benchmark (repeatable)")
    c.add_argument("--strays", action="store_true",
                   help="also delete ww-* namespaces no run of this state dir records (they may be another "
                        "user's, recorded in another state dir: only when no one else uses the lab)")
    c.set_defaults(func=_clean)
