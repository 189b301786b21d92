"""``spec.openstack``: the control plane every region runs: Keystone, and with Nova its Placement, Glance, the
message bus (RabbitMQ) and, where a scenario needs ports, Neutron.

Each service is an openstack-helm chart on Kubernetes (chartRepo/chart/chartVersion, images, values) and
processes from PyPI (RabbitMQ from Debian) in the lab. Nova is off by default: a Benchmark that does not
ask for it runs Keystone alone, as before. Nova needs Placement, Glance and the bus: they come with it
(a scenario booting servers needs Neutron too: core/api/scenarios.py ``BOOTS_NEED_NEUTRON``)
(``enabled`` left unset means "when Nova or Neutron needs it"); switching one off while Nova is on is
refused, naming the field. Where each runs (``shape``, ``controlRegion``, a service's ``region``) and where
its database is (``database``) are resolved by the planner (core/plan/controlplane.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from wanwide.core.api.base import WHOLE_NUMBER, Bool, FieldProblem, Int, Model, RegionName, cel
from wanwide.core.api.freeform import FreeForm
from wanwide.core.api.refs import CHART_RULES, Chart, ChartRepo, ChartVersion, Image, chart_problem

OPENSTACK_HELM = "https://tarballs.opendev.org/openstack/openstack-helm"
CHART_VERSION = "2026.1.0"
VALUES_MAX_BYTES, VALUES_MAX_KEYS = 64 * 1024, 100
ChartValues = FreeForm(VALUES_MAX_BYTES, VALUES_MAX_KEYS)
COMPUTES_MAX = 500
"""Fake compute nodes per region (the single-controller study broke its broker near ~148)."""
COMPUTES_PER_TRIAL_MAX = 2000
"""Fake compute nodes of one trial, all regions together (the planner checks it: computes × regions)."""

Shape = Literal["regions", "stretched"]
DatabasePlace = Literal["local", "shared"]

_REPO_DESC = ('Helm repository URL: https:// only, no user name or password, no link-local or metadata host; "" with '
              'an oci:// chart or a chart path.')
_CHART_DESC = ("Chart name in chartRepo, an oci:// reference (chartRepo \"\"), or an absolute path on the operator's "
               "disk (chartRepo \"\"; the operator confines where). At most 512 characters.")
_VERSION_DESC = ("Exact chart version (pin it): a semantic version such as 2026.1.0, at most 64 characters; the default "
                 "is the one every verification ran (docs/upstream-checks.md).")
_VALUES_DESC = (f"Extra chart values merged last (they win over wanwide's). At most {VALUES_MAX_KEYS} top-level keys "
                f"and {VALUES_MAX_BYTES // 1024} KiB as JSON.")
_CHART_RULES = {"x-kubernetes-validations": [cel(*r) for r in CHART_RULES]}


def _repo() -> Any:
    return Field(OPENSTACK_HELM, description=_REPO_DESC)


def _chart(name: str) -> Any:
    return Field(name, description=_CHART_DESC)


def _version() -> Any:
    return Field(CHART_VERSION, description=_VERSION_DESC)


def _values() -> Any:
    return Field(default_factory=dict, description=_VALUES_DESC)


def _replicas(what: str) -> Any:
    return Field(1, ge=1, le=10, description=f"{what} per place it runs: pods on Kubernetes, worker processes in "
                 "the lab. 1 to 10.")


def _region(service: str) -> Any:
    return Field(None, description=f"shape stretched: the region {service} runs in (default: "
                 "spec.openstack.controlRegion). Not with shape regions, where every region runs its own.")


def _database(service: str) -> Any:
    return Field("local", description=f"Where {service}'s databases are. local: a MariaDB of the control plane's "
                 "own beside it, in the region it runs in (one per region in shape regions; in-memory as "
                 "spec.database.inMemory says). shared: the trial's database (spec.database: the central MariaDB "
                 "or the region's Galera/CockroachDB member), as Keystone's.")


def _check_chart(model: Any) -> None:
    problem = chart_problem(model.chart, model.chart_repo)
    if problem is not None:
        raise FieldProblem(*problem)


class KeystoneImages(Model):
    """Image overrides for the openstack-helm keystone chart (``images.tags``)."""

    keystone_api: Image | None = None
    keystone_db_sync: Image | None = None
    keystone_domain_manage: Image | None = None
    bootstrap: Image | None = Field(None, description="Also the openstack-client init container of domain-manage.")
    dep_check: Image | None = None
    memcached: Image | None = Field(None, description="Image of the per-region memcached (wanwide's own Deployment).")


class Keystone(Model):
    """Keystone per region, installed with the openstack-helm chart."""

    chart_repo: ChartRepo = _repo()
    chart: Chart = _chart("keystone")
    chart_version: ChartVersion = _version()
    images: KeystoneImages = Field(default_factory=KeystoneImages)
    replicas: Int = Field(1, ge=1, le=10, description="Keystone server processes per region: keystone-api pods on "
                          "Kubernetes (the chart runs one WSGI process per pod), gunicorn workers in the lab. "
                          "Memory (~100 MB each) for concurrency.")
    cache: Bool = Field(True, description="memcached per region with [cache] enabled, as real deployments run.")
    values: ChartValues = _values()

    model_config = ConfigDict(json_schema_extra=_CHART_RULES)

    @model_validator(mode="after")
    def _chart(self) -> Keystone:
        _check_chart(self)
        return self


class ServiceImages(Model):
    """Image overrides every openstack-helm service chart takes (``images.tags``)."""

    bootstrap: Image | None = None
    dep_check: Image | None = None
    ks_user: Image | None = Field(None, description="The Jobs registering the service in Keystone (also ks_service, "
                                  "ks_endpoints).")
    ks_service: Image | None = None
    ks_endpoints: Image | None = None


class NovaImages(ServiceImages):
    """Image overrides for the openstack-helm nova chart (``images.tags``)."""

    nova_api: Image | None = None
    nova_conductor: Image | None = None
    nova_scheduler: Image | None = None
    nova_compute: Image | None = Field(None, description="The fake compute nodes' (nova's fake virt driver).")
    nova_db_sync: Image | None = None
    nova_cell_setup: Image | None = None


class PlacementImages(ServiceImages):
    placement: Image | None = None
    placement_db_sync: Image | None = None


class GlanceImages(ServiceImages):
    glance_api: Image | None = None
    glance_db_sync: Image | None = None


class NeutronImages(ServiceImages):
    neutron_server: Image | None = None
    neutron_db_sync: Image | None = None


class MessagingImages(Model):
    """Image overrides for the openstack-helm rabbitmq chart (``images.tags``)."""

    rabbitmq: Image | None = None
    rabbitmq_init: Image | None = None
    dep_check: Image | None = None


class Processes(Model):
    replicas: Int = _replicas("Processes")


class Nova(Model):
    """Nova: API, conductor and scheduler (one cell), and fake compute nodes (nova's fake virt driver: compute
    services without hypervisors, the studies' "densification"). Enabling it brings Placement, Glance (the
    image a server boots from) and the message bus; it is the openstack-helm nova chart on Kubernetes and nova
    from PyPI in the lab."""

    enabled: Bool = Field(False, description="Deploy Nova (and with it Placement, Glance and the bus; a scenario "
                          "that boots servers needs neutron.enabled too). Off: Keystone alone, as before.")
    chart_repo: ChartRepo = _repo()
    chart: Chart = _chart("nova")
    chart_version: ChartVersion = _version()
    images: NovaImages = Field(default_factory=NovaImages)
    api: Processes = Field(default_factory=Processes, description="nova-api (the compute API, WSGI).")
    conductor: Processes = Field(default_factory=Processes, description="nova-conductor (the cell's database "
                                 "access for the computes).")
    scheduler: Processes = Field(default_factory=Processes, description="nova-scheduler (asks Placement).")
    computes: Int = Field(1, ge=0, le=COMPUTES_MAX, description=f"Fake compute nodes in each region of "
                          f"computeRegions: 0 to {COMPUTES_MAX}, and at most {COMPUTES_PER_TRIAL_MAX} in a trial "
                          "(computes × regions). Each is a nova-compute service of its own (~100 MB) reaching "
                          "its control plane's bus, conductor and Placement.")
    compute_regions: list[RegionName] | None = Field(
        None, max_length=1000, description="The regions with fake computes (default: every region).")
    region: RegionName | None = _region("Nova's API, conductor and scheduler")
    database: DatabasePlace = _database("Nova (nova_api, nova_cell0, nova)")
    values: ChartValues = _values()

    model_config = ConfigDict(json_schema_extra=_CHART_RULES)

    @model_validator(mode="after")
    def _chart(self) -> Nova:
        _check_chart(self)
        return self


_IMPLIED = "Unset: deployed when {who} is enabled. "


class Placement(Model):
    """Placement: the resource inventory Nova's scheduler and computes use."""

    enabled: Bool | None = Field(None, description=_IMPLIED.format(who="Nova") + "true: even without Nova; false "
                                 "only without Nova (Nova needs it).")
    chart_repo: ChartRepo = _repo()
    chart: Chart = _chart("placement")
    chart_version: ChartVersion = _version()
    images: PlacementImages = Field(default_factory=PlacementImages)
    replicas: Int = _replicas("placement-api processes")
    region: RegionName | None = _region("Placement")
    database: DatabasePlace = _database("Placement")
    values: ChartValues = _values()

    model_config = ConfigDict(json_schema_extra=_CHART_RULES)

    @model_validator(mode="after")
    def _chart(self) -> Placement:
        _check_chart(self)
        return self


