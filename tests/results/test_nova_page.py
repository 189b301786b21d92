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


def _ctl(n: int, files: int, limit: int, up: int | None = None, said: dict | None = None, failed: int = 0,
         users: int | None = None) -> dict:
    return {"benchmark": f"nova-ctl-{n}-2", "tenants": 2, "broker_fds": limit, "computes_up": n if up is None else up,
            "broker_peak": {"files": files, "sockets": files - 30, "limit": limit}, "broker_said": said or {},
            "iterations": 4, "failed_iterations": failed, "mean_iteration_s": 3.0 if failed < 4 else None,
            "deploy_s": 60.0, **({"users_per_tenant": users} if users else {}),
            "errors": {"ClientException: Unexpected API Error.\n<class 'oslo_messaging.exceptions.MessageDeliveryFailure'>"
                       " (HTTP ": failed} if failed else {}}


def _write(f, runs) -> None:
    import json
    f.write_text("".join(json.dumps(r) + "\n" for r in runs))


def test_the_controller_block_fits_the_brokers_files_per_compute_and_says_where_the_limit_falls(tmp_path):
    """Files = 40 + 5 per compute under a 200-file limit at 10 and 20 computes; at 40 computes the broker is at its
    limit (its alarm said so, every boot failed): the fit reads 5 per compute, predicts 32 computes at 200 files and
    the 1024 default's 197, and the runs are sorted into under and out of descriptors. A run at the limit is not
    fitted (its files are the limit, not the computes' demand)."""
    nova = _nova()
    runs = [_ctl(10, 90, 200), _ctl(20, 140, 200), _ctl(40, 200, 200, said={"alarm_at": "2026-11-30 20:18:23.1"},
                                                          failed=4)]
    f = tmp_path / "ctl.jsonl"
    _write(f, runs)
    text = nova.controller(path=f)
    assert "**5.00 per compute** (no interval: 2 runs) over 40" in text and "32 computes at 200 files" in text
    assert "197 computes at 1024 files" in text
    assert "under the limit in every run with 10 (1), 20 (1) computes, out of descriptors in every run with 40 (1)" in text
    assert ("| 40 | 2 × 1 | 200 | 1 | all | 200 (170) | **1 of 1** | alarm in 1 | 0 / 4 | "
            "ClientException (MessageDeliveryFailure) ×4 | — | — |") in text
    assert "| 10 | 2 × 1 | 200 | 1 | all | 90 (60) | none | — | 4 / 4 | — | 3.00 | 0.67 |" in text  # 2 tenants / 3 s
    # the limit brackets a compute's demand: held at 20, out at 40 → (200 − 40) / 40 to / 20 = 4.0 to 8.0 files, so
    # 123 to 246 computes at 1024: the study's 148 inside
    assert "between **4.0 and 8.0 files**" in text and "**123 to 246 computes**" in text
    assert "ran out near 148: agrees" in text
    held = [_ctl(10, 90, 200), _ctl(30, 190, 200), _ctl(33, 200, 200, failed=4)]  # 5.1–5.3: at 1024, 185–192
    _write(f, held)
    assert "ran out near 148: contradicts" in nova.controller(path=f)
    # a compute that never came up is said so, and is not fitted either
    _write(f, [*runs, _ctl(30, 150, 200, up=12)])
    assert "| 30 | 2 × 1 | 200 | 1 | **0 of 1** |" in nova.controller(path=f)
    assert "**5.00 per compute**" in nova.controller(path=f)
    assert nova.controller(path=tmp_path / "none.jsonl").startswith("*Not measured yet")


