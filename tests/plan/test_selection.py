"""``wanwide lab run --benchmark NAME --repetition N``: a sitting runs one round of some Benchmarks of a campaign,
planned whole first, so its trials are exactly the whole plan's for those Benchmarks and that round (same ids,
same order), and a name or number that selects nothing is refused with the flag and what the files hold."""

from __future__ import annotations

import pytest

from tests.plan.test_study_more_rounds import _trials
from wanwide.core.plan.selection import select

HIGH = ("study-3-high", "study-9-high")


def test_one_round_of_two_benchmarks_is_the_whole_plans_share():
    whole = _trials(3)
    picked = select(whole, HIGH, [6])
    assert picked == [p for p in whole if p.benchmark in HIGH and p.repetition == 6]
    assert {p.benchmark for p in picked} == set(HIGH) and {p.repetition for p in picked} == {6}
    assert len(picked) == 12  # 2 Benchmarks × 2 backends × 3 RTTs
    assert select(whole) == whole
    assert {p.repetition for p in select(whole, repetitions=[5, 7])} == {5, 7}


def test_a_name_or_number_that_selects_nothing_is_refused():
    whole = _trials(3)
    with pytest.raises(ValueError, match=r"^--benchmark study-9-hi: no such Benchmark in the files \(they hold study-3, "):
        select(whole, ["study-9-hi"])
    with pytest.raises(ValueError, match=r"^--repetition 9: no trial of the selected Benchmarks has it \(their "
                                         r"repetitions, counted from 1: 6–8"):
        select(whole, HIGH, [8])
