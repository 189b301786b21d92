"""Invalid specs are refused as a whole, with a message naming the field and the fix."""

from __future__ import annotations

import pytest
import yaml

from tests.plan.bad_inputs import CASES
from wanwide.cli import plan_stream
from wanwide.core.plan.errors import PlanError


def test_table_is_large_enough():
    assert len(CASES) >= 25


@pytest.mark.parametrize(("case", "doc", "field", "hint", "admission"), CASES, ids=[c[0] for c in CASES])
def test_refused_with_field_and_fix(case, doc, field, hint, admission):
    with pytest.raises(PlanError) as err:
        plan_stream([yaml.safe_dump(doc)], None, True, False)
    text = "\n".join(str(p) for p in err.value.problems)
    assert field in text, f"error does not name {field!r}: {text}"
    assert hint in text, f"error does not say {hint!r}: {text}"


def test_valid_base_plans():
    from tests.plan.bad_inputs import _b

    out = plan_stream([yaml.safe_dump(_b())], None, True, False)
    assert "kind: NetworkChaos" in out


def test_cli_prints_every_problem_and_nothing_else(tmp_path, capsys):
    from tests.plan.bad_inputs import _net
    from wanwide.cli import main

    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(_net(rtt="20", loss="150%")))
    assert main(["plan", "-f", str(f)]) == 2
    out = capsys.readouterr()
    assert out.out == "", "nothing partial may be printed for an invalid spec"
    assert "default.rtt" in out.err and "default.loss" in out.err


def test_topology_problems_name_the_topology_and_its_own_paths():
    """A separate Topology's mistake is reported on Topology/NAME with the path in that document."""
    from tests.plan.bad_inputs import _DEL, _b

    bench = _b(topologyRef="wan", topology=_DEL)
    topology = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "wan", "namespace": "lab"},
                "spec": {"regions": [{"name": "paris"}, {"name": "rennes"}, {"name": "chicago"}],
                         "network": {"overrides": [{"from": "paris", "to": "tokyo", "rtt": "5ms"}]}}}
    with pytest.raises(PlanError) as err:
        plan_stream([yaml.safe_dump_all([topology, bench])], None, True, False)
    assert [str(p).split(": ")[:2] for p in err.value.problems] == [["Topology/wan", "spec.network.overrides[0].to"]]


def test_topology_name_is_checked_like_the_api_server_does():
    doc = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "Wan_1"},
           "spec": {"generate": {"count": 3}}}
    with pytest.raises(PlanError) as err:
        plan_stream([yaml.safe_dump(doc)], None, True, False)
    assert str(err.value).startswith("Topology/Wan_1: metadata.name: 'Wan_1' is not a valid Kubernetes object name")
