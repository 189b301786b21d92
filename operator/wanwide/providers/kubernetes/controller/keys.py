"""The Benchmark's key Secret: fernet/credential keys and passwords shared by all its regions."""

from __future__ import annotations

import base64
import os
import secrets as pysecrets
from typing import Any

from wanwide.core.plan import names
from wanwide.providers.kubernetes.render.secrets import KEY_FIELDS, keys_secret_name


def generate(only: tuple[str, ...] | None = None) -> dict[str, str]:
    """Fresh key material (base64 of the values, as Secret ``data`` wants); ``only``: just these keys."""
    values: dict[str, str] = {}
    for k in KEY_FIELDS["fernet"] + KEY_FIELDS["credential"]:
        values[k] = base64.urlsafe_b64encode(os.urandom(32)).decode()
    for k in KEY_FIELDS["passwords"] + KEY_FIELDS["service-passwords"]:
        values[k] = pysecrets.token_urlsafe(24)
    return {k: base64.b64encode(v.encode()).decode() for k, v in values.items() if only is None or k in only}


def completed(data: dict[str, str]) -> dict[str, str] | None:
    """An existing key Secret's ``data`` with the service passwords it lacks added (a Benchmark made before wanwide
    deployed those services); None: nothing lacks. Nothing it holds changes."""
    missing = tuple(k for k in KEY_FIELDS["service-passwords"] if k not in data)
    return {**data, **generate(missing)} if missing else None


def secret(bench: dict[str, Any], data: dict[str, str]) -> dict[str, Any]:
    meta = bench["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": keys_secret_name(meta["name"]),
            "namespace": meta["namespace"],
            "labels": {**names.MANAGED_BY, names.L_BENCHMARK: names.label_value(meta["name"])},
            "ownerReferences": [owner(bench)],
        },
        "type": "Opaque",
        "data": data,
    }


def owner(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
