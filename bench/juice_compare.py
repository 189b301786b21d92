#!/usr/bin/env python3
"""Juice's analysis data path and wanwide's ingest on the same bundles: time, memory, the same means.

    .venv/bin/python bench/juice_compare.py --dir /var/tmp/wwb1m [--repeat 3] [--wait-quiet 10]

Juice (BeyondTheClouds/juice, the 2018 study's EnOS-based harness) analysed Rally results by
loading each report with ``json.load``, walking every iteration's atomic actions recursively
(children included, each action a dict tagged with scenario, database and cluster size),
building a pandas DataFrame of them, computing ``duration = finished_at - started_at`` and a
``pivot_table`` of mean duration per scenario × database × size × action name. This is that
path, written anew from that description (nothing of Juice's code), over every bundle of DIR
with the bundle's ``backend`` and ``regions`` parameters as database and size.

wanwide's path: ``ingest_paths`` (typed decoder, one process per CPU), then the same means
with a ``groupby`` on the table (every iteration, failed ones too, as Juice; Total rows out).

Each side runs in its own child process (time from after the imports to the means; peak RSS
of the process tree sampled from outside). The means must agree to 1e-9 s, or the script
exits 1. Prints each repetition, median (min–max), and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOLERANCE_S = 1e-9


# ---------------------------------------------------------------- Juice's path, re-implemented
def _tag_actions(actions: list[dict], scenario: str, db: str, nodes: int, into: list[dict]) -> None:
    """Every action and, recursively, its children, tagged with the point they belong to."""
    for action in actions:
        action.update(scenario=scenario, db=db, nodes=nodes)
        into.append(action)
        _tag_actions(action.get("children") or [], scenario, db, nodes, into)


def juice_means(root: Path):
    import pandas as pd

    rows: list[dict] = []
    for manifest in sorted(root.rglob("manifest.json")):
        with open(manifest) as fh:
            params = json.load(fh)["trial"]["parameters"]
        rally = manifest.with_name("rally.json")
        if not rally.exists():
            continue
        with open(rally) as fh:
            report = json.load(fh)
        for task in report["tasks"]:
            for subtask in task["subtasks"]:
                for workload in subtask["workloads"]:
                    scenario = next(iter(workload["scenario"]))
                    for iteration in workload["data"]:
                        _tag_actions(iteration["atomic_actions"], scenario, params["backend"], params["regions"], rows)
    df = pd.DataFrame(rows, columns=["name", "started_at", "finished_at", "scenario", "db", "nodes"])
    df["duration"] = df["finished_at"].subtract(df["started_at"])
    return pd.pivot_table(df.drop(columns=["started_at", "finished_at"]), values="duration",
                          index=["scenario", "db", "nodes", "name"])["duration"]


# ---------------------------------------------------------------- wanwide's
def wanwide_means(root: Path):
    from wanwide.pipeline.results.ingest import TOTAL, ingest_paths

    df = ingest_paths([root])
    keys = ["scenario", "param.backend", "param.regions", "action_name"]
    actions = df.loc[df["action"] != TOTAL, [*keys, "action_duration"]]
    return actions.groupby(keys, observed=True)["action_duration"].mean()


def _child(side: str, root: Path, out: Path) -> dict:
    import pandas  # noqa: F401  (imports are not timed, on either side)

    import wanwide.pipeline.results.ingest  # noqa: F401

    t0 = time.perf_counter()
    means = juice_means(root) if side == "juice" else wanwide_means(root)
    t = time.perf_counter() - t0
    out.write_text(json.dumps([[str(k[0]), str(k[1]), int(k[2]), str(k[3]), float(v)] for k, v in means.items()]))
    return {"side": side, "s": round(t, 3), "groups": len(means)}


def _agree(a: Path, b: Path) -> float:
    """Largest difference between the two sides' means; SystemExit if their groups differ."""
    ja = {tuple(r[:4]): r[4] for r in json.loads(a.read_text())}
    jb = {tuple(r[:4]): r[4] for r in json.loads(b.read_text())}
    if ja.keys() != jb.keys():
        raise SystemExit(f"different groups: only Juice {sorted(ja.keys() - jb.keys())[:5]}, "
                         f"only wanwide {sorted(jb.keys() - ja.keys())[:5]}")
    return max(abs(ja[k] - jb[k]) for k in ja)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, required=True, help="bundles, e.g. a set written by bench/ingest.py --dir")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--wait-quiet", type=float, metavar="PCT", help="before each measurement wait for CPU some avg10 < PCT")
    ap.add_argument("--quiet-timeout", type=float, default=1800, metavar="S",
                    help="give up waiting for a quiet machine after S seconds (default 1800)")
    ap.add_argument("--side", choices=["juice", "wanwide"], help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.side:
        print(json.dumps(_child(a.side, a.dir, a.out)))
        return 0
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'operator'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    res: dict[str, list[dict]] = {"juice": [], "wanwide": []}
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="ww-juice-") as tmp:
        for rep in range(a.repeat):
            for side in ("juice", "wanwide"):
                if a.wait_quiet:
                    benchlib.wait_quiet(a.wait_quiet, a.quiet_timeout, log=lambda m: print(m, file=sys.stderr))
                before = benchlib.load()
                r = benchlib.run([sys.executable, __file__, "--side", side, "--dir", str(a.dir),
                                  "--out", str(Path(tmp) / f"{side}.json")], env=env)
                after = benchlib.load()
                if r["rc"] != 0:
                    raise SystemExit(f"{side} failed:\n{r['stderr'][-3000:]}")
                run = {**r["result"], "wall_s": r["wall_s"], "rss": r["tree_rss_mb"], "before": before, "after": after}
                res[side].append(run)
                print(f"#{rep + 1} {side:>7}: {run['s']:.2f} s ({run['wall_s']:.2f} s with start-up), peak tree RSS "
                      f"{run['rss']:.0f} MB, {run['groups']} means; {benchlib.load_text(before, after)}", flush=True)
            diff = _agree(Path(tmp) / "juice.json", Path(tmp) / "wanwide.json")
            worst = max(worst, diff)
            if diff > TOLERANCE_S:
                print(f"means differ by {diff:.3g} s (> {TOLERANCE_S})")
                return 1
    ratios = [j["s"] / w["s"] for j, w in zip(res["juice"], res["wanwide"], strict=True)]
    for side, runs in res.items():
        print(f"{side}: {benchlib.spread([r['s'] for r in runs])} s, peak tree RSS "
              f"{benchlib.spread([r['rss'] for r in runs], '{:.0f}')} MB")
    print(f"ratio Juice / wanwide: {statistics.median(ratios):.1f}× (per repetition "
          f"{', '.join(f'{x:.1f}' for x in ratios)}); the {res['wanwide'][0]['groups']} means agree "
          f"(largest difference {worst:.2g} s ≤ {TOLERANCE_S})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
