"""docs/results-nova.md (issue 45 item 5): its measured blocks are what the committed data set gives (docs/data/nova.py
reads it as `wanwide report` does), and its reading — round trips per iteration, the study's ratio as a verdict, the
spread and the failures under loss — is right on bundles with known answers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.docs_data import load
from tests.results.synthetic import ACTIONS, write_bundle

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _nova():
    return load("nova_page", DOCS / "data" / "nova.py")


def test_every_block_of_the_page_is_regenerated_from_its_data_set():
    nova = _nova()
    assert all((d / "dataset.json").is_file() for d in nova.DATA)  # measured and committed: never lost
    rendered = nova.render()
    on_page = nova.page_blocks((DOCS / "results-nova.md").read_text())
    assert set(rendered) == set(nova.BLOCKS) == set(on_page), (sorted(on_page), sorted(rendered))
    for name, body in rendered.items():
        assert on_page[name] == body, f"docs/results-nova.md block {name!r} differs from its data: " \
                                      f"run docs/data/nova.py --write\n{body}"


def _rtt_sweep(root: Path, level: float, round_trips: float, blocks: int = 5, n: int = 6, seed: int = 3,
               step: float = 0.2, bench: str = "nova-wan-rtt") -> None:
    """nova-wan-rtt bundles: per block a level of its own (a fresh deployment: ``level`` × (1 + ``step`` × block)),
    each iteration ``round_trips`` RTTs above it, a little noise."""
    rng = np.random.default_rng(seed)
    k = 0
    for b in range(blocks):
        block_level = level * (1 + step * b)
        for rtt in (0, 100, 200):
            first = block_level + round_trips * rtt / 1000 + rng.normal(0, 0.02, n)
            write_bundle(root / bench, bench, f"t{k:03d}", b, {"rtt": f"{rtt}ms"}, "r1",
                         {ACTIONS[0]: first, ACTIONS[1]: np.full(n, 0.25)}, run=k)
            k += 1


def test_the_delay_reads_as_round_trips_per_iteration_paired_by_block(tmp_path):
    """Blocks at 2.25 to 3.85 s, each +30 round trips: the slope reads 30 (the 0.25 s second action adds none), every
    Δ at 200 ms is +6 s, and the study's ×2 is contradicted in size (×2.5 or more); at a 6 s base the same 30 round
    trips make ×2 and agree: a ratio is the base's, the round trips are not."""
    nova = _nova()
    _rtt_sweep(tmp_path / "a", 2.0, 30.0)
    rows = {x["action"]: x for x in nova.rtt_rows(nova.read(tmp_path / "a"))}
    tot = rows["Total"]
    assert tot["slope"].blocks == 5 and tot["slope"].lo < 30 < tot["slope"].hi and tot["slope"].hi - tot["slope"].lo < 2
    assert tot["diffs"]["200ms"].lo < 6 < tot["diffs"]["200ms"].hi
    assert 1 + tot["ratio"].lo > 2
    assert "contradicts in size" in nova.findings(tmp_path / "a")

    _rtt_sweep(tmp_path / "b", 6.0 - 0.25, 30.0, step=0.01)  # Total at 0 ms: 6 s, at 200 ms 12 s
    text = nova.findings(tmp_path / "b")
    ratio = {x["action"]: x for x in nova.rtt_rows(nova.read(tmp_path / "b"))}["Total"]["ratio"]
    assert 1 + ratio.lo <= 2 <= 1 + ratio.hi and "| agrees." in text, (ratio, text)


def test_the_fine_polling_sweep_is_read_beside_the_default_one(tmp_path):
    """With both sweeps, the findings say how many round trips Rally's own grid added: 30 read with it, 24 without."""
    nova = _nova()
    _rtt_sweep(tmp_path, 2.0, 30.0)
    _rtt_sweep(tmp_path, 2.0, 24.0, bench="nova-wan-rtt-poll", seed=5)
    d = (tmp_path / "nova-wan-rtt", tmp_path / "nova-wan-rtt-poll")
    fine = {x["action"]: x for x in nova.rtt_rows(nova.read(d), bench="nova-wan-rtt-poll")}["Total"]
    assert fine["slope"].lo < 24 < fine["slope"].hi
    text = nova.findings(d)
    assert "Rally polling every 0.2 s" in text and "less this one: +6.0 round trips" in text, text
    assert "**nova-wan-rtt-poll**" in nova.rtt(d) and "**nova-wan-rtt**" in nova.rtt(d)


