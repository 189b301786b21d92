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

from wanwide.pipeline.results.sources import EMPTY_WORKLOADS, PARAM_PREFIX, TOTAL, WL_COLUMNS

# (path, leaf name, depth) of each action code; code 0 is the iteration's Total row
TOTAL_ACTION = (TOTAL, TOTAL, 0)


def _empty(dtype) -> np.ndarray:
    return field(default_factory=lambda: np.zeros(0, dtype))


@dataclass
class Part:
    """The rows of one source (bundle or file), column by column, codes local to it.

    Values of an iteration are kept once per iteration (``it_*``); each row points to its
    iteration (``it``). Rows are in table order: per iteration its Total row, then its actions.
    """

    workloads: list[dict[str, Any]]  # WL_COLUMNS values of each workload, those without rows too
    params: dict[str, Any]  # the source's parameters (every workload of it has them)
    actions: list[tuple[str, str, int]] = field(default_factory=lambda: [TOTAL_ACTION])
    error_types: list[str] = field(default_factory=list)
    # per iteration
    it_wl: np.ndarray = _empty(np.int32)  # workload index
    it_index: np.ndarray = _empty(np.int32)  # the iteration's number in its workload
    it_timestamp: np.ndarray = _empty(np.float64)
    it_duration: np.ndarray = _empty(np.float64)
    it_idle: np.ndarray = _empty(np.float64)
    it_error: np.ndarray = _empty(np.int32)  # code into error_types, -1 ok
    it_message: np.ndarray = _empty(object)  # None when ok
    # per row
    it: np.ndarray = _empty(np.int32)  # the row's iteration (index into it_*)
    action: np.ndarray = _empty(np.int32)  # code into actions
    started: np.ndarray = _empty(np.float64)
    finished: np.ndarray = _empty(np.float64)
    duration: np.ndarray = _empty(np.float64)
    failed: np.ndarray = _empty(bool)
    # parameters per workload, for a part that holds several sources (the store's); None: ``params``
    wl_params: list[dict[str, Any]] | None = None

    def workload_params(self) -> list[dict[str, Any]]:
        return self.wl_params if self.wl_params is not None else [self.params] * len(self.workloads)

    @property
    def rows(self) -> int:
        return len(self.it)

    def empty_workloads(self) -> list[str]:
        """``scenario (source)`` of each workload without iterations (no row in the table)."""
        used = set(np.unique(self.it_wl).tolist())
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
    it_wl, r_it = [], []
    n_it = 0
    empty = [e for p in parts for e in p.empty_workloads()]
    for p in parts:
        it_wl.append(p.it_wl.astype(np.int32) + len(wls))
        r_it.append(p.it.astype(np.int64) + n_it)
        n_it += len(p.it_wl)
        wls += p.workloads
        wl_params += p.workload_params()
        if release:
            p.it = np.zeros(0, np.int32)
    rows = np.concatenate(r_it) if r_it else np.zeros(0, np.int64)  # each row's iteration, over all parts
    del r_it
    rw = (np.concatenate(it_wl) if it_wl else np.zeros(0, np.int32))[rows]  # each row's workload
    del it_wl

    def cat(attr: str, dtype, per_row: np.ndarray | None = None) -> np.ndarray:
        arrays = [getattr(p, attr) for p in parts]
        out = np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
        if release:
            for p in parts:
                setattr(p, attr, np.zeros(0, dtype))
        return out if per_row is None else out[per_row]

    # the row-level columns first: with ``release`` the parts shrink as the table grows
    rc: dict[str, Any] = {}
    rc["iteration"] = cat("it_index", np.int32, rows)
    rc["iteration_timestamp"] = cat("it_timestamp", np.float64, rows)
    rc["iteration_duration"] = cat("it_duration", np.float64, rows)
    rc["idle_duration"] = cat("it_idle", np.float64, rows)
    err_names, ecodes = _merge_codes([p.error_types for p in parts], [p.it_error for p in parts])
    ecodes = ecodes[rows]
    rc["error_type"] = (pd.Categorical.from_codes(ecodes, categories=err_names or ["_"]) if len(ecodes)
                        else pd.Categorical([], categories=err_names))
    del ecodes
    rc["error_message"] = _string_column(cat("it_message", object, rows))
    del rows
    actions, acodes = _merge_codes([p.actions for p in parts], [p.action for p in parts], key=lambda a: a[0])
    if not actions:
        actions = [TOTAL_ACTION]
    rc["action"] = pd.Categorical.from_codes(acodes, categories=[a[0] for a in actions])
    rc["action_name"] = _leaf_column([a[1] for a in actions], acodes)
    rc["action_depth"] = np.array([a[2] for a in actions], dtype=np.int8)[acodes]
    del acodes
    rc["action_started"] = cat("started", np.float64)
    rc["action_finished"] = cat("finished", np.float64)
    rc["action_duration"] = cat("duration", np.float64)
    rc["action_failed"] = cat("failed", bool)

    cols: dict[str, Any] = {}
    for name in WL_COLUMNS:
        cols[name] = column_of(_objects([w.get(name) for w in wls]), rw)
    pnames: list[str] = []
    for pp in wl_params:  # a source without workloads adds no column
        for k in pp:
            if k not in pnames:
                pnames.append(k)
    for k in pnames:
        cols[PARAM_PREFIX + k] = column_of(_objects([pp.get(k) for pp in wl_params]), rw)
    del rw
    df = pd.DataFrame({**cols, **rc}, copy=False)
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
