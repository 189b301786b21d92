"""The runner pod's own netem qdiscs: what Chaos Mesh's chaos-daemon set in the pod's network namespace to shape
its traffic toward the other regions (one netem qdisc per NetworkChaos object selecting the pod, each behind a
filter for that object's destinations), with their counters — the Kubernetes provider's ``gauges.shaper_counters``
(``wanwide runner qdisc REGION``, run by the runner before and after its measured task, as the lab runs its
``providers/lab/counters.py``).

Reading qdiscs needs no capability (a netlink dump), only ``tc`` (iproute2, in wanwide's image). A pod with no netem
qdisc (a plan without a WAN, or a node whose kernel has none) says so instead of counters.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

KEYS = ("packets", "bytes", "drops", "overlimits", "requeues", "backlog", "qlen")
MAX_QDISCS = 64  # netem qdiscs recorded (a pod's objects: one per link class and pod-set kind it is a source of)
NONE = "no netem qdisc in the runner pod's network namespace: nothing shaped its traffic here"


def own_counters(region: str, qdiscs: Any) -> dict[str, Any]:
    """``tc -s -j qdisc show``'s list → per netem qdisc (``"<region>→* (<dev> <handle>)"``) its counters and what it
    does (delay, jitter, loss and rate as tc says them); one entry saying none when there is none."""
    out: dict[str, Any] = {}
    for q in qdiscs if isinstance(qdiscs, list) else []:
        if not isinstance(q, dict) or q.get("kind") != "netem":
            continue
        if len(out) == MAX_QDISCS:
            out[f"{region}→* (more)"] = {"kind": "netem", "error": f"more than {MAX_QDISCS} netem qdiscs: the rest left out"}
            break
        key = f"{region}→* ({q.get('dev', '?')} {q.get('handle', '?')})"
        opts = q.get("options") if isinstance(q.get("options"), dict) else {}
        out[key] = {"kind": "netem", "parent": q.get("parent", "root" if q.get("root") else None),
                    **{k: q[k] for k in KEYS if isinstance(q.get(k), int)},
                    "options": {k: opts[k] for k in ("delay", "loss-random", "rate", "limit") if k in opts}}
    return out or {f"{region}→*": {"kind": "none", "error": NONE}}


def read(region: str) -> dict[str, Any]:
    try:
        r = subprocess.run(["tc", "-s", "-j", "qdisc", "show"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return {f"{region}→*": {"kind": "unknown", "error": f"tc: {type(e).__name__}: {e}"[:300]}}
    if r.returncode != 0:
        return {f"{region}→*": {"kind": "unknown", "error": f"tc: {(r.stderr or r.stdout).strip()[:300]}"}}
    try:
        return own_counters(region, json.loads(r.stdout or "[]"))
    except ValueError as e:
        return {f"{region}→*": {"kind": "unknown", "error": f"tc's JSON: {e}"[:300]}}


def main(argv: list[str]) -> int:
    print(json.dumps(read(argv[0] if argv else "?")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
