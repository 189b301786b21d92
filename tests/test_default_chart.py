"""The keystone chart a Benchmark gets by default is the one every verification ran: the upstream pin
(tests/data/upstream/facts.yaml, docs/upstream-checks.md) and the mirrored chart the cluster tests use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from wanwide.core.api.benchmark import Keystone


def test_default_chart_version_is_the_pinned_one():
    facts = yaml.safe_load((ROOT / "tests" / "data" / "upstream" / "facts.yaml").read_text())
    pinned = facts["keystone"]["chart"]["version"]
    assert Keystone().chart_version == pinned
    assert f"tag `{pinned}`" in (ROOT / "docs" / "upstream-checks.md").read_text()
    from tests.cluster.operator_env import REAL_CHART_VERSION

    assert pinned == REAL_CHART_VERSION


def test_default_chart_version_is_the_mirrored_chart():
    mirror = Path(os.environ.get("WANWIDE_UPSTREAM_DIR") or ROOT.parent / "shared" / "upstream")
    charts = sorted(mirror.glob("openstack-helm-*/keystone/Chart.yaml"))
    if not charts:
        pytest.skip(f"no openstack-helm mirror under {mirror} (WANWIDE_UPSTREAM_DIR)")
    versions = {yaml.safe_load(c.read_text())["version"] for c in charts}
    assert Keystone().chart_version in versions
