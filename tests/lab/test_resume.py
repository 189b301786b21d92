"""What a rerun keeps of an interrupted run's bundles (pure: no root needed)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.lab.results import bundles_complete, drop_interrupted

DOCS = [{"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
         "spec": {"generate": {"count": 2}}},
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "b"},
         "spec": {"topologyRef": "t", "workload": {"load": "high", "scenarios": [
             {"name": "authenticate_user_and_validate_token"}]}}}]


def _trial():
    docs = load_documents([yaml.safe_dump_all(DOCS)])
    (b,) = docs.benchmarks
    (p,) = plan(b, docs.topology_for(b))
    return p


def _bundle(out: Path, region: str, run_id: str, result: str | None) -> Path:
    d = out / "bundles" / "b" / "t000" / region / f"attempt-1-{run_id}"
    (d / "logs").mkdir(parents=True)
    if result:
        (d / "manifest.json").write_text(json.dumps({"status": {"result": result}}))
    (out / "bundles" / ".work" / run_id).mkdir(parents=True)
    return d


def test_incomplete_trial_loses_every_earlier_bundle(tmp_path: Path) -> None:
    """r1 finished, r2 was killed mid-write: both go (a re-run of r1 alone would not be simultaneous)."""
    p = _trial()
    assert p.load_regions == ["r1", "r2"]
    done = _bundle(tmp_path, "r1", "20260101t000000z-aaaaaaaaaaaa", "succeeded")
    partial = _bundle(tmp_path, "r2", "20260101t000000z-bbbbbbbbbbbb", None)
    assert bundles_complete(tmp_path, p) is None
    removed = drop_interrupted(tmp_path, p, keep=[])
    assert done in removed and partial in removed
    assert not done.exists() and not partial.exists()
    assert list((tmp_path / "bundles" / ".work").iterdir()) == []


def test_complete_trial_keeps_its_bundles_but_not_rallys_work(tmp_path: Path) -> None:
    p = _trial()
    a = _bundle(tmp_path, "r1", "20260101t000000z-aaaaaaaaaaaa", "succeeded")
    b = _bundle(tmp_path, "r2", "20260101t000000z-bbbbbbbbbbbb", "succeeded")
    complete = bundles_complete(tmp_path, p)
    assert complete == [a, b]
    drop_interrupted(tmp_path, p, keep=complete)
    assert a.is_dir() and b.is_dir()
    assert bundles_complete(tmp_path, p) == [a, b]
    assert list((tmp_path / "bundles" / ".work").iterdir()) == []
