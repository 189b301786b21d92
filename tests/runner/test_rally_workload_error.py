"""A Rally workload that stopped before its first iteration fails the run, naming Rally's reason (issue 45: a
25-compute, 4-tenant controller run "succeeded" with 0 iterations; its rally.json is tests/data/rally/
ambiguous-image.json, exported by the real Rally 4.1 of that run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wanwide.pipeline.runner.bundle import RallyInfo
from wanwide.pipeline.runner.images import glance_url
from wanwide.pipeline.runner.run import _summarise_rally_json, _task_status
from wanwide.pipeline.runner.users import KeystoneRefused

DATA = Path(__file__).resolve().parents[1] / "data" / "rally"


def test_a_workload_stopped_by_an_argument_rally_refused_fails_the_run_naming_it():
    info = _summarise_rally_json(DATA / "ambiguous-image.json")
    assert info.iterations == 0 and info.task_status == "finished"
    assert len(info.errors) == 1 and "is ambiguous" in info.errors[0]
    status = _task_status(info, "u1", 2)
    assert status.result == "failed" and status.reason == "RallyWorkloadError"
    assert "Glance_Image with name 'wanwide-tiny-r1' is ambiguous" in status.message


def test_failed_iterations_alone_are_data_not_a_workload_error(tmp_path):
    doc = json.loads((DATA / "ambiguous-image.json").read_text())
    wl = doc["tasks"][0]["subtasks"][0]["workloads"][0]
    wl["sla_results"]["sla"] = [c for c in wl["sla_results"]["sla"] if c["criterion"] != "something_went_wrong"]
    wl["sla_results"]["sla"][0]["success"] = False
    wl.update(total_iteration_count=4, failed_iteration_count=1)
    (tmp_path / "r.json").write_text(json.dumps(doc))
    info = _summarise_rally_json(tmp_path / "r.json")
    assert info.errors == [] and (info.iterations, info.failed_iterations) == (4, 1)
    status = _task_status(info, "u1", 1)
    assert (status.result, status.reason) == ("succeeded", "SLAFailed")


def test_a_clean_task_completes():
    status = _task_status(RallyInfo(task_status="finished", pass_sla=True, iterations=8, failed_iterations=0), "u", 0)
    assert (status.result, status.reason) == ("succeeded", "Completed")


CATALOG = [
    {"type": "identity", "endpoints": [{"interface": "public", "region_id": "r1", "url": "http://k:5000/v3"}]},
    {"type": "image", "endpoints": [
        {"interface": "internal", "region_id": "r1", "url": "http://internal:9292"},
        {"interface": "public", "region_id": "r2", "url": "http://r2:9292/"},
        {"interface": "public", "region_id": "r1", "url": "http://r1:9292"}]},
]


def test_the_shared_image_goes_to_the_runner_regions_public_glance():
    assert glance_url(CATALOG, "r1") == "http://r1:9292/v2"
    assert glance_url(CATALOG, "r2") == "http://r2:9292/v2"


def test_no_glance_in_the_region_is_said():
    with pytest.raises(KeystoneRefused, match="no public image endpoint for region r3"):
        glance_url(CATALOG, "r3")


def test_every_rally_field_of_the_bundle_comes_from_rally_json_the_task_or_the_runner():
    """The bundle's ``rally`` is rebuilt from rally.json after the task; what the runner set before it (the poll
    options, the shared images, the catalog entries it copied) is carried over by name (``RUNNER_SET``): a field
    in neither list would be lost from every manifest (stop 60: ``catalog_added``, found by the real-node run)."""
    from wanwide.pipeline.runner.run import RUNNER_SET

    summary = _summarise_rally_json(DATA / "ambiguous-image.json")
    from_rally = {k for k, v in summary.model_dump().items() if v not in (None, [])} | {"pass_sla"}
    from_task = {"task_uuid", "exit_code"}
    assert set(RallyInfo.model_fields) == from_rally | from_task | set(RUNNER_SET), (
        set(RallyInfo.model_fields) - from_rally - from_task - set(RUNNER_SET))
    assert not set(RUNNER_SET) & (from_rally | from_task)
