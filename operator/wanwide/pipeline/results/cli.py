"""``wanwide report SOURCE… -o DIR``, ``wanwide compare BASE NEW`` and ``wanwide results fetch SOURCE``
(mounted by wanwide.cli).

Needs only ``pip install 'wanwide[report]'``: nothing here imports kopf, kubernetes or PyMySQL.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

S3_HELP = ("S3: credentials from boto3's chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
           "~/.aws/credentials and ~/.aws/config, SSO, instance roles); endpoint from --endpoint, "
           "AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (S3_ENDPOINT still works, deprecated) or the profile.")


def add_s3_flags(p: argparse.ArgumentParser) -> None:
    """--endpoint, --profile, --region, --retries, --retry-mode."""
    g = p.add_argument_group("S3")
    g.add_argument("--endpoint", metavar="URL", help="S3 endpoint URL (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)")
    g.add_argument("--profile", help="profile of ~/.aws/config and ~/.aws/credentials (default: AWS_PROFILE)")
    g.add_argument("--region", help="S3 region (default: AWS_REGION, the profile's, us-east-1)")
    g.add_argument("--retries", type=positive_int, metavar="N", help="attempts per request, the first included (default: AWS_MAX_ATTEMPTS or 5)")
    g.add_argument("--retry-mode", choices=["standard", "adaptive", "legacy"],
                   help="botocore retry mode (default: AWS_RETRY_MODE or standard)")


def positive_int(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least 1")
    return n


def s3_options(args: argparse.Namespace):
    from wanwide.pipeline.results.s3 import S3Options

    return S3Options(endpoint=args.endpoint, profile=args.profile, region=args.region,
                     max_attempts=args.retries, retry_mode=args.retry_mode)


def add_report_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report",
        help="tables and plots from result bundles (dir or s3://bucket/prefix) or plain Rally JSON",
        description="SOURCE: a directory of bundles, s3://bucket/prefix, or plain Rally JSON files/directories "
        "(parameters then come from file names or a sidecar params.yaml). " + S3_HELP,
    )
    p.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="a directory of bundles, a data set, s3://bucket/prefix, or plain Rally JSON (repeatable)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the report")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-store", action="store_true",
                   help="do not store results.parquet beside the raw files (only in DIR)")
    p.add_argument("--where", action="append", default=[], metavar="NAME=VALUE",
                   help="only the trials with this parameter value (repeatable), e.g. --where load=light "
                   "--where rtt=0ms for the figure of sizes")
    add_noise_flags(p)
    add_s3_flags(p)
    add_history_flags(p)
    p.set_defaults(func=cmd_report)
    return p


def add_history_flags(p: argparse.ArgumentParser) -> None:
    """--history DIR, --no-history: every run read joins the history store (``wanwide history``)."""
    g = p.add_argument_group("history", "every run read is added to the history store (once), for `wanwide history`")
    g.add_argument("--history", metavar="DIR", help="the history store (default: $WANWIDE_HISTORY, else "
                   "${XDG_DATA_HOME:-~/.local/share}/wanwide/history)")
    g.add_argument("--no-history", action="store_true", help="do not add the runs read to the history store")


def remember(args: argparse.Namespace, table, manifests: list[dict], source: str) -> None:
    """Add the runs of ``table`` to the history store (unless --no-history); a line on stderr says what."""
    if getattr(args, "no_history", True):
        return
    from wanwide.pipeline.results.history import remember as add

    add(table, manifests, _source_name(source), Path(args.history) if args.history else None)


def _source_name(source: str) -> str:
    """How the history names where runs came from: an s3:// URI as given, a directory or file by its name."""
    return source if source.startswith("s3://") else (Path(source).resolve().name or source)


def add_noise_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("noisy runs", "a run is noisy when, during its measured window, the CPU used outside "
                             "the experiment (or, where unknown, the CPU pressure) or the CPU steal exceeded a threshold")
    g.add_argument("--noisy-threshold", type=float, metavar="PCT",
                   help="threshold in %% (default: the one the lab's quiet-machine gate used, else 10)")
    g.add_argument("--exclude-noisy", action="store_true", help="leave noisy trials out of every table and figure")


