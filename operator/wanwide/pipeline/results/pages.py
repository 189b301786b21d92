"""Text of the report's report.md and index.html, from tables and figures already made."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, Template
from markupsafe import Markup

from wanwide.pipeline.results.headline import LEGEND
from wanwide.pipeline.results.stats import PointTable

HTML_LINKS = ["summary.csv", "headline.csv", "load.csv", "report.md", "results.parquet", "read_write.csv", "rtt.csv",
              "runs.csv", "details.csv"]


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
    empty_workloads: list[str] = field(default_factory=list)  # "scenario (source)" without iterations
    growth: pd.DataFrame = field(default_factory=pd.DataFrame)  # headline.growth
    load: pd.DataFrame = field(default_factory=pd.DataFrame)  # headline.load_effect
    sentences: list[str] = field(default_factory=list)
    headline_pngs: list[Path] = field(default_factory=list)
    details: pd.DataFrame = field(default_factory=pd.DataFrame)
    noisy: list[tuple[str, str]] = field(default_factory=list)  # (benchmark, trial)
    noisy_excluded: bool = False
    partial: list[str] = field(default_factory=list)  # failed attempts whose succeeded runs were left out
    slo: pd.DataFrame = field(default_factory=pd.DataFrame)  # runs.slo_table: every run's objectives

    def slo_note(self) -> str:
        """How many objectives were met and missed, in words ("" when the runs recorded none)."""
        if not len(self.slo):
            return ""
        missed = self.slo[self.slo["met"].astype("boolean").eq(False).fillna(False).to_numpy(dtype=bool)]
        runs = missed["run_id"].nunique()
        return (f"{len(self.slo) - len(missed)} of {len(self.slo)} objectives met; "
                + (f"{len(missed)} missed in {runs} run(s) (their data are kept: reason SLAFailed)."
                   if len(missed) else "none missed."))

    def growth_table(self) -> pd.DataFrame:
        g = self.growth
        return g.drop(columns=[c for c in g.columns if c.startswith("_") or c in ("significant", "verdict")]) if len(g) else g

    def noise_note(self) -> str:
        """What the reader must know about noisy trials and left-out runs of failed attempts, or ""."""
        left = (f" Left out of every table: the succeeded runs of {len(self.partial)} failed attempt(s), measured "
                f"without the other regions' load ({'; '.join(self.partial)})." if self.partial else "")
        return (self._noisy_note() + left).strip()

    def _noisy_note(self) -> str:
        if not self.noisy:
            n = len(self.runs)
            return f"No noisy run among {n} (runs.csv: contention per run)." if n else ""
        names = ", ".join(f"{b}/{t}" for b, t in self.noisy)
        if self.noisy_excluded:
            return f"{len(self.noisy)} noisy trial(s) left out of every table and figure: {names}."
        return (f"Warning: {len(self.noisy)} trial(s) ran on a busy machine (noisy; see runs.csv, column "
                f"noisy_why) and are included: {names}. `--exclude-noisy` leaves them out.")


COLUMN_NOTES = (
    "Times in seconds over successful iterations. mean and median (p50) with their 95 % intervals "
    "(ci_method: bootstrap = BCa over the iterations of one run, normal = CLT for large samples, "
    "t-over-runs = each repetition one observation; the median's from order statistics); runs = "
    "repetitions behind the row."
)


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
    if c.empty_workloads:
        md += ["Workloads without iterations (in no table): " + "; ".join(c.empty_workloads) + ".", ""]
    return md


def _md_point(p: PointTable) -> list[str]:
    """Section of one scenario and parameter point: iterations, failure rate, describe table."""
    it, fr = p.iterations, p.failure_rate
    return [f"## {p.scenario} — {p.label}", "",
            f"iterations {int(it) if pd.notna(it) else 0}" + (f" in {p.runs} runs" if p.runs > 1 else "") + ", "
            f"failure rate λ = {fr:.3f}" if pd.notna(fr) else "no iterations", "",
            markdown_table(p.table), ""]


def _md_headline(c: ReportContent) -> list[str]:
    """The answer first: growth with each swept parameter and with the load, with intervals."""
    md: list[str] = []
    note = c.noise_note()
    if note:
        md += [f"> {note}", ""]
    if len(c.growth) or len(c.load):
        md += ["## Headline", ""]
        md += [f"- {x}" for x in c.sentences] + ([""] if c.sentences else [])
    if len(c.growth):
        md += ["Median time at the lowest and highest value of each swept parameter, the change between them and "
               "the slope (least squares over every value; 95 % intervals; " + LEGEND + "):", "",
               markdown_table(c.growth_table()), ""]
    if len(c.load):
        md += ["High vs light load (medians, 95 % intervals; " + LEGEND + "):", "",
               markdown_table(c.load.drop(columns=["significant"])), ""]
    md += [f"![{p.name}]({p.name})" for p in c.headline_pngs]
    return md + ([""] if c.headline_pngs else [])


def report_markdown(c: ReportContent) -> str:
    """The text of report.md: the headline, then the tables per point, runs and details."""
    md = _md_intro(c) + _md_headline(c)
    md += [COLUMN_NOTES, ""]
    for p in c.points:
        md += _md_point(p)
    rw, rtt = c.read_write, c.rtt
    md += ["## Reads and writes per scenario (MariaDB/Galera statement counters)", "",
           markdown_table(rw, "{:.2f}") if len(rw) else "No database counters in these results.", ""]
    md += ["## Requested vs measured RTT", "",
           markdown_table(rtt, "{:.3f}") if len(rtt) else "No RTT measurements in these results.", ""]
    if len(c.slo):
        md += ["## Service level objectives (per run, spec.workload.slo)", "", c.slo_note(), "",
               markdown_table(c.slo), ""]
    if len(c.runs):
        md += ["## Runs (contention during the measured window, %)", "", markdown_table(c.runs, "{:.2f}"), ""]
    if len(c.details):
        md += ["## Details (versions, cache, warm-up)", "", markdown_table(c.details), ""]
    return "\n".join(md) + "\n"


# ---------------------------------------------------------------- index.html
def html_table(df: pd.DataFrame) -> Markup:
    """``df`` as an HTML table (class ``t``; floats to 4 significant digits, nulls empty; cells escaped)."""
    return Markup(df.to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4g}", border=0, classes="t",
                             escape=True))


@cache
def _template() -> Template:
    """templates/index.html.j2, autoescaped."""
    env = Environment(loader=PackageLoader("wanwide.pipeline.results", "templates"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined)
    return env.get_template("index.html.j2")


def _figures(pngs: list[Path]) -> list[dict[str, str]]:
    """File names of each figure as PNG and SVG (relative to index.html)."""
    return [{"png": p.name, "svg": p.with_suffix(".svg").name} for p in pngs]


def index_html(c: ReportContent) -> str:
    """The text of index.html (templates/index.html.j2)."""
    return _template().render(
        sources=[str(s) for s in c.sources], n_inputs=c.n_inputs, n_iterations=c.n_iterations,
        from_names=c.from_names, files=HTML_LINKS, empty_workloads=c.empty_workloads,
        runs=html_table(c.runs) if len(c.runs) else None, summary=html_table(c.summary),
        slo=html_table(c.slo) if len(c.slo) else None, slo_note=c.slo_note(),
        noise=c.noise_note(), noisy=bool(c.noisy) and not c.noisy_excluded, sentences=c.sentences,
        growth=html_table(c.growth_table()) if len(c.growth) else None,
        load=html_table(c.load.drop(columns=["significant"])) if len(c.load) else None,
        headline=_figures(c.headline_pngs), details=html_table(c.details) if len(c.details) else None,
        column_notes=COLUMN_NOTES, legend=LEGEND,
        bars=_figures(c.bars), cdfs=_figures(c.cdfs),
        read_write=html_table(c.read_write) if len(c.read_write) else None,
        rtt=html_table(c.rtt) if len(c.rtt) else None, rtt_png=_figures([c.rtt_png] if c.rtt_png else []),
    )
