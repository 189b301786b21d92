"""What the ingest reads: bundles and plain Rally JSON files, their parameters, the table's column names.

Pure (files in, values out). ``discover`` walks the tree once, so thousands of bundles are found
in about the time it takes to list them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wanwide.core.errors import UserError

try:  # ~2-3x faster parsing than the stdlib; optional
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


class IngestError(UserError, ValueError):
    """Malformed input; the message names the file and the JSON path where it broke."""


# ---------------------------------------------------------------- loading JSON
def load_json(path: Path) -> Any:
    """Parsed JSON of ``path``; IngestError with line and column when it is not JSON."""
    raw = path.read_bytes()
    return parse_json(raw, path)


def parse_json(raw: bytes, path: Path | str) -> Any:
    """``raw`` parsed (orjson when installed); IngestError naming ``path`` otherwise."""
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


def sidecar_path(directory: Path) -> Path | None:
    """The params.yaml (or .yml) of ``directory``, if there is one."""
    for n in SIDECAR_NAMES:
        p = directory / n
        if p.is_file():
            return p
    return None


def read_sidecar(directory: Path) -> dict[str, dict[str, Any]]:
    """file name → parameters, from ``directory``'s params.yaml ({} without one)."""
    import yaml

    p = sidecar_path(directory)
    if p is None:
        return {}
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise IngestError(f"{p}: invalid YAML: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise IngestError(f"{p}: expected a mapping of file name → mapping of parameters")
    return {str(k): v for k, v in data.items()}


# ---------------------------------------------------------------- sources
@dataclass(frozen=True)
class Source:
    kind: str  # "bundle" | "file"
    path: Path  # bundle dir or JSON file


def discover(paths: Iterable[str | Path]) -> list[Source]:
    """Bundles (dirs holding manifest.json) and plain Rally JSON files under ``paths``.

    Bundles first (sorted by path), then the JSON files outside every bundle (sorted), per
    argument; manifest.json, task.json and anything inside a bundle are not plain files, and hidden
    directories (``.work``: a live lab run's scratch) are not entered.
    """
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
        bundles, files = _walk(p)
        for bd in sorted(bundles):
            if bd not in seen:
                seen.add(bd)
                out.append(Source("bundle", bd))
        for f in sorted(files):
            if f not in seen:
                seen.add(f)
                out.append(Source("file", f))
    return out


def _walk(root: Path) -> tuple[list[Path], list[Path]]:
    """(bundle dirs, plain *.json files outside bundles) under ``root``, in one pass of os.walk."""
    bundles: list[Path] = []
    files: list[Path] = []
    inside: set[str] = set()  # bundle dirs, and dirs below one
    for dirpath, dirnames, filenames in os.walk(root):  # like Path.rglob: symlinked dirs not entered
        # hidden dirs are scratch, not results: the lab's bundles/.work holds a live run's Rally files
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        in_bundle = os.path.dirname(dirpath) in inside
        if MANIFEST in filenames:
            bundles.append(Path(dirpath))
            in_bundle = True
        if in_bundle:
            inside.add(dirpath)
            continue
        files += [Path(dirpath, f) for f in filenames if f.endswith(".json") and f not in (MANIFEST, "task.json")]
    return bundles, files


def bundle_meta(manifest: dict[str, Any], bundle_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(source fields, trial parameters) of a bundle from its manifest."""
    trial = manifest.get("trial") or {}
    meta = {
        "source": str(bundle_dir), "source_kind": "bundle", "params_source": "manifest",
        "benchmark": manifest.get("benchmark"), "trial_id": trial.get("id"),
        "trial_repetition": trial.get("repetition"), "region": manifest.get("region"),
        "attempt": manifest.get("attempt"), "run_id": manifest.get("run_id"),
    }
    return meta, dict(trial.get("parameters") or {})


def file_meta(source: str, params_source: str) -> dict[str, Any]:
    """Source fields of a plain Rally JSON file (no manifest: no benchmark, trial, region…)."""
    return {"source": source, "source_kind": "file", "params_source": params_source, "benchmark": None,
            "trial_id": None, "trial_repetition": None, "region": None, "attempt": None, "run_id": None}


def read_manifest(bundle_dir: Path) -> dict[str, Any]:
    """A bundle's manifest.json; IngestError when it is not a wanwide bundle manifest."""
    mpath = bundle_dir / MANIFEST
    manifest = load_json(mpath)
    if not isinstance(manifest, dict) or not str(manifest.get("schema", "")).startswith("wanwide.io/bundle/"):
        raise IngestError(f"{mpath}: not a wanwide bundle manifest "
                          f"(schema {manifest.get('schema') if isinstance(manifest, dict) else None!r})")
    return manifest


@dataclass(frozen=True)
class Input:
    """One source ready to read: its source fields, parameters and the Rally JSON (None: none to read)."""

    meta: dict[str, Any]
    params: dict[str, Any]
    rally: Path | None


def source_input(source: Source, sidecars: dict[Path, dict[str, dict[str, Any]]] | None = None) -> Input:
    """The manifest (bundle) or sidecar/file name (plain file) of ``source``; reads no Rally JSON."""
    if source.kind == "bundle":
        manifest = read_manifest(source.path)
        rj = source.path / RALLY_JSON
        meta, params = bundle_meta(manifest, source.path)
        # a failed run without results has nothing to tabulate (see its manifest status)
        return Input(meta, params, rj if rj.exists() else None)
    sidecars = {} if sidecars is None else sidecars
    d = source.path.parent
    if d not in sidecars:
        sidecars[d] = read_sidecar(d)
    side = sidecars[d]
    for key in (source.path.name, source.path.stem):
        if key in side:
            return Input(file_meta(str(source.path), "sidecar"), dict(side[key]), source.path)
    p = params_from_filename(source.path.name)
    return Input(file_meta(str(source.path), "filename" if p else "none"), p, source.path)
