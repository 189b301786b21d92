"""``wanwide report SOURCE… -o DIR``: tables and plots from result bundles or Rally JSON.

Reading goes through :mod:`wanwide.pipeline.results.ingest` (S3 sources are downloaded first),
statistics live in :mod:`~wanwide.pipeline.results.stats`, figures in
:mod:`~wanwide.pipeline.results.figures`, and report.md / index.html in :mod:`~wanwide.pipeline.results.pages`.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wanwide.pipeline.results import dataset
from wanwide.pipeline.results.figures import (
    plot_cdfs,
    plot_headline,
    plot_rtt,
    plot_stacked_bars,
    svg_of,
)
from wanwide.pipeline.results.headline import growth, load_effect, sentences
from wanwide.pipeline.results.ingest import (
    EMPTY_WORKLOADS,
    MANIFEST,
    TOTAL,
    IngestError,
    bundle_manifests,
    discover,
    write_parquet,
)
from wanwide.pipeline.results.pages import ReportContent, index_html, report_markdown
from wanwide.pipeline.results.runs import (
    details_table,
    failed_attempt_runs,
    in_trials,
    noisy_trials,
    runs_table,
    slo_table,
)
from wanwide.pipeline.results.s3 import S3Error, S3Options, connect, fetch, parse_uri
from wanwide.pipeline.results.stats import (
    PointTable,
    point_tables,
    read_write_table,
    rtt_table,
    slug,
    summarize,
    with_benchmark_param,
)
from wanwide.pipeline.results.store import ResultStore


@dataclass
class ReportResult:
    """What build_report read and wrote."""

    out_dir: Path
    table: pd.DataFrame
    summary: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    params_from_names: bool = False
    manifests: list[dict[str, Any]] = field(default_factory=list)


# ---------------------------------------------------------------- S3 sources
STORE_DIR = "parquet"  # DIR/parquet: the per-bundle Parquet store (wanwide.pipeline.results.store)
BUNDLE_DATA = (MANIFEST, "rally.json", "task.json")


def fetch_s3(url: str, dest: Path, env: dict[str, str] | None = None, opts: S3Options | None = None) -> Path:
    """Download manifest.json/rally.json/task.json of every bundle under s3://bucket/prefix to ``dest``.

    See :mod:`wanwide.pipeline.results.s3` for credentials, endpoint and retries; ``env`` stands in
    for the environment (explicit keys in it are used as they are).
    """
    try:
        bucket, prefix = parse_uri(url)
        conn = connect(opts or S3Options(), env)
        target = dest / bucket / prefix if prefix else dest / bucket
        fetch(conn, url, target, keep=lambda name: name in BUNDLE_DATA)
    except S3Error as e:
        msg = str(e)
        raise IngestError(msg if msg.startswith(url) else f"{url}: {msg}") from e
    return target


def _local_paths(sources: list[str | Path], out: Path, env: dict[str, str] | None,
                 opts: S3Options | None) -> list[Path]:
    """Each source as a local path; s3:// sources are downloaded under ``out/raw`` first."""
    return [fetch_s3(s, out / "raw", env, opts) if s.startswith("s3://") else Path(s) for s in map(str, sources)]


# ---------------------------------------------------------------- writing
def _store_beside(df: pd.DataFrame, local: list[Path], out: Path) -> None:
    """results.parquet of the rows read from each local source dir, into that dir (warn on failure)."""
    for p in local:
        if p.is_dir() and p.resolve() != out.resolve():
            try:
                write_parquet(df[_from_dir(df["source"], str(p))], p / "results.parquet")
            except OSError as e:
                print(f"warning: could not store {p / 'results.parquet'}: {e}", file=sys.stderr)


def _from_dir(source: pd.Series, prefix: str) -> np.ndarray:
    """Rows whose source starts with ``prefix`` (tested once per distinct source, not per row)."""
    cats = source.astype("category").cat
    hit = np.array([str(c).startswith(prefix) for c in cats.categories] + [False], dtype=bool)
    return hit[cats.codes.to_numpy()]  # code -1 (no source) → the trailing False


def _write_csv(df: pd.DataFrame, path: Path) -> Path:
    """``df`` as CSV (no index) at ``path``; returns ``path``."""
    df.to_csv(path, index=False)
    return path


def _write_text(path: Path, text: str) -> Path:
    """``text`` into ``path``; returns ``path``."""
    path.write_text(text)
    return path


def _write_point_tables(points: list[PointTable], tdir: Path) -> list[Path]:
    """tables/<scenario>__<point>.csv for each describe table."""
    tdir.mkdir(exist_ok=True)
    return [_write_csv(p.table, tdir / f"{slug(p.scenario)}__{slug(p.label)}.csv") for p in points]


