"""Common base for API models: camelCase on the wire, unknown fields refused."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

DNS_LABEL_RE = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
REGION_NAME_MAX = 20

RegionName = Annotated[
    str,
    Field(
        pattern=DNS_LABEL_RE,
        max_length=REGION_NAME_MAX,
        description="Region name: lower-case letters, digits and '-', at most 20 characters.",
    ),
]


class Model(BaseModel):
    """Base of every API model."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    def wire(self) -> dict[str, Any]:
        """The model as it is written in YAML (camelCase, unset fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def cel_matches(regex: str) -> str:
    """A CEL ``self.matches('…')`` rule; backslashes escaped for CEL's string literal."""
    return "self.matches('" + regex.replace("\\", "\\\\") + "')"


def cel(rule: str, message: str, field_path: str | None = None) -> dict[str, str]:
    """One ``x-kubernetes-validations`` entry."""
    entry = {"rule": rule, "message": message}
    if field_path:
        entry["fieldPath"] = field_path
    return entry


class Observed(Model):
    """Base of what is read back from the API server (status, whole documents): extra fields ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


class ObjectMeta(Observed):
    """The part of ``metadata`` the planner reads."""

    name: str
    namespace: str = "default"
    generation: int | None = None
    uid: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
