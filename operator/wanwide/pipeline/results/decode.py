"""Typed decoding of ``rally task report --json`` (format 1.x) straight into a :class:`~.table.Part`.

msgspec decodes the bytes into the few fields the table needs (everything else in the report is
skipped in C), then the rows are laid out with list comprehensions and numpy rather than a
Python loop per row. Anything the schema refuses (a string where a number belongs, the old
``rally task results`` list, a format 2 report…) raises :class:`Refused`; the caller then reads
the file the reference way (:mod:`~.reference`), which gives the same table or the precise
error. So this module never has to phrase an error for a user.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import numpy as np

from wanwide.pipeline.results.sources import Input
from wanwide.pipeline.results.table import TOTAL_ACTION, Part, by_first_row


class Refused(Exception):
    """The typed decoder does not take this input; read it the reference way."""


class Action(msgspec.Struct, gc=False):
    name: str
    started_at: float | None
    finished_at: float | None = None
    failed: bool = False
    children: list[Action] | None = None


class Iteration(msgspec.Struct, gc=False):
    timestamp: float
    duration: float
    atomic_actions: list[Action]
    idle_duration: float | None = None
    error: Any = None


class Workload(msgspec.Struct, gc=False):
    scenario: Any
    data: list[Iteration]
    uuid: Any = None


class Subtask(msgspec.Struct, gc=False):
    workloads: list[Workload]
    title: Any = None


class Task(msgspec.Struct, gc=False):
    subtasks: list[Subtask]
    uuid: Any = None


class Report(msgspec.Struct, gc=False):
    tasks: list[Task]
    info: dict[str, Any] = {}


_DECODER = msgspec.json.Decoder(Report)


@contextmanager
def _no_gc() -> Iterator[None]:
    """No cyclic-GC passes meanwhile: millions of new objects, none of them in a cycle."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode(raw: bytes) -> Report:
    """The typed report in ``raw``; Refused when it is not a format 1.x report the schema takes."""
    if raw.lstrip()[:1] != b"{":
        raise Refused("not a JSON object")
    try:
        with _no_gc():
            report = _DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        raise Refused(str(e)) from None
    if not str(report.info.get("format_version", "1.2")).startswith("1."):
        raise Refused("format version")
    return report


def read(raw: bytes, inp: Input) -> Part:
    """``raw`` (a format 1.x report) → its part; Refused when the schema does not take it."""
    report = decode(raw)
    with _no_gc():
        return report_part(report, inp)


class _Codes:
    """Action codes of one source: (parent code, name) → code (renumbered by first row at the end)."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[int, str], int] = {(-1, TOTAL_ACTION[0]): 0}
        self.top: dict[str, int] = {TOTAL_ACTION[0]: 0}  # (-1, name) without making a tuple
        self.actions: list[tuple[str, str, int]] = [TOTAL_ACTION]

    def add(self, parent: int, name: str) -> int:
        c = self.by_key.get((parent, name))
        if c is None:
            c = self.by_key[(parent, name)] = len(self.actions)
            if parent < 0:
                self.top[name] = c
                self.actions.append((name, name, 0))
            else:
                path, _, depth = self.actions[parent]
                self.actions.append((f"{path}/{name}", name, depth + 1))
        return c

    def child_codes(self, parents: np.ndarray, names: list[str]) -> np.ndarray:
        """Codes of actions named ``names`` under actions of codes ``parents`` (one dict look-up each)."""
        by_id = list(dict.fromkeys(names))
        ids = {n: i for i, n in enumerate(by_id)}
        name_id = np.array([ids[n] for n in names], dtype=np.int64)
        pairs, inverse = np.unique(parents * len(by_id) + name_id, return_inverse=True)
        distinct = np.array([self.add(int(p // len(by_id)), by_id[int(p % len(by_id))]) for p in pairs],
                            dtype=np.int64)
        return distinct[inverse.reshape(-1)]

    def top_codes(self, nodes: list[Action]) -> list[int]:
        get, add = self.top.get, self.add
        return [c if (c := get(a.name)) is not None else add(-1, a.name) for a in nodes]

def _starts(counts: np.ndarray) -> np.ndarray:
    """Index of each group's first element when groups of ``counts`` are laid end to end."""
    out = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def _siblings(counts: np.ndarray) -> np.ndarray:
    """Position of each element within its group."""
    n = int(counts.sum())
    return np.arange(n, dtype=np.int64) - np.repeat(_starts(counts), counts)