def _run_tables(manifests: list[dict[str, Any]], out: Path) -> tuple[pd.DataFrame, pd.DataFrame, Path | None]:
    """read_write.csv, rtt.csv (+ rtt.png) from the bundle manifests."""
    rw = read_write_table(manifests)
    _write_csv(rw, out / "read_write.csv")
    rtt = rtt_table(manifests)
    _write_csv(rtt, out / "rtt.csv")
    return rw, rtt, plot_rtt(rtt, out)


# ---------------------------------------------------------------- reading
@dataclass
class Read:
    """What the sources hold: the table (noisy trials dropped if asked), manifests, runs."""

    table: pd.DataFrame
    manifests: list[dict[str, Any]]
    found: list[Any]
    local: list[Path]
    runs: pd.DataFrame
    noisy: set[tuple[str, str]]  # (benchmark, trial) of noisy trials
    excluded: bool  # the noisy trials' rows were dropped from ``table``
    empty: list[str]
    partial: list[str] = field(default_factory=list)  # attempts whose succeeded runs were left out


def read_sources(sources: list[str | Path], out: Path, *, progress: bool = False, env: dict[str, str] | None = None,
                 s3: S3Options | None = None, noisy_threshold: float | None = None,
                 exclude_noisy: bool = False, conds: list[str] | None = None) -> Read:
    """Read every source (s3:// downloaded under ``out/raw``); runs and their noise from the manifests;
    ``conds`` (``NAME=VALUE``): only the trials with those parameters, their manifests and runs."""
    out.mkdir(parents=True, exist_ok=True)
    local = _local_paths(sources, out, env, s3)
    sets = [p for p in local if dataset.is_dataset(p)]
    if sets:
        df, manifests, found = _read_datasets(sets, local)
    else:
        df, manifests, found = _read_raw(local, sources, out, progress)
    empty = list(df.attrs.get(EMPTY_WORKLOADS, []))
    if df.empty and not manifests:
        raise IngestError(f"no iterations to report in {', '.join(map(str, sources))}: "
                          + (f"{len(empty)} workload(s), none with data (task aborted before it ran?)"
                             if empty else "no workloads in the Rally JSON"))
    if conds:
        from wanwide.pipeline.results.compare import where

        df = where(df, conds, "report", flag="--where")
        keep = set(zip(df["benchmark"].astype(str), df["trial_id"].astype(str), strict=True))
        manifests = [m for m in manifests if (str(m.get("benchmark")), str((m.get("trial") or {}).get("id"))) in keep]
    runs = runs_table(manifests, noisy_threshold)
    partial = failed_attempt_runs(runs)
    if partial and len(df):
        df = df[~df["run_id"].astype(str).isin(set(partial))].copy()
    noisy = noisy_trials(runs)
    if exclude_noisy and noisy and len(df):
        df = df[~in_trials(df, noisy)].copy()
    return Read(df, manifests, found, local, runs, noisy, exclude_noisy, empty, sorted(set(partial.values())))


def _read_raw(local: list[Path], sources: list[str | Path], out: Path,
              progress: bool) -> tuple[pd.DataFrame, list[dict[str, Any]], list[Any]]:
    """Bundles and plain Rally JSON, through the Parquet store under ``out``."""
    found = discover(local)
    if not found:
        html = any(p.suffix == ".html" or (p.is_dir() and next(p.rglob("*.html"), None)) for p in local)
        raise IngestError(f"no result bundle or Rally JSON file found in {', '.join(map(str, sources))}"
                          + ("; HTML reports are not read: export with `rally task report --json`" if html else ""))
    df, synced = ResultStore(out / STORE_DIR).sync(found, progress=progress)
    if progress:
        print(f"parquet store {out / STORE_DIR}: {len(synced.read)} bundle(s)/file(s) read, "
              f"{len(synced.reused)} unchanged taken from it, {len(synced.dropped)} no longer given dropped",
              file=sys.stderr)
    return df, bundle_manifests(found), found


def _read_datasets(sets: list[Path], local: list[Path]) -> tuple[pd.DataFrame, list[dict[str, Any]], list[Any]]:
    """Data sets (``wanwide results export``): their tables and manifests, as the bundles gave them."""
    others = [str(p) for p in local if p not in sets]
    if others:
        raise IngestError(f"{', '.join(others)}: give data sets alone (or export these too: "
                          "`wanwide results export SOURCE… -o DIR`)")
    try:
        read = [dataset.read(p) for p in sets]
    except dataset.DatasetError as e:
        raise IngestError(str(e)) from None
    seen: dict[str, int] = {}
    twice = sorted({f"{m.get('run_id')} ({sets[seen[m.get('run_id')]]} and {sets[i]})" for i, d in enumerate(read)
                    for m in d.manifests if seen.setdefault(m.get("run_id"), i) != i})
    if twice:
        raise IngestError(f"{len(twice)} run(s) in more than one data set, e.g. {twice[0]}: give each run once "
                          "(merging sittings: export each sitting's new bundles alone)")
    inputs = [i for d in read for i in d.inputs]
    if len(read) == 1:
        return read[0].table, read[0].manifests, inputs
    table = pd.concat([d.table for d in read], ignore_index=True)
    table.attrs["parameters"] = list(dict.fromkeys(p for d in read for p in d.table.attrs.get("parameters", [])))
    table.attrs[EMPTY_WORKLOADS] = [w for d in read for w in d.table.attrs.get(EMPTY_WORKLOADS, [])]
    return table, [m for d in read for m in d.manifests], inputs