def add_compare_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "compare", help="how NEW results differ from BASE, per action (benchstat-style)",
        description="BASE and NEW: a directory of bundles, s3://bucket/prefix, or plain Rally JSON, as for "
        "`wanwide report`. Per parameter point, scenario and action on both sides: the relative difference "
        "of the medians (--stat mean: means) with its 95 %% interval and p-value; ~ when the interval "
        "includes 0. A parameter with one value on each side, different on the two (after --base-where/"
        "--new-where), is what is compared and not matched on. Repetitions are the unit of replication "
        "when there are several (docs/results.md).")
    p.add_argument("base", metavar="BASE", help="the results compared against (a directory, data set or s3://…)")
    p.add_argument("new", metavar="NEW", help="the results compared (may be BASE with --base-where/--new-where)")
    p.add_argument("--stat", choices=["median", "mean"], default=None, help="median (default) or mean")
    p.add_argument("--paired", action="store_true",
                   help="pair the change inside each repetition on one machine (the RTTs re-shaped on one deployment, "
                   "the backends of one round, …): per repetition the ratio of its two means, a t interval over "
                   "repetitions; for two sides of one campaign (one directory, --base-where/--new-where), where "
                   "every repetition measured both; compares means")
    p.add_argument("--total-only", action="store_true", help="only each scenario's Total (whole iterations)")
    p.add_argument("--csv", metavar="FILE", help="also write the comparison as CSV")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the changes with their intervals (PNG, and SVG beside it)")
    p.add_argument("--base-where", action="append", default=[], metavar="NAME=VALUE",
                   help="only BASE's results with this parameter value (repeatable); e.g. "
                   "`compare DIR DIR --base-where backend=mariadb --new-where backend=galera`")
    p.add_argument("--new-where", action="append", default=[], metavar="NAME=VALUE",
                   help="only NEW's results with this parameter value (repeatable)")
    p.add_argument("--fail-on", action="append", default=[], metavar="RULE",
                   help="exit 1 when a group crosses this bound with its whole 95 %% interval (repeatable): "
                   "slower>10%%, faster>10%%, change>10%% (relative), slower>2rtt (round trips of the group's rtt), "
                   "slower>50ms (absolute); failures (any failed iteration or run in NEW), failures>1%%; slo (an "
                   "objective of spec.workload.slo missed by a NEW run). "
                   "Exit codes: 0 passed, 1 a bound crossed, 2 bad input or rule")
    add_noise_flags(p)
    add_s3_flags(p)
    add_history_flags(p)
    p.set_defaults(func=cmd_compare)
    return p


