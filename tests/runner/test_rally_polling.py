"""spec.workload.pollInterval: how often Rally asks whether a server reached its state. Rally's own grid (boot: 1 s,
then every 2 s; delete: 2 s, then every 2 s) put the Nova WAN campaign's times on 2 s steps (docs/results-nova.md);
the interval reaches the runner's config, its rally.conf, the bundle, and real rally-openstack reads it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from tests.plan.specs import benchmark
from wanwide.core.contracts import RALLY_POLL_ACTIONS, RunnerConfig
from wanwide.core.plan.errors import PlanError
from wanwide.core.plan.load import load_documents
from wanwide.core.plan.runner import rally_polling
from wanwide.core.plan.trial import plan
from wanwide.pipeline.runner.rally import Rally
from wanwide.providers.kubernetes.render.rally import config_document
from wanwide.providers.lab import paths


def _config(workload: dict) -> RunnerConfig:
    doc = benchmark("mariadb", "uniform")
    doc["spec"]["workload"].update(workload)
    docs = load_documents([yaml.safe_dump(doc)])
    (b,) = docs.benchmarks
    p = plan(b, docs.topology_for(b))[0]
    return RunnerConfig.model_validate(config_document(p, p.load_regions[0], start_at="2026-11-22T10:00:00Z",
                                                      attempt=1, results=None))


def test_unset_leaves_rallys_own_grid():
    assert _config({}).rally_openstack == {}


def test_the_interval_sets_every_server_actions_first_wait_and_its_polls():
    opts = _config({"pollInterval": "200ms"}).rally_openstack
    assert opts["nova_server_boot_poll_interval"] == opts["nova_server_boot_prepoll_delay"] == 0.2
    assert opts["nova_server_delete_poll_interval"] == opts["nova_server_delete_prepoll_delay"] == 0.2
    assert len(opts) == 2 * len(RALLY_POLL_ACTIONS) and set(opts.values()) == {0.2}


@pytest.mark.parametrize("value", ["50ms", "11s", "fast"])
def test_an_interval_out_of_bounds_is_refused_naming_the_field(value):
    with pytest.raises((PlanError, ValidationError, ValueError)) as e:
        _config({"pollInterval": value})
    assert "pollInterval" in str(e.value) or "poll_interval" in str(e.value), str(e.value)


def test_the_runner_config_takes_only_rallys_poll_options_within_bounds():
    base = _config({}).model_dump(mode="json", exclude_unset=True)
    with pytest.raises(ValidationError, match="not one of Rally's server poll options"):
        RunnerConfig.model_validate({**base, "rally_openstack": {"connection": 1.0}})
    with pytest.raises(ValidationError, match="not within"):
        RunnerConfig.model_validate({**base, "rally_openstack": {"nova_server_boot_poll_interval": 0.0}})
    with pytest.raises(ValidationError, match="not within"):
        RunnerConfig.model_validate({**base, "rally_openstack": {"nova_server_boot_poll_interval": 600.0}})


def test_rally_conf_carries_the_options(tmp_path):
    r = Rally(exe=Path("/bin/true"), workdir=tmp_path / "w", logdir=tmp_path / "l", openstack=rally_polling(0.25))
    text = r.conf.read_text()
    assert "[openstack]\n" in text and "nova_server_boot_poll_interval = 0.25\n" in text
    assert "[database]\nconnection = sqlite:///" in text
    plain = Rally(exe=Path("/bin/true"), workdir=tmp_path / "p", logdir=tmp_path / "l2").conf.read_text()
    assert "[openstack]" not in plain


@pytest.mark.lab
def test_real_rally_openstack_reads_them(tmp_path):
    """The lab's Rally (rally-openstack 4.1) loads the rally.conf the runner writes: its CONF holds the interval, and
    its own default without one (so the option names are the ones it knows)."""
    py = paths.rally_bin("python")
    if not py.exists():
        pytest.skip("the lab's Rally is not installed (hack/install-lab.sh)")
    probe = ("import sys\nfrom rally.common import cfg\nfrom rally_openstack.common.cfg import opts\n"
             "lo = opts.list_opts()\nfor group, options in (lo.items() if isinstance(lo, dict) else lo):\n"
             "    cfg.CONF.register_opts(options, group=group)\n"
             "cfg.CONF([], default_config_files=[sys.argv[1]])\n"
             "o = cfg.CONF.openstack\n"
             "print(o.nova_server_boot_prepoll_delay, o.nova_server_boot_poll_interval,"
             " o.nova_server_delete_prepoll_delay, o.nova_server_delete_poll_interval)\n")
    seen = {}
    for name, opts in (("set", rally_polling(0.2)), ("unset", {})):
        r = Rally(exe=Path("/bin/true"), workdir=tmp_path / name, logdir=tmp_path / f"{name}-logs", openstack=opts)
        p = subprocess.run([str(py), "-c", probe, str(r.conf)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-3000:]
        seen[name] = p.stdout.split()
    assert seen["set"] == ["0.2"] * 4, seen
    assert seen["unset"] == ["1.0", "2.0", "2.0", "2.0"], seen
