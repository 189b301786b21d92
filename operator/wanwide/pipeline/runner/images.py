"""The image a region's boot scenarios share, made by the runner as the admin before the tasks and deleted after.

Rally's ``images`` context makes a private image per tenant, all with one name, and resolves the scenario's
``image`` argument once, as the admin, who sees every tenant's copy: with more than one tenant the name is
ambiguous and the workload stops before its first iteration ("Glance_Image with name ... is ambiguous"). A
cloud's operator publishes one image every project boots from; the runner does the same: one public image
named for its region (``wanwide-tiny-<region>``, core/plan/runner.py), uploaded through the region's Glance
(the Keystone catalog's public endpoint), found by that unique name, deleted when the run ends. A copy left
by an earlier attempt is deleted first.
"""

from __future__ import annotations

import time
from typing import Any

from wanwide.core.contracts import TINY_IMAGE_BYTES, KeystoneSettings
from wanwide.pipeline.runner.users import KeystoneRefused, _call, admin_token

ACTIVE_WAIT_S = 60.0  # Glance's file store is active when the upload returns; a slower store gets this long


def glance_url(catalog: list[dict[str, Any]], region: str) -> str:
    """The ``/v2`` root of ``region``'s public image endpoint in a Keystone catalog."""
    for service in catalog:
        if service.get("type") != "image":
            continue
        for e in service.get("endpoints", []):
            if e.get("interface") == "public" and region in (e.get("region_id"), e.get("region")):
                url = e["url"].rstrip("/")
                return url if url.endswith("/v2") else f"{url}/v2"
    raise KeystoneRefused(f"no public image endpoint for region {region} in the catalog: spec.workload.loadRegion "
                          f"{region} has no Glance registered (load from a region whose control plane serves it)")


class SharedImages:
    """The run's shared images: :meth:`make` one, :meth:`delete_all` at the end."""

    def __init__(self, ks: KeystoneSettings, password: str, sleep=time.sleep):
        self.ks, self.password, self.sleep = ks, password, sleep
        self.made: dict[str, str] = {}
        self._glance: str | None = None

    def _session(self) -> tuple[str, str]:
        token = admin_token(self.ks, self.password)
        if self._glance is None:
            catalog = _call("GET", f"{self.ks.url.rstrip('/')}/auth/catalog", token)[0].get("catalog", [])
            self._glance = glance_url(catalog, self.ks.region_name)
        return token, self._glance

    def make(self, name: str) -> str:
        """A public raw image ``name`` of the tiny image's bytes; its id once Glance says it is active."""
        token, glance = self._session()
        for old in _call("GET", f"{glance}/images?name={name}", token)[0].get("images", []):
            _call("DELETE", f"{glance}/images/{old['id']}", token)
        image = _call("POST", f"{glance}/images", token, {
            "name": name, "disk_format": "raw", "container_format": "bare", "visibility": "public"})[0]
        self.made[name] = image["id"]
        _call("PUT", f"{glance}/images/{image['id']}/file", token, raw=bytes(TINY_IMAGE_BYTES))
        deadline = time.monotonic() + ACTIVE_WAIT_S
        while (status := _call("GET", f"{glance}/images/{image['id']}", token)[0].get("status")) != "active":
            if status in ("killed", "deleted") or time.monotonic() > deadline:
                raise KeystoneRefused(f"image {name} ({image['id']}) is {status}, not active")
            self.sleep(1.0)
        return image["id"]

    def delete_all(self) -> list[str]:
        """Delete every image made; what could not be deleted (said, not raised: the run's data are kept)."""
        problems = []
        if not self.made:
            return problems
        try:
            token, glance = self._session()
        except Exception as e:  # noqa: BLE001 - a cleanup reports, the run's result stands
            return [f"deleting {', '.join(self.made)}: {e}"]
        for name, image_id in list(self.made.items()):
            try:
                _call("DELETE", f"{glance}/images/{image_id}", token)
                del self.made[name]
            except Exception as e:  # noqa: BLE001
                problems.append(f"deleting image {name} ({image_id}): {e}")
        return problems
