"""Rally results → one tidy table (pure: files in, DataFrame out, no network).

One row per iteration × atomic action (nested actions flattened, path ``a/b``),
plus one ``Total`` pseudo-action row per iteration carrying the iteration duration.
Inputs: result bundles (directories with manifest.json + rally.json) or plain Rally
JSON files (``rally task report --json`` format 1.x, or the older ``rally task
results`` list). Parameters come from the bundle manifest, else a sidecar
``params.yaml`` (file name → mapping) beside the file, else the file name.

Each source is decoded on its own (typed, :mod:`~.decode`; the reference loop of
:mod:`~.reference` for what the decoder refuses) into a columnar part, by a pool of
processes when the input is large; the parts are concatenated in source order
(:func:`~.table.frame`). Columns are documented in docs/results.md; parameter columns
are ``param.<name>``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pandas as pd

from wanwide.pipeline.results import decode, reference
from wanwide.pipeline.results.sources import (  # noqa: F401  (re-exported: the module's public names since the start)
    BACKENDS,
    EMPTY_WORKLOADS,
    MANIFEST,
    PARAM_PREFIX,
    RALLY_JSON,
    ROW_COLUMNS,
    SIDECAR_NAMES,
    TOTAL,
    WL_COLUMNS,
    IngestError,
    Input,
    Source,
    bundle_meta,
    discover,
    file_meta,
    load_json,
    params_from_filename,
    parse_json,
    read_sidecar,
    source_input,
)
from wanwide.pipeline.results.table import Part, frame

# Below this much Rally JSON in fewer sources, one process reads everything (a pool costs more
# than it saves).
PARALLEL_MIN_BYTES = 16 << 20
PARALLEL_MIN_SOURCES = 200
WORKERS_ENV = "WANWIDE_INGEST_WORKERS"


# ---------------------------------------------------------------- one source
def read_part(source: Source, sidecars: dict | None = None) -> Part:
    """One bundle or plain file → its part (typed decoder; reference loop for what it refuses)."""
    inp = source_input(source, sidecars)
    if inp.rally is None:
        return Part([], inp.params)
    return _report_part(inp.rally.read_bytes(), inp, str(inp.rally))


def _report_part(raw: bytes, inp: Input, where: str) -> Part:
    try:
        return decode.read(raw, inp)
    except decode.Refused:
        return reference.report_part(parse_json(raw, where), inp, where)


def _work(source: Source, then: Callable[[Source, Part], Any] | None) -> Part | IngestError:
    """A worker's task: the part of ``source`` (``then`` applied to it), or the error it raised."""
    try:
        part = read_part(source)
        if then is not None:
            then(source, part)
        return part
    except IngestError as e:
        return e


# ---------------------------------------------------------------- many sources
def workers_for(sources: list[Source]) -> int:
    """Processes to read ``sources`` with: 1 for a small input, else the CPUs (``$WANWIDE_INGEST_WORKERS``)."""
    env = os.environ.get(WORKERS_ENV)
    if env:
        return max(1, min(int(env), len(sources)))
    if len(sources) < PARALLEL_MIN_SOURCES and _input_bytes(sources, PARALLEL_MIN_BYTES) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), len(sources)))


def _input_bytes(sources: list[Source], enough: int) -> int:
    """Bytes of Rally JSON among ``sources`` (counting stops at ``enough``)."""
    n = 0
    for s in sources:
        p = s.path / RALLY_JSON if s.kind == "bundle" else s.path
        with contextlib.suppress(OSError):
            n += p.stat().st_size
        if n >= enough:
            break
    return n


def _pool(workers: int) -> ProcessPoolExecutor:
    """Fork when this process runs no other thread (fast start); forkserver otherwise (safe)."""
    methods = multiprocessing.get_all_start_methods()
    method = "fork" if "fork" in methods and threading.active_count() == 1 else "forkserver"
    if method not in methods:  # pragma: no cover - not on Linux
        method = "spawn"
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))


