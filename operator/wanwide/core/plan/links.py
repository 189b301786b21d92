"""One-way link parameters: what is applied to traffic from one region to another."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class OneWay:
    """Shaping of traffic leaving region ``src`` towards region ``dst``."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_mbit: float | None = None

    @property
    def is_noop(self) -> bool:
        return (
            self.delay_ms == 0
            and self.jitter_ms == 0
            and self.loss_pct == 0
            and self.rate_mbit is None
        )


Pair = tuple[str, str]
LinkMap = dict[Pair, OneWay]
