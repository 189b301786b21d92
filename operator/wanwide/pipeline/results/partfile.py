"""One source's part as an Arrow table (a Parquet file of the store), and back, without pandas.

The table has every column of docs/results.md with the types the report's table gives them:
strings as dictionaries (int32 indices, large_string values) so that the files of one
Benchmark share a schema, parameters typed per source as :func:`~.table.column_of` types
them. Reading back needs only the row-level columns plus the workloads and parameters the
store's index keeps; action and error-type codes are renumbered by first row, so the order
of a dictionary in the file does not matter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from wanwide.pipeline.results.sources import PARAM_PREFIX, WL_COLUMNS
from wanwide.pipeline.results.table import TOTAL_ACTION, Part, by_first_row

TEXT = pa.large_string()
ROW_FIELDS = ("workload", "iteration", "iteration_timestamp", "iteration_duration", "idle_duration", "error_type",
              "error_message", "action", "action_name", "action_depth", "action_started", "action_finished",
              "action_duration", "action_failed")


def _dictionary(codes: np.ndarray, values: list[str]) -> pa.DictionaryArray:
    """Codes (-1: null) into ``values`` as an Arrow dictionary array."""
    codes = np.asarray(codes, dtype=np.int32)
    missing = codes < 0
    indices = pa.array(codes, mask=missing) if missing.any() else pa.array(codes)
    return pa.DictionaryArray.from_arrays(indices, pa.array(values, TEXT))


def _workload_column(values: list[Any], wl: np.ndarray) -> pa.Array:
    """Per-workload values → per-row column, typed as :func:`~.table.column_of` types them."""
    non_null = [v for v in values if v is not None]
    if non_null and all(isinstance(v, bool) for v in non_null):
        return pa.array(values, pa.bool_()).take(pa.array(wl))
    if non_null and all(isinstance(v, int | float) and not isinstance(v, bool) for v in non_null):
        kind = pa.int64() if all(isinstance(v, int) for v in non_null) else pa.float64()
        return pa.array(values, kind).take(pa.array(wl))
    strs = [None if v is None else str(v) for v in values]
    cats = sorted({s for s in strs if s is not None})
    lookup = {s: i for i, s in enumerate(cats)}
    return _dictionary(np.array([-1 if s is None else lookup[s] for s in strs], dtype=np.int32)[wl], cats)


def to_table(part: Part) -> pa.Table:
    """The rows of ``part`` with every column of the tidy table."""
    it = part.it
    wl = part.it_wl[it]
    cols: dict[str, pa.Array] = {name: _workload_column([w.get(name) for w in part.workloads], wl)
                                 for name in WL_COLUMNS}
    if part.workloads:
        for k, v in part.params.items():
            cols[PARAM_PREFIX + k] = _workload_column([v] * len(part.workloads), wl)
    leaves = list(dict.fromkeys(a[1] for a in part.actions))
    leaf_code = np.array([leaves.index(a[1]) for a in part.actions], dtype=np.int32)
    cols.update({
        "iteration": pa.array(part.it_index[it], pa.int32()),
        "iteration_timestamp": pa.array(part.it_timestamp[it]), "iteration_duration": pa.array(part.it_duration[it]),
        "idle_duration": pa.array(part.it_idle[it]),
        "error_type": _dictionary(part.it_error[it], part.error_types),
        "error_message": pa.array(part.it_message[it], TEXT, from_pandas=True),
        "action": _dictionary(part.action, [a[0] for a in part.actions]),
        "action_name": _dictionary(leaf_code[part.action], leaves),
        "action_depth": pa.array(np.array([a[2] for a in part.actions], dtype=np.int8)[part.action]),
        "action_started": pa.array(part.started), "action_finished": pa.array(part.finished),
        "action_duration": pa.array(part.duration), "action_failed": pa.array(part.failed),
    })
    return pa.table(cols)


def write(part: Part, path: Path) -> None:
    """``part`` as a Parquet file at ``path``."""
    pq.write_table(to_table(part), path)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """(codes with -1 for null, dictionary values) of a dictionary column."""
    arr = column.unify_dictionaries().combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    codes = pc.fill_null(arr.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    return codes, arr.dictionary.to_pylist()


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    return column.to_numpy().astype(np.float64, copy=False)


def from_table(table: pa.Table, workloads: list[dict[str, Any]], params: dict[str, Any], *,
               wl_offset: np.ndarray | None = None, wl_params: list[dict[str, Any]] | None = None) -> Part:
    """The part back from its table (workloads and parameters from the store's index).

    For a table of several sources: ``wl_offset`` per row (added to its ``workload``, making it
    an index into ``workloads``) and ``wl_params`` per workload.
    """
    if not table.num_rows:
        return Part(workloads, params, wl_params=wl_params)
    acodes, paths = _codes(table.column("action"))
    ncodes, names = _codes(table.column("action_name"))
    depth = table.column("action_depth").to_numpy()
    _, first = np.unique(acodes, return_index=True)
    info = {int(acodes[i]): (names[ncodes[i]], int(depth[i])) for i in first}
    actions, acodes = by_first_row(acodes, [(p, *info.get(i, (p, 0))) for i, p in enumerate(paths)])
    ecodes, etypes = _codes(table.column("error_type"))
    error_types, ecodes = by_first_row(ecodes, etypes)
    messages = table.column("error_message").to_numpy(zero_copy_only=False).astype(object)
    wl = table.column("workload").to_numpy().astype(np.int32)
    return Part(  # one "iteration" per row: the file has no iteration table
        workloads, params, actions or [TOTAL_ACTION], error_types,
        it_wl=wl if wl_offset is None else wl + wl_offset.astype(np.int32),
        it_index=table.column("iteration").to_numpy().astype(np.int32),
        it_timestamp=_floats(table.column("iteration_timestamp")),
        it_duration=_floats(table.column("iteration_duration")), it_idle=_floats(table.column("idle_duration")),
        it_error=ecodes, it_message=messages, it=np.arange(table.num_rows, dtype=np.int32), action=acodes,
        started=_floats(table.column("action_started")), finished=_floats(table.column("action_finished")),
        duration=_floats(table.column("action_duration")), failed=table.column("action_failed").to_numpy(),
        wl_params=wl_params,
    )


def read(path: Path, workloads: list[dict[str, Any]], params: dict[str, Any]) -> Part:
    """The part stored at ``path`` (only the row-level columns are read)."""
    return from_table(pq.read_table(path, columns=list(ROW_FIELDS)), workloads, params)


def read_many(sources: list[tuple[Path | None, list[dict[str, Any]], dict[str, Any]]]) -> Part:
    """One part of several stored sources, in their order: (file or None when no rows, workloads, params).

    One scan of all files (Arrow's threads), not one read per file: thousands of small bundles.
    """
    files = [f for f, _, _ in sources if f is not None]
    workloads = [w for _, ws, _ in sources for w in ws]
    wl_params = [p for _, ws, p in sources for _ in ws]
    first_wl = np.cumsum([0] + [len(ws) for _, ws, _ in sources])[:-1]
    file_wl = np.array([first_wl[i] for i, (f, _, _) in enumerate(sources) if f is not None], dtype=np.int64)
    if not files:
        return Part(workloads, {}, wl_params=wl_params)
    table = ds.dataset([str(f) for f in files], format="parquet").to_table(
        columns=[*ROW_FIELDS, "__fragment_index"])
    frag = table.column("__fragment_index").to_numpy()
    if len(frag) > 1 and (np.diff(frag) < 0).any():  # keep the files' order, rows within each
        order = np.argsort(frag, kind="stable")
        table, frag = table.take(order), frag[order]
    return from_table(table, workloads, {}, wl_offset=file_wl[frag], wl_params=wl_params)
