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


ANNOUNCED = {256: "approx 159 file handles (141 sockets)", 20000: "approx 19903 file handles (17910 sockets)"}
# what RabbitMQ 3.10 (Debian) said at boot under each limit (docs/data/nova-controller.jsonl)


def _ctl(n: int, sockets: int, limit: int, up: int | None = None, said: dict | None = None, failed: int = 0,
         users: int | None = None, files: int | None = None) -> dict:
    return {"benchmark": f"nova-ctl-{n}-2", "tenants": 2, "broker_fds": limit, "computes_up": n if up is None else up,
            "broker_peak": {"files": files or sockets + 31, "sockets": sockets, "limit": limit},
            "broker_said": {**({"announced": ANNOUNCED[limit]} if limit in ANNOUNCED else {}), **(said or {})},
            "iterations": 4, "failed_iterations": failed, "mean_iteration_s": 3.0 if failed < 4 else None,
            "deploy_s": 60.0, **({"users_per_tenant": users} if users else {}),
            "errors": {"ClientException: Unexpected API Error.\n<class 'oslo_messaging.exceptions.MessageDeliveryFailure'>"
                       " (HTTP ": failed} if failed else {}}


def _write(f, runs) -> None:
    import json
    f.write_text("".join(json.dumps(r) + "\n" for r in runs))


ALARM = {"alarm_at": "2026-11-30 20:18:23.1"}


def test_rabbitmqs_socket_limit_is_what_it_announced_else_its_rule_over_the_handles_it_keeps():
    """RabbitMQ lets connections obtain trunc(0.9 × handles − 2) sockets, its handles 97 below the open-file limit
    (announced: 256 → 159 / 141, 20000 → 19903 / 17910): 1024 → 927 handles, 832 sockets; 512 → 371."""
    nova = _nova()
    seen = nova.announced([_ctl(10, 60, 256), _ctl(10, 60, 20000)])
    assert seen == {256: (159, 141), 20000: (19903, 17910)}
    assert nova.socket_limit(256, seen) == (141, "announced")
    assert nova.socket_limit(1024, seen)[0] == 832 and nova.socket_limit(512, seen)[0] == 371
    # the rule over its own announcements: trunc(0.9 × 159 − 2) = 141, trunc(0.9 × 19903 − 2) = 17910
    assert all(nova.socket_limit(f, {g: v for g, v in seen.items() if g != f})[0] == seen[f][1] for f in seen)
    with pytest.raises(ValueError, match="none announced"):
        nova.socket_limit(1024, {})


def test_the_controller_block_fits_the_brokers_sockets_per_compute_and_says_where_the_limit_falls(tmp_path):
    """Sockets = 20 + 4 per compute at 10 and 20 computes under 256 files (141 sockets announced); at 40 computes the
    broker's alarm went off and every boot failed: the fit reads 4 per compute, meets 141 at 30 computes and the
    1024 default's 832 at 203. The bracket: held at 20, out at 40, (141 − 20) / 40 = 3.0 to / 20 = 6.0 sockets a
    compute; at 1024, 812 / 6.05 = 134 to 812 / 3.025 = 268 computes: the study's 148 inside. A run at its limit is
    not fitted (its sockets are where the broker stopped, not the computes' demand)."""
    nova = _nova()
    runs = [_ctl(10, 60, 256), _ctl(20, 100, 256), _ctl(40, 225, 256, said=ALARM, failed=4, files=256)]
    f = tmp_path / "ctl.jsonl"
    _write(f, runs)
    text = nova.controller(path=f)
    assert "**4.00 per compute** (no interval: 2 runs) over 20" in text
    assert "30 computes at 256 files (141 sockets, announced)" in text
    assert "203 computes at 1024 files (832 sockets, by RabbitMQ's rule, 97 handles kept below the limit)" in text
    assert "under the limit in every run with 10 (1), 20 (1) computes, out of descriptors in every run with 40 (1)" in text
    assert ("| 40 | 2 × 1 | 256 | 1 | all | 256 (225) | **1 of 1** | alarm in 1 | 0 / 4 | "
            "ClientException (MessageDeliveryFailure) ×4 | — | — |") in text
    assert "| 10 | 2 × 1 | 256 | 1 | all | 91 (60) | none | — | 4 / 4 | — | 3.00 | 0.67 |" in text  # 2 tenants / 3 s
    assert "between **3.0 and 6.0 sockets**" in text and "**134 to 268 computes**" in text
    assert "ran out near 148: agrees" in text
    held = [_ctl(10, 60, 256), _ctl(25, 120, 256), _ctl(27, 200, 256, said=ALARM, failed=4)]  # 4.5–4.8: 168–181
    _write(f, held)
    assert "**168 to 181 computes**; the 2014 study's broker ran out near 148: contradicts" in nova.controller(path=f)
    # a compute that never came up is said so, and is not fitted either
    _write(f, [*runs, _ctl(30, 150, 256, up=12)])
    assert "| 30 | 2 × 1 | 256 | 1 | **0 of 1** |" in nova.controller(path=f)
    assert "**4.00 per compute**" in nova.controller(path=f)
    assert nova.controller(path=tmp_path / "none.jsonl").startswith("*Not measured yet")


