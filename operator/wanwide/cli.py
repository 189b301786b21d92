"""Command line: ``wanwide plan | crds | operator | runner | report | lab``."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import yaml

from . import __version__
from .plan.errors import PlanError


class _Dumper(yaml.SafeDumper):
    """Block-style YAML; multi-line strings as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_all(docs: list[dict]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=120)


def plan_stream(texts: list[str], trial: int | None, all_trials: bool, objects_only: bool) -> str:
    from .plan.load import load_documents
    from .plan.trial import plan
    from .render import render_trial

    docs = load_documents(texts)
    if not docs.benchmarks:
        raise PlanError([])
    parts: list[str] = []
    for bench in docs.benchmarks:
        plans = plan(bench, docs.topology_for(bench))
        if all_trials:
            chosen = plans
        else:
            idx = trial or 0
            if idx >= len(plans):
                raise SystemExit(f"--trial {idx}: Benchmark {bench.metadata.name} has {len(plans)} trials (0–{len(plans) - 1})")
            chosen = [plans[idx]]
        header = [f"# Benchmark {bench.metadata.namespace}/{bench.metadata.name}: {len(plans)} trials"]
        for p in plans:
            header.append(f"#   {p.id}: " + ", ".join(f"{k}={v}" for k, v in p.parameters.items()))
        parts.append("\n".join(header) + "\n")
        for p in chosen:
            r = render_trial(p)
            parts.append(f"# ---- trial {p.id} ({p.name}): {len(r.objects)} objects, {len(r.releases)} Helm releases\n")
            if not objects_only:
                parts.append("# Helm releases (not Kubernetes objects; --objects-only leaves them out)\n")
                parts.append(dump_all([rel.document() for rel in r.releases]) + "---\n")
            parts.append(dump_all(r.objects) + "---\n")
    return "".join(parts)


def cmd_plan(args: argparse.Namespace) -> int:
    texts = [sys.stdin.read() if f == "-" else Path(f).read_text() for f in args.file]
    try:
        out = plan_stream(texts, args.trial, args.all, args.objects_only)
    except PlanError as e:
        if not e.problems:
            print("error: no Benchmark document in the input", file=sys.stderr)
            return 2
        print(f"error: the spec is invalid ({len(e.problems)} problem(s)); nothing was planned:", file=sys.stderr)
        for p in e.problems:
            print(f"  - {p}", file=sys.stderr)
        return 2
    sys.stdout.write(out)
    return 0


def cmd_crds(args: argparse.Namespace) -> int:
    from .crds import crd_files, crds_yaml

    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in crd_files().items():
            (out / name).write_text(text)
            print(f"wrote {out / name}")
    else:
        sys.stdout.write(crds_yaml())
    return 0


def _mount(sub: argparse._SubParsersAction, module: str, fn: str) -> None:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return
    getattr(mod, fn)(sub)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="wanwide", description=__doc__)
    ap.add_argument("--version", action="version", version=f"wanwide {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plan", help="print the desired state of a Benchmark's trials as YAML")
    p.add_argument("-f", "--file", action="append", required=True, help="YAML file(s) with a Topology and a Benchmark (- = stdin)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--trial", type=int, help="trial index to render (default 0)")
    g.add_argument("--all", action="store_true", help="render every trial")
    p.add_argument("--objects-only", action="store_true", help="leave out Helm release documents")
    p.set_defaults(func=cmd_plan)

    c = sub.add_parser("crds", help="print the CRDs generated from the models (or write them with --out)")
    c.add_argument("--out", help="directory to write one file per CRD")
    c.set_defaults(func=cmd_crds)

    _mount(sub, "wanwide.controller.cli", "add_operator_parser")
    _mount(sub, "wanwide.runner.cli", "add_runner_parser")
    _mount(sub, "wanwide.results.cli", "add_report_parser")
    _mount(sub, "wanwide.lab.cli", "add_lab_parser")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
