"""The measured tables of docs/results-study.md, from the data sets beside this file.

    .venv/bin/python docs/data/study.py            # print every block
    .venv/bin/python docs/data/study.py --write    # put them into docs/results-study.md

Each block is read exactly as ``wanwide report DIR`` and ``wanwide compare DIR DIR`` read a data
set (``wanwide results export``), with their statistics (pipeline/results/ci.py); the page holds
each block between ``<!-- data:NAME -->`` and ``<!-- /data -->``, and tests/results/test_study_page.py
fails when the page and the data disagree.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from wanwide.pipeline.results.compare import compare, select
from wanwide.pipeline.results.headline import RELATIVE_BOUND
from wanwide.pipeline.results.report import read_sources

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "results-study.md"
WORDS = {"up": "grows", "down": "shrinks", "same": f"no effect (within ±{RELATIVE_BOUND:.0%})",
         "unclear": "cannot tell", "too-few": "cannot tell (n too small)"}
WHERE = {"r1": "beside the database (r1)", "r3": "far region (r3)"}


def _ci(v: float, lo: float, hi: float) -> str:
    """A median with its interval (over runs on the log scale when there are several: never below zero)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{v:.3g} s [n/a]"
    return f"{v:.3g} s [{lo:.3g}, {hi:.3g}]"


def load_region(d: Path) -> str:
    """MariaDB at 0 and 300 ms RTT, Rally beside the database or in a far region: the medians and the
    relative change with their 95 % intervals (runs as the unit), per scenario and action."""
    with tempfile.TemporaryDirectory() as tmp:
        r = read_sources([d], Path(tmp))
        base, _ = select(r.table.copy(), ["rtt=0ms"], "base", r.noisy, False)
        new, _ = select(r.table.copy(), ["rtt=300ms"], "new", r.noisy, False)
    c = compare(base, new)
    actions = ["Total", "keystone_v3.fetch_token", "keystone_v3.validate_token"]
    c = c[c["action"].isin(actions)].copy()
    c["order"] = c["action"].map({a: i for i, a in enumerate(actions)})
    c = c.sort_values(["loadRegion", "scenario", "order"])
    lines = ["| where Rally runs | scenario | action | 0 ms: median [95 % CI] (iterations/runs) "
             "| 300 ms: median [95 % CI] | change [95 % CI] | verdict |", "|---|---|---|---|---|---|---|"]
    for _, x in c.iterrows():
        change = (f"{x['delta']:+.0%} [{x['delta_lo']:+.0%}, {x['delta_hi']:+.0%}]"
                  if np.isfinite(x["delta_lo"]) else "n/a")
        lines.append(f"| {WHERE.get(x['loadRegion'], x['loadRegion'])} | {x['scenario'].split('.')[-1]} | {x['action']} "
                     f"| {_ci(x['base'], x['base_lo'], x['base_hi'])} ({x['base_n']}) "
                     f"| {_ci(x['new'], x['new_lo'], x['new_hi'])} ({x['new_n']}) "
                     f"| {change} | {WORDS.get(x['verdict'], x['verdict'])} |")
    runs = r.runs
    noisy = sorted(f"{t}" for _, t in r.noisy)
    lines += ["", f"{len(runs)} runs ({len(r.manifests)} bundles), noisy by the report's rule: "
              f"{', '.join(noisy) if noisy else 'none'}."]
    return "\n".join(lines)


BLOCKS = {"load-region": load_region}


def render() -> dict[str, str]:
    return {name: fn(HERE / name) for name, fn in BLOCKS.items() if (HERE / name / "dataset.json").is_file()}


def page_blocks(text: str) -> dict[str, str]:
    return {m[1]: m[2].strip("\n") for m in re.finditer(r"<!-- data:([\w-]+) -->\n(.*?)<!-- /data -->", text, re.S)}


def write(blocks: dict[str, str]) -> None:
    text = PAGE.read_text()
    for name, body in blocks.items():
        text = re.sub(rf"(<!-- data:{re.escape(name)} -->\n).*?(<!-- /data -->)",
                      lambda m, b=body: m[1] + b + "\n" + m[2], text, flags=re.S)
    PAGE.write_text(text)


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    out = render()
    if "--write" in sys.argv:
        write(out)
    for k, v in out.items():
        print(f"<!-- data:{k} -->\n{v}\n<!-- /data -->\n")
