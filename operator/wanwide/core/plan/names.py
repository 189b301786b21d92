"""Deterministic names and labels of everything wanwide creates, and the rules they follow.

Kubernetes' own rules: an object name is a DNS-1123 subdomain (at most 253
characters), a namespace a DNS-1123 label (at most 63), a label value at most 63
characters of ``[A-Za-z0-9._-]`` starting and ending alphanumeric. Every derived
name is made valid here, deterministically: a name that would break a rule is cut
and given a hash suffix of the whole, so two different inputs never collide.
Valid short names are kept as they are.
"""

from __future__ import annotations

import functools
import hashlib
import re

from wanwide.core.api.base import DNS_SUBDOMAIN_RE

MANAGED_BY = {"app.kubernetes.io/managed-by": "wanwide"}
L_BENCHMARK = "wanwide.io/benchmark"
L_TRIAL = "wanwide.io/trial"
L_REGION = "wanwide.io/region"
L_ROLE = "wanwide.io/role"
L_OWNER = "wanwide.io/owner-uid"  # on a trial's namespaces: the uid of the Benchmark that made them
A_PARAMETERS = "wanwide.io/parameters"
A_COPY_FROM = "wanwide.io/copy-from"  # a Secret or ServiceAccount the apply layer fills from its source
A_COPY_KEYS = "wanwide.io/copy-keys"  # a Secret copy's keys: source=copy,...; or COPY_ALL
COPY_ALL = "*"  # every key of the source, and its type
A_FAULT = "wanwide.io/fault"  # the fault window occurrence a chaos object carries out

DNS_SUBDOMAIN_MAX = 253
LABEL_MAX = 63
# A Benchmark's name prefixes its Trials, namespaces and objects (the CRD's CEL rule says the same).
BENCHMARK_NAME_MAX = 40
BENCHMARK_NAME_MESSAGE = (
    f"metadata.name must be at most {BENCHMARK_NAME_MAX} characters (it prefixes namespaces and object names)"
)


def short_hash(text: str, n: int = 5) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


BENCH_TAG_LEN = 10  # hex digits (40 bits) naming a Benchmark in its namespaces' names


def bench_tag(bench_namespace: str, benchmark: str) -> str:
    """The hash of a Benchmark's namespace and name that every namespace it makes carries: 40 bits, so that
    a name made on purpose to meet another Benchmark's (or anyone's) namespace takes ~10^12 tries. Names only
    keep names apart; ownership is checked on the namespace's labels before anything is changed there."""
    return short_hash(f"{bench_namespace}/{benchmark}", BENCH_TAG_LEN)


def shown(name: str, limit: int = 80) -> str:
    """``name`` quoted for a message of one line: control characters escaped, a long one cut."""
    return repr(name if len(name) <= limit else name[: limit - 20] + "…")


def object_name_problem(name: str, max_len: int = DNS_SUBDOMAIN_MAX) -> str | None:
    """Why the API server would refuse ``name`` as an object's name (None: it would not)."""
    if not re.fullmatch(DNS_SUBDOMAIN_RE, name):
        fix = re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip(".-") or "my-benchmark"
        return (f"{shown(name)} is not a valid Kubernetes object name: use lower-case letters, digits, '-' and '.', "
                f"starting and ending with a letter or digit (a DNS-1123 subdomain), such as {fix!r}")
    if len(name) > max_len:
        return f"{shown(name)} has {len(name)} characters, more than {max_len}: shorten it"
    return None


def namespace_problem(name: str) -> str | None:
    """Why the API server would refuse ``name`` as a namespace (a DNS-1123 label; None: it would not)."""
    if re.fullmatch(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", name) and len(name) <= LABEL_MAX:
        return None
    fix = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:LABEL_MAX] or "default"
    return (f"{shown(name)} is not a valid namespace: use at most {LABEL_MAX} lower-case letters, digits and '-', "
            f"starting and ending with a letter or digit, such as {fix!r}")


def benchmark_name_problem(name: str) -> str | None:
    """Why a Benchmark may not be called ``name``: Kubernetes' rule, then wanwide's length limit."""
    problem = object_name_problem(name)
    if problem is None and len(name) > BENCHMARK_NAME_MAX:
        problem = f"{shown(name)} has {len(name)} characters: {BENCHMARK_NAME_MESSAGE.removeprefix('metadata.name ')}"
    return problem


def _fit(text: str, max_len: int, allowed: str) -> str:
    """``text`` if it is at most ``max_len`` characters of ``allowed`` (a regex class), starting and ending
    alphanumeric; else its allowed part, cut, with ``-<hash of text>`` appended."""
    clean = re.sub(f"[^{allowed}]", "-", text)
    if clean == text and len(text) <= max_len and re.fullmatch(r"^[A-Za-z0-9](.*[A-Za-z0-9])?$", text):
        return text
    tag = short_hash(text)
    head = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", clean[: max_len - len(tag) - 1])
    return f"{head}-{tag}" if head else tag


def label_value(text: str) -> str:
    """``text`` as a label value: itself when valid, else cut with a hash suffix."""
    return _fit(text, LABEL_MAX, "-A-Za-z0-9_.")


def trial_name(benchmark: str, index: int) -> str:
    """Name of the Trial object (and the trial's label value): ``<benchmark>-t003``."""
    suffix = f"-t{index:03d}"
    if len(benchmark) + len(suffix) <= LABEL_MAX:
        return f"{benchmark}{suffix}"
    return _fit(benchmark, LABEL_MAX - len(suffix), "-a-z0-9.") + suffix


def trial_id(index: int) -> str:
    return f"t{index:03d}"


@functools.lru_cache(maxsize=65536)  # asked for per region, often: a trial of hundreds of regions asks a lot
def namespace(bench_namespace: str, benchmark: str, index: int, region: str) -> str:
    """Namespace of one (trial, region): a DNS label unique across Benchmark namespaces, ≤ 63 chars."""
    suffix = f"-{bench_tag(bench_namespace, benchmark)}-t{index:03d}-{region}"
    head = re.sub(r"[^a-z0-9-]+", "-", benchmark.lower())[: LABEL_MAX - len(suffix)].strip("-")
    return f"{head}{suffix}"


def preflight_namespace(bench_namespace: str, benchmark: str) -> str:
    """Namespace of a Benchmark's netem probe pods (the operator's preflight)."""
    suffix = f"-{bench_tag(bench_namespace, benchmark)}-preflight"
    head = re.sub(r"[^a-z0-9-]+", "-", benchmark.lower())[: LABEL_MAX - len(suffix)].strip("-")
    return f"{head}{suffix}"


def db_namespace(bench_namespace: str, benchmark: str, index: int) -> str:
    """Namespace of a trial's multi-member database (Galera, CockroachDB)."""
    return namespace(bench_namespace, benchmark, index, "db")


def labels(benchmark: str, index: int, region: str | None = None, role: str | None = None) -> dict[str, str]:
    out = dict(MANAGED_BY)
    out[L_BENCHMARK] = label_value(benchmark)
    out[L_TRIAL] = trial_name(benchmark, index)
    if region:
        out[L_REGION] = region
    if role:
        out[L_ROLE] = role
    return out
