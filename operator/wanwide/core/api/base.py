"""Common base for API models: camelCase on the wire, unknown fields refused."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

DNS_LABEL_RE = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
REGION_NAME_MAX = 20
# Kubernetes' own rule for an object's name (a DNS-1123 subdomain): what a reference to one may be.
DNS_SUBDOMAIN_RE = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# a label's key ([prefix/]name) and value, as the API server checks them
LABEL_KEY_RE = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE_RE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
ObjectName = Annotated[
    str,
    Field(pattern=DNS_SUBDOMAIN_RE, max_length=253,
          description="Name of a Kubernetes object: lower-case letters, digits, '-' and '.', at most 253."),
]

RegionName = Annotated[
    str,
    Field(
        pattern=DNS_LABEL_RE,
        max_length=REGION_NAME_MAX,
        description="Region name: lower-case letters, digits and '-', at most 20 characters.",
    ),
]



class FieldProblem(ValueError):
    """A model's own check that is about one of its fields: reported at that field's path."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _whole_number(value: Any) -> Any:
    """Refuse what the API server refuses for an integer field (pydantic alone would convert it)."""
    if isinstance(value, str):
        fix = f'write {value.strip()}, not "{value}"' if value.strip().isdigit() else "write a whole number such as 10"
        raise ValueError(f"{value!r} is text, not a number: {fix} (no quotes)")
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is not a number: write a whole number such as 10")
    return value


def _boolean(value: Any) -> Any:
    """Refuse what the API server refuses for a boolean field: only true and false."""
    if isinstance(value, str):
        word = value.strip().lower()
        fix = f'write {word}, not "{value}"' if word in ("true", "false") else "write true or false"
        raise ValueError(f"{value!r} is text, not a boolean: {fix} (no quotes)")
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not a boolean: write true or false")
    return value


WHOLE_NUMBER = BeforeValidator(_whole_number)
Int = Annotated[int, WHOLE_NUMBER]
"""An integer field as the CRD checks it: ``10``, never ``"10"`` or ``true``.

Bounds of an optional or list item go before the validator, so the schema keeps them:
``Annotated[int, Field(ge=1), WHOLE_NUMBER] | None``."""
Bool = Annotated[bool, BeforeValidator(_boolean)]
"""A boolean field as the CRD checks it: ``true`` or ``false``, never ``"true"``, ``yes`` or ``1``."""


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
