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
    p.add_argument("sources", nargs="+", metavar="SOURCE")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the report")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-store", action="store_true",
                   help="do not store results.parquet beside the raw files (only in DIR)")
    p.add_argument("--where", action="append", default=[], metavar="NAME=VALUE",
                   help="only the trials with this parameter value (repeatable), e.g. --where load=light "
                   "--where rtt=0ms for the figure of sizes")
    add_noise_flags(p)
    add_s3_flags(p)
    p.set_defaults(func=cmd_report)
    return p


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
    p.add_argument("base", metavar="BASE")
    p.add_argument("new", metavar="NEW")
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
    add_noise_flags(p)
    add_s3_flags(p)
    p.set_defaults(func=cmd_compare)
    return p


def cmd_compare(args) -> int:
    import tempfile

    from wanwide.pipeline.results.compare import SelectError, Text, compare, pair, plot, select
    from wanwide.pipeline.results.ingest import IngestError
    from wanwide.pipeline.results.report import read_sources

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
    return 0


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
    e.add_argument("sources", nargs="+", metavar="SOURCE")
    e.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the data set")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_s3_flags(e)
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
