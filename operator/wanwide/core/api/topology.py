"""``Topology``: regions, groups and the links between them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from wanwide.core.api.base import (
    DNS_SUBDOMAIN_RE,
    LABEL_KEY_RE,
    Bool,
    Int,
    Model,
    ObjectMeta,
    Observed,
    RegionName,
    cel,
)
from wanwide.core.api.freeform import LabelMap
from wanwide.core.api.units import RTT_MAX, Percent, Rate, Rtt

NodeSelector = LabelMap()


class Region(Model):
    """One region: an OpenStack instance (a Keystone and, per backend, a database node)."""

    name: RegionName
    group: RegionName | None = Field(None, description="Group of the region, for intra/inter-group links.")
    node_selector: NodeSelector | None = Field(
        None, description="Place this region's pods on nodes with these labels (real WAN sites). At most 20 labels."
    )


class RegionGenerator(Model):
    """Regions generated as ``<prefix>1..<prefix>N``, split into contiguous groups."""

    count: Int = Field(ge=1, le=1000, description="Number of regions.")
    groups: Int = Field(1, ge=1, le=200, description="Number of groups (contiguous blocks of regions).")
    prefix: str = Field("r", pattern=r"^[a-z][-a-z0-9]{0,14}$", description="Region name prefix.")
    group_prefix: str = Field("g", pattern=r"^[a-z][-a-z0-9]{0,14}$", description="Group name prefix.")

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel("self.groups <= self.count", "groups must not exceed count: lower generate.groups"),
            ]
        }
    )

    @model_validator(mode="after")
    def _groups(self) -> RegionGenerator:
        if self.groups > self.count:
            raise ValueError("groups must not exceed count: lower generate.groups")
        return self


class Link(Model):
    """Network characteristics of a link. Unset fields inherit from the less specific link."""

    rtt: Rtt | None = Field(None, description="Round-trip time; each direction gets half as one-way delay. "
                            f"At most {RTT_MAX}.")
    jitter: Rtt | None = Field(None, description=f"Jitter added to each direction's delay. At most {RTT_MAX}.")
    loss: Percent | None = Field(None, description="Packet loss applied in each direction.")
    rate: Rate | None = Field(None, description="Bandwidth limit in each direction: 1kbit to 100gbit.")


class LinkOverride(Link):
    """Link between two specific regions; symmetric unless ``oneWay``."""

    from_: RegionName = Field(alias="from", description="First region (the source when oneWay).")
    to: RegionName = Field(description="Second region (the destination when oneWay).")
    one_way: Bool = Field(
        False, description="Apply only to traffic from→to; its rtt then sets that direction's delay to rtt/2."
    )

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel("self.from != self.to", "from and to must be different regions: traffic inside a region is never shaped"),
            ]
        }
    )

    @model_validator(mode="after")
    def _distinct(self) -> LinkOverride:
        if self.from_ == self.to:
            raise ValueError("from and to must be different regions: traffic inside a region is never shaped")
        return self


class Network(Model):
    """Links between regions: default, then intra/inter-group, then per-pair overrides."""

    default: Link = Field(default_factory=lambda: Link(rtt="0ms"), description="Link between any two regions.")
    intra_group: Link | None = Field(None, description="Link between regions of the same group.")
    inter_group: Link | None = Field(None, description="Link between regions of different groups.")
    overrides: list[LinkOverride] = Field(default_factory=list, max_length=2000)


REGION_LABEL = "wanwide.io/region"  # the project's own node label (cloud clusters keep topology.kubernetes.io/region)
HOSTNAME_LABEL = "kubernetes.io/hostname"


class Placement(Model):
    """Where a region's pods run (a region's own ``nodeSelector`` wins over all three)."""

    mode: Literal["none", "regionLabel", "nodes"] = Field(
        "none",
        description="none: anywhere the scheduler puts them (delay still comes from Chaos Mesh; a small cluster); "
        "regionLabel: on nodes labelled <label>=<region name>; nodes: region i on nodes[i mod len(nodes)] "
        "(by kubernetes.io/hostname).",
    )
    label: str = Field(
        REGION_LABEL, max_length=316, pattern=LABEL_KEY_RE,
        description="regionLabel: the node label whose value is the region's name "
        "(kubectl label node NODE wanwide.io/region=r1).",
    )
    nodes: list[Annotated[str, Field(max_length=253, pattern=DNS_SUBDOMAIN_RE)]] | None = Field(
        None, min_length=1, max_length=1000,
        description="nodes: node names, taken in turn by the regions in order (fewer nodes than regions: they share).",
    )

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel("self.mode == 'nodes' ? has(self.nodes) : !has(self.nodes)",
                    "placement.nodes goes with mode: nodes: list the node names there, or set mode: nodes"),
            ]
        }
    )

    @model_validator(mode="after")
    def _nodes_with_mode(self) -> Placement:
        if (self.mode == "nodes") != (self.nodes is not None):
            raise ValueError("placement.nodes goes with mode: nodes: list the node names there, or set mode: nodes")
        return self


class TopologySpec(Model):
    """Regions (explicit list or generator) and the network between them."""

    # at most 200 listed (the CRD's uniqueness rule is quadratic: the API server's CEL cost budget);
    # generate makes up to 1000
    regions: list[Region] | None = Field(None, min_length=1, max_length=200)
    generate: RegionGenerator | None = None
    network: Network = Field(default_factory=Network)
    placement: Placement = Field(default_factory=Placement)

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "has(self.regions) != has(self.generate)",
                    "set exactly one of regions (explicit list) or generate (count/groups/prefix)",
                ),
                cel(
                    "!has(self.regions) || self.regions.all(r, self.regions.exists_one(x, x.name == r.name))",
                    "region names must be unique: rename the duplicate in regions",
                ),
            ]
        }
    )

    @model_validator(mode="after")
    def _one_source(self) -> TopologySpec:
        if (self.regions is None) == (self.generate is None):
            raise ValueError("set exactly one of regions (explicit list) or generate (count/groups/prefix)")
        if self.regions is not None:
            seen = set()
            for r in self.regions:
                if r.name in seen:
                    raise ValueError(f"region names must be unique: rename the duplicate {r.name!r} in regions")
                seen.add(r.name)
        return self


class Condition(Observed):
    """A Kubernetes-style condition."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    observed_generation: int | None = None
    last_transition_time: str | None = None


def conditions_field() -> Any:
    """``status.conditions``: a list-map keyed by ``type`` (one condition per type, merged by type)."""
    return Field(default_factory=list, json_schema_extra={"x-kubernetes-list-type": "map",
                                                          "x-kubernetes-list-map-keys": ["type"]})


class TopologyStatus(Observed):
    regions: int | None = None
    groups: int | None = None
    matrix: str | None = Field(None, description="Summary of the resolved RTT matrix.")
    observed_generation: int | None = None
    conditions: list[Condition] = conditions_field()


class Topology(Observed):
    """A Topology document."""

    api_version: Literal["wanwide.io/v1alpha1"] = "wanwide.io/v1alpha1"
    kind: Literal["Topology"] = "Topology"
    metadata: ObjectMeta
    spec: TopologySpec
