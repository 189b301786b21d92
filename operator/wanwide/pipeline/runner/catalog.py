"""A load region's catalog entries for the control plane that serves it, made by the runner before the tasks where
they are missing (``RunnerConfig.catalog``).

A stretched control plane serves every region (core/plan/controlplane.py): each region's Rally looks its Nova,
Glance, Placement and Neutron up under its own region's name. The lab registers them so; openstack-helm's
``ks-endpoints`` Jobs register a chart's endpoints under one region, the plane's own, so on Kubernetes a load
region other than the control region found none ("no public image endpoint", stop 59). The runner, the admin of
the trial's cloud, copies the plane region's entries of those service types to its own region — the same URLs:
the same services — and records what it added; where they are already there (the lab), it adds nothing.
"""

from __future__ import annotations

from typing import Any

from wanwide.core.contracts import CatalogCopy, KeystoneSettings
from wanwide.pipeline.runner.users import KeystoneRefused, _call, admin_token


def ensure(ks: KeystoneSettings, password: str, want: CatalogCopy) -> list[dict[str, Any]]:
    """Every endpoint of ``want.types`` registered under ``want.source`` present under ``ks.region_name`` too (same
    service, interface and URL); returns the ones added. A type the source region lacks is refused, naming it."""
    base = ks.url.rstrip("/")
    token = admin_token(ks, password)
    services = {s["id"]: s["type"] for s in _call("GET", f"{base}/services", token)[0].get("services", [])}
    endpoints = _call("GET", f"{base}/endpoints", token)[0].get("endpoints", [])
    here = {(e["service_id"], e["interface"]) for e in endpoints if e.get("region_id") == ks.region_name}
    source = [e for e in endpoints if e.get("region_id") == want.source and services.get(e["service_id"]) in want.types]
    missing = sorted(set(want.types) - {services[e["service_id"]] for e in source})
    if missing:
        raise KeystoneRefused(f"the catalog has no {', '.join(missing)} endpoint under region {want.source}, whose "
                              f"control plane serves {ks.region_name}: its services did not register (see their "
                              f"ks-endpoints Jobs in {want.source}, then run the trial again)")
    added = []
    for e in source:
        if (e["service_id"], e["interface"]) in here:
            continue
        _call("POST", f"{base}/endpoints", token, {"endpoint": {
            "service_id": e["service_id"], "interface": e["interface"], "url": e["url"], "region_id": ks.region_name,
            "enabled": True}})
        added.append({"type": services[e["service_id"]], "interface": e["interface"], "url": e["url"]})
    return added
