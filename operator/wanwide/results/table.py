"""One source's rows as columns (:class:`Part`), and parts → the tidy DataFrame.

A part holds row-level numpy arrays with codes local to its source (workload, action, error
type) plus the small tables the codes point into. :func:`frame` concatenates parts and
remaps the codes, so a table of many sources is built without a Python loop over rows, and a
part read back from the Parquet store (:mod:`~.partfile`) joins parts decoded just now.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .sources import EMPTY_WORKLOADS, PARAM_PREFIX, TOTAL, WL_COLUMNS

# (path, leaf name, depth) of each action code; code 0 is the iteration's Total row
TOTAL_ACTION = (TOTAL, TOTAL, 0)


@dataclass
class Part:
    """The rows of one source (bundle or file), column by column, codes local to it."""

    workloads: list[dict[str, Any]]  # WL_COLUMNS values of each workload, those without rows too
    params: dict[str, Any]  # the source's parameters (every workload of it has them)
    actions: list[tuple[str, str, int]] = field(default_factory=lambda: [TOTAL_ACTION])
    error_types: list[str] = field(default_factory=list)
    wl: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # per row: workload index
    iteration: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    timestamp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    it_duration: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    idle: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    error: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # code into error_types, -1 ok
    message: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # None when ok
    action: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # code into actions
    started: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    finished: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    duration: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    failed: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def rows(self) -> int:
        return len(self.wl)

    @property
    def iterations(self) -> int:
        return int(np.count_nonzero(self.action == 0))

    def empty_workloads(self) -> list[str]:
        """``scenario (source)`` of each workload without iterations (no row in the table)."""
        used = set(np.unique(self.wl).tolist())
        return [f"{w['scenario']} ({w['source']})" for i, w in enumerate(self.workloads) if i not in used]


def by_first_row(codes: np.ndarray, table: list) -> tuple[list, np.ndarray]:
    """(entries of ``table`` that rows use, codes into them) numbered in the order of each entry's
    first row, as a walk that numbers entries when it meets them would. Code -1 (none) stays."""
    used, first = np.unique(codes, return_index=True)
    keep = used >= 0
    old = used[keep][np.argsort(first[keep], kind="stable")]
    remap = np.full(len(table) + 1, -1, dtype=np.int32)  # the last slot: code -1
    remap[old] = np.arange(len(old), dtype=np.int32)
    return [table[i] for i in old], remap[codes]


def column_of(values: np.ndarray, idx: np.ndarray):
    """Workload-level values → row column (categorical for strings, numeric kept)."""
    non_null = [v for v in values if v is not None]
    if non_null and all(isinstance(v, bool) for v in non_null):
        return pd.array(values, dtype="boolean")[idx]
    if non_null and all(isinstance(v, int | float) and not isinstance(v, bool) for v in non_null):
        if all(isinstance(v, int) for v in non_null):
            return pd.array(values, dtype="Int64")[idx]
        return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)[idx]
    strs = [None if v is None else str(v) for v in values]
    cats = sorted({s for s in strs if s is not None})
    lookup = {s: i for i, s in enumerate(cats)}
    codes = np.array([-1 if s is None else lookup[s] for s in strs], dtype=np.int64)
    return pd.Categorical.from_codes(codes[idx] if len(idx) else codes[:0], categories=cats)


def _objects(values: list[Any]) -> np.ndarray:
    """``values`` as a 1-d object array (lists and tuples stay elements)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _merge_codes(tables: list[list], codes: list[np.ndarray], key=lambda x: x) -> tuple[list, np.ndarray]:
    """Local codes of each part → codes into one table (entries in order of first appearance)."""
    merged: list = []
    index: dict = {}
    out = []
    for table, c in zip(tables, codes, strict=True):
        remap = np.empty(len(table) + 1, dtype=np.int32)
        remap[-1] = -1  # code -1 (none) stays -1
        for i, entry in enumerate(table):
            k = key(entry)
            j = index.get(k)
            if j is None:
                j = index[k] = len(merged)
                merged.append(entry)
            remap[i] = j
        out.append(remap[c])
    return merged, (np.concatenate(out) if out else np.zeros(0, np.int32))


def _string_column(values: np.ndarray):
    """An object array of str/None as the column pandas would make of it, built in C when that is Arrow."""
    if _STR_DTYPE is None or not any(v is not None for v in _distinct(values)):
        return values  # all None: pandas keeps object
    import pyarrow as pa

    return pd.array(pa.array(values, type=pa.large_string(), from_pandas=True), dtype=_STR_DTYPE)


