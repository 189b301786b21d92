"""``wanwide runner …`` sub-commands (mounted by wanwide.cli)."""

from __future__ import annotations

import argparse
import sys


def add_runner_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("runner", help="run one Rally benchmark run and write/upload its result bundle")
    sub = p.add_subparsers(dest="runner_cmd", metavar="COMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    r = sub.add_parser("run", help="run Rally as described by a runner config (the entrypoint of a Rally Job)")
    r.add_argument("--config", required=True, help="runner configuration JSON (wanwide.runner.config.RunnerConfig)")
    r.add_argument("--run-id", help="override the generated unique run id (tests)")
    r.add_argument("--task-timeout", type=float, default=6 * 3600, help="seconds allowed for `rally task start`")
    r.set_defaults(func=cmd_run)

    v = sub.add_parser("validate", help="check a runner config and print it normalised")
    v.add_argument("--config", required=True)
    v.set_defaults(func=cmd_validate)
    return p


def cmd_validate(args) -> int:
    from .config import load_config

    try:
        cfg = load_config(args.config)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(cfg.model_dump_json(indent=2))
    return 0


def cmd_run(args) -> int:
    from .config import load_config
    from .run import run_from_config

    try:
        cfg = load_config(args.config)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = run_from_config(cfg, run_id=args.run_id, task_timeout_s=args.task_timeout)
    if isinstance(out, int):
        return out
    print(out.bundle_dir)
    return out.exit_code


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (``python -m wanwide.runner.cli run --config …``)."""
    ap = argparse.ArgumentParser(prog="wanwide")
    sub = ap.add_subparsers(dest="cmd")
    add_runner_parser(sub)
    args = ap.parse_args(["runner", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
