"""Free-form parts of a spec (chart values, scenario arguments, affinity) and string maps (node
selectors, resources): bounded in size, depth and shape.

The CRD can bound a free-form object's top-level keys (``maxProperties``) but not its depth or
size, nor a map's keys (CEL's cost estimate of a key is the whole request): the planner checks
those (``freeform_problem``, ``label_map_problem``), and the API server refuses a whole object over
1.5 MiB. Every walk here is iterative and stops at its limit: a value nested thousands of levels
deep, or megabytes wide, costs no more than the limit.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

from wanwide.core.api.base import LABEL_KEY_RE, LABEL_VALUE_RE

MAX_DEPTH = 32
"""How deep a free-form value may nest (chart values nest about 8 levels)."""


def json_size(value: Any, limit: int, max_depth: int = MAX_DEPTH) -> tuple[int, str | None]:
    """(about how many bytes ``value`` takes as JSON, why it is not a JSON value of at most ``max_depth`` levels
    or None); the walk stops once the size passes ``limit``."""
    size = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > max_depth:
            return size, f"nests deeper than {max_depth} levels"
        if isinstance(v, dict):
            size += 2
            for k, x in v.items():
                if not isinstance(k, str):
                    return size, f"key {k!r} is not text: quote it"
                size += len(k) + 4
                stack.append((x, depth + 1))
        elif isinstance(v, list):
            size += 2
            stack.extend((x, depth + 1) for x in v)
            size += len(v)
        elif isinstance(v, str):
            size += len(v) + 2
        elif isinstance(v, bool) or v is None:
            size += 5
        elif isinstance(v, int):
            size += len(str(v)) if abs(v) < 10**30 else 31
        elif isinstance(v, float):
            if not math.isfinite(v):
                return size, f"{v} is not a number JSON can hold: write a finite number"
            size += 24
        else:
            return size, f"a {type(v).__name__} is not a JSON value: write text, a number, true/false, a list or a mapping"
        if size > limit:
            return size, None
    return size, None


def freeform_problem(value: Any, max_bytes: int, max_keys: int) -> str | None:
    """Why a free-form mapping is refused (None: it is not)."""
    if isinstance(value, dict) and len(value) > max_keys:
        return f"{len(value)} top-level keys, more than {max_keys}: keep what the chart or scenario needs"
    size, why = json_size(value, max_bytes)
    if why is not None:
        return why
    if size > max_bytes:
        return (f"more than {max_bytes // 1024} KiB as JSON: keep what differs from the defaults (the whole "
                "object must stay under the API server's 1.5 MiB)")
    return None


def FreeForm(max_bytes: int, max_keys: int) -> Any:  # noqa: N802 (a type)
    """A free-form mapping (kept as written, nulls too) of at most ``max_keys`` top-level keys and
    ``max_bytes`` as JSON, ``MAX_DEPTH`` levels deep."""

    def check(value: dict[str, Any]) -> dict[str, Any]:
        why = freeform_problem(value, max_bytes, max_keys)
        if why is not None:
            raise ValueError(why)
        return value

    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "maxProperties": max_keys}
    return Annotated[dict[str, Any], AfterValidator(check), WithJsonSchema(schema)]


LABELS_MAX = 20


def label_map_problem(value: dict[str, str], max_keys: int = LABELS_MAX) -> str | None:
    """Why a node selector is refused: a key or value Kubernetes would refuse on the pods (None: none)."""
    if len(value) > max_keys:
        return f"{len(value)} labels, more than {max_keys}"
    for k, v in value.items():
        if not isinstance(k, str) or len(k) > 316 or not re.fullmatch(LABEL_KEY_RE, k) \
                or len(k.rpartition("/")[0]) > 253:
            return f"{k!r} is not a label key: [prefix/]name, the name 1–63 letters, digits, '-', '_' or '.'"
        if not isinstance(v, str) or len(v) > 63 or not re.fullmatch(LABEL_VALUE_RE, v):
            return f"{k}: {v!r} is not a label value: at most 63 letters, digits, '-', '_' or '.'"
    return None


def LabelMap(max_keys: int = LABELS_MAX) -> Any:  # noqa: N802 (a type)
    """Labels (a node selector) as Kubernetes takes them: at most ``max_keys``, keys and values checked."""

    def check(value: dict[str, str]) -> dict[str, str]:
        why = label_map_problem(value, max_keys)
        if why is not None:
            raise ValueError(why)
        return value

    schema = {"type": "object", "maxProperties": max_keys,
              "additionalProperties": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_RE}}
    return Annotated[dict[str, str], AfterValidator(check), WithJsonSchema(schema)]


def depth_problem(value: Any, max_depth: int) -> str | None:
    """Whether ``value`` nests deeper than ``max_depth`` (iterative: any depth is safe to ask about)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > max_depth:
            return f"nests deeper than {max_depth} levels"
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
    return None