def read_parts(sources: list[Source], *, progress: bool = False, workers: int | None = None,
               then: Callable[[Source, Part], Any] | None = None) -> list[Part]:
    """The part of each source, in order; ``workers`` processes (default :func:`workers_for`).

    ``then(source, part)`` runs where the part was made (e.g. writes it to the store). The
    first failing source in order raises its IngestError, as a serial reading would.
    """
    n = workers or workers_for(sources)
    bar = None
    results: list[Part | IngestError | None] = [None] * len(sources)
    if n <= 1:
        sidecars: dict = {}
        bar = _bar(len(sources), progress)
        for i, s in enumerate(sources):
            part = read_part(s, sidecars)
            if then is not None:
                then(s, part)
            results[i] = part
            if bar is not None:
                bar.update()
    else:
        # largest first, so that no big bundle starts last; the pool forks before the bar's thread
        order = sorted(range(len(sources)), key=lambda i: -_input_bytes([sources[i]], 1 << 62))
        with _pool(n) as pool:
            futures: dict[Future, int] = {pool.submit(_work, sources[i], then): i for i in order}
            bar = _bar(len(sources), progress)
            for f in as_completed(futures):
                results[futures[f]] = f.result()
                if bar is not None:
                    bar.update()
    if bar is not None:
        bar.close()
    for r in results:
        if isinstance(r, IngestError):
            raise r
    return results  # type: ignore[return-value]


def _bar(total: int, progress: bool):
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="reading results", unit="file", file=sys.stderr)


# ---------------------------------------------------------------- public API
def ingest_rally_json(
    data: Any,
    *,
    source: str = "<memory>",
    params: dict[str, Any] | None = None,
    params_source: str = "none",
) -> pd.DataFrame:
    """Tabulate one parsed Rally report (format 1.x dict or old results list)."""
    inp = Input(file_meta(source, params_source), dict(params or {}), None)
    return frame([reference.report_part(data, inp, source)])


def ingest_file(path: str | Path) -> pd.DataFrame:
    """A plain Rally JSON file; parameters from a sidecar params.yaml or the file name."""
    return frame([read_part(Source("file", Path(path)))])


def ingest_bundle(bundle_dir: str | Path) -> pd.DataFrame:
    """A result bundle directory (manifest.json + rally.json)."""
    return frame([read_part(Source("bundle", Path(bundle_dir)))])


def ingest_sources(sources: list[Source], *, progress: bool = False, workers: int | None = None) -> pd.DataFrame:
    """The bundles and plain Rally JSON files found by :func:`discover` → one table.

    Large inputs are read by one process per CPU (``workers`` or ``$WANWIDE_INGEST_WORKERS``
    to choose). With ``progress``, a progress bar (one step per source) goes to stderr.
    """
    return frame(read_parts(sources, progress=progress, workers=workers), release=True)


def bundle_manifests(sources: list[Source]) -> list[dict[str, Any]]:
    """The parsed manifest.json of every bundle among ``sources``, in their order."""
    return [load_json(s.path / MANIFEST) for s in sources if s.kind == "bundle"]


def ingest_paths(paths: Iterable[str | Path], *, progress: bool = False, workers: int | None = None) -> pd.DataFrame:
    """Every bundle and plain Rally JSON file under ``paths`` → one table."""
    return ingest_sources(discover(paths), progress=progress, workers=workers)


def write_parquet(df: pd.DataFrame, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(path, index=False)
    return path


def read_parquet(path: str | Path) -> pd.DataFrame:
    df = pd.read_parquet(path)
    df.attrs["parameters"] = [c[len(PARAM_PREFIX):] for c in df.columns if c.startswith(PARAM_PREFIX)]
    return df


def ingest_to_parquet(paths: Iterable[str | Path], out: str | Path | None = None, *, progress: bool = False) -> tuple[pd.DataFrame, Path]:
    """Ingest and store ``results.parquet`` beside the raw files (or at ``out``)."""
    paths = [Path(p) for p in paths]
    df = ingest_paths(paths, progress=progress)
    if out is None:
        first = paths[0]
        out = (first if first.is_dir() else first.parent) / "results.parquet"
    return df, write_parquet(df, out)