def _distinct(values: np.ndarray) -> list:
    """A few values of ``values``: the non-None ones if any (cheap on millions of Nones)."""
    present = values[values != None]  # noqa: E711 (elementwise)
    return list(present[:1])


def _inferred_string_dtype():
    """pandas' dtype for a column of str and None (pandas 3: Arrow-backed ``str``), None if object."""
    dt = pd.Series(np.array(["x", None], dtype=object)).dtype
    if isinstance(dt, pd.StringDtype) and dt.storage == "pyarrow":
        return dt
    return None


_STR_DTYPE = _inferred_string_dtype()


def frame(parts: list[Part], *, release: bool = False) -> pd.DataFrame:
    """The tidy table of ``parts`` in their order (columns: docs/results.md).

    ``release``: empty each part's arrays once copied into the table (lower peak memory;
    the parts are of no use afterwards).
    """
    wls: list[dict[str, Any]] = []
    wl_params: list[dict[str, Any]] = []
    r_wl = []
    empty = [e for p in parts for e in p.empty_workloads()]
    for p in parts:
        r_wl.append(p.wl.astype(np.int64) + len(wls))
        wls += p.workloads
        wl_params += [p.params] * len(p.workloads)
    rw = np.concatenate(r_wl) if r_wl else np.zeros(0, np.int64)
    del r_wl
    cols: dict[str, Any] = {}
    for name in WL_COLUMNS:
        cols[name] = column_of(_objects([w.get(name) for w in wls]), rw)
    pnames: list[str] = []
    for p in parts:
        for k in p.params if p.workloads else ():  # a source without workloads adds no column
            if k not in pnames:
                pnames.append(k)
    for k in pnames:
        cols[PARAM_PREFIX + k] = column_of(_objects([pp.get(k) for pp in wl_params]), rw)
    del rw

    def cat(attr: str, dtype) -> np.ndarray:
        arrays = [getattr(p, attr) for p in parts]
        out = np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
        if release:
            for p in parts:
                setattr(p, attr, np.zeros(0, dtype))
        return out

    cols["iteration"] = cat("iteration", np.int32)
    cols["iteration_timestamp"] = cat("timestamp", np.float64)
    cols["iteration_duration"] = cat("it_duration", np.float64)
    cols["idle_duration"] = cat("idle", np.float64)
    err_names, ecodes = _merge_codes([p.error_types for p in parts], [p.error for p in parts])
    cols["error_type"] = (pd.Categorical.from_codes(ecodes, categories=err_names or ["_"]) if len(ecodes)
                          else pd.Categorical([], categories=err_names))
    del ecodes
    cols["error_message"] = _string_column(cat("message", object))
    actions, acodes = _merge_codes([p.actions for p in parts], [p.action for p in parts], key=lambda a: a[0])
    if not actions:
        actions = [TOTAL_ACTION]
    cols["action"] = pd.Categorical.from_codes(acodes, categories=[a[0] for a in actions])
    cols["action_name"] = _leaf_column([a[1] for a in actions], acodes)
    cols["action_depth"] = np.array([a[2] for a in actions], dtype=np.int8)[acodes]
    del acodes
    cols["action_started"] = cat("started", np.float64)
    cols["action_finished"] = cat("finished", np.float64)
    cols["action_duration"] = cat("duration", np.float64)
    cols["action_failed"] = cat("failed", bool)
    df = pd.DataFrame(cols, copy=False)
    df.attrs["parameters"] = pnames
    df.attrs[EMPTY_WORKLOADS] = empty
    return df


def _leaf_column(leaves: list[str], acodes: np.ndarray) -> pd.Categorical:
    """``pd.Categorical(leaf of each row)`` (categories: the leaves that occur, sorted), from the codes."""
    if not len(acodes):
        return pd.Categorical([])
    used = np.bincount(acodes, minlength=len(leaves)) > 0
    cats = sorted({leaves[i] for i in np.flatnonzero(used)})
    lookup = {c: i for i, c in enumerate(cats)}
    remap = np.array([lookup.get(leaf, -1) for leaf in leaves], dtype=np.int32)
    return pd.Categorical.from_codes(remap[acodes], categories=cats)
