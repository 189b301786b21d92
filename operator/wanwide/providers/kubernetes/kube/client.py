"""The only place that talks to the API server: server-side apply, get, list, delete."""

from __future__ import annotations

import base64
import json
import logging
import time
from typing import Any

from kubernetes import client, config
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import (
    BadRequestError,
    NotFoundError,
    ResourceNotFoundError,
    UnprocessibleEntityError,
)
from prometheus_client import Counter

from wanwide import FIELD_MANAGER
from wanwide.core.errors import PermanentError, TransientError
from wanwide.core.plan import names

log = logging.getLogger(__name__)
API_REQUESTS = Counter("wanwide_api_requests_total", "Requests to the API server (helm's not counted)", ["verb"])
DISCOVERY_TTL_S = 10.0
"""How long :meth:`Kube.serves` trusts a discovery answer (CRDs come and go)."""
SOURCE_TTL_S = 10.0
"""How long a Secret copied into trial namespaces is trusted (a trial's namespaces are applied in one go)."""


class MissingSource(TransientError, RuntimeError):
    """A Secret to copy from does not exist (or lacks a key)."""


class ObjectRefused(PermanentError):
    """The API server refused an object wanwide rendered (invalid, or denied by an admission webhook):
    applying it again is refused again."""

    reason = "ObjectRefused"


def _refusal(e: Exception) -> str:
    """The API server's own message for a refused request."""
    try:
        return json.loads(e.body).get("message") or str(e)  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return str(e)


CONNECTIONS = 40
"""Connections kept open to the API server: the operator's parallel applies (providers/kubernetes/controller/actions.LANES) and steps."""


def load_config(kubeconfig: str | None = None) -> client.ApiClient:
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except config.ConfigException:
            config.load_kube_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = CONNECTIONS
    return client.ApiClient(cfg)


try:  # a trial's Jobs listed at once are megabytes of JSON: parsing them was most of the operator's CPU
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson comes with wanwide[operator]
    _loads = json.loads


def _json(resp: Any) -> dict[str, Any]:
    """A response's body as plain data (the dynamic client's own objects cost more than the request)."""
    return _loads(resp.data)


def _selector(pairs: dict[str, str] | None) -> str | None:
    """``k=v,k2=v2`` for a label or field selector; None for none."""
    return ",".join(f"{k}={v}" for k, v in (pairs or {}).items()) or None


