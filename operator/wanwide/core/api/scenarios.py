"""Rally scenarios: the seven Keystone scenarios of the studies by short name, and which services any
scenario needs (a Nova scenario without Nova is refused at plan time: core/plan/trial.py)."""

from __future__ import annotations

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