class Glance(Model):
    """Glance: the images Nova boots (a small one wanwide makes; stored on local files)."""

    enabled: Bool | None = Field(None, description=_IMPLIED.format(who="Nova") + "true: even without Nova (the "
                                 "GlanceImages scenarios); false only without Nova (Nova needs it).")
    chart_repo: ChartRepo = _repo()
    chart: Chart = _chart("glance")
    chart_version: ChartVersion = _version()
    images: GlanceImages = Field(default_factory=GlanceImages)
    replicas: Int = _replicas("glance-api processes")
    region: RegionName | None = _region("Glance")
    database: DatabasePlace = _database("Glance")
    values: ChartValues = _values()

    model_config = ConfigDict(json_schema_extra=_CHART_RULES)

    @model_validator(mode="after")
    def _chart(self) -> Glance:
        _check_chart(self)
        return self


class Messaging(Model):
    """The message bus Nova's services (and Neutron's server) talk over: RabbitMQ."""

    enabled: Bool | None = Field(None, description=_IMPLIED.format(who="Nova or Neutron") + "false only without "
                                 "them (they need it).")
    backend: Literal["rabbitmq"] = Field("rabbitmq", description="The broker: RabbitMQ (the openstack-helm rabbitmq "
                                         "chart; Debian's rabbitmq-server in the lab).")
    chart_repo: ChartRepo = _repo()
    chart: Chart = _chart("rabbitmq")
    chart_version: ChartVersion = _version()
    images: MessagingImages = Field(default_factory=MessagingImages)
    replicas: Int = Field(1, ge=1, le=3, description="Broker nodes per bus (clustered when more than 1). 1 to 3.")
    file_descriptors: Annotated[int, Field(ge=64, le=1048576), WHOLE_NUMBER] | None = Field(
        None, description="The broker's open-file limit (each client connection takes one): a "
        "low one reproduces a broker running out of sockets as computes grow. 64 to 1048576; default: the "
        "platform's.")
    region: RegionName | None = _region("the bus")
    values: ChartValues = _values()

    model_config = ConfigDict(json_schema_extra=_CHART_RULES)

    @model_validator(mode="after")
    def _chart(self) -> Messaging:
        _check_chart(self)
        return self