class Kube:
    """Thin wrapper over the dynamic client; every write is a server-side apply as ``wanwide``."""

    def __init__(self, api: client.ApiClient | None = None, field_manager: str = FIELD_MANAGER):
        self.api = api or load_config()
        self.dyn = DynamicClient(self.api)
        self.field_manager = field_manager
        self._res: dict[tuple[str, str], Any] = {}
        self._served: dict[str, tuple[float, frozenset[str]]] = {}
        self._sources: dict[tuple[str, str], tuple[float, dict[str, Any] | None]] = {}

    def resource(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        if key not in self._res:
            self._res[key] = self.dyn.resources.get(api_version=api_version, kind=kind)
        return self._res[key]

    def _resolves(self, api_version: str, kind: str) -> bool:
        """The dynamic client knows ``kind`` (its discovery cache refreshed once on a miss)."""
        try:
            self.resource(api_version, kind)
            return True
        except ResourceNotFoundError:
            try:
                self.dyn.resources.invalidate_cache()
                self._res.pop((api_version, kind), None)
                self.resource(api_version, kind)
                return True
            except ResourceNotFoundError:
                return False

    def serves(self, api_version: str, *kinds: str) -> bool:
        """Whether the API server serves all ``kinds`` of ``api_version`` now.

        One discovery request per group version, trusted for DISCOVERY_TTL_S (trials starting
        together ask once); a kind that went away is forgotten, one that came is looked up.
        """
        now = time.monotonic()
        hit = self._served.get(api_version)
        if hit is None or now - hit[0] >= DISCOVERY_TTL_S:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            API_REQUESTS.labels("discovery").inc()
            try:
                listed = self.dyn.request("GET", path).to_dict().get("resources") or []
            except NotFoundError:
                listed = []
            hit = self._served[api_version] = (now, frozenset(r["kind"] for r in listed if "/" not in r["name"]))
            for key in [k for k in self._res if k[0] == api_version and k[1] not in hit[1]]:
                del self._res[key]
        return all(k in hit[1] and self._resolves(api_version, k) for k in kinds)

    def apply(self, obj: dict[str, Any]) -> None:
        """Server-side apply (forcing conflicts: wanwide owns what it renders); the answer is not read."""
        if names.A_COPY_FROM in (obj["metadata"].get("annotations") or {}):
            if obj["kind"] == "Secret":
                obj = self.materialise_secret(obj)
            elif obj["kind"] == "ServiceAccount":
                obj = self.materialise_service_account(obj)
        res = self.resource(obj["apiVersion"], obj["kind"])
        API_REQUESTS.labels("apply").inc()
        try:
            _ = res.server_side_apply(  # read, so that the connection goes back to the pool
                body=obj,
                name=obj["metadata"]["name"],
                namespace=obj["metadata"].get("namespace"),
                field_manager=self.field_manager,
                force_conflicts=True,
                serialize=False,
            ).data
        except (BadRequestError, UnprocessibleEntityError) as e:
            m = obj["metadata"]
            where = f"{m['namespace']}/{m['name']}" if m.get("namespace") else m["name"]
            raise ObjectRefused(f"the API server refused {obj['kind']} {where}: {_refusal(e)}") from e

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        API_REQUESTS.labels("get").inc()
        try:
            return _json(self.resource(api_version, kind).get(name=name, namespace=namespace, serialize=False))
        except NotFoundError:
            return None

    def list(self, api_version: str, kind: str, selector: dict[str, str] | None = None,
             namespace: str | None = None, cached: bool = False,
             fields: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Objects by label (and ``fields``, e.g. ``metadata.name``; ``namespace`` None: across namespaces),
        as plain dicts; ``cached``: as the API server's cache has them (may trail the latest writes;
        cheaper: for polling)."""
        API_REQUESTS.labels("list").inc()
        out = _json(self.resource(api_version, kind).get(namespace=namespace, label_selector=_selector(selector),
                                                         field_selector=_selector(fields),
                                                         resource_version="0" if cached else None,
                                                         serialize=False))
        return out.get("items") or []

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None,
               propagation: str = "Background") -> bool:
        """Delete; False when it was already gone."""
        API_REQUESTS.labels("delete").inc()
        try:
            self.resource(api_version, kind).delete(
                name=name, namespace=namespace, body={"propagationPolicy": propagation})
            return True
        except NotFoundError:
            return False

    def drop_finalizer(self, obj: dict[str, Any], finalizer: str) -> None:
        """Remove ``finalizer`` from ``obj`` as it was read (its resourceVersion guards the write: a change
        meanwhile makes it a conflict, tried again by the caller's next step)."""
        m = obj["metadata"]
        left = [f for f in m.get("finalizers") or [] if f != finalizer]
        API_REQUESTS.labels("patch").inc()
        self.resource(obj["apiVersion"], obj["kind"]).patch(
            name=m["name"], namespace=m.get("namespace"), content_type="application/merge-patch+json",
            body={"metadata": {"finalizers": left, "resourceVersion": m.get("resourceVersion")}})

    def patch_status(self, api_version: str, kind: str, name: str, namespace: str,
                     status: dict[str, Any]) -> dict[str, Any]:
        """Merge-patch the status; the object as written."""
        API_REQUESTS.labels("patch").inc()
        return _json(self.resource(api_version, kind).status.patch(
            name=name, namespace=namespace, body={"status": status}, content_type="application/merge-patch+json",
            serialize=False))

    def _source(self, kind: str, ref: str) -> dict[str, Any]:
        """The object a copy names (``namespace/name``), read once for a burst of copies."""
        src_ns, src_name = ref.split("/", 1)
        at, src = self._sources.get((kind, ref), (0.0, None))
        if src is None or time.monotonic() - at > SOURCE_TTL_S:
            src = self.get("v1", kind, src_name, src_ns)
            self._sources[(kind, ref)] = (time.monotonic(), src)
        if src is None:
            raise MissingSource(f"{kind} {ref} not found: create it (the Benchmark names it)")
        return src

    def materialise_secret(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Fill a ``wanwide.io/copy-from`` Secret with the data of its source: the keys ``wanwide.io/copy-keys``
        names (renamed), or all of them and the source's type."""
        ann = obj["metadata"].get("annotations") or {}
        src = self._source("Secret", ann[names.A_COPY_FROM])
        data = src.get("data") or {}
        keys = ann.get(names.A_COPY_KEYS, "")
        if keys == names.COPY_ALL:
            return {**obj, "type": src.get("type") or "Opaque", "data": dict(data)}
        out: dict[str, str] = {}
        for pair in keys.split(","):
            if not pair:
                continue
            s, d = pair.split("=", 1)
            if s not in data:
                raise MissingSource(f"Secret {ann[names.A_COPY_FROM]} has no key {s!r}: add it")
            out[d] = data[s]
        return {**obj, "data": out}

    def materialise_service_account(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A ``wanwide.io/copy-from`` ServiceAccount with its source's annotations (the cloud identity it
        carries, e.g. ``eks.amazonaws.com/role-arn``), kubectl's own left out."""
        m = obj["metadata"]
        src = self._source("ServiceAccount", m["annotations"][names.A_COPY_FROM])
        copied = {k: v for k, v in (src["metadata"].get("annotations") or {}).items()
                  if not k.startswith("kubectl.kubernetes.io/")}
        return {**obj, "metadata": {**m, "annotations": {**copied, **m["annotations"]}}}

    def secret_value(self, name: str, namespace: str, key: str) -> str | None:
        s = self.get("v1", "Secret", name, namespace)
        if not s or key not in (s.get("data") or {}):
            return None
        return base64.b64decode(s["data"][key]).decode()
