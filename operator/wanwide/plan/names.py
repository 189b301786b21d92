"""Deterministic names and labels of everything wanwide creates."""

from __future__ import annotations

import hashlib

MANAGED_BY = {"app.kubernetes.io/managed-by": "wanwide"}
L_BENCHMARK = "wanwide.io/benchmark"
L_TRIAL = "wanwide.io/trial"
L_REGION = "wanwide.io/region"
L_ROLE = "wanwide.io/role"
A_PARAMETERS = "wanwide.io/parameters"
A_COPY_FROM = "wanwide.io/copy-from"
A_START_AFTER = "wanwide.io/start-after"


def short_hash(text: str, n: int = 5) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def trial_name(benchmark: str, index: int) -> str:
    """Name of the Trial object (and the trial's label value): ``<benchmark>-t003``."""
    return f"{benchmark}-t{index:03d}"


def trial_id(index: int) -> str:
    return f"t{index:03d}"


def namespace(bench_namespace: str, benchmark: str, index: int, region: str) -> str:
    """Namespace of one (trial, region): unique across Benchmark namespaces, ≤ 63 chars."""
    tag = short_hash(f"{bench_namespace}/{benchmark}")
    suffix = f"-{tag}-t{index:03d}-{region}"
    head = benchmark[: 63 - len(suffix)].rstrip("-")
    return f"{head}{suffix}"


def db_namespace(bench_namespace: str, benchmark: str, index: int) -> str:
    """Namespace of a trial's multi-member database (Galera, CockroachDB)."""
    return namespace(bench_namespace, benchmark, index, "db")


def labels(benchmark: str, index: int, region: str | None = None, role: str | None = None) -> dict[str, str]:
    out = dict(MANAGED_BY)
    out[L_BENCHMARK] = benchmark
    out[L_TRIAL] = trial_name(benchmark, index)
    if region:
        out[L_REGION] = region
    if role:
        out[L_ROLE] = role
    return out
