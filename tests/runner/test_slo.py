"""Service level objectives: from the Benchmark (workload.slo, a scenario's own) into Rally's SLA and the
runner's configuration, measured by the runner on a real Rally report, recorded in the manifest, shown
in the report and gating `wanwide compare --fail-on slo`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from wanwide.core.contracts import SloSpec
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.runner import task
from wanwide.core.plan.trial import plan
from wanwide.pipeline.results.ingest import ingest_paths
from wanwide.pipeline.runner import slo

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "bundles" / "runner-real"  # a real Rally run (lab quickstart)
AUTH = "KeystoneBasic.authenticate_user_and_validate_token"
PASSWORD = "KeystoneBasic.create_user_update_password"


def _bench(workload_slo: dict | None, auth_slo: dict | None) -> str:
    docs = list(yaml.safe_load_all((REPO / "manifests" / "examples" / "lab-delay.yaml").read_text()))
    wl = docs[1]["spec"]["workload"]
    if workload_slo is not None:
        wl["slo"] = workload_slo
    if auth_slo is not None:
        wl["scenarios"][0]["slo"] = auth_slo
    return yaml.safe_dump_all(docs)


def test_objectives_become_rallys_sla_and_the_runners():
    text = _bench({"maxFailureRate": "5%", "maxMeanDuration": "2s"},
                  {"maxDuration": "3s", "percentile": {"p": 95, "max": "1500ms"}})
    docs = load_documents([text])
    p = plan(docs.benchmarks[0], docs.topology_for(docs.benchmarks[0]))[0]
    subtasks = {st["title"]: st["sla"] for st in task(p, "r3")["subtasks"]}
    # the scenario's own objectives replace the workload's (not merged: one place says them)
    assert subtasks[AUTH] == {"failure_rate": {"max": 0}, "max_seconds_per_iteration": 3.0}
    assert subtasks[PASSWORD] == {"failure_rate": {"max": 5.0}, "max_avg_duration": 2.0}
    from wanwide.core.plan.runner import slo_spec

    auth = slo_spec(p.scenarios[0])
    assert (auth.percentile, auth.percentile_max_s, auth.max_s) == (95, 1.5, 3.0)


def test_without_objectives_a_run_fails_its_sla_on_any_failed_iteration():
    docs = load_documents([_bench(None, None)])
    p = plan(docs.benchmarks[0], docs.topology_for(docs.benchmarks[0]))[0]
    assert all(st["sla"] == {"failure_rate": {"max": 0}} for st in task(p, "r3")["subtasks"])  # as before SLOs


def test_a_bad_percentile_is_one_line_naming_the_field(tmp_path):
    f = tmp_path / "b.yaml"
    f.write_text(_bench(None, {"percentile": {"p": 120, "max": "1s"}}))
    exe = Path(sys.executable).with_name("wanwide")
    r = subprocess.run([str(exe), "plan", "-f", str(f)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "spec.workload.scenarios[0].slo.percentile.p" in r.stderr, r.stderr


def _totals(scenario: str) -> np.ndarray:
    """The scenario's successful whole iterations as the report reads them (another path than the runner's)."""
    df = ingest_paths([REAL])
    t = df[(df["action"] == "Total") & (df["scenario"] == scenario) & df["error_type"].isna()]
    return t["iteration_duration"].to_numpy(dtype=float)


def test_the_runner_measures_each_objective_on_a_real_rally_report():
    rally = json.loads((REAL / "rally.json").read_text())
    auth = _totals(AUTH)
    p95 = float(np.percentile(auth, 95))
    specs = [SloSpec(scenario=AUTH, max_s=float(auth.max()) + 0.001, percentile=95, percentile_max_s=p95 * 0.9),
             SloSpec(scenario=PASSWORD, mean_s=10.0)]
    rows = {(r["scenario"], r["criterion"]): r for r in slo.check(rally, specs)}
    assert rows[(AUTH, "max_duration")]["passed"] is True
    assert rows[(AUTH, "p95")]["passed"] is False
    assert rows[(AUTH, "p95")]["measured"] == pytest.approx(p95, rel=1e-9)
    assert rows[(AUTH, "failure_rate")]["passed"] is True and rows[(AUTH, "failure_rate")]["measured"] == 0.0
    assert rows[(PASSWORD, "mean_duration")]["measured"] == pytest.approx(float(_totals(PASSWORD).mean()))
    assert slo.missed(list(rows.values())) == [f"authenticate_user_and_validate_token: "
                                               f"{rows[(AUTH, 'p95')]['detail']}"]


def _with_objectives(src: Path, dst: Path, specs: list[SloSpec]) -> Path:
    """The real bundle as a runner that checked ``specs`` writes it (manifest slo, status SLAFailed if missed)."""
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    rows = slo.check(json.loads((dst / "rally.json").read_text()), specs)
    m["slo"] = rows
    if slo.missed(rows):
        m["status"] = {"result": "succeeded", "reason": "SLAFailed", "message": "; ".join(slo.missed(rows))}
    (dst / "manifest.json").write_text(json.dumps(m))
    return dst


def test_the_report_shows_them_and_compare_fails_on_a_missed_one(tmp_path):
    met = _with_objectives(REAL, tmp_path / "met" / "b", [SloSpec(scenario=AUTH, max_s=60.0)])
    missed = _with_objectives(REAL, tmp_path / "missed" / "b", [SloSpec(scenario=AUTH, max_s=0.001)])
    exe = Path(sys.executable).with_name("wanwide")

    def wanwide(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(exe), *args, "--no-history"], capture_output=True, text=True, timeout=600)

    r = wanwide("report", str(missed.parent), "-o", str(tmp_path / "report"), "--no-progress", "--no-store")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Service level objectives" in md and "1 of 2 objectives met; 1 missed in 1 run(s)" in md
    assert "slowest iteration" in (tmp_path / "report" / "slo.csv").read_text()
    assert "Service level objectives" in (tmp_path / "report" / "index.html").read_text()
    r = wanwide("compare", str(met.parent), str(missed.parent), "--fail-on", "slo")
    assert r.returncode == 1 and "FAIL slo:" in r.stdout and "max_duration" in r.stdout, r.stdout + r.stderr
    r = wanwide("compare", str(missed.parent), str(met.parent), "--fail-on", "slo")
    assert r.returncode == 0, r.stdout + r.stderr
    r = wanwide("compare", str(REAL.parent), str(REAL.parent), "--fail-on", "slo")
    assert r.returncode == 2 and "recorded no objectives" in r.stderr, r.stderr


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=60),
       st.floats(min_value=0, max_value=100))
def test_the_runners_percentile_is_numpys(values, p):
    """The runner's percentile (plain Python: its image has no numpy) is numpy's default, linear."""
    assert slo.percentile(values, p) == pytest.approx(float(np.percentile(values, p)), rel=1e-9, abs=1e-9)
