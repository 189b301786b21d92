"""``wanwide operator``: run the kopf operator."""

from __future__ import annotations

import argparse
import json
import logging
import os

from wanwide import DEFAULT_IMAGE
from wanwide.providers.kubernetes.render.chartsource import DEFAULT_ALLOWED


def run(args: argparse.Namespace) -> int:
    import asyncio

    import kopf

    from wanwide.core.errors import UserError
    from wanwide.providers.kubernetes.controller import handlers  # noqa: F401  (registers the handlers)
    from wanwide.providers.kubernetes.controller.runtime import RUNTIME
    from wanwide.providers.kubernetes.kube import helm
    from wanwide.providers.kubernetes.render import chartsource, netpol

    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig
    RUNTIME.kubeconfig = args.kubeconfig
    RUNTIME.metrics_port = args.metrics_port
    RUNTIME.trial_clusterrole = args.trial_clusterrole
    RUNTIME.runner_image = args.runner_image
    RUNTIME.runner_pod = json.loads(args.runner_pod) if args.runner_pod else {}
    RUNTIME.probe_image = args.probe_image or args.runner_image
    allowed = tuple(e.strip() for e in args.allowed_charts.split(",") if e.strip())
    bad = [p for e in allowed if (p := chartsource.entry_problem(e))]
    if bad:
        raise UserError(f"--allowed-charts: {bad[0]}")
    RUNTIME.allowed_charts = allowed
    RUNTIME.network_policy = netpol.Settings.of(json.loads(args.network_policy) if args.network_policy else None)
    helm.RENDERS.policy = helm.Policy(allowed, args.chart_keyring or None)
    for e in chartsource.insecure(allowed):
        logging.getLogger("wanwide").warning("--allowed-charts: %s is fetched without TLS (plain http)", e)
    sa = os.environ.get("WANWIDE_SERVICE_ACCOUNT") or _in_cluster_sa()
    if sa:
        ns, name = sa.split("/", 1)
        RUNTIME.subject = {"kind": "ServiceAccount", "name": name, "namespace": ns}
    fmt = {"json": kopf.LogFormat.JSON, "plain": kopf.LogFormat.PLAIN, "full": kopf.LogFormat.FULL}[args.log_format]
    kopf.configure(verbose=args.verbose, log_format=fmt)
    namespaces = [n for n in (args.namespaces or "").split(",") if n]
    RUNTIME.clusterwide = not namespaces
    asyncio.run(kopf.operator(
        standalone=True,
        namespaces=namespaces,  # a list, empty for cluster-wide (kopf iterates it)
        clusterwide=not namespaces,
        liveness_endpoint=f"http://0.0.0.0:{args.health_port}/healthz" if args.health_port else None,
    ))
    return 0


def _in_cluster_sa() -> str | None:
    path = "/var/run/secrets/kubernetes.io/serviceaccount"
    try:
        with open(f"{path}/namespace") as f:
            ns = f.read().strip()
    except OSError:
        return None
    name = os.environ.get("POD_SERVICE_ACCOUNT")
    return f"{ns}/{name}" if name else None


def add_operator_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("operator", help="run the Kubernetes operator (kopf)")
    p.add_argument("--namespaces", default="", help="comma-separated namespaces to watch (default: all)")
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"),
                   help="kubeconfig file (default: $KUBECONFIG, else in a pod its ServiceAccount, else ~/.kube/config)")
    p.add_argument("--metrics-port", type=int, default=8080, help="port of the Prometheus /metrics endpoint (0: none)")
    p.add_argument("--health-port", type=int, default=8081, help="port of the liveness endpoint /healthz (0: none)")
    p.add_argument("--trial-clusterrole", default=None,
                   help="ClusterRole bound to the operator in each trial namespace (the chart's <release>-trial)")
    p.add_argument("--runner-image", default=os.environ.get("WANWIDE_RUNNER_IMAGE") or DEFAULT_IMAGE,
                   help="image of the Rally Jobs when a Benchmark sets no spec.runner.image (the chart passes its own)")
    p.add_argument("--runner-pod", default=os.environ.get("WANWIDE_RUNNER_POD") or "",
                   help="JSON: defaults of spec.runner.pod for Benchmarks that leave a field unset (the chart passes "
                        "its runner.pod value)")
    p.add_argument("--probe-image", default=os.environ.get("WANWIDE_PROBE_IMAGE") or "",
                   help="image of the preflight's netem probe (root with NET_ADMIN; default: --runner-image, which "
                        "the chart sets to the operator's own image); never a Benchmark's")
    p.add_argument("--allowed-charts", default=os.environ.get("WANWIDE_ALLOWED_CHARTS") or ",".join(DEFAULT_ALLOWED),
                   help="comma-separated chart sources Benchmarks may name: https://REPO/CHART, oci://REF, /DIR; "
                        "an entry ending in '/' allows everything below it (default: %(default)s)")
    p.add_argument("--chart-keyring", default=os.environ.get("WANWIDE_CHART_KEYRING") or "",
                   help="a GnuPG keyring: charts pulled from a repository are verified against it (helm pull --verify)")
    p.add_argument("--network-policy", default=os.environ.get("WANWIDE_NETWORK_POLICY") or "",
                   help="JSON: the trials' NetworkPolicies (enabled, ingressNamespaces, egress, runnerEgress; the "
                        "chart passes its networkPolicy value); default: on, docs/security.md")
    p.add_argument("--log-format", choices=["json", "plain", "full"], default="plain",
                   help="kopf's log format: plain (default), full (with the object's name), json")
    p.add_argument("--verbose", action="store_true", help="debug logging (kopf's and the handlers')")
    p.set_defaults(func=run)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