def export_dataset(sources: list[str | Path], out_dir: str | Path, *, progress: bool = False,
                   env: dict[str, str] | None = None, s3: S3Options | None = None) -> list[Path]:
    """The sources as a data set in ``out_dir`` (:mod:`.dataset`): every row and manifest, paths relative."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="wanwide-export-") as tmp:
        local = _local_paths(sources, Path(tmp), env, s3)
        sets = [p for p in local if dataset.is_dataset(p)]
        df, manifests, found = _read_datasets(sets, local) if sets else _read_raw(local, sources, Path(tmp), progress)
        table = df.copy()
        if not sets:  # a data set's paths are relative already
            table["source"] = dataset.relative_sources(table["source"], local)
        names = [str(s) if str(s).startswith("s3://") else Path(s).name for s in sources]
        return dataset.write(Path(out_dir), table, manifests, runs_table(manifests, None), names,
                             list(df.attrs.get(EMPTY_WORKLOADS, [])), found)


# ---------------------------------------------------------------- the report
def build_report(
    sources: list[str | Path],
    out_dir: str | Path,
    *,
    progress: bool = True,
    store_parquet_beside: bool = True,
    env: dict[str, str] | None = None,
    s3: S3Options | None = None,
    noisy_threshold: float | None = None,
    exclude_noisy: bool = False,
    conds: list[str] | None = None,
) -> ReportResult:
    """Read every source (bundle dirs, s3://bucket/prefix, plain Rally JSON) → DIR/…

    Writes results.parquet, summary.csv, headline.csv, load.csv, report.md, tables/*.csv,
    headline-*.png, bars-*.png, cdf-*.png, read_write.csv, rtt.csv/rtt.png, runs.csv, details.csv,
    slo.csv (when the runs recorded objectives) and index.html; every PNG also as SVG. ``conds``: only the trials with these parameters
    (``NAME=VALUE``), e.g. one load and RTT for the study's figure of sizes. Returns what it wrote.
    """
    out = Path(out_dir)
    r = read_sources(sources, out, progress=progress, env=env, s3=s3, noisy_threshold=noisy_threshold,
                     exclude_noisy=exclude_noisy, conds=conds)
    df, manifests, found = r.table, r.manifests, r.found
    # Parquet's encoding runs in C without the GIL: write beside the statistics and figures
    writer = ThreadPoolExecutor(max_workers=1)
    written = writer.submit(write_parquet, df, out / "results.parquet")
    if store_parquet_beside:
        writer.submit(_store_beside, df, r.local, out)
    df = with_benchmark_param(df)
    summary = summarize(df)
    files: list[Path] = [_write_csv(summary, out / "summary.csv")]
    points = point_tables(summary)
    files += _write_point_tables(points, out / "tables")
    grow, load = growth(df), load_effect(df)
    files += [_write_csv(grow.drop(columns=[c for c in grow.columns if c.startswith("_")]), out / "headline.csv"),
              _write_csv(load, out / "load.csv")]
    heads = plot_headline(df, out)
    bars, cdfs = plot_stacked_bars(df, out), plot_cdfs(df, out)
    rw, rtt, rtt_png = _run_tables(manifests, out)
    details = details_table(manifests)
    slo = slo_table(manifests)
    files += [_write_csv(r.runs, out / "runs.csv"), _write_csv(details, out / "details.csv")]
    if len(slo):
        files.append(_write_csv(slo, out / "slo.csv"))
    pngs = [*heads, *bars, *cdfs, *([rtt_png] if rtt_png else [])]
    files += [*pngs, *map(svg_of, pngs), out / "read_write.csv", out / "rtt.csv"]
    content = ReportContent(
        sources=sources, n_inputs=len(found), n_iterations=int((df["action"] == TOTAL).sum()), n_rows=len(df),
        params_sources=sorted({str(v) for v in df["params_source"].dropna().unique()}),
        from_names=any(s.kind == "file" for s in found), summary=summary, points=points,
        read_write=rw, rtt=rtt, runs=r.runs, bars=bars, cdfs=cdfs, rtt_png=rtt_png, empty_workloads=r.empty,
        growth=grow, load=load, sentences=sentences(grow), headline_pngs=heads, details=details,
        noisy=sorted(r.noisy), noisy_excluded=r.excluded, partial=r.partial, slo=slo,
    )
    files.append(_write_text(out / "report.md", report_markdown(content)))
    files.append(_write_text(out / "index.html", index_html(content)))
    writer.shutdown(wait=True)
    files.insert(0, written.result())
    return ReportResult(out, df, summary, files, content.from_names, manifests)
