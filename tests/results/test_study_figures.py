"""The 2018 study's figures read off (docs/data/study_figures.py → docs/data/study-2018-figures.csv): the reader
gets back, within a pixel, bars and curves drawn in the study's style with known values; the committed CSV is
whole and self-consistent; and, where the blog's repository is at hand (WANWIDE_STUDY_BLOG: its git dir), the
CSV is what the reader reads from the pinned figures."""

from __future__ import annotations

import importlib.util
import io
import os
import sys
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[2] / "docs" / "data"


def _module():
    sys.path.insert(0, str(DATA))
    spec = importlib.util.spec_from_file_location("study_figures", DATA / "study_figures.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["study_figures"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _draw(kind: str, panels: list) -> np.ndarray:
    """A 1200 × 400 figure of three panels in the study's style (seaborn darkgrid, its blue and green)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    with plt.style.context("seaborn-v0_8-darkgrid"):
        fig, axes = plt.subplots(1, 3, figsize=(12, 4), dpi=100, sharey=True)
        for ax, data in zip(axes, panels, strict=True):
            if kind == "bars":
                low, high = np.array(data[0]), np.array(data[1])
                ax.bar([0, 1, 2], low, width=1.0, color="#4C72B0")
                ax.bar([0, 1, 2], high, width=1.0, bottom=low, color="#55A868")
                ax.set_xticks([0, 1, 2], ["3", "9", "45"])
                ax.set_ylim(0, 0.45)
                ax.set_yticks([0.0, 0.1, 0.2, 0.3, 0.4])
            else:
                for xs, style, colour in zip(data, ("--", "-.", ":"), ("#4C72B0", "#55A868", "#C44E52"), strict=True):
                    xs = np.sort(xs)
                    ax.plot(xs, np.arange(1, len(xs) + 1) / len(xs), style, color=colour, drawstyle="steps-post")
                ax.set_xlim(-1.5, 28.5)
                ax.set_xticks([0, 5, 10, 15, 20, 25])
                ax.set_ylim(-0.05, 1.05)
                ax.set_yticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        plt.close(fig)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB")).astype(int)


def test_stacked_bars_are_read_back_within_a_pixel(monkeypatch):
    """Bars of known height in the study's style: the stack's top and the lower action come back within one
    pixel (the resolution the reader records); a bar of no height is recorded as below resolution."""
    sf = _module()
    panels = [([0.05, 0.06, 0.05], [0.07, 0.08, 0.30]), ([0.04, 0.05, 0.13], [0.08, 0.07, 0.28]),
              ([0.0, 0.0, 0.10], [0.0, 0.0, 0.25])]
    fig = sf.Figure(99, "synthetic", "bars", "authenticate", "high", "regions", (3, 9, 45), sf.AUTH)
    monkeypatch.setitem(sf.TICKS, 99, {"y": [0.4, 0.3, 0.2, 0.1]})
    for table in (sf.LABELS_MARIADB, sf.LABELS_GALERA, sf.LABELS_CRDB):
        monkeypatch.setitem(table, 99, (("0.01", "0.0"),) * 3)
    rows = sf.bars(fig, _draw("bars", panels))
    got = {(r["backend"], r["regions"], r["what"]): r for r in rows}
    for panel, backend in enumerate(sf.BACKENDS):
        low, high = panels[panel]
        for i, n in enumerate((3, 9, 45)):
            total = got[(backend, n, "Total")]
            if low[i] + high[i] == 0:
                assert total["value_s"] == "" and total["note"].startswith("below resolution")
                continue
            res = total["resolution_s"]
            assert abs(total["value_s"] - (low[i] + high[i])) <= 1.01 * res, (backend, n, total)
            assert abs(got[(backend, n, sf.AUTH[0])]["value_s"] - low[i]) <= 1.01 * res
            assert total["fit_px"] < 1.0


def test_a_cdf_is_read_at_its_shares_and_its_slowest_iteration(monkeypatch):
    """Curves with known quantiles: the time at 50 % and the slowest iteration come back within a pixel or two."""
    sf = _module()
    rng = np.random.default_rng(3)
    curves = [rng.uniform(2, 6, 200), rng.uniform(8, 12, 200), np.r_[rng.uniform(14, 16, 190), np.linspace(20, 26, 10)]]
    fig = sf.Figure(98, "synthetic", "cdf", "authenticate", "high", "regions", (3, 9, 45))
    monkeypatch.setitem(sf.TICKS, 98, {"y": [1.0, 0.8, 0.6, 0.4, 0.2, 0.0], "x": [0, 5, 10, 15, 20, 25]})
    rows = sf.cdfs(fig, _draw("cdf", [curves, curves, curves]))
    got = {(r["backend"], r["regions"], r["what"]): r for r in rows}
    for backend in sf.BACKENDS:
        for n, xs in zip((3, 9, 45), curves, strict=True):
            med = got[(backend, n, "time at cumulative share 0.5")]
            res = med["resolution_s"]
            assert abs(med["value_s"] - np.quantile(xs, 0.5)) <= 3 * res, (backend, n, med)
            slow = got[(backend, n, "slowest iteration")]
            assert abs(slow["value_s"] - xs.max()) <= 3 * res, (backend, n, slow)


def test_the_committed_reading_is_whole_and_adds_up():
    """Figures 7–18, every backend; each stack's actions add up to its top; every value within its axis and
    non-negative; σ and λ printed for every bar."""
    sf = _module()
    rows = sf.load()
    assert {int(r["figure"]) for r in rows} == set(range(7, 19))
    assert {r["backend"] for r in rows} == set(sf.BACKENDS)
    tops = {(r["figure"], r["backend"], r["regions"], r["delay_ms"]): r for r in rows if r["what"] == "Total"}
    for key, top in tops.items():
        assert top["sigma_s"] != "" and top["failure_rate"] != "", key
        if top["value_s"] == "":
            assert top["note"].startswith(("below resolution", "no bar")), key
            continue
        parts = [float(r["value_s"]) for r in rows if (r["figure"], r["backend"], r["regions"], r["delay_ms"]) == key
                 and r["what"].startswith("keystone_v3.")]
        assert len(parts) == 2 and abs(sum(parts) - float(top["value_s"])) < 1e-3, key
        assert float(top["value_s"]) > 0 and float(top["resolution_s"]) > 0 and float(top["fit_px"]) < 1.0
    # the values the page's findings rest on, as the study prints or states them
    by = {(int(r["figure"]), r["backend"], int(r["regions"]), int(r["delay_ms"]), r["what"]): r for r in rows}
    assert by[(8, "MariaDB", 45, 0, "Total")]["failure_rate"] == "0.98"
    assert abs(float(by[(8, "Galera", 45, 0, "Total")]["value_s"]) - 0.475) < 0.01  # "475 milliseconds"
    assert abs(float(by[(8, "Galera", 3, 0, "Total")]["value_s"]) - 0.120) < 0.005  # "from 120"
    assert 25 < float(by[(9, "Galera", 45, 0, "slowest iteration")]["value_s"]) <= 30  # "up to 30 second"


@pytest.mark.skipif(not os.environ.get("WANWIDE_STUDY_BLOG"), reason="WANWIDE_STUDY_BLOG (the blog's git dir) not set")
def test_the_csv_is_what_the_pinned_figures_give():
    sf = _module()
    got = sf.read(Path(os.environ["WANWIDE_STUDY_BLOG"]))
    committed = sf.load()
    assert len(got) == len(committed)
    for a, b in zip(got, committed, strict=True):
        assert {k: str(a.get(k, "")) for k in sf.COLUMNS} == b
