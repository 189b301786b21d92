"""Rally scenarios: the seven Keystone scenarios of the studies by short name, and which services any
scenario needs (a Nova scenario without Nova is refused at plan time: core/plan/trial.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScenarioDefaults:
    name: str
    times: int
    concurrency: int
    args: dict[str, Any] = field(default_factory=dict)
    needs_users: bool = False


# Times as in the studies' table of Keystone scenarios; concurrency 10 as in the high-load runs.
KEYSTONE_SCENARIOS: dict[str, ScenarioDefaults] = {
    s.name.split(".", 1)[1]: s
    for s in (
        ScenarioDefaults("KeystoneBasic.authenticate_user_and_validate_token", 20, 5),
        ScenarioDefaults("KeystoneBasic.create_add_and_list_user_roles", 100, 10, needs_users=True),
        ScenarioDefaults("KeystoneBasic.create_and_list_tenants", 10, 1),
        ScenarioDefaults("KeystoneBasic.get_entities", 100, 10, {"service_name": "keystone"}),
        ScenarioDefaults("KeystoneBasic.create_user_update_password", 100, 10),
        ScenarioDefaults("KeystoneBasic.create_user_set_enabled_and_delete", 100, 10, {"enabled": True}),
        ScenarioDefaults("KeystoneBasic.create_and_list_users", 100, 10),
    )
}

SHORT_NAMES = tuple(KEYSTONE_SCENARIOS)
FULL_NAME_RE = r"^[A-Z][A-Za-z0-9]*\.[a-z][a-z0-9_]*$"


def resolve(name: str) -> ScenarioDefaults | None:
    """Short name or ``KeystoneBasic.x`` → defaults; another full name → None (no defaults)."""
    if name in KEYSTONE_SCENARIOS:
        return KEYSTONE_SCENARIOS[name]
    for s in KEYSTONE_SCENARIOS.values():
        if s.name == name:
            return s
    return None


# ---- which services a Rally scenario needs -----------------------------------------------------------------

DEPLOYED = ("keystone", "nova", "placement", "glance", "messaging", "neutron")
"""The services wanwide deploys (spec.openstack)."""
NOT_DEPLOYED = {"cinder": "Cinder", "heat": "Heat", "swift": "Swift", "manila": "Manila", "barbican": "Barbican",
                "designate": "Designate", "gnocchi": "Gnocchi", "ironic": "Ironic", "magnum": "Magnum",
                "mistral": "Mistral", "octavia": "Octavia", "watcher": "Watcher", "zaqar": "Zaqar",
                "elasticsearch": "Elasticsearch", "grafana": "Grafana",
                "hypervisor": "a hypervisor (its computes are fake: nothing runs inside a server)"}
"""Services Rally has scenarios for that wanwide does not deploy: a scenario needing one is refused."""

_GROUPS: dict[str, tuple[str, ...]] = {
    "KeystoneBasic": (), "Authenticate": (),
    **{g: ("nova",) for g in ("NovaServers", "NovaFlavors", "NovaKeypair", "NovaServices", "NovaHypervisors",
                              "NovaAggregates", "NovaAvailabilityZones", "NovaServerGroups")},
    "GlanceImages": ("glance",),
    **{g: ("neutron",) for g in ("NeutronNetworks", "NeutronSecurityGroup", "NeutronSubnets", "NeutronTrunks",
                                 "NeutronLoadbalancerV1", "NeutronLoadbalancerV2", "NeutronBGPVPN")},
    **{g: ("cinder",) for g in ("CinderVolumes", "CinderVolumeTypes", "CinderVolumeBackups", "CinderQos")},
    **{g: ("barbican",) for g in ("BarbicanContainers", "BarbicanOrders", "BarbicanSecrets")},
    **{g: ("gnocchi",) for g in ("Gnocchi", "GnocchiArchivePolicy", "GnocchiArchivePolicyRule", "GnocchiMetric",
                                 "GnocchiResource", "GnocchiResourceType")},
    **{g: ("magnum",) for g in ("MagnumClusters", "MagnumClusterTemplates", "K8sPods")},
    **{g: ("mistral",) for g in ("MistralExecutions", "MistralWorkbooks")},
    "DesignateBasic": ("designate",), "HeatStacks": ("heat",), "IronicNodes": ("ironic",),
    "ManilaShares": ("manila",), "Octavia": ("octavia",), "SwiftObjects": ("swift",), "Watcher": ("watcher",),
    "ZaqarBasic": ("zaqar",), "ElasticsearchLogging": ("elasticsearch",), "GrafanaMetrics": ("grafana",), "VMTasks": ("nova", "neutron", "hypervisor"),
}
"""The services a group of Rally scenarios (the part of the name before the dot) needs; a name's own needs
(:data:`_NAMES`, the words in it) are added. Checked against rally-openstack's own ``required_services``
(tests/plan/test_scenario_services.py) where it is installed."""

_NAMES: dict[str, tuple[str, ...]] = {
    "GlanceImages.create_image_and_boot_instances": ("nova",),
    "NovaServers.snapshot_server": ("glance",),
    "NovaServers.boot_and_associate_floating_ip": ("neutron",),
    "NovaServers.boot_server_associate_and_dissociate_floating_ip": ("neutron",),
    "NovaServers.boot_server_and_attach_interface": ("neutron",),
    "NovaServers.boot_server_and_list_interfaces": ("neutron",),
}
_WORDS = (("volume", "cinder"),)  # NovaServers.boot_server_from_volume…: a name mentioning a volume needs Cinder
# NeutronTrunks.boot_server_with_subports…: a scenario booting a server needs Nova, whatever its group


BOOTS_NEED_NEUTRON = (
    "A scenario that boots servers needs Neutron (its server, no agents): Nova 34 asks Neutron for a project's "
    "networks at every boot (none: the server boots without a port, nova/network/neutron.py 'No network "
    "configured') and for the server's ports at every delete (compute/manager.py _shutdown_instance), whatever "
    "the networks asked for; and rally-openstack 4.1's _boot_server cannot pass networks 'none' (it iterates "
    "nics as a list).")


def needs(name: str) -> tuple[str, ...]:
    """The services the Rally scenario ``name`` (full or short) needs besides Keystone, in :data:`DEPLOYED` order,
    then the ones wanwide does not deploy; () for a name wanwide knows nothing about (its own risk)."""
    d = resolve(name)
    full = d.name if d is not None else name
    group, _, method = full.partition(".")
    out = set(_GROUPS.get(group, ())) | set(_NAMES.get(full, ()))
    if group in ("Authenticate", "Quotas"):  # Authenticate.validate_nova, Quotas.neutron_update
        out |= {w for w in (*DEPLOYED, *NOT_DEPLOYED) if method.startswith((f"validate_{w}", f"{w}_"))}
    out |= {svc for word, svc in _WORDS if group.startswith("Nova") and word in method}
    if "boot" in method:
        out.add("nova")
    if boots(full) or full == "GlanceImages.create_image_and_boot_instances":
        out.add("neutron")  # a server's networks: see BOOTS_NEED_NEUTRON
    out.discard("keystone")
    return tuple(s for s in DEPLOYED if s in out) + tuple(sorted(s for s in out if s in NOT_DEPLOYED))


def boots(name: str) -> bool:
    """Whether the scenario boots servers from an image and a flavor (its ``image`` and ``flavor`` arguments)."""
    group, _, method = name.partition(".")
    return (group == "NovaServers" and method != "list_servers") or name == "NovaKeypair.boot_and_delete_server_with_keypair"


def uploads(name: str) -> bool:
    """Whether the scenario uploads an image of its own (its ``image_location``, formats arguments)."""
    group, _, method = name.partition(".")
    return group == "GlanceImages" and method.startswith("create_")


# ---- the same needs, as admission rules --------------------------------------------------------------------

CHECKED_AT_ADMISSION = ("nova", "neutron", "glance")
"""The deployed services whose scenarios the API server checks (CEL on spec): the planner checks every service."""


def _alternatives(*parts: str) -> str:
    return "|".join(p for p in parts if p)


def _groups(service: str) -> str:
    gs = sorted(g for g, s in _GROUPS.items() if service in s)
    return r"^(" + "|".join(gs) + r")\." if gs else ""


def _names(service: str, extra: tuple[str, ...] = ()) -> str:
    ns = sorted({n for n, s in _NAMES.items() if service in s} | set(extra))
    return r"^(" + "|".join(re.escape(n) for n in ns) + r")$" if ns else ""


def _own(service: str) -> str:
    return rf"^Authenticate\.validate_{service}|^Quotas\.{service}_"


ADMISSION_PATTERNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nova": (_alternatives(_groups("nova"), r"^[A-Za-z0-9]+\.[a-z0-9_]*boot", _names("nova"), _own("nova")), ()),
    "neutron": (_alternatives(_groups("neutron"), r"^NovaServers\.",
                              _names("neutron", ("NovaKeypair.boot_and_delete_server_with_keypair",
                                                 "GlanceImages.create_image_and_boot_instances")),
                              _own("neutron")),
                ("NovaServers.list_servers",)),
    "glance": (_alternatives(_groups("glance"), _names("glance"), _own("glance")), ()),
}
"""Per service: an RE2 pattern over a full scenario name and the names it must not match. A name matching is one
:func:`needs` says needs the service (tests/plan/test_scenario_services.py holds them equal over rally-openstack's
scenarios); the API server reads the same pattern (:func:`admission_rules`)."""


def needs_at_admission(name: str) -> set[str]:
    """What the admission rules say ``name`` needs: the same patterns, read by Python's ``re``."""
    return {s for s, (rx, unless) in ADMISSION_PATTERNS.items() if re.search(rx, name) and name not in unless}


