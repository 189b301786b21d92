"""Invalid specs are refused as a whole, with a message naming the field and the fix."""

from __future__ import annotations

import pytest
import yaml

from tests.plan.bad_inputs import CASES
from wanwide.cli import plan_stream
from wanwide.plan.errors import PlanError


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
