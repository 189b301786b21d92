"""Rally results → one tidy table (pure: files in, DataFrame out, no network).

One row per iteration × atomic action (nested actions flattened, path ``a/b``),
plus one ``Total`` pseudo-action row per iteration carrying the iteration duration.
Inputs: result bundles (directories with manifest.json + rally.json) or plain Rally
JSON files (``rally task report --json`` format 1.x, or the older ``rally task
results`` list). Parameters come from the bundle manifest, else a sidecar
``params.yaml`` (file name → mapping) beside the file, else the file name.

Columns are documented in docs/results.md; parameter columns are ``param.<name>``.
"""

from __future__ import annotations

import json
import re
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

try:  # ~2-3x faster parsing of large reports; optional
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

PARAM_PREFIX = "param."
TOTAL = "Total"
MANIFEST = "manifest.json"
RALLY_JSON = "rally.json"
SIDECAR_NAMES = ("params.yaml", "params.yml")
EMPTY_WORKLOADS = "empty_workloads"  # DataFrame.attrs key: workloads that added no row
BACKENDS = {"mariadb", "galera", "cockroachdb", "cockroach", "crdb", "mysql", "postgresql", "sqlite"}

# Columns taken from the workload level (repeated over its rows)
WL_COLUMNS = (
    "source", "source_kind", "params_source", "benchmark", "trial_id", "trial_repetition",
    "region", "attempt", "run_id", "task_uuid", "subtask", "subtask_title", "workload",
    "workload_uuid", "scenario",
)
ROW_COLUMNS = (
    "iteration", "iteration_timestamp", "iteration_duration", "idle_duration", "error_type",
    "error_message", "action", "action_name", "action_depth", "action_started",
    "action_finished", "action_duration", "action_failed",
)


class IngestError(ValueError):
    """Malformed input; the message names the file and the JSON path where it broke."""


# ---------------------------------------------------------------- loading JSON
def load_json(path: Path) -> Any:
    raw = path.read_bytes()
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass  # fall through for a precise line/column message
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        hint = " (file truncated?)" if e.msg.startswith("Unterminated") or e.pos >= len(raw.rstrip()) - 1 else ""
        raise IngestError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}{hint}: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise IngestError(f"{path}: not UTF-8 JSON: {e}") from None


# ---------------------------------------------------------------- parameters
_MS_RE = re.compile(r"^(\d+(?:\.\d+)?)ms$")
_INT_RE = re.compile(r"^\d+$")


def params_from_filename(name: str) -> dict[str, Any]:
    """Parameters guessed from a name like ``mariadb-9-100ms-light-2018….json``.

    Tokens (split on ``-`` and ``_``): a known database name → ``backend``; the first
    plain integer → ``regions``; ``<n>ms`` → ``latency_ms`` (whatever the study meant by
    it: use a sidecar params.yaml to be precise); ``light``/``high`` → ``load``;
    ``key=value`` → ``key``. Other tokens are ignored.
    """
    stem = Path(name).name
    for suf in (".json", ".gz"):
        if stem.endswith(suf):
            stem = stem[: -len(suf)]
    out: dict[str, Any] = {}
    for tok in re.split(r"[-_]", stem):
        t = tok.lower()
        if not t:
            continue
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = _scalar(v)
        elif t in BACKENDS and "backend" not in out:
            out["backend"] = t
        elif _INT_RE.match(t) and "regions" not in out and int(t) < 10000:
            out["regions"] = int(t)
        elif (m := _MS_RE.match(t)) and "latency_ms" not in out:
            out["latency_ms"] = _scalar(m.group(1))
        elif t in ("light", "high") and "load" not in out:
            out["load"] = t
    return out