_ON = {"nova": "(has(self.openstack) && has(self.openstack.nova) && has(self.openstack.nova.enabled) "
               "&& self.openstack.nova.enabled)",
       "neutron": "(has(self.openstack) && has(self.openstack.neutron) && has(self.openstack.neutron.enabled) "
                  "&& self.openstack.neutron.enabled)"}
_ON["glance"] = ("((has(self.openstack) && has(self.openstack.glance) && has(self.openstack.glance.enabled)) "
                 f"? self.openstack.glance.enabled : {_ON['nova']})")
FIX = {"nova": "set spec.openstack.nova.enabled: true",
       "placement": "set spec.openstack.placement.enabled: true (or enable Nova, which brings it)",
       "glance": "set spec.openstack.glance.enabled: true (or enable Nova, which brings it)",
       "neutron": "set spec.openstack.neutron.enabled: true"}
"""How to turn on a deployed service a scenario needs: the planner's and the API server's refusals say the same."""
_WHAT = {"nova": "a Nova scenario or one that boots servers", "neutron": "a Neutron scenario or one that boots servers",
         "glance": "a Glance scenario or a snapshot"}


def _needs_off(svc: str, name: str) -> str:
    """CEL: the scenario name ``name`` (an expression) needs ``svc`` and the spec leaves it off."""
    rx, unless = ADMISSION_PATTERNS[svc]
    lit = rx.replace("\\", "\\\\").replace("'", "\\'")
    return f"{name}.matches('{lit}')" + "".join(f" && {name} != '{u}'" for u in unless) + f" && !{_ON[svc]}"


def admission_rules() -> list[tuple[str, str]]:
    """(CEL rule on a Benchmark's spec, message) per service of :data:`CHECKED_AT_ADMISSION`: no scenario run
    (``spec.matrix.scenario`` when set, as the planner reads it, else ``spec.workload.scenarios``) needs it off."""
    return [("(has(self.matrix) && has(self.matrix.scenario)) "
             f"? !self.matrix.scenario.exists(n, {_needs_off(svc, 'n')}) "
             f": (!has(self.workload.scenarios) || !self.workload.scenarios.exists(s, {_needs_off(svc, 's.name')}))",
             f"spec.workload.scenarios (or spec.matrix.scenario): {_WHAT[svc]} needs {svc.capitalize()}: {FIX[svc]}")
            for svc in CHECKED_AT_ADMISSION]
