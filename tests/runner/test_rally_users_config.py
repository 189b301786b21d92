"""spec.runner.rallyUsers reaches the runner's config (pure: no Rally needed)."""

from __future__ import annotations

import pytest
import yaml

from tests.plan.specs import benchmark
from wanwide.core.contracts import RunnerConfig
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.kubernetes.render.rally import config_document


@pytest.mark.parametrize(("setting", "prepared"), [(None, True), ("Prepared", True), ("PerSubtask", False)])
def test_rally_users_setting(setting: str | None, prepared: bool) -> None:
    spec = {"runner": {"rallyUsers": setting}} if setting else {}
    docs = load_documents([yaml.safe_dump(benchmark("mariadb", "uniform", **spec))])
    (b,) = docs.benchmarks
    p = plan(b, docs.topology_for(b))[0]
    cfg = RunnerConfig.model_validate(config_document(p, p.load_regions[0], start_at="2026-11-22T10:00:00Z",
                                                      attempt=1, results=None))
    assert cfg.keystone.rally_user is prepared