def cmd_compare(args) -> int:
    import tempfile

    from wanwide.pipeline.results.compare import (
        SelectError,
        Text,
        compare,
        labels,
        pair,
        plot,
        select,
    )
    from wanwide.pipeline.results.gate import GateError, evaluate, failed_runs, new_slo, parse_rule
    from wanwide.pipeline.results.ingest import IngestError
    from wanwide.pipeline.results.report import read_sources

    try:
        rules = [parse_rule(r) for r in args.fail_on]
    except GateError as e:
        print(f"wanwide: error: {e}", file=sys.stderr)
        return 2
    if args.paired and args.stat == "median":
        print("wanwide: error: --paired compares means (a ratio of two means per repetition): drop --stat median "
              "or use --stat mean", file=sys.stderr)
        return 2
    stat = args.stat or ("mean" if args.paired else "median")
    try:
        with tempfile.TemporaryDirectory(prefix="wanwide-compare-") as tmp:
            sides = [read_sources([src], Path(tmp) / name, s3=s3_options(args), noisy_threshold=args.noisy_threshold)
                     for name, src in (("base", args.base), ("new", args.new))]
    except IngestError as e:
        print(f"wanwide: error: {_one_line(e)}", file=sys.stderr)
        return 2
    try:
        chosen = [select(side.table, conds, name, side.noisy, args.exclude_noisy)
                  for side, conds, name in ((sides[0], args.base_where, "base"), (sides[1], args.new_where, "new"))]
    except SelectError as e:
        print(f"wanwide: error: {e}", file=sys.stderr)
        return 2
    c = compare(chosen[0][0], chosen[1][0], stat)
    if args.paired:
        c = pair(c, chosen[0][0], chosen[1][0], (sides[0].manifests, sides[1].manifests))
    if args.csv:
        csv = c.copy()
        for i, (k, (b, n)) in enumerate(c.attrs["changed"].items()):
            csv.insert(2 * i, f"{k}_base", b)
            csv.insert(2 * i + 1, f"{k}_new", n)
        csv.to_csv(args.csv, index=False)
    for name, (_, noisy) in zip(("base", "new"), chosen, strict=True):
        if noisy:
            verb = "left out" if args.exclude_noisy else "included (--exclude-noisy leaves them out)"
            print(f"{name}: {len(noisy)} noisy trial(s) {verb}: "
                  + ", ".join(f"{b}/{t}" for b, t in sorted(noisy)), file=sys.stderr)
    if args.plot:
        plot(c, Path(args.plot), args.total_only)
    sys.stdout.write(Text(stat).render(c, args.total_only))
    for side, src in zip(sides, (args.base, args.new), strict=True):
        remember(args, side.table, side.manifests, src)
    if not rules:
        return 0
    gated = c[c["action"] == "Total"] if args.total_only else c
    if gated.empty and any(r.kind not in ("failures", "slo") for r in rules):
        print("wanwide: error: --fail-on: no group (parameters, scenario, action) is on both sides, so nothing "
              "can be gated: check --base-where/--new-where", file=sys.stderr)
        return 2
    try:
        v = evaluate(rules, gated, labels(gated) if len(gated) else [], chosen[1][0],
                     failed_runs(sides[1].manifests, args.new_where), new_slo(sides[1].manifests, args.new_where))
    except GateError as e:
        print(f"wanwide: error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write("\n" + v.render(rules))
    return v.exit_code


def cmd_report(args) -> int:
    from wanwide.pipeline.results.ingest import IngestError
    from wanwide.pipeline.results.report import build_report

    t0 = time.monotonic()
    try:
        r = build_report(args.sources, args.output, progress=not args.no_progress,
                         store_parquet_beside=not args.no_store, s3=s3_options(args),
                         noisy_threshold=args.noisy_threshold, exclude_noisy=args.exclude_noisy, conds=args.where)
    except IngestError as e:
        print(f"wanwide: error: {_one_line(e)}", file=sys.stderr)
        return 2
    remember(args, r.table, r.manifests, args.sources[0] if len(args.sources) == 1 else ", ".join(
        _source_name(x) for x in args.sources))
    n_it = int((r.table["action"] == "Total").sum())
    print(f"report: {n_it} iterations, {len(r.summary)} summary rows, {len(r.files)} files in "
          f"{r.out_dir} ({time.monotonic() - t0:.1f}s); open {r.out_dir / 'index.html'}")
    return 0


def add_results_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("results", help="fetch a Benchmark's result bundles from S3; export them as a data set")
    sub = p.add_subparsers(dest="results_command", metavar="COMMAND", required=True)
    f = sub.add_parser(
        "fetch", help="download a Benchmark's bundles (skips files already here)",
        description="SOURCE: s3://bucket/prefix, or the name of a Benchmark, whose status.resultsURI and "
        "results endpoint are read from the cluster with kubectl (--kubeconfig, --context, -n); its "
        "Secret's keys are used only when boto3 finds no credentials. Files already present with the "
        "same size and ETag are skipped, so a second run only fetches what is new. " + S3_HELP,
    )
    f.add_argument("source", metavar="SOURCE", help="s3://bucket/prefix or a Benchmark name")
    f.add_argument("-o", "--output", metavar="DIR", help="where to put the bundles (default: ./<benchmark or last "
                   "prefix part>)")
    f.add_argument("-n", "--namespace", help="namespace of the Benchmark (default: the context's)")
    f.add_argument("--kubeconfig", help="kubeconfig to read the Benchmark with (default: kubectl's)")
    f.add_argument("--context", help="kubeconfig context")
    f.add_argument("-q", "--quiet", action="store_true", help="no line per file")
    add_s3_flags(f)
    f.set_defaults(func=cmd_fetch)
    e = sub.add_parser(
        "export", help="the sources as a data set: a few files from which `wanwide report` redraws everything",
        description="SOURCE: as for `wanwide report`. Writes DIR/dataset.json, iterations.parquet (one row per "
        "atomic action per iteration), runs.csv (one row per run) and manifests.json.gz (every bundle's "
        "manifest); paths relative to the sources. `wanwide report DIR -o REPORT` then gives the same tables "
        "and figures as the bundles did (docs/results.md, \"Data sets\"). " + S3_HELP)
    e.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="a directory of bundles, a data set, s3://bucket/prefix, or plain Rally JSON (repeatable)")
    e.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the data set")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_s3_flags(e)
    add_history_flags(e)
    e.set_defaults(func=cmd_export)
    return p


