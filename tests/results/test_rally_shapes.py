"""`wanwide report` (the CLI) over many shapes of real Rally output (tests/data/rally-shapes).

Each shape alone and all together: exit 0, index.html, and tables holding exactly the
scenarios, actions, iterations and parameter points of the input — checked against a plain
walk of the raw JSON and the points a person reads off the file names. Unusable input: exit 2
with one line.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHAPES = REPO / "tests" / "data" / "rally-shapes"
WANWIDE = str(Path(sys.executable).with_name("wanwide"))
AUTH = "KeystoneBasic.authenticate_user_and_validate_token"
UPDATE = "KeystoneBasic.create_user_update_password"

# The parameter points (report.md section titles) each shape must show, per scenario.
POINTS: dict[str, dict[str, set[str]]] = {
    "subtasks": {AUTH: {"backend=mariadb, regions=3, latency_ms=0"},
                 UPDATE: {"backend=mariadb, regions=3, latency_ms=0"}},
    "failed-only": {AUTH: {"backend=galera, regions=3, latency_ms=50"}},
    "no-data": {AUTH: {"backend=mariadb, regions=3, latency_ms=50"}},
    "no-params": {AUTH: {"all"}, UPDATE: {"all"}},
    "single": {AUTH: {"backend=mariadb, regions=1, latency_ms=0"}},
    "old-results": {AUTH: {"backend=galera, regions=3, latency_ms=0", "backend=mariadb, regions=3, latency_ms=50"},
                    UPDATE: {"backend=galera, regions=3, latency_ms=0"}},
    "mixed": {AUTH: {"backend=galera, latency_ms=0", "backend=galera, latency_ms=50", "backend=mariadb, latency_ms=0",
                     "backend=mariadb, latency_ms=50", "regions=9", "backend=cockroachdb, regions=3, rtt_ms=0",
                     "backend=galera, regions=3, latency_ms=300"},
              UPDATE: {"no parameters"}},  # its file gives none; other files do
}
ALL = "all-together"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([WANWIDE, "report", "--no-progress", "--no-store", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO / "operator")})


def _actions(acts, prefix: str = "") -> list[str]:
    """Action paths of one iteration (nested ones as ``parent/child``), both Rally formats."""
    if isinstance(acts, dict):
        return list(acts)
    out = []
    for a in acts:
        out.append(prefix + a["name"])
        out += _actions(a.get("children") or [], prefix + a["name"] + "/")
    return out


def _raw(files: list[Path]) -> tuple[set[tuple[str, str]], Counter, Counter, set[str]]:
    """(scenario, action) pairs, iterations and failures per scenario, scenarios with a success."""
    pairs: set[tuple[str, str]] = set()
    its, fails, ok = Counter(), Counter(), set()
    for f in files:
        data = json.loads(f.read_text())
        if isinstance(data, list):
            wls = [(t["key"]["name"], t["result"]) for t in data]
        else:
            wls = [(next(iter(w["scenario"])), w["data"]) for t in data["tasks"] for st in t["subtasks"]
                   for w in st["workloads"]]
        for scen, iterations in wls:
            for it in iterations:
                its[scen] += 1
                fails[scen] += bool(it["error"])
                pairs |= {(scen, "Total"), *((scen, a) for a in _actions(it["atomic_actions"]))}
                if not it["error"]:
                    ok.add(scen)
    return pairs, its, fails, ok


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", s).strip("_")


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path, list[Path]]]:
    out = tmp_path_factory.mktemp("reports")
    runs = {}
    for shape in POINTS:
        runs[shape] = (_run(str(SHAPES / shape), "-o", str(out / shape)), out / shape,
                       sorted((SHAPES / shape).rglob("*.json")))
    srcs = [SHAPES / s for s in POINTS]
    runs[ALL] = (_run(*map(str, srcs), "-o", str(out / ALL)), out / ALL, sorted(f for s in srcs for f in s.rglob("*.json")))
    return runs


@pytest.mark.parametrize("shape", [*POINTS, ALL])
def test_report_holds_exactly_the_input(reports, shape):
    p, out, files = reports[shape]
    assert p.returncode == 0, p.stderr
    assert (out / "index.html").is_file() and (out / "report.md").is_file()
    pairs, its, fails, ok = _raw(files)
    rows = list(csv.DictReader((out / "summary.csv").read_text().splitlines()))
    assert {(r["scenario"], r["action"]) for r in rows} == pairs  # every action, none invented
    totals = [r for r in rows if r["action"] == "Total"]
    assert Counter({s: sum(int(r["iterations"]) for r in totals if r["scenario"] == s) for s in its}) == its
    assert Counter({s: sum(int(r["failures"]) for r in totals if r["scenario"] == s) for s in its}) == fails
    # the points: one report.md section and one describe table each
    want = POINTS[shape] if shape != ALL else _all_points()
    md = (out / "report.md").read_text()
    got: dict[str, set[str]] = {}
    for scen, label in re.findall(r"^## (\S+) — (.+)$", md, re.M):
        got.setdefault(scen, set()).add(label)
    assert got == want
    tables = {p.name for p in (out / "tables").glob("*.csv")}
    assert tables == {f"{_slug(s)}__{_slug(lb)}.csv" for s, lbs in want.items() for lb in lbs}
    # a figure for each scenario with a successful iteration, and only those
    for kind in ("bars", "cdf"):
        assert {p.name for p in out.glob(f"{kind}-*.png")} == {f"{kind}-{_slug(s)}.png" for s in ok}


def _all_points() -> dict[str, set[str]]:
    """Points of all shapes together: equal points of different directories pool, others stay apart.

    With every directory together, files without a parameter show it missing, so the labels
    are the union of the shapes' labels (no parameter gets a value it was not given); ``all``
    of the shape without parameters becomes ``no parameters`` next to files that have some.
    """
    out: dict[str, set[str]] = {}
    for pts in POINTS.values():
        for scen, labels in pts.items():
            out.setdefault(scen, set()).update("no parameters" if lb == "all" else lb for lb in labels)
    return out


def test_table_of_a_nested_action_and_a_single_point(reports):
    """subtasks: create_user's child action has its own row; single: one iteration is a point."""
    _, out, _ = reports["subtasks"]
    rows = list(csv.DictReader((out / "summary.csv").read_text().splitlines()))
    nested = next(r for r in rows if r["action"] == "keystone_v3.create_user/keystone_v3.list_roles")
    assert int(nested["count"]) == 3 and r"keystone_v3.create_user/keystone_v3.list_roles" in (out / "report.md").read_text()
    _, out, _ = reports["single"]
    rows = list(csv.DictReader((out / "summary.csv").read_text().splitlines()))
    assert [(r["action"], r["count"], r["std"]) for r in rows] == [("Total", "1", ""), ("keystone_v3.fetch_token", "1", "")]