def test_loss_counts_failed_iterations_and_runs_and_reads_the_spread(tmp_path):
    """At 10 % each block's trial has 2 failed iterations of 6 and a wider spread; one run failed outright: the table
    counts 10 of 30 failed iterations with Wilson's interval, 1 of 5 failed runs, and the spread grows."""
    nova = _nova()
    rng = np.random.default_rng(7)
    k = 0
    for b in range(5):
        for loss, sd, errors, result in (("0%", 0.05, 0, "succeeded"), ("10%", 0.8, 2, "succeeded")):
            if loss == "10%" and b == 4:
                result = "failed"
            d = 2.0 + b * 0.1 + np.abs(rng.normal(0, sd, 6))
            write_bundle(tmp_path, "nova-wan-loss", f"t{k:03d}", b, {"loss": loss, "rtt": "0ms"}, "r1",
                         {ACTIONS[0]: d, ACTIONS[1]: np.full(6, 0.1)}, run=k, errors=errors, result=result)
            k += 1
    rows = {x["loss"]: x for x in nova.loss_rows(nova.read(tmp_path))}
    assert rows["0%"]["failed"] == (0, 30, 0, 5) and rows["10%"]["failed"] == (10, 30, 1, 5)
    assert rows["10%"]["spread"].lo > 0 and rows["10%"]["diff"].value > 0
    table = nova.loss(tmp_path)
    assert "| 10 of 30 (33%, [19%, 51%]) | 1 of 5 |" in table, table
    assert "errors: seen" in nova.findings(tmp_path) and "variance: agrees (more)" in nova.findings(tmp_path)


@pytest.mark.parametrize("k,n,lo,hi", [(0, 20, 0.0, 0.1611), (10, 30, 0.1923, 0.5122), (5, 5, 0.5655, 1.0)])
def test_wilson_interval(k, n, lo, hi):
    nova = _nova()
    got = nova.wilson(k, n)
    assert math.isclose(got[0], lo, abs_tol=1e-3) and math.isclose(got[1], hi, abs_tol=1e-3), got


def test_scale_fit_is_memory_over_a_region_and_says_no_region_without_one():
    mod = load("nova_scale", DOCS.parent / "bench" / "nova_scale.py")
    assert mod.fit(20_000, 1_000, headroom_mib=2_048) == 17
    assert mod.fit(1_000, 1_000) == 0 and mod.fit(20_000, math.nan) == 0
    log = ("[     4s] trial 1/1 t000 (x) Provisioning: openstack-db r1 up (1s)\n"
           "[    70s] trial 1/1 t000 (x) Provisioning: nova r2 up: api ×1, conductor, scheduler (15s)\n"
           "[    90s] trial 1/1 t000 (x) Injecting: 11 stage(s) deployed: namespaces, database\n"
           "[   120s] trial 1/1 t000 (x) Injecting: 11 stage(s) deployed: again\n")
    deployed, ups = mod.stages(log)
    assert deployed == 90.0 and [t for t, _ in ups] == [4.0, 70.0]


def _ctl(n: int, files: int, limit: int, up: int | None = None, said: dict | None = None, failed: int = 0) -> dict:
    return {"benchmark": f"nova-ctl-{n}-2", "tenants": 2, "broker_fds": limit, "computes_up": n if up is None else up,
            "broker_peak": {"files": files, "sockets": files - 30, "limit": limit}, "broker_said": said or {},
            "iterations": 4, "failed_iterations": failed, "mean_iteration_s": 3.0 if failed < 4 else None,
            "deploy_s": 60.0}


def test_the_controller_block_fits_the_brokers_files_per_compute_and_says_where_the_limit_falls(tmp_path):
    """Files = 40 + 5 per compute under a 200-file limit at 10 and 20 computes; at 40 computes the broker is at its
    limit (its alarm said so, every boot failed): the fit reads 5 per compute, predicts 32 computes at 200 files and
    the 1024 default's 197, and the runs are sorted into under and out of descriptors. A run at the limit is not
    fitted (its files are the limit, not the computes' demand)."""
    import json
    nova = _nova()
    runs = [_ctl(10, 90, 200), _ctl(20, 140, 200), _ctl(40, 200, 200, said={"alarm_at": "2026-11-30 20:18:23.1"},
                                                          failed=4)]
    f = tmp_path / "ctl.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in runs))
    text = nova.controller(path=f)
    assert "**5.00 per compute** over 40" in text and "32 computes at 200 files" in text
    assert "197 computes at 1024 files" in text
    assert "under the limit with 10, 20 computes, out of descriptors with 40" in text
    assert "| 40 | 2 | 200 | yes | 40 | 200 (170) of 200: **at the limit** | alarm 20:18:23 | 0 / 4 | — | — |" in text
    assert "| 10 | 2 | 200 | yes | 10 | 90 (60) of 200: under | — | 4 / 4 | 3.00 | 0.67 |" in text  # 2 tenants / 3 s
    # the limit brackets a compute's demand: held at 20, out at 40 → (200 − 40) / 40 to / 20 = 4.0 to 8.0 files, so
    # 123 to 246 computes at 1024: the study's 148 inside
    assert "between **4.0 and 8.0 files**" in text and "**123 to 246 computes**" in text
    assert "ran out near 148: agrees" in text
    held = [_ctl(10, 90, 200), _ctl(30, 190, 200), _ctl(33, 200, 200, failed=4)]  # 5.1–5.3: at 1024, 185–192
    f.write_text("".join(json.dumps(r) + "\n" for r in held))
    assert "ran out near 148: contradicts" in nova.controller(path=f)
    # a compute that never came up is said so, and is not fitted either
    f.write_text("".join(json.dumps(r) + "\n" for r in [*runs, _ctl(30, 150, 200, up=12)]))
    assert "| 30 | 2 | 200 | **no** | 12 |" in nova.controller(path=f)
    assert "**5.00 per compute**" in nova.controller(path=f)
    assert nova.controller(path=tmp_path / "none.jsonl").startswith("*Not measured yet")
