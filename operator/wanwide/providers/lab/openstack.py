"""The lab's OpenStack services beside Keystone, as files: RabbitMQ's, Placement's, Glance's, Neutron's and Nova's
configuration, the WSGI modules gunicorn loads, the catalog entries. Pure: every function here returns text or data;
:mod:`wanwide.providers.lab.cloud` writes them and starts the processes.

What runs where is the plan's (core/plan/controlplane.py ``ControlPlane``: the planes, each region's processes, the
Nova settings every process runs with); this module adds only what is the lab's: ports on the region's address,
the directories, the users and passwords, how each process finds Keystone (its own region's), the bus, its database.
Found by running them here (docs/lab-openstack.md):

- nova-api, Placement, Glance and Neutron's server run under gunicorn from a module of wanwide's that resets
  ``sys.argv`` first (nova and neutron parse it: gunicorn's flags would be refused, as Keystone's were);
  Neutron's module also configures SQLAlchemy's mappers before the first request (Neutron 29's port listing reads
  ``Port.port_forwardings``, a back-reference only a configured mapper has: without it Nova's every server show
  and list failed with Neutron's 500);
- nova-api sends a service token with the user's (``[service_user]``): Neutron refuses the pair with 401 unless
  the service user has the ``service`` role; every service user gets ``admin`` and ``service`` in ``service``;
- each fake compute has a ``state_path`` of its own (nova keeps a compute's node identity there);
- Neutron's server with ML2 and no mechanism driver, no agents and no network: Nova asks it for a project's
  networks at boot (none: the server boots without a port) and for a server's ports at every show, list and delete.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wanwide.core.contracts import CATALOG_TYPES

PORTS = {"nova": 8774, "placement": 8778, "glance": 9292, "neutron": 9696, "messaging": 5672, "openstack-db": 3307}
"""Where each service listens on its region's address (the trial's database keeps 3306, Keystone 5000)."""
CATALOG = {s: (CATALOG_TYPES[s], path) for s, path in
           {"nova": "/v2.1", "placement": "", "glance": "", "neutron": ""}.items()}
"""service → (its catalog type, the path its endpoints end with)."""
INTERFACES = ("public", "internal", "admin")
SERVICE_PROJECT = "service"
SERVICE_ROLES = ("admin", "service")
SERVICE_PASSWORD = "wanwide-service"  # every service user's Keystone password
DB_PASSWORD = "wanwide-openstack"  # every service's database user's
BUS_USER = "openstack"
BUS_PASSWORD = "wanwide-bus"
DB_USER = {"nova": "nova", "placement": "placement", "glance": "glance", "neutron": "neutron"}
WSGI_APPS = {"nova": "nova.wsgi.osapi_compute", "placement": "placement.wsgi.api", "glance": "glance.wsgi.api",
             "neutron": "neutron.wsgi.api"}
CONFIG_DIR_ENV = {"nova": "OS_NOVA_CONFIG_DIR", "placement": "OS_PLACEMENT_CONFIG_DIR",
                  "glance": "OS_GLANCE_CONFIG_DIR", "neutron": "OS_NEUTRON_CONFIG_DIR"}
CONFIG_FILE = {"nova": "nova.conf", "placement": "placement.conf", "glance": "glance-api.conf",
               "neutron": "neutron.conf"}
PASTE = {"nova": "nova/api-paste.ini", "glance": "glance/glance-api-paste.ini", "neutron": "neutron/api-paste.ini"}
"""The paste pipelines each wheel installs under the venv's etc/ (copied beside the service's configuration)."""


@dataclass(frozen=True)
class Where:
    """What one process sees: its region (the catalog region it asks for), its region's Keystone, the control
    plane's bus and the databases of the service it belongs to."""

    region: str
    address: str  # the region's service address (what the process binds, nova's my_ip)
    keystone: str  # http://ADDRESS:5000 of the process's own region
    bus: str = ""  # rabbit://… of its control plane ("" without one)
    memcached: tuple[str, ...] = ()  # its region's memcached (the services' token cache), host:port


def connection(user: str, password: str, host: str, port: int, database: str) -> str:
    return f"mysql+pymysql://{user}:{password}@{host}:{port}/{database}"


