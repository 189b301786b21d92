"""The Benchmark's ``Monitored`` condition: will its trials deploy exporters and monitors?"""

from __future__ import annotations

import datetime as dt
from typing import Any

from wanwide.core.api.benchmark import Benchmark
from wanwide.core.plan.monitoring import CRDS_MISSING, MONITOR_KINDS
from wanwide.providers.kubernetes.controller.trialstate import set_condition
from wanwide.providers.kubernetes.kube.client import Kube
from wanwide.providers.kubernetes.render.monitors import MON_API

CONDITION = "Monitored"


def condition(kube: Kube, model: Benchmark, conds: list[dict[str, Any]], generation: int | None,
              now: dt.datetime) -> list[dict[str, Any]]:
    """``Monitored``: True (CRDs installed), False with reason Disabled or PrometheusOperatorMissing.

    Checked when the spec is handled; each trial checks again when it deploys (MonitorsSkipped event).
    """
    if not model.spec.monitoring.enabled:
        return set_condition(conds, CONDITION, "False", "Disabled",
                             "spec.monitoring.enabled is false: no exporters, no monitors", generation, now)
    if kube.serves(MON_API, *MONITOR_KINDS):
        return set_condition(conds, CONDITION, "True", "MonitorsDeployed",
                             "trials deploy exporters and PodMonitors/ServiceMonitors", generation, now)
    return set_condition(conds, CONDITION, "False", "PrometheusOperatorMissing", CRDS_MISSING, generation, now)
