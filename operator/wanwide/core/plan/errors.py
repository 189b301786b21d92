"""Planner errors: every problem names the object, the field and says what to do."""

from __future__ import annotations

from dataclasses import dataclass

from wanwide.core.errors import UserError


@dataclass(frozen=True)
class Problem:
    """``field`` is the path as written in the document of ``obj`` (``Benchmark/NAME``, ``Topology/NAME``)."""

    field: str
    message: str
    obj: str = ""

    def __str__(self) -> str:
        return f"{self.obj}: {self.field}: {self.message}" if self.obj else f"{self.field}: {self.message}"


class PlanError(UserError, ValueError):
    """An invalid Benchmark/Topology; ``problems`` lists every reason found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


class Problems:
    """Collects problems so one run reports them all."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, field: str, message: str, obj: str = "") -> None:
        self.items.append(Problem(field, message, obj))

    def raise_if_any(self) -> None:
        if self.items:
            raise PlanError(list(self.items))
