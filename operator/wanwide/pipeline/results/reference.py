"""The reference ingest: parsed JSON (orjson/json dicts) walked by a plain Python loop.

It is what wanwide did before the typed decoder (:mod:`~wanwide.pipeline.results.decode`) and stays for
three things: the old ``rally task results`` list format, the precise error message when the
typed decoder refuses a file (``_locate`` names the JSON path), and the tests, which check the
fast path against it on every data file.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from wanwide.pipeline.results.sources import (
    EMPTY_WORKLOADS,
    PARAM_PREFIX,
    TOTAL,
    WL_COLUMNS,
    IngestError,
    Input,
    Source,
    load_json,
    source_input,
)
from wanwide.pipeline.results.table import Part, column_of


# ---------------------------------------------------------------- the builder
@dataclass
class _Builder:
    wl: list[dict[str, Any]] = field(default_factory=list)
    wl_params: list[dict[str, Any]] = field(default_factory=list)
    # iteration level
    it_wl: array = field(default_factory=lambda: array("l"))
    it_idx: array = field(default_factory=lambda: array("l"))
    it_ts: array = field(default_factory=lambda: array("d"))
    it_dur: array = field(default_factory=lambda: array("d"))
    it_idle: array = field(default_factory=lambda: array("d"))
    it_err: array = field(default_factory=lambda: array("l"))  # code into err_types, -1 = ok
    it_msg: array = field(default_factory=lambda: array("l"))  # index into messages, -1
    err_types: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    # row level
    r_it: array = field(default_factory=lambda: array("l"))
    r_act: array = field(default_factory=lambda: array("l"))
    r_start: array = field(default_factory=lambda: array("d"))
    r_fin: array = field(default_factory=lambda: array("d"))
    r_dur: array = field(default_factory=lambda: array("d"))
    r_fail: array = field(default_factory=lambda: array("b"))
    # actions: code 0 = Total
    act_codes: dict[tuple[int, str], int] = field(default_factory=lambda: {(-1, TOTAL): 0})
    act_path: list[str] = field(default_factory=lambda: [TOTAL])
    act_leaf: list[str] = field(default_factory=lambda: [TOTAL])
    act_depth: list[int] = field(default_factory=lambda: [0])

    @property
    def n_iterations(self) -> int:
        return len(self.it_ts)

    def _act(self, parent: int, name: str) -> int:
        key = (parent, name)
        c = self.act_codes.get(key)
        if c is None:
            c = len(self.act_path)
            self.act_codes[key] = c
            if parent < 0:
                self.act_path.append(name)
                self.act_depth.append(0)
            else:
                self.act_path.append(self.act_path[parent] + "/" + name)
                self.act_depth.append(self.act_depth[parent] + 1)
            self.act_leaf.append(name)
        return c

    def _err(self, err: Any) -> tuple[int, int]:
        if not err:
            return -1, -1
        etype = str(err[0]) if isinstance(err, list | tuple) else str(err)
        code = self.err_types.get(etype)
        if code is None:
            code = self.err_types[etype] = len(self.err_types)
        msg = str(err[1]) if isinstance(err, list | tuple) and len(err) > 1 else ""
        self.messages.append(msg)
        return code, len(self.messages) - 1

    # -- format 1.x iterations (atomic_actions is a list with started_at/finished_at)
    def add_iterations_v1(self, wl_index: int, data: list) -> None:
        # Hot loop: bound appends, iteration-level columns extended in bulk.
        n0 = len(self.it_ts)
        n = len(data)
        self.it_wl.extend([wl_index] * n)
        self.it_idx.extend(range(n))
        it_ts, it_dur, it_idle = self.it_ts.append, self.it_dur.append, self.it_idle.append
        it_err, it_msg = self.it_err.append, self.it_msg.append
        a_it, a_act, a_start = self.r_it.append, self.r_act.append, self.r_start.append
        a_fin, a_dur, a_fail = self.r_fin.append, self.r_dur.append, self.r_fail.append
        codes_get = self.act_codes.get
        new_act = self._act
        nan = float("nan")
        g = n0
        for it in data:
            ts = float(it["timestamp"])
            dur = float(it["duration"])
            err = it.get("error")
            it_ts(ts)
            it_dur(dur)
            it_idle(float(it.get("idle_duration") or 0.0))
            if err:
                e, m = self._err(err)
                it_err(e)
                it_msg(m)
                a_fail(1)
            else:
                it_err(-1)
                it_msg(-1)
                a_fail(0)
            a_it(g)
            a_act(0)
            a_start(ts)
            a_fin(ts + dur)
            a_dur(dur)
            stack = None
            for a in it["atomic_actions"]:
                parent = -1
                while True:
                    name = a["name"]
                    c = codes_get((parent, name))
                    if c is None:
                        c = new_act(parent, name)
                    st = a["started_at"]
                    f = a.get("finished_at")
                    st = nan if st is None else float(st)
                    f = nan if f is None else float(f)
                    a_it(g)
                    a_act(c)
                    a_start(st)
                    a_fin(f)
                    a_dur(f - st)
                    a_fail(1 if a.get("failed") else 0)
                    ch = a.get("children")
                    if ch:
                        if stack is None:
                            stack = []
                        stack.extend((c, x) for x in reversed(ch))
                    if not stack:
                        break
                    parent, a = stack.pop()
            g += 1

    # -- old `rally task results` iterations (atomic_actions: {name: duration} or list)
    def add_iterations_old(self, wl_index: int, data: list) -> None:
        nan = float("nan")
        for i, it in enumerate(data):
            acts = it.get("atomic_actions") or {}
            if isinstance(acts, list):
                self.add_iterations_v1_one(wl_index, i, it)
                continue
            ts = float(it["timestamp"])
            dur = float(it["duration"])
            err = it.get("error")
            g = len(self.it_ts)
            self.it_wl.append(wl_index)
            self.it_idx.append(i)
            self.it_ts.append(ts)
            self.it_dur.append(dur)
            self.it_idle.append(float(it.get("idle_duration") or 0.0))
            e, m = self._err(err)
            self.it_err.append(e)
            self.it_msg.append(m)
            self.r_it.append(g)
            self.r_act.append(0)
            self.r_start.append(ts)
            self.r_fin.append(ts + dur)
            self.r_dur.append(dur)
            self.r_fail.append(1 if err else 0)
            for name, d in acts.items():
                c = self._act(-1, name)
                self.r_it.append(g)
                self.r_act.append(c)
                self.r_start.append(nan)
                self.r_fin.append(nan)
                self.r_dur.append(nan if d is None else float(d))
                self.r_fail.append(1 if d is None and err else 0)

    def add_iterations_v1_one(self, wl_index: int, i: int, it: dict) -> None:
        n0 = len(self.it_idx)
        self.add_iterations_v1(wl_index, [it])
        self.it_idx[n0] = i

    # -- final table
    def frame(self) -> pd.DataFrame:
        r_it = np.frombuffer(self.r_it, dtype=np.int64) if len(self.r_it) else np.zeros(0, np.int64)
        it_wl = np.frombuffer(self.it_wl, dtype=np.int64) if len(self.it_wl) else np.zeros(0, np.int64)
        r_wl = it_wl[r_it]
        cols: dict[str, Any] = {}
        for name in WL_COLUMNS:
            cols[name] = column_of(np.array([w.get(name) for w in self.wl] + [None], dtype=object)[:-1], r_wl)
        pnames: list[str] = []
        for p in self.wl_params:
            for k in p:
                if k not in pnames:
                    pnames.append(k)
        for k in pnames:
            vals = np.array([p.get(k) for p in self.wl_params] + [None], dtype=object)[:-1]
            cols[PARAM_PREFIX + k] = column_of(vals, r_wl)

        def arr(a: array, dt) -> np.ndarray:
            return np.frombuffer(a, dtype=dt) if len(a) else np.zeros(0, dt)

        cols["iteration"] = arr(self.it_idx, np.int64)[r_it].astype(np.int32)
        cols["iteration_timestamp"] = arr(self.it_ts, np.float64)[r_it]
        cols["iteration_duration"] = arr(self.it_dur, np.float64)[r_it]
        cols["idle_duration"] = arr(self.it_idle, np.float64)[r_it]
        err_names = list(self.err_types)
        ecodes = arr(self.it_err, np.int64)[r_it]
        cols["error_type"] = pd.Categorical.from_codes(ecodes, categories=err_names or ["_"]) if len(ecodes) else pd.Categorical([], categories=err_names)
        mcodes = arr(self.it_msg, np.int64)[r_it]
        msgs = np.array([*self.messages, None], dtype=object)
        cols["error_message"] = msgs[mcodes]  # -1 → None
        acodes = arr(self.r_act, np.int64)
        cols["action"] = pd.Categorical.from_codes(acodes, categories=self.act_path)
        cols["action_name"] = pd.Categorical(np.array(self.act_leaf, dtype=object)[acodes]) if len(acodes) else pd.Categorical([])
        cols["action_depth"] = np.array(self.act_depth, dtype=np.int8)[acodes]
        cols["action_started"] = arr(self.r_start, np.float64)
        cols["action_finished"] = arr(self.r_fin, np.float64)
        cols["action_duration"] = arr(self.r_dur, np.float64)
        cols["action_failed"] = arr(self.r_fail, np.int8).astype(bool)
        df = pd.DataFrame(cols)
        df.attrs["parameters"] = pnames
        df.attrs[EMPTY_WORKLOADS] = self.empty_workloads()
        return df

    def part(self, params: dict[str, Any]) -> Part:
        """What was added, as the part of one source (all workloads share ``params``)."""

        def arr(a: array, dt) -> np.ndarray:
            return np.frombuffer(a, dtype=dt).astype(dt) if len(a) else np.zeros(0, dt)

        return Part(
            workloads=[{k: w.get(k) for k in WL_COLUMNS} for w in self.wl], params=params,
            actions=list(zip(self.act_path, self.act_leaf, self.act_depth, strict=True)),
            error_types=list(self.err_types),
            it_wl=arr(self.it_wl, np.int64).astype(np.int32), it_index=arr(self.it_idx, np.int64).astype(np.int32),
            it_timestamp=arr(self.it_ts, np.float64), it_duration=arr(self.it_dur, np.float64),
            it_idle=arr(self.it_idle, np.float64), it_error=arr(self.it_err, np.int64).astype(np.int32),
            it_message=np.array([*self.messages, None], dtype=object)[arr(self.it_msg, np.int64)],
            it=arr(self.r_it, np.int64).astype(np.int32), action=arr(self.r_act, np.int64).astype(np.int32),
            started=arr(self.r_start, np.float64), finished=arr(self.r_fin, np.float64),
            duration=arr(self.r_dur, np.float64), failed=arr(self.r_fail, np.int8).astype(bool),
        )

    def empty_workloads(self) -> list[str]:
        """``scenario (source)`` of each workload without iterations (no row in the table)."""
        used = set(self.it_wl)
        return [f"{w['scenario']} ({w['source']})" for i, w in enumerate(self.wl) if i not in used]


# ---------------------------------------------------------------- walking a report
def _locate(data: Any, base: str) -> str:
    """Slow path after a failure: find the first structural problem and its JSON path."""
    def need(obj: Any, key: str, path: str, types: tuple) -> Any:
        if not isinstance(obj, dict):
            raise _Broken(path, f"expected an object, got {type(obj).__name__}")
        if key not in obj:
            raise _Broken(path, f"missing key {key!r}")
        v = obj[key]
        if not isinstance(v, types):
            raise _Broken(f"{path}.{key}", f"expected {'/'.join(t.__name__ for t in types)}, got {type(v).__name__}")
        return v

    def walk_actions(acts: Any, path: str) -> None:
        if isinstance(acts, dict):
            for k, v in acts.items():
                if v is not None and not isinstance(v, int | float):
                    raise _Broken(f"{path}.{k}", f"expected a number, got {type(v).__name__}")
            return
        if not isinstance(acts, list):
            raise _Broken(path, f"expected a list, got {type(acts).__name__}")
        for j, a in enumerate(acts):
            p = f"{path}[{j}]"
            need(a, "name", p, (str,))
            need(a, "started_at", p, (int, float))
            if a.get("finished_at") is not None and not isinstance(a["finished_at"], int | float):
                raise _Broken(f"{p}.finished_at", "expected a number")
            if a.get("children"):
                walk_actions(a["children"], p + ".children")

    def walk_data(items: Any, path: str) -> None:
        if not isinstance(items, list):
            raise _Broken(path, f"expected a list, got {type(items).__name__}")
        for i, it in enumerate(items):
            p = f"{path}[{i}]"
            need(it, "timestamp", p, (int, float))
            need(it, "duration", p, (int, float))
            if "atomic_actions" not in it:
                raise _Broken(p, "missing key 'atomic_actions'")
            walk_actions(it["atomic_actions"], p + ".atomic_actions")
            err = it.get("error")
            if err and not isinstance(err, list | str):
                raise _Broken(p + ".error", "expected a list [type, message, traceback]")

    if isinstance(data, dict):
        tasks = need(data, "tasks", base, (list,))
        for ti, t in enumerate(tasks):
            tp = f"{base}.tasks[{ti}]"
            for si, st in enumerate(need(t, "subtasks", tp, (list,))):
                sp = f"{tp}.subtasks[{si}]"
                for wi, w in enumerate(need(st, "workloads", sp, (list,))):
                    wp = f"{sp}.workloads[{wi}]"
                    need(w, "scenario", wp, (dict,))
                    walk_data(need(w, "data", wp, (list,)), wp + ".data")
    elif isinstance(data, list):
        for ti, t in enumerate(data):
            tp = f"{base}[{ti}]"
            key = need(t, "key", tp, (dict,))
            need(key, "name", tp + ".key", (str,))
            walk_data(need(t, "result", tp, (list,)), tp + ".result")
    else:
        raise _Broken(base, f"expected an object with 'tasks' or a list, got {type(data).__name__}")
    return ""


class _Broken(Exception):
    def __init__(self, path: str, msg: str):
        super().__init__(f"{path}: {msg}")
        self.path, self.msg = path, msg


def _add_report(b: _Builder, data: Any, meta: dict[str, Any], params: dict[str, Any], where: str) -> int:
    """Add one parsed report; returns the number of workloads added."""
    n_wl0 = len(b.wl)
    n_it0, n_r0 = len(b.it_ts), len(b.r_it)
    try:
        if isinstance(data, dict) and "tasks" in data:
            fv = str(data.get("info", {}).get("format_version", "1.2"))
            if not fv.startswith("1."):
                raise _Broken("$.info.format_version", f"unsupported format {fv!r} (expected 1.x)")
            windex = 0
            for t in data["tasks"]:
                for si, st in enumerate(t["subtasks"]):
                    for w in st["workloads"]:
                        scen = w["scenario"]
                        name = next(iter(scen)) if isinstance(scen, dict) and scen else str(scen)
                        b.wl.append({**meta, "task_uuid": t.get("uuid"), "subtask": si,
                                     "subtask_title": st.get("title"), "workload": windex,
                                     "workload_uuid": w.get("uuid"), "scenario": name})
                        b.wl_params.append(params)
                        b.add_iterations_v1(len(b.wl) - 1, w["data"])
                        windex += 1
        elif isinstance(data, list):
            for windex, t in enumerate(data):
                b.wl.append({**meta, "task_uuid": None, "subtask": windex, "subtask_title": None,
                             "workload": windex, "workload_uuid": None, "scenario": t["key"]["name"]})
                b.wl_params.append(params)
                b.add_iterations_old(len(b.wl) - 1, t["result"])
        else:
            raise _Broken("$", "expected a `rally task report --json` object with 'tasks' "
                               "or a `rally task results` list")
    except _Broken as e:
        _rollback(b, n_wl0, n_it0, n_r0)
        raise IngestError(f"{where}: malformed Rally JSON at {e.path}: {e.msg}") from None
    except (KeyError, TypeError, ValueError, AttributeError, StopIteration) as e:
        _rollback(b, n_wl0, n_it0, n_r0)
        try:
            _locate(data, "$")
        except _Broken as br:
            raise IngestError(f"{where}: malformed Rally JSON at {br.path}: {br.msg}") from None
        raise IngestError(f"{where}: malformed Rally JSON ({type(e).__name__}: {e})") from None
    return len(b.wl) - n_wl0


def _rollback(b: _Builder, n_wl: int, n_it: int, n_r: int) -> None:
    del b.wl[n_wl:], b.wl_params[n_wl:]
    for a in (b.it_wl, b.it_idx, b.it_ts, b.it_dur, b.it_idle, b.it_err, b.it_msg):
        del a[n_it:]
    for a in (b.r_it, b.r_act, b.r_start, b.r_fin, b.r_dur, b.r_fail):
        del a[n_r:]



# ---------------------------------------------------------------- entry points
def report_part(data: Any, inp: Input, where: str) -> Part:
    """One parsed Rally report (either format) → its part; IngestError naming ``where`` if malformed."""
    b = _Builder()
    _add_report(b, data, inp.meta, inp.params, where)
    return b.part(inp.params)


def source_part(source: Source, sidecars: dict | None = None) -> Part:
    """One bundle or file read the reference way."""
    inp = source_input(source, sidecars)
    if inp.rally is None:
        return Part([], inp.params)
    return report_part(load_json(inp.rally), inp, str(inp.rally))


def reference_frame(sources: Iterable[Source]) -> pd.DataFrame:
    """The table of ``sources`` built by the reference loop alone (one builder, its own frame)."""
    b = _Builder()
    sidecars: dict = {}
    for s in sources:
        inp = source_input(s, sidecars)
        if inp.rally is not None:
            _add_report(b, load_json(inp.rally), inp.meta, inp.params, str(inp.rally))
    return b.frame()
