"""The Benchmark's key Secret: fernet/credential keys and passwords shared by all its regions."""

from __future__ import annotations

import base64
import os
import secrets as pysecrets
from typing import Any

from wanwide.core.plan import names
from wanwide.providers.kubernetes.render.secrets import KEY_FIELDS, keys_secret_name


def generate() -> dict[str, str]:
    """Fresh key material (base64 of the values, as Secret ``data`` wants)."""
    values: dict[str, str] = {}
    for k in KEY_FIELDS["fernet"] + KEY_FIELDS["credential"]:
        values[k] = base64.urlsafe_b64encode(os.urandom(32)).decode()
    for k in KEY_FIELDS["passwords"]:
        values[k] = pysecrets.token_urlsafe(24)
    return {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}


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
