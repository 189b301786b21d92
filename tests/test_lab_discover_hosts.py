"""The lab's ``cell_v2 discover_hosts`` runs again when it collided with the scheduler's own periodic discovery (a
100-compute controller's deploy failed on "Duplicate host mapping ... r1-c050", exit 2), and only then: another
failure is the stage's, at once. nova-manage's exits are replayed here (the collision cannot be provoked on demand);
the lab tier runs the real one."""

from __future__ import annotations

import pytest

from wanwide.providers.lab import cloud
from wanwide.providers.lab.procs import LabError

DUPLICATE = ("discover-hosts in r1 failed (2):\nERROR: Duplicate host mapping was encountered. This command should be "
             "run once after all compute hosts have been deployed ... Host 'r1-c050' mapping already exists")


def _replay(monkeypatch, outcomes: list[str | None]) -> list[str]:
    calls: list[str] = []

    def run(svc, region, d, argv, label, timeout=900, ok=(0,)):
        calls.append(label)
        outcome = outcomes[len(calls) - 1]
        if outcome:
            raise LabError(outcome)
        return 0.1

    monkeypatch.setattr(cloud, "_run", run)
    return calls


def test_a_collision_with_the_schedulers_discovery_is_run_again(monkeypatch, tmp_path):
    calls = _replay(monkeypatch, [DUPLICATE, DUPLICATE, None])
    cloud.discover_hosts(None, "r1", tmp_path, pause_s=0)
    assert len(calls) == 3 and len(set(calls)) == 3  # each run's output kept in its own log


def test_another_failure_is_the_stages_at_once(monkeypatch, tmp_path):
    calls = _replay(monkeypatch, ["discover-hosts in r1 failed (1):\nCell mapping not found"])
    with pytest.raises(LabError, match="Cell mapping not found"):
        cloud.discover_hosts(None, "r1", tmp_path, pause_s=0)
    assert len(calls) == 1


def test_collisions_without_end_fail_after_the_tries(monkeypatch, tmp_path):
    calls = _replay(monkeypatch, [DUPLICATE] * cloud.DISCOVER_TRIES)
    with pytest.raises(LabError, match="Duplicate host mapping"):
        cloud.discover_hosts(None, "r1", tmp_path, pause_s=0)
    assert len(calls) == cloud.DISCOVER_TRIES