class Neutron(Model):
    """Neutron's server (ML2, no agents: networks and ports as API objects), for the Neutron scenarios and for
    Nova's servers."""

    enabled: Bool = Field(False, description="Deploy neutron-server (and the bus). A scenario that boots servers "
                          "needs it: Nova asks Neutron for a project's networks at every boot and for a server's "
                          "ports at every delete (the projects have no network: servers boot without a port).")
    chart_repo: ChartRepo = _repo()
    chart: Chart = _chart("neutron")
    chart_version: ChartVersion = _version()
    images: NeutronImages = Field(default_factory=NeutronImages)
    replicas: Int = _replicas("neutron-server processes")
    region: RegionName | None = _region("Neutron")
    database: DatabasePlace = _database("Neutron")
    values: ChartValues = _values()

    model_config = ConfigDict(json_schema_extra=_CHART_RULES)

    @model_validator(mode="after")
    def _chart(self) -> Neutron:
        _check_chart(self)
        return self


NEEDS = (("placement", "Nova needs Placement"), ("glance", "Nova needs Glance for the images it boots"),
         ("messaging", "Nova needs the message bus"))


def _on(v: str) -> str:
    return f"(has(self.{v}) && has(self.{v}.enabled) && self.{v}.enabled)"


def _off(v: str) -> str:
    return f"(has(self.{v}) && has(self.{v}.enabled) && !self.{v}.enabled)"