def test_empty_workload_named_in_the_report(reports):
    _, out, _ = reports["no-data"]
    for page in ("report.md", "index.html"):
        text = (out / page).read_text()
        assert "Workloads without iterations" in text and UPDATE in text, page


def test_missing_backend_gets_its_own_panel(reports):
    """mixed: the regions=9 file names no backend; its bars are drawn (not dropped) in their own panel."""
    _, out, _ = reports["mixed"]
    svg = (out / f"bars-{AUTH}.svg").read_text()
    assert "backend=(none)" in svg and "regions=9" in svg


@pytest.mark.parametrize(("shape", "needle"), [
    ("not-rally", "env.json: malformed Rally JSON at $: expected a `rally task report --json` object"),
    ("format-2", "unsupported format '2.0' (expected 1.x)"),
    ("no-iterations", "no iterations to report in"),
    ("truncated", "invalid JSON at line"),
    ("html-only", "HTML reports are not read: export with `rally task report --json`"),
])
def test_unusable_input_one_line(tmp_path, shape, needle):
    p = _run(str(SHAPES / "unusable" / shape), "-o", str(tmp_path / "out"))
    assert p.returncode == 2
    assert p.stderr.startswith("wanwide: error: ") and p.stderr.count("\n") == 1 and needle in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "out" / "index.html").exists()