def test_repeated_runs_give_the_fit_intervals_widen_the_bracket_and_test_it_at_another_limit(tmp_path):
    """Sockets = 20 + 4n ± 2 over nine runs under their limits (three at 10 and at 20 computes, two at 30, one at
    50), two out of descriptors at 40 under 256 files, 30 out in one of its two runs there. The fit's intervals by
    hand (s = √(16 / 7), Sxx = 1355.6, t(0.975, 7) = 2.365): 4 ± 0.10 per compute, base 20 ± 2.5; the bracket from
    20 (held 3 of 3) and 40 (out 2 of 2) widened by the base's interval: (141 − 22.5) / 40 = 3.0 to (141 − 17.5) /
    20 = 6.2 sockets; at 1024 (832), 131 to 275 computes. At 512 files (371 sockets by the rule) it holds below
    (371 − 22.5) / 6.17 = 56 and runs out from (371 − 17.5) / 2.96 = 119 computes: 20 out contradicts, 30 and 50
    held agree, 80 out cannot tell, 120 out agrees. The line at 512 fitted without 512's runs (its 7 runs at 256
    under the limit) meets 371 sockets at 88 [83, 92]."""
    nova = _nova()
    runs = [_ctl(10, y, 256) for y in (58, 60, 62)] + [_ctl(20, y, 256) for y in (98, 100, 102)]
    runs += [_ctl(40, 225, 256, said=ALARM, failed=4)] * 2 + [_ctl(30, 140, 256), _ctl(30, 150, 256, said=ALARM)]
    runs += [_ctl(20, 371, 512, said=ALARM, failed=4), _ctl(30, 140, 512), _ctl(50, 220, 512),
             _ctl(80, 371, 512, said=ALARM, failed=4), _ctl(120, 371, 512, said=ALARM, failed=4)]
    f = tmp_path / "ctl.jsonl"
    _write(f, runs)
    text = nova.controller(path=f)
    assert "**4.00 per compute** [3.90, 4.10] over 20 [18, 22]" in text and "the 9 runs" in text
    # where the line meets each limit, its interval by the delta method (var(a) = s²(1/n + x̄²/Sxx), var(b) = s²/Sxx,
    # cov = −x̄ s²/Sxx; x̄ = 22.2): 141 → 30.25 ± 0.36, 371 → 87.75 ± 1.6, 832 → 203 ± 4.4
    assert "30 [30, 31] computes at 256 files (141 sockets, announced)" in text
    assert "88 [86, 89] computes at 512 files (371 sockets, by RabbitMQ's rule" in text
    assert "203 [199, 207] computes at 1024 files (832 sockets" in text
    # each limit tested out of sample where the other limits' runs give a line with an interval: at 256 the runs at
    # 512 under it are two (30, 50: no interval), so the pooled line, said; at 512 the 7 runs at 256 under it
    # (x̄ = 17.14, Sxx = 342.9, s = √(16/5), t(0.975, 5) = 2.571): 4.00 over 20, 371 → 87.75 ± 4.4
    assert ("at 256 files the line fitted with its runs (4.00 a compute over 20, 9 runs) meets the limit at 30 [30, 31] "
            "computes, the broker held in every run up to 20 and ran out in every run from 40: **agrees**") in text
    assert ("at 512 files the line fitted without its runs (4.00 a compute over 20, 7 runs) meets the limit at 88 "
            "[83, 92] computes") in text and "from 20: **contradicts**" in text
    assert ("it predicts 203 [199, 207] computes; the 2014 study's broker ran out near 148: **contradicts: the study's "
            "broker ran out at 73% of what this line predicts**") in text
    assert "| 10 | 2 × 1 | 256 | 3 | all | 91 [89–93] (60 [58–62]) | none |" in text
    assert "| 30 | 2 × 1 | 256 | 2 | all | 176 [171–181] (145 [140–150]) | **1 of 2** |" in text
    assert "with 30, out in 1 of 2 runs" in text
    assert "held with 20 computes in 3 of 3 runs and ran out with 40 in 2 of 2" in text
    assert "between **3.0 and 6.2 sockets**" in text and "**131 to 275 computes**" in text
    both = "at 512 files (held below 56, out from 119): predicted to"
    assert f"20 computes {both} hold, ran out in 1 run: **contradicts**" in text
    assert f"30 computes {both} hold, held in 1 run: **agrees**" in text
    assert f"50 computes {both} hold, held in 1 run: **agrees**" in text
    assert f"80 computes {both} either, ran out in 1 run: **cannot tell**" in text
    assert f"120 computes {both} run out, ran out in 1 run: **agrees**" in text
    # users per tenant are a point of their own
    _write(f, [_ctl(10, 60, 256), _ctl(10, 65, 256, users=10)])
    assert "| 10 | 2 × 10 | 256 | 1 |" in nova.controller(path=f)


