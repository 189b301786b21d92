"""index.html from the Jinja2 template (autoescaped) and each figure as PNG and SVG."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

from tests.results.conftest import DATA
from wanwide.pipeline.results.report import build_report

V12 = "mariadb-3-100ms-light-20261122.json"


def test_svg_beside_every_png_and_stable(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DATA / V12, src / V12)
    a = build_report([src], tmp_path / "a", progress=False, store_parquet_beside=False)
    build_report([src], tmp_path / "b", progress=False, store_parquet_beside=False)
    pngs = sorted(p.name for p in (tmp_path / "a").glob("*.png"))
    svgs = sorted(p.name for p in (tmp_path / "a").glob("*.svg"))
    assert pngs and svgs == [p.replace(".png", ".svg") for p in pngs]
    assert {tmp_path / "a" / s for s in svgs} <= set(a.files)
    for s in svgs:
        text = (tmp_path / "a" / s).read_text()
        ET.fromstring(text)  # well-formed
        assert text == (tmp_path / "b" / s).read_text(), f"{s} differs between two runs"
    cdf = next(s for s in svgs if s.startswith("cdf-"))
    assert "total iteration time" in (tmp_path / "a" / cdf).read_text()  # the same plot: its axis label


def test_index_links_figures_and_escapes(tmp_path):
    src = tmp_path / "<img src=x onerror=alert(1)>"
    src.mkdir()
    shutil.copy(DATA / V12, src / V12)
    build_report([src], tmp_path / "out", progress=False, store_parquet_beside=False)
    html = (tmp_path / "out" / "index.html").read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    cdf = next((tmp_path / "out").glob("cdf-*.png")).name
    assert f'<img src="{cdf[:-4]}.svg"' in html and f'<a href="{cdf}">PNG</a>' in html
    assert '<table class="dataframe t">' in html  # the tables, not escaped into text
