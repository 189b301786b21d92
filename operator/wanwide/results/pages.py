"""Text of the report's report.md and index.html, from tables and figures already made."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .stats import PointTable

_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1400px}table.t{border-collapse:collapse;font-size:12px}"
    "table.t td,table.t th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%;border:1px solid #eee}"
    ".note{background:#fff6d5;padding:.5em 1em}"
)


@dataclass
class ReportContent:
    """Everything report.md and index.html show."""

    sources: list[str | Path]  # as given to build_report
    n_inputs: int  # bundles and plain Rally JSON files read
    n_iterations: int
    n_rows: int
    params_sources: list[str]  # the table's distinct params_source values
    from_names: bool  # some parameters came from file names or a sidecar, not manifests
    summary: pd.DataFrame
    points: list[PointTable]
    read_write: pd.DataFrame
    rtt: pd.DataFrame
    runs: pd.DataFrame
    bars: list[Path]
    cdfs: list[Path]
    rtt_png: Path | None


# ---------------------------------------------------------------- report.md
def markdown_table(df: pd.DataFrame, floatfmt: str = "{:.4f}") -> str:
    """``df`` as a Markdown table; floats formatted with ``floatfmt``, nulls empty."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, float | np.floating):
                cells.append("" if np.isnan(v) else floatfmt.format(v))
            else:
                cells.append("" if v is None or v is pd.NA else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _md_intro(c: ReportContent) -> list[str]:
    """Title, where parameters came from, and what was read."""
    md: list[str] = ["# wanwide report", ""]
    if c.from_names:
        md += [f"> Parameters of plain Rally JSON files came from **{' / '.join(h for h in c.params_sources if h != 'manifest')}**"
               " (file names or a sidecar params.yaml), not from bundle manifests.", ""]
    md += [f"Sources: {', '.join(map(str, c.sources))}; {c.n_inputs} file(s)/bundle(s), "
           f"{c.n_iterations} iterations, {c.n_rows} rows.", ""]
    return md


def _md_point(p: PointTable) -> list[str]:
    """Section of one scenario and parameter point: iterations, failure rate, describe table."""
    it, fr = p.iterations, p.failure_rate
    return [f"## {p.scenario} — {p.label}", "",
            f"iterations {int(it) if pd.notna(it) else 0}, "
            f"failure rate λ = {fr:.3f}" if pd.notna(fr) else "no iterations", "",
            markdown_table(p.table), ""]


def report_markdown(c: ReportContent) -> str:
    """The text of report.md."""
    md = _md_intro(c)
    for p in c.points:
        md += _md_point(p)
    rw, rtt = c.read_write, c.rtt
    md += ["## Reads and writes per scenario (MariaDB/Galera statement counters)", "",
           markdown_table(rw, "{:.2f}") if len(rw) else "No database counters in these results.", ""]
    md += ["## Requested vs measured RTT", "",
           markdown_table(rtt, "{:.3f}") if len(rtt) else "No RTT measurements in these results.", ""]
    return "\n".join(md) + "\n"


# ---------------------------------------------------------------- index.html
def html_table(df: pd.DataFrame) -> str:
    """``df`` as an HTML table (class ``t``; floats to 4 significant digits, nulls empty)."""
    return df.to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4g}", border=0, classes="t")


def _html_intro(c: ReportContent) -> list[str]:
    """Head, title, what was read, where parameters came from, links to the files."""
    e = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>wanwide report</title><style>{_STYLE}</style></head><body>",
        "<h1>wanwide report</h1>",
        f"<p>Sources: {e(', '.join(map(str, c.sources)))} — {c.n_inputs} bundle(s)/file(s), "
        f"{c.n_iterations} iterations.</p>",
    ]
    if c.from_names:
        parts.append("<p class='note'>Parameters of plain Rally JSON files came from file names or a sidecar "
                     "params.yaml, not from bundle manifests (see column <code>params_source</code>).</p>")
    parts.append("<p>Files: <a href='summary.csv'>summary.csv</a> · <a href='report.md'>report.md</a> · "
                 "<a href='results.parquet'>results.parquet</a> · <a href='read_write.csv'>read_write.csv</a> · "
                 "<a href='rtt.csv'>rtt.csv</a> · <a href='runs.csv'>runs.csv</a> · tables/</p>")
    return parts


def _html_images(title: str, pngs: list[Path]) -> list[str]:
    """A section of images, or nothing without images."""
    if not pngs:
        return []
    return [f"<h2>{title}</h2>", *(f"<p><img src='{html.escape(p.name)}'></p>" for p in pngs)]


def index_html(c: ReportContent) -> str:
    """The text of index.html."""
    parts = _html_intro(c)
    if len(c.runs):
        parts += ["<h2>Runs</h2>", html_table(c.runs)]
    parts += ["<h2>Summary (seconds; successful iterations; failure rate per iteration)</h2>", html_table(c.summary)]
    parts += _html_images("Mean time per atomic action (values above p95 dropped)", c.bars)
    parts += _html_images("CDF of total iteration time", c.cdfs)
    parts += ["<h2>Reads/writes per scenario, next to the 2018 study</h2>",
              html_table(c.read_write) if len(c.read_write) else "<p>No database counters.</p>"]
    parts += ["<h2>Requested vs measured RTT</h2>", html_table(c.rtt) if len(c.rtt) else "<p>No RTT measurements.</p>"]
    if c.rtt_png:
        parts.append(f"<p><img src='{c.rtt_png.name}'></p>")
    parts.append("</body></html>")
    return "\n".join(parts)