def test_the_runs_of_the_spinning_lab_and_of_the_fixed_one_are_fitted_apart(tmp_path):
    """Until 2e31b72 the lab's loop spun a core through each warm-up; runs from then on record their harness. The
    two labs' runs are separate points and separate fits: a fixed-lab sweep of 10 + 5 per compute beside an earlier
    one of 20 + 4."""
    nova = _nova()
    fixed = {"harness": {"commit": "x", "dirty": False}}
    f = tmp_path / "ctl.jsonl"
    _write(f, [_ctl(10, 60, 256), _ctl(20, 100, 256), {**_ctl(10, 60, 256), **fixed}, {**_ctl(20, 110, 256), **fixed}])
    text = nova.controller(path=f)
    assert "*The lab until 2e31b72*: the broker's peak open sockets, sampled every 2 s, grow by **4.00 per compute**" in text
    assert "*The lab from 2e31b72*: the broker's peak open sockets, sampled every 2 s, grow by **5.00 per compute**" in text
    assert "| until 2e31b72 | 10 | 2 × 1 | 256 | 1 |" in text and "| from 2e31b72 | 10 | 2 × 1 | 256 | 1 |" in text


def _scale(n: int, lost: float, deploy: float = 90.0) -> dict:
    return {"regions": n, "result": "succeeded", "deploy_s": deploy, "wall_s": deploy + 70,
            "available_before_mib": 20_000.0, "available_min_mib": 20_000.0 - lost, "headroom_mib": 2_048,
            "iterations": 2,
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


def test_a_run_whose_trial_failed_says_why_and_is_not_fitted(tmp_path):
    """The first 100-tenant × 10-user run hit its Benchmark's own loading timeout: no bundle, so no computes counted
    and no iterations; the table says the trial failed and why, and nothing of it enters a fit."""
    nova = _nova()
    lost = {**_ctl(10, 82, 256, up=0, users=10), "iterations": None, "failed_iterations": None,
            "trial": {"result": "failed", "reason": "LoadingTimeout: Loading took longer than its timeout"}}
    f = tmp_path / "ctl.jsonl"
    _write(f, [_ctl(10, 60, 256), _ctl(20, 100, 256), lost])
    text = nova.controller(path=f)
    assert "| 10 | 2 × 10 | 256 | 1 | **0 of 1**; **trial failed**: LoadingTimeout: Loading took longer" in text
    assert "— (no load)" in text and "**4.00 per compute** (no interval: 2 runs)" in text
