"""docs/results-study.md's hand-written counts — the intro's trials of rounds 6–8 and noisy runs, the
Multiplicity bullet's trials left to run, the WAN bullet's and "During the load"'s watched trials and probes —
are the committed data set's. The generated blocks are checked in test_study_page; these sentences are written
by hand after each sitting and went stale twice (stops 69 and 70), so they are counted here from
`runs.csv` and the manifests, not from the generator."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pandas as pd

DOCS = Path(__file__).resolve().parents[2] / "docs"
DATA = DOCS / "data" / "study"
MORE = 90  # rounds 6–8: `--more-rounds 3` of study.yaml's 30 trials per round
FIRST_NEW = 5  # 0-based repetition of round 6


def _page() -> str:
    return (DOCS / "results-study.md").read_text()


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def _runs() -> pd.DataFrame:
    runs = pd.read_csv(DATA / "runs.csv")
    return runs[runs["result"] == "succeeded"]


def _watch() -> tuple[int, int, int]:
    """Rounds 6–8's watched trials (a trial once: its first succeeded run's watch), probes sent, probes lost."""
    seen: dict[tuple[str, str], list[dict]] = {}
    for m in json.loads(gzip.decompress((DATA / "manifests.json.gz").read_bytes())):
        if m["trial"].get("repetition", 0) < FIRST_NEW or m.get("status", {}).get("result") == "failed":
            continue
        pairs = m.get("network", {}).get("during", {}).get("pairs")
        if pairs:
            seen.setdefault((m["benchmark"], m["trial"]["id"]), pairs)
    sent = sum(p["sent"] for pairs in seen.values() for p in pairs)
    lost = sum(p["lost"] for pairs in seen.values() for p in pairs)
    return len(seen), sent, lost


def _check_intro(page: str) -> None:
    runs = _runs()
    new = runs[runs["repetition"] >= FIRST_NEW][["benchmark", "trial"]].drop_duplicates()
    m = re.search(r"and (\d+) of\s+the 90 trials of rounds 6–8 in", page)
    assert m, "the intro's sentence on rounds 6–8 moved: update this test with it"
    assert int(m.group(1)) == len(new), f"intro: {m.group(1)} of 90 trials of rounds 6–8; the data set has {len(new)}"
    m = re.search(r"(\d+) of ([\d,]+) runs noisy", page)
    assert m, "the intro's noisy-runs count moved"
    assert (int(m.group(1)), _num(m.group(2))) == (int(runs["noisy"].sum()), len(runs)), \
        f"intro: {m.group(0)}; the data set: {int(runs['noisy'].sum())} of {len(runs)}"
    m = re.search(r"rounds 6–8: (\d+) of 90 trials\s+run, (\d+) to run", page)
    assert m, "the Multiplicity bullet's count moved"
    assert (int(m.group(1)), int(m.group(2))) == (len(new), MORE - len(new)), f"Multiplicity: {m.group(0)}"


def _check_wan(page: str) -> None:
    trials, sent, lost = _watch()
    bullet = re.search(r"load, the (\d+) trials of rounds 6–8 so far.*?(\d+) of ([\d,]+) probes lost", page, re.S)
    assert bullet, "the intro's WAN bullet moved"
    assert (int(bullet.group(1)), int(bullet.group(2)), _num(bullet.group(3))) == (trials, lost, sent), \
        f"WAN bullet: {bullet.group(1)} trials, {bullet.group(2)} of {bullet.group(3)} lost; data: {trials}, {lost} of {sent}"
    during = re.search(r"The (\d+) trials of rounds 6–8\s+so far measured it.*?([\d,]+) probes through the loads, "
                       r"none lost", page, re.S)
    assert during, "\"During the load\"'s sentence moved"
    assert (int(during.group(1)), _num(during.group(2))) == (trials, sent) and lost == 0, \
        f"During the load: {during.group(1)} trials, {during.group(2)} probes; data: {trials}, {sent}, {lost} lost"


def test_the_intro_counts_rounds_6_to_8_and_the_noisy_runs_as_the_data_set():
    _check_intro(_page())


def test_the_wan_sentences_count_the_watched_trials_and_probes_as_the_data_set():
    _check_wan(_page())


def _one_less(page: str, pattern: str) -> str:
    """The page with the first number of `pattern`'s first group one less: a sitting's count not yet updated."""
    m = re.search(pattern, page, re.S)
    assert m, pattern
    old = m.group(1)
    new = f"{_num(old) - 1:,}" if "," in old else str(_num(old) - 1)
    return page[:m.start(1)] + new + page[m.end(1):]


def test_the_counts_fail_on_a_stale_page():
    """The checks can fail: each hand-written count one less than the data set's (a sitting merged, the
    sentence not updated) is caught."""
    page = _page()
    for check, pattern in ((_check_intro, r"and (\d+) of\s+the 90 trials"),
                           (_check_intro, r"\d+ of ([\d,]+) runs noisy"),
                           (_check_intro, r"rounds 6–8: \d+ of 90 trials\s+run, (\d+) to run"),
                           (_check_wan, r"load, the (\d+) trials of rounds 6–8 so far"),
                           (_check_wan, r"0 of ([\d,]+) probes lost"),
                           (_check_wan, r"The (\d+) trials of rounds 6–8\s+so far measured it"),
                           (_check_wan, r"([\d,]+) probes through the loads")):
        stale = _one_less(page, pattern)
        assert stale != page
        try:
            check(stale)
        except AssertionError:
            continue
        raise AssertionError(f"{check.__name__} passed with {pattern!r} one less")