def _scalar(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def read_sidecar(directory: Path) -> dict[str, dict[str, Any]]:
    import yaml

    for n in SIDECAR_NAMES:
        p = directory / n
        if p.is_file():
            try:
                data = yaml.safe_load(p.read_text()) or {}
            except yaml.YAMLError as e:
                raise IngestError(f"{p}: invalid YAML: {e}") from None
            if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
                raise IngestError(f"{p}: expected a mapping of file name → mapping of parameters")
            return {str(k): v for k, v in data.items()}
    return {}


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
            cols[name] = _take(np.array([w.get(name) for w in self.wl] + [None], dtype=object)[:-1], r_wl)
        pnames: list[str] = []
        for p in self.wl_params:
            for k in p:
                if k not in pnames:
                    pnames.append(k)
        for k in pnames:
            vals = np.array([p.get(k) for p in self.wl_params] + [None], dtype=object)[:-1]
            cols[PARAM_PREFIX + k] = _take(vals, r_wl)

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

    def empty_workloads(self) -> list[str]:
        """``scenario (source)`` of each workload without iterations (no row in the table)."""
        used = set(self.it_wl)
        return [f"{w['scenario']} ({w['source']})" for i, w in enumerate(self.wl) if i not in used]


def _take(values: np.ndarray, idx: np.ndarray):
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


# ---------------------------------------------------------------- sources
@dataclass(frozen=True)
class Source:
    kind: str  # "bundle" | "file"
    path: Path  # bundle dir or JSON file


def discover(paths: Iterable[str | Path]) -> list[Source]:
    """Bundles (dirs holding manifest.json) and plain Rally JSON files under ``paths``."""
    out: list[Source] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        if not p.exists():
            raise IngestError(f"{p}: no such file or directory")
        if p.is_file():
            src = Source("bundle", p.parent) if p.name == MANIFEST else Source("file", p)
            if src.path not in seen:
                seen.add(src.path)
                out.append(src)
            continue
        bundles = sorted({m.parent for m in p.rglob(MANIFEST)})
        for bd in bundles:
            if bd not in seen:
                seen.add(bd)
                out.append(Source("bundle", bd))
        for f in sorted(p.rglob("*.json")):
            if f.name in (MANIFEST, "task.json") or any(bd in f.parents for bd in bundles):
                continue
            if f not in seen:
                seen.add(f)
                out.append(Source("file", f))
    return out


def bundle_meta(manifest: dict[str, Any], bundle_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    trial = manifest.get("trial") or {}
    meta = {
        "source": str(bundle_dir), "source_kind": "bundle", "params_source": "manifest",
        "benchmark": manifest.get("benchmark"), "trial_id": trial.get("id"),
        "trial_repetition": trial.get("repetition"), "region": manifest.get("region"),
        "attempt": manifest.get("attempt"), "run_id": manifest.get("run_id"),
    }
    return meta, dict(trial.get("parameters") or {})


def _add_bundle(b: _Builder, bundle_dir: Path) -> int:
    mpath = bundle_dir / MANIFEST
    manifest = load_json(mpath)
    if not isinstance(manifest, dict) or not str(manifest.get("schema", "")).startswith("wanwide.io/bundle/"):
        raise IngestError(f"{mpath}: not a wanwide bundle manifest (schema {manifest.get('schema') if isinstance(manifest, dict) else None!r})")
    rj = bundle_dir / RALLY_JSON
    if not rj.exists():
        return 0  # failed run without results: nothing to tabulate (see manifest status)
    meta, params = bundle_meta(manifest, bundle_dir)
    return _add_report(b, load_json(rj), meta, params, str(rj))


def _file_params(path: Path, sidecars: dict[Path, dict[str, dict[str, Any]]]) -> tuple[dict[str, Any], str]:
    d = path.parent
    if d not in sidecars:
        sidecars[d] = read_sidecar(d)
    side = sidecars[d]
    for key in (path.name, path.stem):
        if key in side:
            return dict(side[key]), "sidecar"
    p = params_from_filename(path.name)
    return p, ("filename" if p else "none")


def _add_file(b: _Builder, path: Path, sidecars: dict) -> int:
    params, how = _file_params(path, sidecars)
    meta = {"source": str(path), "source_kind": "file", "params_source": how, "benchmark": None,
            "trial_id": None, "trial_repetition": None, "region": None, "attempt": None, "run_id": None}
    return _add_report(b, load_json(path), meta, params, str(path))


def iter_ingest(sources: list[Source], builder: _Builder) -> Iterator[Source]:
    sidecars: dict = {}
    for s in sources:
        if s.kind == "bundle":
            _add_bundle(builder, s.path)
        else:
            _add_file(builder, s.path, sidecars)
        yield s


# ---------------------------------------------------------------- public API
def ingest_rally_json(
    data: Any,
    *,
    source: str = "<memory>",
    params: dict[str, Any] | None = None,
    params_source: str = "none",
) -> pd.DataFrame:
    """Tabulate one parsed Rally report (format 1.x dict or old results list)."""
    b = _Builder()
    meta = {"source": source, "source_kind": "file", "params_source": params_source, "benchmark": None,
            "trial_id": None, "trial_repetition": None, "region": None, "attempt": None, "run_id": None}
    _add_report(b, data, meta, dict(params or {}), source)
    return b.frame()


def ingest_file(path: str | Path) -> pd.DataFrame:
    """A plain Rally JSON file; parameters from a sidecar params.yaml or the file name."""
    b = _Builder()
    _add_file(b, Path(path), {})
    return b.frame()


def ingest_bundle(bundle_dir: str | Path) -> pd.DataFrame:
    """A result bundle directory (manifest.json + rally.json)."""
    b = _Builder()
    _add_bundle(b, Path(bundle_dir))
    return b.frame()


def ingest_sources(sources: list[Source], *, progress: bool = False) -> pd.DataFrame:
    """The bundles and plain Rally JSON files found by :func:`discover` → one table.

    With ``progress``, a progress bar (one step per source) goes to stderr.
    """
    b = _Builder()
    it: Iterable[Source] = iter_ingest(sources, b)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, total=len(sources), desc="reading results", unit="file", file=sys.stderr)
    for _ in it:
        pass
    return b.frame()


def bundle_manifests(sources: list[Source]) -> list[dict[str, Any]]:
    """The parsed manifest.json of every bundle among ``sources``, in their order."""
    return [load_json(s.path / MANIFEST) for s in sources if s.kind == "bundle"]


def ingest_paths(paths: Iterable[str | Path], *, progress: bool = False) -> pd.DataFrame:
    """Every bundle and plain Rally JSON file under ``paths`` → one table."""
    return ingest_sources(discover(paths), progress=progress)


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