def _actions(data: list[Iteration], codes: _Codes) -> tuple[list[Action], np.ndarray, list[np.ndarray]]:
    """Every action of ``data``, level by level (top level first), with its code and sort key.

    The key of an action is (iteration, sibling index at depth 0, …, at its depth, -1, …): sorted,
    nested actions come right after their parent, in order (a pre-order walk without recursion).
    """
    lists = [it.atomic_actions for it in data]
    counts = np.fromiter(map(len, lists), np.int64, len(lists))
    level = [a for acts in lists for a in acts]
    level_codes = np.asarray(codes.top_codes(level), dtype=np.int64)
    keys = [np.repeat(np.arange(len(data), dtype=np.int64), counts), _siblings(counts)]  # per level
    nodes, node_codes, node_keys = list(level), [level_codes], [keys]
    while True:
        parents = [k for k, a in enumerate(level) if a.children]
        if not parents:
            break
        n_children = np.fromiter((len(level[k].children) for k in parents), np.int64, len(parents))  # type: ignore[arg-type]
        children = [c for k in parents for c in level[k].children]  # type: ignore[union-attr]
        up = np.repeat(np.asarray(parents, dtype=np.int64), n_children)
        level_codes = codes.child_codes(level_codes[up], [c.name for c in children])
        keys = [col[up] for col in keys] + [_siblings(n_children)]
        level = children
        nodes += children
        node_codes.append(level_codes)
        node_keys.append(keys)
    depth = len(node_keys)
    pad = [np.concatenate([k[d] if d < len(k) else np.full(len(k[0]), -1, np.int64) for k in node_keys])
           for d in range(depth + 1)]
    return nodes, np.concatenate(node_codes), pad


class _Errors:
    """Error types of one source in order of first appearance, as the reference names them."""

    def __init__(self) -> None:
        self.types: dict[str, int] = {}

    def code(self, err: Any) -> tuple[int, str]:
        seq = isinstance(err, list | tuple)
        etype = str(err[0]) if seq else str(err)
        c = self.types.get(etype)
        if c is None:
            c = self.types[etype] = len(self.types)
        return c, (str(err[1]) if seq and len(err) > 1 else "")


def _floats(values: list) -> np.ndarray:
    """Floats with None → NaN."""
    return np.array(values, dtype=np.float64) if values else np.zeros(0, np.float64)


def _workload_rows(data: list[Iteration], wl: int, codes: _Codes, errors: _Errors) -> dict[str, np.ndarray]:
    """The rows of one workload: per iteration a Total row, then its actions in pre-order."""
    n = len(data)
    ts = _floats([it.timestamp for it in data])
    dur = _floats([it.duration for it in data])
    idle = _floats([it.idle_duration or 0.0 for it in data])
    err = np.full(n, -1, dtype=np.int32)
    msg = np.full(n, None, dtype=object)
    it_failed = np.zeros(n, dtype=bool)
    for i, it in enumerate(data):
        if it.error:
            err[i], msg[i] = errors.code(it.error)
            it_failed[i] = True

    nodes, node_codes, keys = _actions(data, codes)
    # Total rows sort first in their iteration: key (iteration, -1, -1, …)
    its = np.arange(n, dtype=np.int64)
    keys = [np.concatenate([its, keys[0]])] + [np.concatenate([np.full(n, -1, np.int64), k]) for k in keys[1:]]
    order = np.lexsort(keys[::-1])
    st, fi = _floats([a.started_at for a in nodes]), _floats([a.finished_at for a in nodes])
    return {
        "it_wl": np.full(n, wl, dtype=np.int32), "it_index": its.astype(np.int32), "it_timestamp": ts,
        "it_duration": dur, "it_idle": idle, "it_error": err, "it_message": msg,
        "it": keys[0][order].astype(np.int32),
        "action": np.concatenate([np.zeros(n, np.int32), node_codes.astype(np.int32)])[order],
        "started": np.concatenate([ts, st])[order], "finished": np.concatenate([ts + dur, fi])[order],
        "duration": np.concatenate([dur, fi - st])[order],
        "failed": np.concatenate([it_failed, np.array([a.failed for a in nodes], dtype=bool)])[order],
    }


def report_part(report: Report, inp: Input) -> Part:
    """The rows of a decoded report, with the source fields and parameters of ``inp``."""
    codes, errors = _Codes(), _Errors()
    workloads: list[dict[str, Any]] = []
    chunks: list[dict[str, np.ndarray]] = []
    for t in report.tasks:
        for si, st in enumerate(t.subtasks):
            for w in st.workloads:
                scen = w.scenario
                name = next(iter(scen)) if isinstance(scen, dict) and scen else str(scen)
                windex = len(workloads)
                workloads.append({**inp.meta, "task_uuid": t.uuid, "subtask": si, "subtask_title": st.title,
                                  "workload": windex, "workload_uuid": w.uuid, "scenario": name})
                if w.data:
                    chunk = _workload_rows(w.data, windex, codes, errors)
                    chunk["it"] += sum(len(c["it_wl"]) for c in chunks)  # into the source's iterations
                    chunks.append(chunk)
    part = Part(workloads, inp.params, error_types=list(errors.types))
    if chunks:
        for key in chunks[0]:
            setattr(part, key, np.concatenate([c[key] for c in chunks]) if len(chunks) > 1 else chunks[0][key])
    part.actions, part.action = by_first_row(part.action, codes.actions) if part.rows else ([TOTAL_ACTION], part.action)
    return part
