"""The seven Rally Keystone scenarios of the studies, by short name."""

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