def cmd_export(args) -> int:
    from wanwide.pipeline.results.ingest import IngestError
    from wanwide.pipeline.results.report import export_dataset

    t0 = time.monotonic()
    try:
        files = export_dataset(args.sources, args.output, progress=not args.no_progress, s3=s3_options(args))
    except IngestError as e:
        print(f"wanwide: error: {_one_line(e)}", file=sys.stderr)
        return 2
    if not args.no_history:
        from wanwide.pipeline.results import dataset

        d = dataset.read(Path(args.output))
        remember(args, d.table, d.manifests, args.output)
    size = sum(f.stat().st_size for f in files)
    print(f"data set: {', '.join(f.name for f in files)} in {args.output} ({size / 1e6:.2f} MB, "
          f"{time.monotonic() - t0:.1f}s); next: wanwide report {args.output} -o {args.output}/report")
    return 0


def cmd_fetch(args) -> int:
    from wanwide.pipeline.results.s3 import S3Error, connect, fetch, parse_uri

    t0 = time.monotonic()
    log = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    try:
        if args.source.startswith("s3://"):
            uri = args.source
            bucket, prefix = parse_uri(uri)
            conn = connect(s3_options(args))
            default_dir = prefix.rsplit("/", 1)[-1] or bucket
        else:
            from wanwide.pipeline.results.benchmark import Kubectl, locate, secret_keys

            kc = Kubectl(args.kubeconfig, args.context)
            where = locate(kc, args.source, args.namespace)
            uri, default_dir = where.uri, where.name
            if log:
                log(f"Benchmark {where.namespace}/{where.name}: {uri}")
            conn = connect(s3_options(args), fallback_endpoint=where.endpoint, fallback_region=where.region,
                           keys=lambda: secret_keys(kc, where), log=log)
        res = fetch(conn, uri, Path(args.output or default_dir), log=log)
    except S3Error as e:
        print(f"wanwide: error: {_one_line(e)}", file=sys.stderr)
        return 2
    print(f"fetched {len(res.downloaded)} file(s) ({res.bytes / 1e6:.1f} MB), {len(res.skipped)} already present, "
          f"into {res.dest} ({time.monotonic() - t0:.1f}s); next: wanwide report {res.dest} -o {res.dest}/report")
    return 0


def add_history_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "history", help="change points over every run read so far: which run made a series slower, and what changed",
        description="Adds the runs of each SOURCE (as for `wanwide report`; none: the store as it is) to the history "
        "store, then, per series (Benchmark, parameters, scenario, action, load region, machine; one point per "
        "run, oldest first), finds the runs where the series changed and stayed changed (PELT candidates, "
        "a permutation test of each; docs/results.md, \"History\") and names each with the versions that "
        "changed there. Exit codes: 0, 1 with --fail-on-slowdown when a series got slower where the newest "
        "runs begin, 2 bad input. " + S3_HELP)
    p.add_argument("sources", nargs="*", metavar="SOURCE", help="result bundles, a data set or s3://bucket/prefix "
                   "to add first (each is one campaign in the figures' colours)")
    p.add_argument("-o", "--output", metavar="DIR", help="write DIR/changes.csv, DIR/series.csv and a figure per "
                   "series (DIR/figures/*.png and .svg; --figures)")
    p.add_argument("--benchmark", action="append", default=[], metavar="NAME", help="only this Benchmark (repeatable)")
    p.add_argument("--scenario", action="append", default=[], metavar="NAME",
                   help="only this scenario, short or full name (repeatable)")
    p.add_argument("--where", action="append", default=[], metavar="NAME=VALUE",
                   help="only the series with this parameter value (repeatable), e.g. --where backend=galera")
    p.add_argument("--actions", choices=["total", "all"], default="total",
                   help="total: whole iterations only (default); all: every atomic action too")
    p.add_argument("--stat", choices=["median", "mean", "p95"], default="median",
                   help="each run's point: the median (default), mean or 95th percentile of its durations")
    p.add_argument("--min-runs", type=positive_int, default=3, metavar="N",
                   help="runs a series needs on each side of a change (default 3)")
    p.add_argument("--max-p", type=float, default=0.01, metavar="P",
                   help="a change counts when its permutation test's p is at most P (default 0.01)")
    p.add_argument("--min-change", type=float, default=0.0, metavar="PCT",
                   help="and when it is at least PCT %% either way (default 0)")
    p.add_argument("--fail-on-slowdown", action="store_true",
                   help="exit 1 when a series got slower at a run of the SOURCEs given (without SOURCE: of each "
                   "series' newest data set): a nightly job fails the night it slowed down, not every night after")
    p.add_argument("--figures", choices=["tested", "all", "none"], default="tested",
                   help="with -o, a figure per series: tested (default): every series long enough to be tested "
                   "(2 × --min-runs runs); all; none")
    p.add_argument("--no-progress", action="store_true", help="no progress bar while reading SOURCEs")
    add_s3_flags(p)
    g = p.add_argument_group("history")
    g.add_argument("--history", metavar="DIR", help="the history store (default: $WANWIDE_HISTORY, else "
                   "${XDG_DATA_HOME:-~/.local/share}/wanwide/history)")
    p.set_defaults(func=cmd_history, no_history=False)
    return p