_RULES = [cel(f"!{_on('nova')} || !{_off(s)}", f"{why}; set it true (or leave it "
              "unset), or set spec.openstack.nova.enabled false", f".{s}.enabled") for s, why in NEEDS]
_RULES.append(cel(f"!{_on('neutron')} || !{_off('messaging')}", "Neutron needs the message bus"
                  "; set it true (or leave it unset), or set spec.openstack.neutron.enabled false",
                  ".messaging.enabled"))
_STRETCHED_ONLY = ("controlRegion", "nova", "placement", "glance", "messaging", "neutron")
_RULES.append(cel("(has(self.shape) && self.shape == 'stretched') || !has(self.controlRegion)",
                  "controlRegion only applies to shape stretched: remove it, or set shape: stretched",
                  ".controlRegion"))
_RULES += [cel(f"(has(self.shape) && self.shape == 'stretched') || !has(self.{s}) || !has(self.{s}.region)",
               f"{s}.region only applies to shape stretched (shape regions runs one in every "
               "region): remove it, or set shape: stretched", f".{s}.region")
           for s in _STRETCHED_ONLY[1:]]


class OpenStack(Model):
    """The control plane of every region: Keystone always; Nova, Placement, Glance, the bus and Neutron when
    enabled, in one of two shapes."""

    shape: Shape = Field("regions", description="regions: every region runs its own Nova, Placement, Glance and bus "
                         "(identity shared through spec.database, as Keystone's always is). stretched: one control "
                         "plane in controlRegion (a service's region moves it), fake computes in every region "
                         "reaching its bus, conductor and Placement across the WAN. Only matters with Nova, Glance, "
                         "Placement or Neutron enabled.")
    control_region: RegionName | None = Field(
        None, description="shape stretched: where the control plane runs (default: spec.database.primaryRegion, "
        "else the first region).")
    keystone: Keystone = Field(default_factory=Keystone)
    nova: Nova = Field(default_factory=Nova)
    placement: Placement = Field(default_factory=Placement)
    glance: Glance = Field(default_factory=Glance)
    messaging: Messaging = Field(default_factory=Messaging)
    neutron: Neutron = Field(default_factory=Neutron)

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _RULES})

    @model_validator(mode="after")
    def _needs(self) -> OpenStack:
        for svc, why in NEEDS:
            if self.nova.enabled and getattr(self, svc).enabled is False:
                raise FieldProblem(f"{svc}.enabled", f"{why}; set it true (or leave it unset), or set "
                                   "spec.openstack.nova.enabled false")
        if self.neutron.enabled and self.messaging.enabled is False:
            raise FieldProblem("messaging.enabled", "Neutron needs the message bus; set it true (or leave it unset), "
                               "or set spec.openstack.neutron.enabled false")
        if self.shape != "stretched":
            if self.control_region is not None:
                raise FieldProblem("controlRegion", "only applies to shape stretched: remove it, or set shape: "
                                   "stretched")
            for svc in _STRETCHED_ONLY[1:]:
                if getattr(self, svc).region is not None:
                    raise FieldProblem(f"{svc}.region", "only applies to shape stretched (shape regions runs one in "
                                       "every region): remove it, or set shape: stretched")
        return self

    def enabled(self, service: str) -> bool:
        """Whether ``service`` (nova, placement, glance, messaging, neutron, keystone) is deployed: asked for, or
        unset and needed by Nova (placement, glance, messaging) or Neutron (messaging)."""
        if service == "keystone":
            return True
        if service in ("nova", "neutron"):
            return bool(getattr(self, service).enabled)
        asked = getattr(self, service).enabled
        if asked is not None:
            return bool(asked)
        return self.nova.enabled or (service == "messaging" and self.neutron.enabled)


__all__ = ["COMPUTES_MAX", "COMPUTES_PER_TRIAL_MAX", "ChartValues", "DatabasePlace", "Glance", "Keystone",
           "KeystoneImages", "Messaging", "Neutron", "Nova", "OpenStack", "Placement", "Shape"]
