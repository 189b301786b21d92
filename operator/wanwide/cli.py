"""Command line: ``wanwide plan | crds | operator | doctor | runner | report | compare | results | history | lab``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml

from wanwide import __version__
from wanwide.core.errors import UserError, UserErrors, one_line
from wanwide.core.plan.errors import PlanError

if TYPE_CHECKING:
    from wanwide.core.plan.load import Documents


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Block-style YAML; multi-line strings as literal blocks (libyaml's emitter when PyYAML has it)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_all(docs: list[dict]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=120)


def plan_stream(texts: list[str], trial: int | None, all_trials: bool, objects_only: bool) -> str:
    """The ``plan`` output for YAML texts (PlanError when invalid)."""
    from wanwide.core.plan.load import load_documents

    docs = load_documents(texts)
    if not docs.benchmarks:
        raise PlanError([])
    return render_plans(docs, trial, all_trials, objects_only)


def render_plans(docs: Documents, trial: int | None, all_trials: bool, objects_only: bool,
                 origin: Callable[[Any], str] | None = None) -> str:
    """Header, Helm releases and objects of the chosen trials of every Benchmark in ``docs``.

    With ``origin`` (Benchmark → ``file:line``) a planner error is a UserError naming the file.
    """
    from wanwide.core.plan.controlplane import describe
    from wanwide.core.plan.trial import plan
    from wanwide.providers.kubernetes.render import render_trial

    parts: list[str] = []
    for bench in docs.benchmarks:
        try:
            plans = plan(bench, docs.topology_for(bench))
        except PlanError as e:
            if origin is None:
                raise
            from wanwide.inputs import problem_lines

            raise UserErrors(problem_lines(origin(bench), e)) from None
        if all_trials:
            chosen = plans
        else:
            idx = plans[0].index if trial is None else trial
            chosen = [p for p in plans if p.index == idx]
            if not chosen:
                raise UserError(f"--trial {idx}: Benchmark {bench.metadata.name} has {len(plans)} trials "
                                f"({plans[0].index}–{plans[-1].index})")
        header = [f"# Benchmark {bench.metadata.namespace}/{bench.metadata.name}: {len(plans)} trials"]
        for p in plans:
            header.append(f"#   {p.id}: " + ", ".join(f"{k}={v}" for k, v in p.parameters.items()))
        parts.append("\n".join(header) + "\n")
        for p in chosen:
            r = render_trial(p)
            parts.append(f"# ---- trial {p.id} ({p.name}): {len(r.objects)} objects, {len(r.releases)} Helm releases\n")
            if p.control_plane is not None:
                parts.append("".join(f"# {line}\n" for line in describe(p.control_plane)))
            if not objects_only:
                parts.append("# Helm releases (not Kubernetes objects; --objects-only leaves them out)\n")
                parts.append(dump_all([rel.document() for rel in r.releases]) + "---\n")
            parts.append(dump_all(r.objects) + "---\n")
    return "".join(parts)


def cmd_plan(args: argparse.Namespace) -> int:
    if args.trial is not None and args.trial < 0:
        raise UserError(f"--trial {args.trial}: a trial index is 0 or more")
    from wanwide.inputs import load_files

    specs = load_files(args.file)
    sys.stdout.write(render_plans(specs.docs, args.trial, args.all, args.objects_only, specs.origin))
    return 0


def cmd_crds(args: argparse.Namespace) -> int:
    from wanwide.crds import crd_files, crds_yaml

    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in crd_files().items():
            (out / name).write_text(text)
            print(f"wrote {out / name}")
    else:
        sys.stdout.write(crds_yaml())
    return 0


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


@dataclass(frozen=True)
class Command:
    """A sub-command defined in another module, and the extra that installs what it needs."""

    name: str
    module: str
    add_parser: str
    extra: str
    help: str
    cluster: tuple[str, ...] = ()  # needs a Kubernetes cluster and these modules: both checked before it runs


COMMANDS = (
    Command("operator", "wanwide.providers.kubernetes.controller.cli", "add_operator_parser", "operator",
            "run the Kubernetes operator (kopf)", cluster=("kopf", "kubernetes")),
    Command("doctor", "wanwide.providers.kubernetes.doctor.cli", "add_doctor_parser", "operator",
            "check that the cluster can run a Benchmark (a table with a fix per line)", cluster=("kubernetes",)),
    Command("runner", "wanwide.pipeline.runner.cli", "add_runner_parser", "operator",
            "run one Rally benchmark run and write/upload its result bundle"),
    Command("report", "wanwide.pipeline.results.cli", "add_report_parser", "report",
            "tables and plots from result bundles (dir or s3://bucket/prefix) or plain Rally JSON"),
    Command("compare", "wanwide.pipeline.results.cli", "add_compare_parser", "report",
            "how NEW results differ from BASE, per action: relative difference, 95 % interval, ~ if not significant"),
    Command("results", "wanwide.pipeline.results.cli", "add_results_parser", "report",
            "fetch a Benchmark's result bundles from S3"),
    Command("history", "wanwide.pipeline.results.cli", "add_history_parser", "report",
            "change points over every run read so far: which run made a series slower, and what changed"),
    Command("lab", "wanwide.providers.lab.cli", "add_lab_parser", "all",
            "run a Benchmark for real on this machine (namespaces, netem/linkemu/wirefilter)"),
)


def missing_module(cmd: Command, e: ModuleNotFoundError) -> UserError:
    """The one-line error for a sub-command whose dependencies are not installed."""
    return UserError(f"{cmd.name}: needs the Python module {e.name or str(e)!r}, which is not installed: "
                     f"pip install 'wanwide[{cmd.extra}]'")


def _mount(sub: argparse._SubParsersAction, cmd: Command) -> None:
    """Add ``cmd``'s parser; if its module cannot be imported, a stand-in that says what to install."""
    try:
        mod = importlib.import_module(cmd.module)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "wanwide":
            raise
        p = sub.add_parser(cmd.name, help=f"{cmd.help} [unavailable: pip install 'wanwide[{cmd.extra}]']",
                           add_help=False, prefix_chars="\0")  # every argument (--help too) is just taken
        p.add_argument("args", nargs="*")
        p.set_defaults(func=_unavailable(missing_module(cmd, e)))
        return
    getattr(mod, cmd.add_parser)(sub)
    sub.choices[cmd.name].set_defaults(command_info=cmd)