def cmd_history(args) -> int:
    import tempfile

    from wanwide.pipeline.results.history import HistoryStore, default_root
    from wanwide.pipeline.results.ingest import IngestError
    from wanwide.pipeline.results.report import read_sources
    from wanwide.pipeline.results.series import (
        CHANGE_COLUMNS,
        detect,
        plot_series,
        select,
        series_of,
    )
    from wanwide.pipeline.results.stats import slug

    root = Path(args.history) if args.history else default_root()
    given: set[str] = set()  # the runs of the SOURCEs: what --fail-on-slowdown looks at
    try:
        with tempfile.TemporaryDirectory(prefix="wanwide-history-") as tmp:
            for i, src in enumerate(args.sources):
                r = read_sources([src], Path(tmp) / str(i), progress=not args.no_progress, s3=s3_options(args))
                remember(args, r.table, r.manifests, src)
                given |= set(r.table["run_id"].dropna().astype(str)) if "run_id" in r.table.columns else set()
    except IngestError as e:
        print(f"wanwide: error: {_one_line(e)}", file=sys.stderr)
        return 2
    store = HistoryStore(root)
    if not len(store):
        print(f"wanwide: error: the history store {root} holds no runs: add some with `wanwide history SOURCE…` "
              "(or `wanwide report`), or name the store with --history DIR", file=sys.stderr)
        return 2
    df = store.read()
    chosen = select(df, benchmarks=args.benchmark, scenarios=args.scenario, actions=args.actions, where=args.where)
    if chosen.empty:
        print(f"wanwide: error: no stored run matches (store {root}: {df['run_id'].nunique()} runs of "
              f"{', '.join(sorted(set(df['benchmark'])))}): check --benchmark, --scenario and --where", file=sys.stderr)
        return 2
    series = series_of(chosen, args.stat)
    found = detect(series, min_runs=args.min_runs, max_p=args.max_p, min_change=args.min_change / 100)
    for f in found:
        print(f.text())
    short = sum(len(s.runs) < 2 * args.min_runs for s in series)
    print(f"{len(series)} series ({chosen['run_id'].nunique()} runs of {store.root}), {len(found)} change(s) in "
          f"{len({f.series.key for f in found})} of them; {short} too short to tell (fewer than "
          f"{2 * args.min_runs} runs)")
    if args.output:
        out = Path(args.output)
        (out / "figures").mkdir(parents=True, exist_ok=True)
        import pandas as pd

        pd.DataFrame([f.row() for f in found], columns=CHANGE_COLUMNS).to_csv(out / "changes.csv", index=False)
        chosen.to_csv(out / "series.csv", index=False)
        by_key: dict[tuple, list] = {}
        for f in found:
            by_key.setdefault(f.series.key, []).append(f.change)
        drawn = [s for s in series if args.figures == "all" or (args.figures == "tested"
                                                                and len(s.runs) >= 2 * args.min_runs)]
        import hashlib

        for s in drawn:
            name = slug(s.label)[:100] + "-" + hashlib.sha1(s.label.encode(), usedforsecurity=False).hexdigest()[:6]
            plot_series(s, by_key.get(s.key, []), out / "figures" / f"{name}.png")
        print(f"wrote {out / 'changes.csv'}, {out / 'series.csv'} and {len(drawn)} figure(s) in {out / 'figures'}"
              + (" (--figures all: the series too short to test too)" if args.figures == "tested" and
                 len(drawn) < len(series) else ""))
    if not args.fail_on_slowdown:
        return 0
    new = [f for f in found if f.change.slower and f.is_new(given)]
    if new:
        print(f"slower where the newest runs begin: {len(new)} series (--fail-on-slowdown) -> exit 1")
    return 1 if new else 0


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="wanwide")
    sub = ap.add_subparsers(dest="cmd")
    add_report_parser(sub)
    args = ap.parse_args(["report", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
