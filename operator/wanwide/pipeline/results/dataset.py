"""A study's data in a few files: what ``wanwide report`` needs to redraw every table and figure
without the bundles (``wanwide results export``; docs/results.md, "Data sets").

Layout of a data set directory::

    dataset.json         format, wanwide version, what it was made from, row and run counts
    iterations.parquet   the tidy table: one row per atomic action per iteration (docs/results.md)
    runs.csv             one row per run (bundle): parameters, outcome, start skew, contention
    manifests.json.gz    every bundle's manifest.json (network, database counters, members, host)

``iterations.parquet`` and ``manifests.json.gz`` are what the report reads back; ``runs.csv`` is
for people and other tools (the report recomputes it). Paths are kept relative to the sources,
so a data set can be committed and moved.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from wanwide import __version__

FORMAT = "wanwide.io/dataset/v1"
META, ITERATIONS, RUNS, MANIFESTS = "dataset.json", "iterations.parquet", "runs.csv", "manifests.json.gz"


class DatasetError(ValueError):
    pass


@dataclass
class Dataset:
    table: pd.DataFrame
    manifests: list[dict[str, Any]]
    meta: dict[str, Any]

    @property
    def inputs(self) -> list[Input]:
        return [Input(k) for k in self.meta.get("inputs") or []]


def is_dataset(path: Path) -> bool:
    return path.is_dir() and (path / META).is_file()


def relative_sources(source: pd.Series, roots: list[Path]) -> pd.Series:
    """Each row's source path relative to the source root it lies under (once per distinct path)."""
    cats = source.astype("category")
    resolved = [r.resolve() for r in roots]

    def rel(p: str) -> str:
        path = Path(p).resolve()
        for root in resolved:
            base = root if root.is_dir() else root.parent
            if path.is_relative_to(base):
                return str(Path(base.name) / path.relative_to(base))
        return path.name

    return cats.cat.rename_categories([rel(str(c)) for c in cats.cat.categories]).astype(str)


@dataclass(frozen=True)
class Input:
    """What one of the original inputs was (the report says whether parameters came from file names)."""

    kind: str  # bundle | file


def write(out: Path, table: pd.DataFrame, manifests: list[dict[str, Any]], runs: pd.DataFrame,
          sources: list[str], empty: list[str], inputs: list[Any]) -> list[Path]:
    """The data set's four files in ``out`` (written to temporary names, then moved: never half a set)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {ITERATIONS: out / f".{ITERATIONS}.tmp", MANIFESTS: out / f".{MANIFESTS}.tmp",
             RUNS: out / f".{RUNS}.tmp", META: out / f".{META}.tmp"}
    table.to_parquet(files[ITERATIONS], index=False, compression="zstd")
    with gzip.GzipFile(files[MANIFESTS], "wb", mtime=0) as fh:  # mtime 0: the same data, the same bytes
        fh.write(json.dumps(manifests, sort_keys=True, separators=(",", ":")).encode())
    runs.to_csv(files[RUNS], index=False)
    meta = {"format": FORMAT, "wanwide": __version__, "sources": sources, "rows": len(table),
            "iterations": int((table["action"] == "Total").sum()) if len(table) else 0,
            "runs": len(manifests), "empty_workloads": empty, "inputs": [i.kind for i in inputs]}
    files[META].write_text(json.dumps(meta, indent=1) + "\n")
    for name, tmp in files.items():
        os.replace(tmp, out / name)
    return [out / n for n in (META, ITERATIONS, RUNS, MANIFESTS)]


def read(path: Path) -> Dataset:
    """A data set written by :func:`write`; a clear error naming what is wrong otherwise."""
    try:
        meta = json.loads((path / META).read_text())
    except (OSError, ValueError) as e:
        raise DatasetError(f"{path / META}: not a wanwide data set ({e})") from None
    if meta.get("format") != FORMAT:
        raise DatasetError(f"{path / META}: format {meta.get('format')!r}, this wanwide reads {FORMAT!r}")
    missing = [n for n in (ITERATIONS, MANIFESTS) if not (path / n).is_file()]
    if missing:
        raise DatasetError(f"data set {path} lacks {', '.join(missing)}")
    from wanwide.pipeline.results.ingest import read_parquet
    from wanwide.pipeline.results.table import EMPTY_WORKLOADS

    table = read_parquet(path / ITERATIONS)
    table.attrs[EMPTY_WORKLOADS] = list(meta.get("empty_workloads") or [])
    with gzip.open(path / MANIFESTS, "rb") as fh:
        manifests = json.loads(fh.read())
    return Dataset(table, manifests, meta)
