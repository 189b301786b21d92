"""The study page's "machine as a factor" line: every pair of machines with at least two blocks is compared."""
from __future__ import annotations

import pandas as pd

from tests.docs_data import load

se = load("study_effects")


def _light(machines: dict[str, int]) -> pd.DataFrame:
    """Galera create_user at 3 regions, light: per machine so many rounds, RTT 0 and 300 ms."""
    rows, r = [], 0
    for k, (machine, rounds) in enumerate(machines.items()):
        for j in range(rounds):
            for rtt, mean in (("0ms", 12.0 + k), ("300ms", 25.0 + k + 0.3 * j)):
                rows.append({"scenario": se.PWD, "param.backend": "galera", "param.regions": "3",
                             "param.load": "light", "param.rtt": rtt, "round": r, "machine": machine, "mean": mean})
            r += 1
    return pd.DataFrame(rows)


def test_three_machines_each_pair_compared() -> None:
    out = se.machine_blocks(_light({"first machine": 2, "AMD EPYC · boot c22c44c5": 3, "Xeon · boot 6b92d4ff": 2}))
    factor = [line for line in out.splitlines() if line.startswith("The machine as a factor:")]
    assert len(factor) == 1, out
    for a, b in (("AMD EPYC · boot c22c44c5", "first machine"), ("Xeon · boot 6b92d4ff", "first machine"),
                 ("Xeon · boot 6b92d4ff", "AMD EPYC · boot c22c44c5")):
        assert f"3 regions, Δ: {a} minus {b}" in factor[0]


def test_one_block_machines_not_compared() -> None:
    out = se.machine_blocks(_light({"first machine": 2, "Xeon · boot 6b92d4ff": 1}))
    assert "The machine as a factor" not in out
