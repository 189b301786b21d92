"""``wanwide runner …`` sub-commands (mounted by wanwide.cli)."""

from __future__ import annotations

import argparse
import os
import sys


def add_runner_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("runner", help="run one Rally benchmark run and write/upload its result bundle")
    sub = p.add_subparsers(dest="runner_cmd", metavar="COMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    r = sub.add_parser("run", help="run Rally as described by a runner config (the entrypoint of a Rally Job)")
    r.add_argument("--config", required=True, help="runner configuration JSON (wanwide.core.contracts.RunnerConfig)")
    r.add_argument("--run-id", help="override the generated unique run id (tests)")
    r.add_argument("--task-timeout", type=float, default=6 * 3600, help="seconds allowed for `rally task start`")
    r.add_argument("--metrics-port", type=int, default=int(os.environ.get("WANWIDE_METRICS_PORT") or 0),
                   metavar="PORT", help="serve the experiment's live metrics (iterations, failures, iteration times, "
                   "fault windows) on :PORT/metrics while Rally runs (default: $WANWIDE_METRICS_PORT, else none)")
    r.set_defaults(func=cmd_run)

    u = sub.add_parser("upload", help="upload a result bundle kept locally to the config's S3 target "
                                      "(same keys as the run would have written; never overwrites)")
    u.add_argument("--config", required=True, help="the runner configuration naming results.s3")
    u.add_argument("bundle", help="the bundle directory (holds manifest.json)")
    u.set_defaults(func=cmd_upload)

    pr = sub.add_parser("probe", help="measure the RTT to other regions and store it (the network check's probe Job)")
    pr.add_argument("--config", required=True, help="probe configuration JSON (wanwide.core.contracts.ProbeConfig)")
    pr.set_defaults(func=cmd_probe)

    w = sub.add_parser("watch", help="probe pairs of regions from this one through the load and store them "
                                     "(the watch Job, where the load's runner cannot enter the other regions)")
    w.add_argument("--config", required=True, help="watch configuration JSON (wanwide.core.contracts.WatchConfig)")
    w.set_defaults(func=cmd_watch)

    q = sub.add_parser("qdisc", help="print this network namespace's netem qdiscs and their counters as JSON "
                                     "(the runner's shaper counters on Kubernetes)")
    q.add_argument("region", help="the region whose runner reads them (names the entries)")
    q.set_defaults(func=cmd_qdisc)

    v = sub.add_parser("validate", help="check a runner config and print it normalised")
    v.add_argument("--config", required=True, help="runner configuration JSON to check (wanwide.core.contracts.RunnerConfig)")
    v.set_defaults(func=cmd_validate)
    return p


def cmd_qdisc(args) -> int:
    from wanwide.pipeline.runner import qdisc

    return qdisc.main([args.region])


def cmd_validate(args) -> int:
    from wanwide.core.contracts import load_config

    try:
        cfg = load_config(args.config)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(cfg.model_dump_json(indent=2))
    return 0


def cmd_probe(args) -> int:
    import time
    from datetime import UTC, datetime

    from wanwide.core import timestamps as ts
    from wanwide.core.contracts import EXIT_CONFIG, EXIT_OK, EXIT_UPLOAD, ProbeConfig
    from wanwide.pipeline.runner import probe
    from wanwide.pipeline.runner.upload import UploadError, upload_json

    cfg = _config(ProbeConfig, args.config, "probe")
    if cfg is None:
        return EXIT_CONFIG
    if cfg.settle_s:
        print(f"[probe] waiting {cfg.settle_s:g} s: the operator shapes this pod, which started after the WAN's "
              "chaos objects, with objects of its own", flush=True)
        time.sleep(cfg.settle_s)
    from concurrent.futures import ThreadPoolExecutor

    from wanwide.core.lifecycle.network import answered, median

    rows = []
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(cfg.targets)))) as pool:  # the targets at once
        answers = list(pool.map(lambda t: probe.answers_ms(t.host, t.port, cfg.samples, cfg.interval_s,
                                                           cfg.timeout_s), cfg.targets))
    for t, got in zip(cfg.targets, answers, strict=True):
        med = median(got)
        print(f"[probe] {cfg.region}→{t.region} ({t.host}:{t.port}): requested {t.requested_rtt_ms:g} ms, measured "
              + (f"{med:.2f} ms" if med is not None else "no answer") + f" ({len(answered(got))}/{cfg.samples} "
              "answered)", flush=True)
        # samples_ms: every probe's time, null for one lost (the check counts the loss)
        rows.append({"region": t.region, "host": t.host, "port": t.port, "requested_rtt_ms": t.requested_rtt_ms,
                     "sent": len(got), "samples_ms": got})
    doc = {"benchmark": cfg.benchmark, "trial": cfg.trial, "source": cfg.region, "check": cfg.check,
           "method": "tcp-connect", "measured_at": ts.iso(datetime.now(UTC), precise=True), "targets": rows}
    try:
        upload_json(doc, cfg.results, cfg.key, log=lambda m: print(f"[probe] {m}", file=sys.stderr, flush=True))
    except UploadError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_UPLOAD
    print(f"[probe] stored at {cfg.key}", flush=True)
    return EXIT_OK


