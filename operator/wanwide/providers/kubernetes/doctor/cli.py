"""``wanwide doctor``: is this cluster ready for a Benchmark? A table with a fix per failing line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from wanwide import DEFAULT_IMAGE


def run(args: argparse.Namespace) -> int:
    from wanwide.core.plan.load import load_documents
    from wanwide.core.plan.trial import plan
    from wanwide.providers.kubernetes.doctor import checks, gather
    from wanwide.providers.kubernetes.kube.client import Kube, load_config

    kube = Kube(load_config(args.kubeconfig))
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if not args.quiet else (lambda m: None)
    say("reading the cluster …")
    o = gather.cluster(kube)
    bench_doc = None
    if args.file:
        docs = load_documents([Path(f).read_text() if f != "-" else sys.stdin.read() for f in args.file])
        bench = docs.benchmarks[0]
        first = plan(bench, docs.topology_for(bench))[0]
        o.backend = first.backend
        o.regions = {r.name: r.node_selector for r in first.regions}
        o.tolerations = [t.wire() for t in bench.spec.runner.pod.tolerations or []]  # as the preflight reads them
        bench_doc = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark",
                     "metadata": {"name": bench.metadata.name, "namespace": args.namespace},
                     "spec": bench.spec.model_dump(by_alias=True, exclude_none=True)}
    if not args.no_netem:
        gather.netem(kube, o, args.probe_namespace, args.image, args.timeout, logs=_logs(kube), progress=say)
    if bench_doc is not None:
        say("writing to the results bucket …")
        o.s3 = gather.bucket(kube, bench_doc, pod={"image": args.image, "timeout_s": args.timeout, "progress": say})
    table = checks.all_checks(o)
    print(checks.table(table))
    return 1 if any(c.state == checks.FAIL for c in table) else 0


def _logs(kube):
    """A pod's log (the probe's own words), through the core API."""
    from kubernetes import client

    core = client.CoreV1Api(kube.api)

    def read(namespace: str, name: str) -> str:
        try:
            return core.read_namespaced_pod_log(name, namespace, tail_lines=20)
        except Exception as e:  # noqa: BLE001 - no log is an answer too
            return f"(no log: {type(e).__name__})"

    return read


def add_doctor_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check that the cluster can run a Benchmark (a table with a fix per line)")
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"),
                   help="kubeconfig file (default: $KUBECONFIG, else in a pod its ServiceAccount, else ~/.kube/config)")
    p.add_argument("-f", "--file", action="append",
                   help="a Benchmark (and its Topology): also check its placement, database and results bucket")
    p.add_argument("-n", "--namespace", default="default",
                   help="namespace the Benchmark will be applied in (its results Secret is read there)")
    p.add_argument("--probe-namespace", default="wanwide-doctor",
                   help="namespace of the netem probe pods (created, labelled privileged: they need NET_ADMIN)")
    p.add_argument("--image", default=DEFAULT_IMAGE, help="image of the probe pods (netem needs tc, the bucket boto3: the wanwide image)")
    p.add_argument("--timeout", type=float, default=180, help="seconds to wait for the probe pods")
    p.add_argument("--no-netem", action="store_true", help="skip the netem probe pods")
    p.add_argument("-q", "--quiet", action="store_true", help="only the table")
    p.set_defaults(func=run)