def _unavailable(err: UserError) -> Callable[[argparse.Namespace], int]:
    def run(_args: argparse.Namespace) -> int:
        raise err

    return run


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="wanwide", description=__doc__)
    ap.add_argument("--version", action="version", version=f"wanwide {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plan", help="print the desired state of a Benchmark's trials as YAML")
    p.add_argument("-f", "--file", action="append", required=True, help="YAML file(s) with a Topology and a Benchmark (- = stdin)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--trial", type=int, help="trial index to render (default: the first; a Benchmark with matrix.firstRepetition starts after 0)")
    g.add_argument("--all", action="store_true", help="render every trial")
    p.add_argument("--objects-only", action="store_true", help="leave out Helm release documents")
    p.set_defaults(func=cmd_plan)

    c = sub.add_parser("crds", help="print the CRDs generated from the models (or write them with --out)")
    c.add_argument("--out", help="directory to write one file per CRD")
    c.set_defaults(func=cmd_crds)

    for cmd in COMMANDS:
        _mount(sub, cmd)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run a sub-command; user errors are one line on stderr and exit code 2."""
    args = build_parser().parse_args(argv)
    try:
        cmd = getattr(args, "command_info", None)
        if cmd is not None and cmd.cluster:
            for module in cmd.cluster:  # a missing package is said first, as when the command runs
                importlib.import_module(module)
            from wanwide.providers.kubernetes.kube.reach import check

            check(cmd.name, getattr(args, "kubeconfig", None))
        return int(args.func(args) or 0)
    except UserErrors as e:  # every problem of a spec: one line each
        for line in e.lines:
            print(f"wanwide: error: {line}", file=sys.stderr)
    except UserError as e:
        print(f"wanwide: error: {one_line(str(e))}", file=sys.stderr)
    except ModuleNotFoundError as e:
        cmd = getattr(args, "command_info", None)
        if cmd is None or (e.name or "").split(".")[0] == "wanwide":
            raise
        print(f"wanwide: error: {missing_module(cmd, e)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