def _config(model, path: str, what: str):
    """A Job's configuration file read as ``model``; None (said in one line) when unreadable or invalid."""
    import json
    from pathlib import Path

    try:
        return model.model_validate(json.loads(Path(path).read_text()))
    except (OSError, ValueError) as e:
        print(f"error: {what} config {path}: {e}", file=sys.stderr)
        return None


def cmd_watch(args) -> int:
    from wanwide.core.contracts import EXIT_CONFIG, EXIT_UPLOAD, WatchConfig
    from wanwide.pipeline.runner import pairwatch

    cfg = _config(WatchConfig, args.config, "watch")
    if cfg is None:
        return EXIT_CONFIG
    try:
        return pairwatch.main(cfg)
    except Exception as e:  # the final document could not be stored
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_UPLOAD


def cmd_run(args) -> int:
    from wanwide.core.contracts import load_config
    from wanwide.pipeline.runner.run import run_from_config

    try:
        cfg = load_config(args.config)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = run_from_config(cfg, run_id=args.run_id, task_timeout_s=args.task_timeout, metrics_port=args.metrics_port)
    if isinstance(out, int):
        return out
    print(out.bundle_dir)
    return out.exit_code


def cmd_upload(args) -> int:
    import json
    from pathlib import Path

    from wanwide.core.contracts import load_config
    from wanwide.pipeline.runner.bundle import MANIFEST, bundle_relpath
    from wanwide.pipeline.runner.upload import UploadError, join_key, upload_bundle

    try:
        cfg = load_config(args.config)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if cfg.results.s3 is None:
        print(f"error: {args.config} names no results.s3 target: nothing to upload to (no S3 target configured)",
              file=sys.stderr)
        return 2
    try:
        m = json.loads((Path(args.bundle) / MANIFEST).read_text())
        rel = bundle_relpath(m["benchmark"], m["trial"]["id"], m["region"], int(m["attempt"]), m["run_id"])
    except FileNotFoundError:
        print(f"error: {args.bundle} is not a result bundle: it has no {MANIFEST}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: {args.bundle}/{MANIFEST}: {e}", file=sys.stderr)
        return 2
    try:
        keys = upload_bundle(Path(args.bundle), cfg.results.s3, rel)
    except UploadError as e:
        print(f"[runner] ERROR: {e}", file=sys.stderr)
        return 3
    print(f"uploaded {len(keys)} file(s) under {join_key(cfg.results.s3.prefix, rel)}/")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (``python -m wanwide.pipeline.runner.cli run --config …``)."""
    ap = argparse.ArgumentParser(prog="wanwide")
    sub = ap.add_subparsers(dest="cmd")
    add_runner_parser(sub)
    args = ap.parse_args(["runner", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
