"""The report's Parquet store: one file per bundle, partitioned by Benchmark and trial, read incrementally.

Layout under the store's directory (the report puts it at ``DIR/parquet``)::

    <benchmark>/<trial id>/<region>-<attempt dir>-<hash>.parquet   one per bundle
    _files/<file stem>-<hash>.parquet                               one per plain Rally JSON file
    _index.json.gz                                                  what each file holds (gzipped JSON)

Each file is the tidy table (docs/results.md) of one source, every column included, so the
store can be queried as it is (DuckDB, pandas, Spark: ``**/*.parquet``). The index records
each source by absolute path with the size and modification time of the files its rows
come from (manifest.json and rally.json; the JSON file and its params.yaml): a later sync
reads only sources that are new or changed, takes the others from their Parquet file, and
drops the files of sources no longer given. One sync at a time per store.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from wanwide.pipeline.results import partfile
from wanwide.pipeline.results.ingest import read_parts
from wanwide.pipeline.results.sources import MANIFEST, RALLY_JSON, Source, _orjson, sidecar_path
from wanwide.pipeline.results.table import Part, frame

INDEX = "_index.json.gz"  # not *.json: a report written inside its sources must not read it back
# Bump when the table a source gives changes (columns, dtypes, order): stored files are then re-read.
STORE_FORMAT = 1


@dataclass
class Entry:
    """What the store holds of one source."""

    kind: str
    fingerprint: list
    part: str | None  # file under the store (None: the source has no rows)
    rows: int
    workloads: list[dict[str, Any]]
    params: dict[str, Any]


@dataclass
class Sync:
    """What a sync did: sources read from their JSON, taken from the store, dropped from it."""

    read: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def fingerprint(source: Source) -> list:
    """(name, size, mtime_ns) of every file the source's rows depend on; changes when one does."""
    if source.kind == "bundle":
        files = [source.path / MANIFEST, source.path / RALLY_JSON]
    else:
        files = [source.path, sidecar_path(source.path.parent)]
    out: list = []
    for f in files:
        try:
            st = f.stat() if f is not None else None
        except FileNotFoundError:
            st = None
        out.append([f.name, st.st_size, st.st_mtime_ns] if st is not None and f is not None else None)
    return out


def _slug(text: Any) -> str:
    s = re.sub(r"[^A-Za-z0-9._=-]+", "_", str(text)).strip("._") or "_"
    return s[:80]


def part_path(source: Source, part: Part) -> str:
    """Where a source's rows go, relative to the store: ``<benchmark>/<trial>/…`` or ``_files/…``."""
    digest = hashlib.sha1(str(source.path).encode(), usedforsecurity=False).hexdigest()[:10]
    if source.kind == "bundle":
        meta = part.workloads[0]
        name = f"{_slug(source.path.parent.name)}-{_slug(source.path.name)}-{digest}.parquet"
        return f"{_slug(meta.get('benchmark') or '_none')}/{_slug(meta.get('trial_id') or '_none')}/{name}"
    return f"_files/{_slug(source.path.stem)}-{digest}.parquet"


def write_part(root: Path, source: Source, part: Part) -> None:
    """The source's rows into its file under ``root`` (written aside, then renamed)."""
    if not part.rows:
        return
    path = root / part_path(source, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partfile.write(part, tmp)
    tmp.replace(path)


class ResultStore:
    """A directory of per-source Parquet files and the index saying which source each holds."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.entries: dict[str, Entry] = self._load()

    def _load(self) -> dict[str, Entry]:
        try:
            data = json.loads(gzip.decompress((self.root / INDEX).read_bytes()))
        except (FileNotFoundError, OSError, EOFError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != STORE_FORMAT:
            return {}
        return {k: Entry(**v) for k, v in data.get("sources", {}).items()}

    def _save(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{INDEX}.{os.getpid()}.tmp"
        data = {"format": STORE_FORMAT, "sources": {k: vars(e) for k, e in self.entries.items()}}
        raw = _orjson.dumps(data, default=str) if _orjson else json.dumps(data, default=str).encode()
        tmp.write_bytes(gzip.compress(raw, compresslevel=1))
        tmp.replace(self.root / INDEX)

    def sync(self, sources: list[Source], *, progress: bool = False, workers: int | None = None
             ) -> tuple[pd.DataFrame, Sync]:
        """The table of ``sources`` (in their order), reading JSON only for new or changed ones."""
        keys = [os.path.abspath(s.path) for s in sources]
        prints = [fingerprint(s) for s in sources]
        stale = [i for i, (k, fp) in enumerate(zip(keys, prints, strict=True))
                 if k not in self.entries or self.entries[k].fingerprint != json.loads(json.dumps(fp))]
        done = Sync()
        fresh = read_parts([sources[i] for i in stale], progress=progress, workers=workers,
                           then=partial(write_part, self.root))
        parts: list[Part | None] = [None] * len(sources)
        for i, part in zip(stale, fresh, strict=True):
            parts[i] = part
            self.entries[keys[i]] = Entry(sources[i].kind, prints[i], part_path(sources[i], part) if part.rows else None,
                                          part.rows, part.workloads, part.params)
            done.read.append(keys[i])
        # runs of consecutive unchanged sources: one scan of their files each
        run: list[int] = []
        for i in [*range(len(parts)), len(parts)]:
            if i < len(parts) and parts[i] is None:
                run.append(i)
                continue
            if run:
                parts[run[0]] = partfile.read_many([self._stored(keys[j], str(sources[j].path)) for j in run])
                done.reused += [keys[j] for j in run]
                run = []
        wanted = set(keys)
        done.dropped = [k for k in self.entries if k not in wanted]
        for k in done.dropped:
            del self.entries[k]
        if done.read or done.dropped or not (self.root / INDEX).exists():
            self._save()
            self._sweep()
        return frame([p for p in parts if p is not None], release=True), done

    def _stored(self, key: str, source: str) -> tuple[Path | None, list[dict[str, Any]], dict[str, Any]]:
        """(file, workloads, parameters) of a stored source; ``source`` as it is named now."""
        e = self.entries[key]
        return (self.root / e.part if e.part else None), [{**w, "source": source} for w in e.workloads], e.params

    def _sweep(self) -> None:
        """Remove Parquet files no entry names (dropped sources, moved parts, an interrupted sync's)."""
        keep = {e.part for e in self.entries.values() if e.part}
        for p in self.root.rglob("*.parquet"):
            if p.relative_to(self.root).as_posix() not in keep:
                p.unlink(missing_ok=True)
        for p in self.root.rglob(".*.tmp"):
            p.unlink(missing_ok=True)
        for d in sorted((p for p in self.root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            if not any(d.iterdir()):
                d.rmdir()

    def files(self) -> list[Path]:
        """The Parquet files of the store, in the order of its index."""
        return [self.root / e.part for e in self.entries.values() if e.part]
