"""What a trial monitors, and how Prometheus finds the monitors. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from wanwide.core.api.benchmark import BenchmarkSpec

SCRAPE_INTERVAL = "15s"
MONITOR_KINDS = ("PodMonitor", "ServiceMonitor")


@dataclass(frozen=True)
class MonitoringConfig:
    """Exporters and prometheus-operator monitors on or off, and the extra labels every monitor carries."""

    enabled: bool
    labels: dict[str, str] = field(default_factory=dict)
    interval: str = SCRAPE_INTERVAL

    @property
    def release(self) -> str | None:
        """The ``release`` label (what kube-prometheus-stack's monitor selectors match)."""
        return self.labels.get("release")


def monitoring_config(spec: BenchmarkSpec) -> MonitoringConfig:
    return MonitoringConfig(enabled=spec.monitoring.enabled, labels=dict(sorted(spec.monitoring.labels.items())))


OFF = MonitoringConfig(enabled=False)
"""What a trial runs with when the monitoring.coreos.com CRDs are missing."""

CRDS_MISSING = ("the monitoring.coreos.com CRDs (PodMonitor, ServiceMonitor) are not installed: no exporters and "
                "no monitors; install prometheus-operator (e.g. kube-prometheus-stack) or set "
                "spec.monitoring.enabled: false")