def test_repeated_runs_give_the_fit_intervals_widen_the_bracket_and_test_it_at_another_limit(tmp_path):
    """Files = 40 + 5n ± 2 over nine runs under their limits (three at 10 and at 20 computes, two at 30, one at 50),
    two out of descriptors at 40 under 200 files, 30 out in one of its two runs there. The fit's intervals by hand
    (s = √(16 / 7), Sxx = 1355.6, t(0.975, 7) = 2.365): 5 ± 0.10 per compute, base 40 ± 2.5; the bracket from 20
    (held 3 of 3) and 40 (out 2 of 2) widened by the base's interval: (200 − 42.5) / 40 = 3.9 to (200 − 37.5) / 20 =
    8.1 files; at 1024, 121 to 250 computes. At 400 files it holds below (400 − 42.5) / 8.12 = 44 and runs out from
    (400 − 37.5) / 3.94 = 92 computes: 20 out contradicts, 30 held agrees, 50 held cannot tell, 120 out agrees."""
    nova = _nova()
    runs = [_ctl(10, y, 200) for y in (88, 90, 92)] + [_ctl(20, y, 200) for y in (138, 140, 142)]
    runs += [_ctl(40, 200, 200, failed=4)] * 2 + [_ctl(30, 190, 200), _ctl(30, 200, 200, failed=4)]
    runs += [_ctl(20, 400, 400, failed=4), _ctl(30, 190, 400), _ctl(50, 290, 400), _ctl(120, 400, 400, failed=4)]
    f = tmp_path / "ctl.jsonl"
    _write(f, runs)
    text = nova.controller(path=f)
    assert "**5.00 per compute** [4.90, 5.10] over 40 [38, 42]" in text and "the 9 runs" in text
    assert "| 10 | 2 × 1 | 200 | 3 | all | 90 [88–92] (60 [58–62]) | none |" in text
    assert "| 30 | 2 × 1 | 200 | 2 | all | 195 [190–200] (165 [160–170]) | **1 of 2** |" in text
    assert "with 30, out in 1 of 2 runs" in text
    assert "held with 20 computes in 3 of 3 runs and ran out with 40 in 2 of 2" in text
    assert "between **3.9 and 8.1 files**" in text and "**121 to 250 computes**" in text
    both = "at 400 files (held below 44, out from 92): predicted to"
    assert f"20 computes {both} hold, ran out in 1 run: **contradicts**" in text
    assert f"30 computes {both} hold, held in 1 run: **agrees**" in text
    assert f"50 computes {both} either, held in 1 run: **cannot tell**" in text
    assert f"120 computes {both} run out, ran out in 1 run: **agrees**" in text
    # users per tenant are a point of their own
    _write(f, [_ctl(10, 90, 200), _ctl(10, 95, 200, users=10)])
    assert "| 10 | 2 × 10 | 200 | 1 |" in nova.controller(path=f)


def _scale(n: int, lost: float, deploy: float = 90.0) -> dict:
    return {"regions": n, "result": "succeeded", "deploy_s": deploy, "wall_s": deploy + 70,
            "available_before_mib": 20_000.0, "available_min_mib": 20_000.0 - lost, "iterations": 2,
            "failed_iterations": 0, "cpu_pressure_pct": 5.0,
            "memory": {f"r{i + 1}": {"processes": 24, "pss_mib": 1_300.0, "rss_mib": 1_700.0} for i in range(n)}}


def test_the_scale_block_reads_memory_per_region_with_its_interval_and_tests_it_at_a_larger_count(tmp_path):
    """Three 3-region runs losing 3,000 ± 300 MiB: 1,000 MiB a region, sd 100, t(0.975, 2) = 4.303, so
    [752, 1,248]; (20,000 − 2,048) / that = 18 regions [14, 24]. An 8-region run losing 8,000 MiB lies in 8 × the
    interval (agrees); one losing 12,000 does not (more than predicted)."""
    nova = _nova()
    f = tmp_path / "scale.jsonl"
    _write(f, [_scale(3, 3_000, 88), _scale(3, 2_700, 90), _scale(3, 3_300, 92), _scale(8, 8_000, 200)])
    text = nova.scale(path=f)
    assert "| 3 | 3 | 3 | 90 [85, 95] |" in text  # deploy 88/90/92: sd 2, 4.303 × 2 / √3 = 5.0
    assert "| 1,000 [752, 1,248] |" in text
    assert "**18 regions** [14, 24]" in text
    assert "[6,013, 9,987] MiB lost predicted, 8,000 MiB measured: **agrees**" in text
    _write(f, [_scale(3, 3_000), _scale(3, 2_700), _scale(3, 3_300), _scale(8, 12_000)])
    assert "12,000 MiB measured: **more than predicted**" in nova.scale(path=f)
    _write(f, [_scale(3, 3_000)])
    assert "(one run: no interval)" in nova.scale(path=f)
    assert nova.scale(path=tmp_path / "none.jsonl").startswith("*Not measured yet")


def test_the_runs_of_the_spinning_lab_and_of_the_fixed_one_are_fitted_apart(tmp_path):
    """Until 2e31b72 the lab's loop spun a core through each warm-up; runs from then on record their harness. The
    two labs' runs are separate points and separate fits: a fixed-lab sweep of 4 + 6 per compute beside an earlier
    one of 40 + 5."""
    nova = _nova()
    old = [_ctl(10, 90, 200), _ctl(20, 140, 200)]
    new = [{**_ctl(10, 64, 200), "harness": {"commit": "x", "dirty": False}},
           {**_ctl(20, 124, 200), "harness": {"commit": "x", "dirty": False}}]
    f = tmp_path / "ctl.jsonl"
    _write(f, old + new)
    text = nova.controller(path=f)
    assert "*The lab until 2e31b72*: the broker's peak open files, sampled every 2 s, grow by **5.00 per compute**" in text
    assert "*The lab from 2e31b72*: the broker's peak open files, sampled every 2 s, grow by **6.00 per compute**" in text
    assert "| until 2e31b72 | 10 | 2 × 1 | 200 | 1 |" in text and "| from 2e31b72 | 10 | 2 × 1 | 200 | 1 |" in text
