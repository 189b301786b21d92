"""``wanwide report SOURCE… -o DIR`` (mounted by wanwide.cli)."""

from __future__ import annotations

import argparse
import sys
import time


def add_report_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report",
        help="tables and plots from result bundles (dir or s3://bucket/prefix) or plain Rally JSON",
        description="SOURCE: a directory of bundles, s3://bucket/prefix (S3_ENDPOINT, AWS_ACCESS_KEY_ID, "
        "AWS_SECRET_ACCESS_KEY from the environment), or plain Rally JSON files/directories "
        "(parameters then come from file names or a sidecar params.yaml).",
    )
    p.add_argument("sources", nargs="+", metavar="SOURCE")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the report")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-store", action="store_true",
                   help="do not store results.parquet beside the raw files (only in DIR)")
    p.set_defaults(func=cmd_report)
    return p


def cmd_report(args) -> int:
    from .ingest import IngestError
    from .report import build_report

    t0 = time.monotonic()
    try:
        r = build_report(args.sources, args.output, progress=not args.no_progress,
                         store_parquet_beside=not args.no_store)
    except IngestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    n_it = int((r.table["action"] == "Total").sum())
    print(f"report: {n_it} iterations, {len(r.summary)} summary rows, {len(r.files)} files in "
          f"{r.out_dir} ({time.monotonic() - t0:.1f}s); open {r.out_dir / 'index.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="wanwide")
    sub = ap.add_subparsers(dest="cmd")
    add_report_parser(sub)
    args = ap.parse_args(["report", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
