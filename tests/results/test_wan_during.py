"""The report's reading of the WAN through the load (runs.csv ``wan_*``): which pairs of regions were probed between
themselves, and how far the worst pair's median RTT and loss were from what the plan asked."""

from __future__ import annotations

from wanwide.pipeline.results.runs import runs_table, wan_during


def _pair(src: str, dst: str, median: float | None, sent: int, lost: int, rtt: float, loss: float = 0.0) -> dict:
    return {"src": src, "dst": dst, "kind": "database", "sent": sent, "lost": lost,
            "loss_pct": round(100 * lost / sent, 2), "median_ms": median, "requested_rtt_ms": rtt,
            "requested_loss_pct": loss}


def test_the_worst_pair_against_the_plan():
    during = {"targets": [], "coverage": {"pairs": 3, "of": 3, "how": "every pair of regions"},
              "pairs": [_pair("r1", "r2", 101.5, 20, 0, 100), _pair("r1", "r3", 100.2, 20, 1, 100, 5.0),
                        _pair("r2", "r3", 103.0, 20, 4, 100)]}
    assert wan_during({"during": during}) == ("3 of 3 pairs", 3.0, 20.0)
    # a loss the plan asks is not counted against the WAN
    during["pairs"][2] = _pair("r2", "r3", 103.0, 20, 1, 100, 5.0)
    assert wan_during({"during": during}) == ("3 of 3 pairs", 3.0, 0.0)


def test_a_sample_a_load_region_only_watch_and_no_watch_say_so():
    sample = {"targets": [], "coverage": {"pairs": 2, "of": 990, "how": "a random sample"},
              "pairs": [_pair("r4", "r9", 20.4, 10, 0, 20), _pair("r5", "r9", None, 10, 10, 20)]}
    assert wan_during({"during": sample}) == ("2 of 990 pairs", 0.4, 100.0)
    assert wan_during({"during": {"targets": [{"src": "r1"}], "coverage": {"how": "from the load region only"}}}) \
        == ("from the load region only", None, None)
    assert wan_during({}) == ("not watched", None, None)
    # a pair whose namespace could not be entered is not counted as watched
    unentered = {"src": "r1", "dst": "r2", "sent": 0, "lost": 0, "loss_pct": None, "median_ms": None,
                 "requested_rtt_ms": 20.0, "requested_loss_pct": 0.0, "error": "cannot enter /run/netns/x"}
    broken = {"targets": [], "coverage": {"pairs": 1, "of": 1}, "pairs": [unentered]}
    assert wan_during({"during": broken}) == ("from the load region only", None, None)


def test_runs_csv_carries_it():
    m = {"benchmark": "b", "trial": {"id": "t000"}, "region": "r1", "status": {"result": "succeeded"},
         "network": {"during": {"targets": [], "coverage": {"pairs": 1, "of": 1},
                                "pairs": [_pair("r1", "r2", 52.0, 10, 0, 50)]}}}
    row = runs_table([m]).iloc[0]
    assert (row["wan_watched"], row["wan_excess_ms_max"], row["wan_lost_pct_max"]) == ("1 of 1 pairs", 2.0, 0.0)
