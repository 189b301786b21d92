"""The shapers' own counters: what each shaped direction passed, dropped for its loss and dropped for a full
queue, read where the shaper keeps them.

- linkemu: its ``stats`` (per link and direction: frames, lost, overflow);
- netem: ``tc -s -j qdisc show`` on the end the direction leaves by (packets, drops, overlimits, requeues,
  backlog) — not exercised on this machine (no netem in its kernel): the parser is tested on tc's JSON form;
- wirefilter: none kept (said in the record).

A network's links as a document (:func:`links_doc`, written by the lab beside the runner's configuration), read
with ``python -m wanwide.providers.lab.counters LINKS.json`` (JSON on stdout): the runner runs it before and after
its measured task (``gauges.shaper_counters``) and records both and their difference in the bundle.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from wanwide.pipeline.runner.qdisc import KEYS
from wanwide.providers.lab.linkemu import Emulator

NETEM_KEYS = KEYS  # the counters of a netem qdisc, as the Kubernetes runner reads its pod's


def links_doc(net: Any) -> dict[str, Any]:
    """The shaped links of ``net`` (a ``netns.Network``) as :func:`read` needs them."""
    return {"shaper": net.shaper, "links": [
        {"a": lk.a, "b": lk.b, "ns_a": lk.ns_a, "ns_b": lk.ns_b, "if_a": lk.if_a, "if_b": lk.if_b, "kind": lk.kind,
         "mgmt": lk.mgmt} for lk in [*net.pairs.values(), *net.edges.values()] if lk.kind != "veth"]}


def netem_counters(qdiscs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The root netem qdisc's counters from ``tc -s -j qdisc show dev X``; None without one."""
    q = next((q for q in qdiscs if q.get("kind") == "netem"), None)
    return None if q is None else {k: q.get(k) for k in NETEM_KEYS if k in q}


def _tc(ns: str, dev: str) -> dict[str, Any] | None:
    r = subprocess.run(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev], capture_output=True, text=True,
                       timeout=20, check=False)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[:300]}
    return netem_counters(json.loads(r.stdout or "[]"))


def read(doc: dict[str, Any]) -> dict[str, Any]:
    """Each shaped direction's counters now (``"a→b"``: kind and counters, or why there are none)."""
    out: dict[str, Any] = {}
    stats: dict[str, dict[int, dict[str, int]] | str] = {}
    for lk in doc.get("links", []):
        a, b, kind = lk["a"], lk["b"], lk["kind"]
        if kind == "linkemu" and lk.get("mgmt") and "#" in lk["mgmt"]:
            sock, lid = lk["mgmt"].rsplit("#", 1)
            if sock not in stats:
                try:
                    stats[sock] = Emulator(sock=Path(sock), pid=0).stats()
                except Exception as e:  # the emulator gone (the deployment closed): said, not raised
                    stats[sock] = f"{type(e).__name__}: {e}"
            got = stats[sock]
            if isinstance(got, str):
                out[f"{a}→{b}"] = out[f"{b}→{a}"] = {"kind": kind, "error": got}
                continue
            s = got.get(int(lid), {})
            for src, dst, d in ((a, b, "ab"), (b, a, "ba")):
                out[f"{src}→{dst}"] = {"kind": kind, "frames": s.get(f"frames_{d}"), "lost": s.get(f"lost_{d}"),
                                       "overflow": s.get(f"overflow_{d}")}
        elif kind == "netem":
            out[f"{a}→{b}"] = {"kind": kind, **(_tc(lk["ns_a"], lk["if_a"]) or {"error": "no netem qdisc"})}
            out[f"{b}→{a}"] = {"kind": kind, **(_tc(lk["ns_b"], lk["if_b"]) or {"error": "no netem qdisc"})}
        else:
            out[f"{a}→{b}"] = out[f"{b}→{a}"] = {"kind": kind, "error": f"{kind} keeps no counters wanwide reads"}
    return out


def main(argv: list[str]) -> int:
    print(json.dumps(read(json.loads(Path(argv[0]).read_text()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