def transport_url(host: str, port: int = PORTS["messaging"], user: str = BUS_USER,
                  password: str = BUS_PASSWORD) -> str:
    return f"rabbit://{user}:{password}@{host}:{port}/"


def endpoint_url(service: str, address: str) -> str:
    return f"http://{address}:{PORTS[service]}{CATALOG[service][1]}"


def catalog(service: str, address: str, regions: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """The catalog entries of one control plane's ``service``: (type, region, interface, url) for every region it
    serves (in the stretched shape Rally and the computes of every region find it under their own region)."""
    kind = CATALOG[service][0]
    url = endpoint_url(service, address)
    return [(kind, r, i, url) for r in regions for i in INTERFACES]


def _auth(w: Where, user: str) -> dict[str, Any]:
    return {"auth_type": "password", "auth_url": f"{w.keystone}/v3", "project_domain_name": "Default",
            "user_domain_name": "Default", "project_name": SERVICE_PROJECT, "username": user,
            "password": SERVICE_PASSWORD}


def _authtoken(w: Where, user: str) -> dict[str, Any]:
    """keystonemiddleware's section: its own region's Keystone, and ``region_name`` so that it validates tokens
    against its region's identity endpoint (the catalog holds every region's: left unset, keystonemiddleware took
    any, r2's for r1's nova-api, and put a WAN round trip on every new token, a hung worker under loss)."""
    out = {"www_authenticate_uri": w.keystone, **_auth(w, user), "region_name": w.region}
    if w.memcached:
        out["memcached_servers"] = ",".join(w.memcached)
    return out


def _default(w: Where) -> dict[str, Any]:
    return {"debug": False, "use_stderr": True}


def rabbitmq_conf(address: str, port: int = PORTS["messaging"], user: str = BUS_USER,
                  password: str = BUS_PASSWORD) -> str:
    """rabbitmq.conf: one listener on the region's address, the services' user made at first boot (no
    rabbitmqctl: an Erlang VM start each), its log to a file, no management plugin."""
    lines = [f"listeners.tcp.1 = {address}:{port}", "loopback_users = none", f"default_user = {user}",
             f"default_pass = {password}", "default_vhost = /", "default_permissions.configure = .*",
             "default_permissions.read = .*", "default_permissions.write = .*", "log.file = rabbit.log",
             "log.file.level = info", "log.console = false"]
    return "\n".join(lines) + "\n"


def rabbitmq_env(d: Path) -> dict[str, str]:
    """Everything RabbitMQ keeps, in its service directory ``d`` (HOME holds the Erlang cookie); its node name
    resolves to the namespace's own loopback (each region its own epmd)."""
    return {"HOME": str(d), "RABBITMQ_NODENAME": "rabbit@localhost", "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
            "RABBITMQ_MNESIA_BASE": str(d / "mnesia"), "RABBITMQ_LOG_BASE": str(d / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"), "RABBITMQ_PID_FILE": str(d / "rabbit.pid"),
            "RABBITMQ_DIST_PORT": "25672"}


def placement_conf(w: Where, db: str) -> dict[str, dict[str, Any]]:
    return {"DEFAULT": _default(w), "api": {"auth_strategy": "keystone"}, "placement_database": {"connection": db},
            "keystone_authtoken": _authtoken(w, "placement")}


def glance_conf(w: Where, db: str, d: Path) -> dict[str, dict[str, Any]]:
    """Glance with one file store in its directory ``d`` (the tiny images Rally uploads)."""
    return {"DEFAULT": {**_default(w), "enabled_backends": "local:file"},
            "glance_store": {"default_backend": "local"},
            "local": {"filesystem_store_datadir": str(d / "images")},
            "os_glance_staging_store": {"filesystem_store_datadir": str(d / "staging")},
            "os_glance_tasks_store": {"filesystem_store_datadir": str(d / "tasks")},
            "database": {"connection": db}, "paste_deploy": {"flavor": "keystone"},
            "keystone_authtoken": _authtoken(w, "glance")}


def neutron_conf(w: Where, db: str, d: Path) -> dict[str, dict[str, Any]]:
    """Neutron's server: ML2 without mechanism drivers, no agents (networks and ports as API objects only); the
    router and port-forwarding plugins load the models a port listing reads; it tells Nova nothing."""
    return {"DEFAULT": {**_default(w), "core_plugin": "ml2", "service_plugins": "router,port_forwarding",
                        "auth_strategy": "keystone", "api_paste_config": str(d / "api-paste.ini"),
                        "transport_url": w.bus, "notify_nova_on_port_status_changes": False,
                        "notify_nova_on_port_data_changes": False},
            "database": {"connection": db}, "keystone_authtoken": _authtoken(w, "neutron"),
            "oslo_concurrency": {"lock_path": str(d / "lock")},
            "oslo_messaging_notifications": {"driver": "noop"},
            "ml2": {"type_drivers": "flat", "tenant_network_types": "", "mechanism_drivers": "",
                    "extension_drivers": ""}}


def nova_conf(plan_sections: Mapping[str, Mapping[str, Any]], w: Where, d: Path, *,
              databases: tuple[str, str] | None, workers: Mapping[str, int] | None = None,
              neutron: bool = True) -> dict[str, dict[str, Any]]:
    """nova.conf of a Nova process in region ``w.region``: the plan's sections (the fake driver, quotas, the
    scheduler's discovery), then where things are here. ``databases``: (api, main) connections for the API,
    conductor and scheduler; None for a compute (it reaches the database through the conductor only)."""
    sections: dict[str, dict[str, Any]] = {s: dict(kv) for s, kv in plan_sections.items()}
    sections.setdefault("DEFAULT", {}).update({**_default(w), "transport_url": w.bus, "my_ip": w.address,
                                               "state_path": str(d / "state")})
    sections["api"] = {**sections.get("api", {}), "auth_strategy": "keystone"}
    if databases is not None:
        sections["api_database"] = {"connection": databases[0]}
        sections["database"] = {"connection": databases[1]}
    sections["keystone_authtoken"] = _authtoken(w, "nova")
    sections["service_user"] = {"send_service_user_token": True, **_auth(w, "nova")}
    sections["placement"] = {**_auth(w, "placement"), "region_name": w.region}
    sections["glance"] = {"region_name": w.region}
    if neutron:
        sections["neutron"] = {**_auth(w, "neutron"), "region_name": w.region}
    sections["oslo_concurrency"] = {"lock_path": str(d / "lock")}
    sections["wsgi"] = {"api_paste_config": str(d / "api-paste.ini")}
    for section, n in (workers or {}).items():
        sections.setdefault(section, {})["workers"] = n
    return sections


def compute_conf(host: str, state_path: Path) -> dict[str, dict[str, Any]]:
    """What one fake compute adds to its region's nova.conf: its host name, its own state directory."""
    return {"DEFAULT": {"host": host, "state_path": str(state_path)}}


def control_conf(plane: str) -> dict[str, dict[str, Any]]:
    """What the conductor and scheduler add: a host name of the control plane's (not the machine's)."""
    return {"DEFAULT": {"host": f"control-{plane}"}}


def wsgi_module(service: str) -> str:
    """The module gunicorn loads for ``service``: ``sys.argv`` reset (nova and neutron parse it), then the
    service's own WSGI application; Neutron's mappers configured before the first request."""
    lines = ["import sys", "", "sys.argv = sys.argv[:1]", "",
             f"from {WSGI_APPS[service]} import application  # noqa: E402,F401"]
    if service == "neutron":
        lines += ["from sqlalchemy import orm  # noqa: E402", "", "orm.configure_mappers()"]
    return "\n".join(lines) + "\n"


__all__ = ["BUS_PASSWORD", "BUS_USER", "CATALOG", "CONFIG_DIR_ENV", "CONFIG_FILE", "DB_PASSWORD", "DB_USER",
           "INTERFACES", "PASTE", "PORTS", "SERVICE_PASSWORD", "SERVICE_PROJECT", "SERVICE_ROLES", "WSGI_APPS", "Where",
           "catalog", "compute_conf", "connection", "control_conf", "endpoint_url", "glance_conf", "neutron_conf",
           "nova_conf", "placement_conf", "rabbitmq_conf", "rabbitmq_env", "transport_url", "wsgi_module"]
