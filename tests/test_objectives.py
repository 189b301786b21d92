"""The objectives a trial's bundles recorded, said once for its status (core/lifecycle/objectives.py)."""

from __future__ import annotations

import json
from pathlib import Path

from wanwide.core.lifecycle import objectives, said
from wanwide.providers.lab.results import manifest_objectives


def row(scenario: str, passed: bool | None, detail: str = "d") -> dict:
    return {"scenario": f"KeystoneBasic.{scenario}", "criterion": "p95", "passed": passed, "detail": detail}


def test_nothing_recorded_says_nothing():
    assert objectives(None) is None
    assert objectives({}) is None
    assert objectives({"r1": None, "r2": []}) is None


def test_counts_each_region_and_names_the_misses_in_region_order():
    s = objectives({"r2": [row("a", False, "p95 0.9 s > 0.5 s")], "r1": [row("a", True), row("b", None)]})
    assert (s["met"], s["missed"], s["unmeasured"]) == (1, 1, 1)
    assert s["summary"] == "1/3 met, 1 not measured"
    assert s["misses"] == ["r2 a: p95 0.9 s > 0.5 s"]
    assert said(s).startswith("1 of 3 objective(s) missed (data kept): r2 a: p95 0.9 s > 0.5 s")


def test_the_misses_shown_are_bounded_and_the_rest_counted():
    s = objectives({f"r{i:02d}": [row("a", False)] for i in range(40)})
    assert s["missed"] == 40 and len(s["misses"]) == 5 and s["misses"][0].startswith("r00 ")
    assert said(s).endswith("; 35 more in the bundles")


def test_the_lab_reads_a_manifests_rows_and_survives_a_bad_one(tmp_path: Path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"status": {"result": "succeeded"}, "slo": [row("a", True), "junk"]}))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    none = tmp_path / "none.json"
    none.write_text(json.dumps({"status": {}}))
    assert manifest_objectives(good) == [row("a", True)]
    assert manifest_objectives(bad) is None and manifest_objectives(none) is None
    assert manifest_objectives(tmp_path / "absent.json") is None
