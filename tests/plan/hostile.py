"""A corpus of hostile specs: what a Benchmark author who is not the cluster's admin could write to make the
planner (and the single operator replica that runs it) spend its memory or time, or to reach helm's command
line, a config file or the node's credentials.

Each case is refused by ``wanwide plan -f FILE --all`` in one line naming the field and the fix
(tests/plan/test_hostile.py, as a real process with 1 GiB of address space and 30 s), and, where the CRD
can say it, by the API server too (tests/cluster/test_validation.py). ``admission``: True when the
API server refuses the document itself, False when it admits it and only the planner refuses (the
operator then marks the Benchmark Invalid), None when the file is not one object the API server could
be asked about (a YAML bomb, a file over 3 MiB: kubectl refuses it before any request).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

API = "wanwide.io/v1alpha1"
Doc = dict[str, Any]


def base() -> Doc:
    """A valid Benchmark: three listed regions, one scenario, the defaults for everything else."""
    return {"apiVersion": API, "kind": "Benchmark", "metadata": {"name": "hx", "namespace": "lab"},
            "spec": {"topology": {"regions": [{"name": "paris"}, {"name": "rennes"}, {"name": "chicago"}],
                                  "network": {"default": {"rtt": "10ms"}}},
                     "workload": {"scenarios": [{"name": "get_entities"}]}}}


def at(changes: dict[str, Any], doc: Doc | None = None) -> Doc:
    """``doc`` (the base) with each dotted path set (``spec.topology.network.default.rtt``); None deletes."""
    out = copy.deepcopy(doc if doc is not None else base())
    for path, value in changes.items():
        node = out
        keys = path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if value is None:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
    return out


def head(spec_yaml: str, name: str = "hx") -> str:
    """A Benchmark's text with ``spec_yaml`` (indented by the caller) as its spec."""
    return f"apiVersion: {API}\nkind: Benchmark\nmetadata:\n  name: {name}\nspec:\n{spec_yaml}"


VALID_SPEC = ("  topology: {generate: {count: 3}}\n"
              "  workload: {scenarios: [{name: get_entities}]}\n")


@dataclass(frozen=True)
class Hostile:
    id: str
    make: Callable[[], bytes | str | list[Doc]]  # the file's bytes or YAML text, or its documents
    field: str  # what the one line must name (a path, or the file's line)
    fix: str  # words the line must say
    admission: bool | None
    path: str | None = None  # read this file instead (a device)
    api_says: str | None = None  # words the API server's refusal holds, when not the field's last name

    def data(self) -> bytes:
        """The file's bytes."""
        made = self.make()
        if isinstance(made, bytes):
            return made
        return (made if isinstance(made, str) else yaml.safe_dump_all(made, sort_keys=False)).encode()

    def docs(self) -> list[Doc]:
        made = self.make()
        assert isinstance(made, list), f"{self.id} is text, not documents"
        return made


def _doc(changes: dict[str, Any], doc: Doc | None = None) -> Callable[[], list[Doc]]:
    return lambda: [at(changes, doc)]


CASES: list[Hostile] = []


def case(id_: str, make: Callable[[], bytes | str | list[Doc]], field: str, fix: str, admission: bool | None,
         **kw: Any) -> None:
    CASES.append(Hostile(id_, make, field, fix, admission, **kw))


# ---- YAML: expanded, nested or sized past what any spec needs, before anything is built -------------------

def _laughs(levels: int, width: int) -> str:
    lines = ["  l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return head(VALID_SPEC + "\n".join(lines) + "\n")


case("yaml-billion-laughs", lambda: _laughs(9, 10), "hx.yaml:", "aliases expanded", None)
case("yaml-laughs-small-but-wide", lambda: _laughs(4, 40), "hx.yaml:", "aliases expanded", None)
case("yaml-one-big-anchor-many-aliases",
     lambda: head(VALID_SPEC + "  a: &a [" + ", ".join(["x" * 50] * 20000) + "]\n  b: ["
                  + ", ".join(["*a"] * 90) + "]\n"), "hx.yaml:", "aliases expanded", None)
case("yaml-merge-key-doubling",
     lambda: head(VALID_SPEC + "  m0: &m0 {" + ", ".join(f"k{i}: v" for i in range(50)) + "}\n"
                  + "".join(f"  m{i}: &m{i} {{<<: [*m{i - 1}], x{i}: {{<<: *m{i - 1}}}}}\n" for i in range(1, 40))),
     "hx.yaml:", "aliases expanded", None)
case("yaml-recursive-mapping", lambda: head("  &s {workload: *s}\n"), "hx.yaml:6", "recursive", None)
case("yaml-recursive-list", lambda: head(VALID_SPEC + "  x: &x [1, [2, *x]]\n"), "hx.yaml:8", "recursive", None)
case("yaml-too-many-aliases",
     lambda: head(VALID_SPEC + "  a: &a x\n  b: [" + ", ".join(["*a"] * 10_001) + "]\n"), "hx.yaml:9",
     "more than 10,000 aliases", None)
case("yaml-undefined-alias", lambda: head(VALID_SPEC + "  a: *nowhere\n"), "hx.yaml:8", "no anchor", None)
case("yaml-deep-flow-lists", lambda: head("  x: " + "[" * 200_000 + "]" * 200_000 + "\n"), "hx.yaml:6",
     "deeper than 64 levels", None)
case("yaml-deep-flow-maps", lambda: head("  x: " + "{a: " * 50_000 + "1" + "}" * 50_000 + "\n"), "hx.yaml:6",
     "deeper than 64 levels", None)
case("yaml-deep-block", lambda: head("".join("  " * (i + 1) + f"k{i}:\n" for i in range(500)) + "  " * 501 + "v\n"),
     "hx.yaml:", "deeper than 64 levels", None)
case("yaml-file-over-3-mib", lambda: head(VALID_SPEC + "  x: " + "y" * (3 * 1024 * 1024) + "\n"), "hx.yaml",
     "more than 3 MiB", None)
case("yaml-device-zero", lambda: "", "/dev/zero", "more than 3 MiB", None, path="/dev/zero")
case("yaml-object-over-1.5-mib",
     lambda: head(VALID_SPEC + "  x: " + "y" * (1600 * 1024) + "\n"), "hx.yaml:", "1.5 MiB per object", None)
case("yaml-too-many-values", lambda: head(VALID_SPEC + "  x: [" + ",".join(["0"] * 150_000) + "]\n"), "hx.yaml:",
     "more than 100,000 values", None)
case("yaml-many-documents", lambda: "".join("--- {a: [1, 2, 3, 4, 5, 6, 7, 8, 9]}\n" for _ in range(20_000)),
     "hx.yaml:", "more than 100,000 values", None)
case("yaml-huge-integer", lambda: head(VALID_SPEC.replace("get_entities}", "get_entities, times: " + "9" * 5000 + "}")),
     "hx.yaml:7", "5000 digits", None)
case("yaml-infinity",
     lambda: head("  topology: {generate: {count: 3}}\n  workload: {scenarios: [{name: get_entities, args: {x: .inf}}]}\n"),
     "hx.yaml:7", "not a number JSON can hold", None)
case("yaml-nan", lambda: head(VALID_SPEC + "  openstack: {keystone: {values: {a: .nan}}}\n"), "hx.yaml:8",
     "not a number JSON can hold", None)
case("yaml-binary", lambda: head(VALID_SPEC + "  openstack: {keystone: {values: {a: !!binary aGk=}}}\n"),
     "hx.yaml:8", "!!binary is not a JSON value", None)
case("yaml-set", lambda: head(VALID_SPEC + "  openstack: {keystone: {values: !!set {a, b}}}\n"), "hx.yaml:8",
     "!!set is not a JSON value", None)
case("yaml-python-object", lambda: head(VALID_SPEC + "  x: !!python/object/apply:os.system [id]\n"), "hx.yaml:8",
     "could not determine a constructor", None)
case("yaml-duplicate-key", lambda: head(VALID_SPEC + "  topology: {generate: {count: 400}}\n"), "hx.yaml:8",
     "given twice", None)
case("yaml-duplicate-name", lambda: f"apiVersion: {API}\nkind: Benchmark\nmetadata: {{name: hx, name: other}}\n"
     f"spec:\n{VALID_SPEC}", "hx.yaml:3", "given twice", None)
case("yaml-unhashable-key", lambda: head(VALID_SPEC + "  ? [a, b]\n  : c\n"), "hx.yaml:", "unhashable", None)
case("yaml-not-utf8", lambda: head(VALID_SPEC).encode() + b"  x: caf\xe9\n", "hx.yaml", "not UTF-8", None)
case("yaml-control-character", lambda: head(VALID_SPEC + "  x: \x07\n"), "hx.yaml:8", "special characters", None)

# ---- names: Python's $ matches before a final newline; Kubernetes' RE2 does not ------------------------------

case("name-trailing-newline", _doc({"metadata.name": "hx\n"}), "metadata.name", "not a valid Kubernetes object name",
     True, api_says="metadata.name")
case("namespace-trailing-newline", _doc({"metadata.namespace": "lab\n"}), "metadata.namespace", "not a valid namespace",
     None)
case("topology-name-trailing-newline",
     lambda: [{"apiVersion": API, "kind": "Topology", "metadata": {"name": "wan\n"}, "spec": {"generate": {"count": 3}}},
              at({"spec.topology": None, "spec.topologyRef": "wan"})],
     "Topology/wan\\n: metadata.name", "not a valid Kubernetes object name", True, api_says="metadata.name")
case("region-trailing-newline", _doc({"spec.topology.regions": [{"name": "paris\n"}, {"name": "rennes"}]}),
     "regions[0].name", "lower-case letters, digits and '-'", True)
case("scenario-trailing-newline", _doc({"spec.workload.scenarios": [{"name": "KeystoneBasic.create_and_list_users\n"}]}),
     "scenarios[0]", "unknown scenario", True)
case("matrix-scenario-trailing-newline", _doc({"spec.matrix.scenario": ["Foo.bar\n"]}), "spec.matrix",
     "unknown scenario", True, api_says="scenario")
case("monitoring-label-trailing-newline", _doc({"spec.monitoring.labels": {"team\n": "a"}}), "spec.monitoring",
     "not a valid label key", False)
case("generate-prefix-newline", _doc({"spec.topology": {"generate": {"count": 3, "prefix": "r\n"}}}),
     "generate.prefix", "is not allowed here", True)
case("toleration-key-newline", _doc({"spec.runner.pod.tolerations": [{"key": "gpu\n", "operator": "Exists"}]}),
     "tolerations[0].key", "use a label key", True)
case("load-region-newline", _doc({"spec.workload.loadRegion": "paris\n"}), "workload.loadRegion",
     "lower-case letters, digits and '-'", True)
case("name-ten-thousand-characters", _doc({"metadata.name": "a" * 10_000}), "metadata.name", "shorten it",
     True, api_says="metadata.name")

# ---- durations and rates: bounded, so no arithmetic overflows and nothing is shaped absurdly ------------------

RTT = "spec.topology.network.default.rtt"
case("rtt-exponent", _doc({RTT: "1e29ms"}), "default.rtt", "non-negative duration with a unit", True)
case("rtt-many-digits", _doc({RTT: "100000000000ms"}), "default.rtt", "at most 6 digits", True)
case("rtt-over-10s", _doc({RTT: "11s"}), "default.rtt", "must be at most 10s", True)
case("rtt-million-hours", _doc({RTT: "999999h"}), "default.rtt", "must be at most 10s", True)
case("jitter-an-hour", _doc({"spec.topology.network.default.jitter": "1h"}), "default.jitter", "at most 10s", True)
case("matrix-rtt-20s", _doc({"spec.matrix.rtt": ["10ms", "20s"]}), "spec.matrix.rtt[1]", "at most 10s", True,
     api_says="rtt[1]")
case("override-rtt-a-day", _doc({"spec.topology.network.overrides": [{"from": "paris", "to": "rennes", "rtt": "24h"}]}),
     "overrides[0].rtt", "at most 10s", True)
RATE = "spec.topology.network.default.rate"
case("rate-zero", _doc({RATE: "0mbit"}), "default.rate", "from 1kbit to 100gbit", True)
case("rate-below-1kbit", _doc({RATE: "0.5kbit"}), "default.rate", "from 1kbit to 100gbit", True)
case("rate-a-terabit", _doc({RATE: "1tbit"}), "default.rate", "from 1kbit to 100gbit", True)
case("rate-huge", _doc({RATE: "999999gbit"}), "default.rate", "from 1kbit to 100gbit", True)
case("rate-no-unit-exponent", _doc({RATE: "1e9bit"}), "default.rate", "such as 100mbit", True)
case("loss-exponent", _doc({"spec.topology.network.default.loss": "1e2%"}), "default.loss", "from 0% to 100%", True)
for _t in ("preflight", "provisioning", "verifyingNetwork", "injecting", "loading", "collecting", "cleaningUp"):
    case(f"timeout-{_t}-zero", _doc({f"spec.timeouts.{_t}": "0s"}), f"spec.timeouts.{_t}", "from 1s to 24h", True)
case("timeout-loading-25h", _doc({"spec.timeouts.loading": "25h"}), "spec.timeouts.loading", "from 1s to 24h", True)
case("timeout-million-hours", _doc({"spec.timeouts.provisioning": "999999h"}), "timeouts.provisioning",
     "from 1s to 24h", True)
case("start-delay-two-hours", _doc({"spec.workload.startDelay": "2h"}), "workload.startDelay", "from 0s to 1h", True)
case("start-skew-zero", _doc({"spec.workload.maxStartSkew": "0s"}), "workload.maxStartSkew", "from 1s to 1h", True)
case("galera-healthy-timeout-zero", _doc({"spec.database.galera.clusterHealthyTimeout": "0s"}),
     "galera.clusterHealthyTimeout", "from 1s to 24h", True)
P = "spec.faults.partitions"
case("partition-zero-long", _doc({P: [{"regions": ["paris"], "duration": "0s"}]}), "partitions[0].duration",
     "from 1s to 24h", True)
case("partition-two-days", _doc({P: [{"regions": ["paris"], "duration": "48h"}]}), "partitions[0].duration",
     "from 1s to 24h", True)
case("partition-after-the-load", _doc({P: [{"regions": ["paris"], "start": "5h", "duration": "10s"}]}),
     "spec.faults.partitions[0].start", "raise spec.timeouts.loading", True, api_says="partitions")
case("loss-window-at-the-load-end",
     _doc({"spec.timeouts.loading": "1h",
           "spec.faults.lossWindows": [{"regions": ["paris"], "start": "60m", "duration": "10s", "loss": "5%"}]}),
     "spec.faults.lossWindows[0].start", "raise spec.timeouts.loading", True, api_says="lossWindows")
case("loss-window-zero-long", _doc({"spec.faults.lossWindows": [{"regions": ["paris"], "duration": "0s", "loss": "5%"}]}),
     "lossWindows[0].duration", "from 1s to 24h", True)
D = "spec.faults.dropouts"
case("dropout-2us-every-1us", _doc({D: [{"every": "2us", "for": "1us"}]}), "dropouts[0].every", "from 10s to 24h", True)
case("dropout-every-5s", _doc({D: [{"every": "5s", "for": "1s"}]}), "dropouts[0].every", "from 10s to 24h", True)
case("dropout-for-zero", _doc({D: [{"every": "1m", "for": "0s"}]}), "dropouts[0].for", "from 1s to 24h", True)
case("dropout-as-long-as-its-period", _doc({D: [{"every": "10s", "for": "10s"}]}), "dropouts[0].for",
     "shorter than its period", True)
case("dropout-after-the-load", _doc({D: [{"every": "4h", "for": "10s"}]}), "spec.faults.dropouts[0].every",
     "raise spec.timeouts.loading", True, api_says="dropouts")
case("dropout-cuts-too-often", _doc({"spec.timeouts.loading": "6h", D: [{"every": "10s", "for": "1s"}]}),
     "spec.faults.dropouts", "more than 2,000", True, api_says="more than 2000")
case("dropouts-ten-every-30s", _doc({D: [{"every": f"{30 + i}s", "for": "1s"} for i in range(10)]}),
     "spec.faults.dropouts", "raise every or lower", True, api_says="more than 2000")

# ---- how much one Benchmark may plan -------------------------------------------------------------------------

case("matrix-40000-trials", _doc({"spec.matrix": {"rtt": [f"{i}ms" for i in range(20)],
                                                  "loss": [f"{i}%" for i in range(20)], "repetitions": 100}}),
     "spec.matrix", "more than 1,000 per Benchmark", True, api_says="more than 1000 trials")
case("matrix-1001-trials", _doc({"spec.matrix": {"rtt": [f"{i}ms" for i in range(7)],
                                                 "loss": [f"{i}%" for i in range(11)], "repetitions": 13}}),
     "spec.matrix", "1,001 trials", True, api_says="more than 1000 trials")
case("matrix-every-axis-full", _doc({"spec.matrix": {
    "backend": ["mariadb", "galera", "cockroachdb"], "rtt": [f"{i}ms" for i in range(20)],
    "intraGroupRtt": [f"{i}ms" for i in range(20)], "interGroupRtt": [f"{i}ms" for i in range(20)],
    "loss": [f"{i}%" for i in range(20)], "load": ["light", "high"], "scenario": ["get_entities"] * 50,
    "regions": list(range(1, 21)), "repetitions": 100}}),
     "spec.matrix", "more than 1,000 per Benchmark", True, api_says="more than 1000 trials")
case("region-trials-generated", _doc({"spec.topology": {"generate": {"count": 1000}}, "spec.matrix.repetitions": 2}),
     "spec.matrix", "regions in all", True, api_says="regions in all")
case("region-trials-swept", _doc({"spec.topology": {"generate": {"count": 3}}, "spec.matrix.regions": [1000, 600]}),
     "spec.matrix", "regions in all", True, api_says="regions in all")
case("links-with-fault-windows",
     _doc({"spec.topology": {"generate": {"count": 800}},
           P: [{"regions": ["r1"], "duration": "10s"}], "spec.faults.lossWindows": [
               {"regions": ["r2"], "duration": "10s", "loss": "1%"}]}),
     "spec.matrix", "directed links in all", True, api_says="directed links in all")
case("links-many-windows",
     _doc({"spec.topology": {"generate": {"count": 120}},
           P: [{"regions": [f"r{i + 1}"], "start": f"{i}s", "duration": "10s"} for i in range(50)],
           "spec.faults.lossWindows": [{"regions": ["r1"], "start": f"{i}s", "duration": "5s", "loss": "1%"}
                                       for i in range(50)]}),
     "spec.matrix", "directed links in all", True, api_says="directed links in all")
_REF = {"spec.topology": None, "spec.topologyRef": "big"}
case("region-trials-through-a-topology-ref",
     lambda: [{"apiVersion": API, "kind": "Topology", "metadata": {"name": "big", "namespace": "lab"},
               "spec": {"generate": {"count": 1000}}}, at({**_REF, "spec.matrix.repetitions": 2})],
     "spec.matrix", "regions in all", False)
case("links-through-a-topology-ref",
     lambda: [{"apiVersion": API, "kind": "Topology", "metadata": {"name": "big", "namespace": "lab"},
               "spec": {"generate": {"count": 900}}},
              at({**_REF, P: [{"regions": ["r1"], "duration": "10s"}]})],
     "spec.matrix", "directed links in all", False)
case("many-benchmarks-in-one-file",
     lambda: [at({"metadata.name": f"hx{i}", "spec.topology": {"generate": {"count": 100}}}) for i in range(20)],
     "in one run", "plan them in separate runs", False)
case("partitions-51", _doc({P: [{"regions": ["paris"], "duration": "1s"} for _ in range(51)]}), "spec.faults.partitions",
     "at most 50", True, api_says="partitions")
case("overrides-2001", _doc({"spec.topology.network.overrides": [{"from": "paris", "to": "rennes"} for _ in range(2001)]}),
     "network.overrides", "at most 2000", True, api_says="overrides")
case("regions-201", _doc({"spec.topology.regions": [{"name": f"r{i}"} for i in range(201)]}),
     "spec.topology.regions", "at most 200", True, api_says="regions")
case("generate-1001", _doc({"spec.topology": {"generate": {"count": 1001}}}), "generate.count", "1000 or less", True)
case("scenarios-51", _doc({"spec.workload.scenarios": [{"name": "get_entities"} for _ in range(51)]}), "workload.scenarios",
     "at most 50", True)

# ---- free-form values: bounded in keys, size and depth ---------------------------------------------------------

V = "spec.openstack.keystone.values"
case("chart-values-100-kib", _doc({V: {"a": "x" * 100_000}}), V, "more than 64 KiB", False)
case("chart-values-101-keys", _doc({V: {f"k{i}": i for i in range(101)}}), V, "more than 100", True,
     api_says="values")
_deep: Any = "x"
for _ in range(40):
    _deep = {"a": _deep}
case("chart-values-40-deep", _doc({V: _deep}), V, "deeper than 32 levels", False)
case("scenario-args-20-kib", _doc({"spec.workload.scenarios": [{"name": "get_entities", "args": {"a": "x" * 20_000}}]}),
     "scenarios[0].args", "more than 16 KiB", False)
case("scenario-args-51-keys",
     _doc({"spec.workload.scenarios": [{"name": "get_entities", "args": {f"k{i}": i for i in range(51)}}]}),
     "scenarios[0].args", "more than 50", True, api_says="args")
case("affinity-4-keys", _doc({"spec.runner.pod.affinity": {"a": {}, "b": {}, "c": {}, "d": {}}}), "pod.affinity",
     "more than 3", True, api_says="affinity")
case("affinity-20-kib", _doc({"spec.runner.pod.affinity": {"nodeAffinity": {"x": "y" * 20_000}}}), "pod.affinity",
     "more than 16 KiB", False)
case("node-selector-21-labels", _doc({"spec.runner.pod.nodeSelector": {f"k{i}": "v" for i in range(21)}}),
     "pod.nodeSelector", "more than 20", True, api_says="nodeSelector")
case("node-selector-bad-value", _doc({"spec.runner.pod.nodeSelector": {"zone": "a b"}}), "pod.nodeSelector",
     "not a label value", True, api_says="nodeSelector")
case("node-selector-bad-key", _doc({"spec.runner.pod.nodeSelector": {"bad key": "a"}}), "pod.nodeSelector",
     "not a label key", False)
case("region-node-selector-newline-value",
     _doc({"spec.topology.regions": [{"name": "paris", "nodeSelector": {"zone": "a\nb"}}, {"name": "rennes"}]}),
     "regions[0].nodeSelector", "not a label value", True, api_says="nodeSelector")
case("resources-11", _doc({"spec.runner.pod.resources.limits": {f"example.com/r{i}": "1" for i in range(11)}}),
     "resources.limits", "at most 10", True, api_says="limits")
case("resources-bad-name", _doc({"spec.runner.pod.resources.limits": {"Bad Name": "1"}}), "resources.limits",
     "not a resource name", False)
case("toleration-seconds-negative",
     _doc({"spec.runner.pod.tolerations": [{"key": "gpu", "operator": "Exists", "tolerationSeconds": -1}]}),
     "tolerationSeconds", "use 0 or more", True)
case("toleration-value-space",
     _doc({"spec.runner.pod.tolerations": [{"key": "gpu", "operator": "Equal", "value": "a b"}]}),
     "tolerations[0].value", "use a label value", True)

# ---- Galera provider options: written into my.cnf and SET GLOBAL wsrep_provider_options='k=v' ------------------

G = "spec.database.galera.providerOptions"
_GALERA = {"spec.database.backend": "galera"}
case("galera-value-newline", _doc({**_GALERA, G: {"evs.suspect_timeout": "PT5S\nwsrep_on=OFF"}}),
     "providerOptions", "no space, quote, '/', ';', '=' or newline", True)
case("galera-value-semicolon", _doc({**_GALERA, G: {"evs.suspect_timeout": "PT5S; gmcast.listen_addr=tcp://0.0.0.0:1"}}),
     "providerOptions", "no space, quote", True)
case("galera-value-equals", _doc({**_GALERA, G: {"pc.ignore_sb": "true=1"}}), "providerOptions", "'='", True)
case("galera-value-sql-quote", _doc({**_GALERA, G: {"pc.weight": "1'; DROP DATABASE keystone; --"}}),
     "providerOptions", "quote", True)
case("galera-value-path", _doc({**_GALERA, G: {"gcache.name": "/etc/passwd"}}), "providerOptions", "'/'", True)
case("galera-key-newline", _doc({**_GALERA, G: {"evs.x\nwsrep_on": "OFF"}}), "providerOptions",
     "lower-case letters, digits, '_' and '.'", False)
case("galera-key-equals", _doc({**_GALERA, G: {"a=b": "1"}}), "providerOptions", "lower-case letters", False)
case("galera-51-options", _doc({**_GALERA, G: {f"o.k{i}": "1" for i in range(51)}}), "providerOptions", "at most 50",
     True)

# ---- URLs: no credentials, no metadata service, only the schemes meant ---------------------------------------

S3 = "spec.results.s3"


def _s3(endpoint: str, **more: Any) -> Callable[[], list[Doc]]:
    return _doc({S3: {"endpoint": endpoint, "bucket": "results", **more}})


case("s3-user-and-password", _s3("http://AKIA123:secret@s3.example:7070"), "s3.endpoint", "no user name or password",
     True)
case("s3-user-only", _s3("https://admin@s3.example"), "s3.endpoint", "no user name or password", True)
case("s3-metadata-ip", _s3("http://169.254.169.254/latest/meta-data"), "s3.endpoint", "metadata host", True)
case("s3-metadata-name", _s3("http://metadata.google.internal/computeMetadata/v1"), "s3.endpoint", "metadata host",
     True)
case("s3-link-local-other", _s3("http://169.254.1.1:9000"), "s3.endpoint", "link-local", True)
case("s3-decimal-ip", _s3("http://2852039166/"), "s3.endpoint", "lower-case host name or an IP address", True)
case("s3-hex-ip", _s3("http://0xa9fea9fe/"), "s3.endpoint", "lower-case host name or an IP address", True)
case("s3-octal-ip", _s3("http://0251.0376.0251.0376/"), "s3.endpoint", "lower-case host name or an IP address", True)
case("s3-ipv6-link-local", _s3("http://[fe80::1]:9000"), "s3.endpoint", "metadata host", True)
case("s3-ipv4-mapped", _s3("http://[::ffff:a9fe:a9fe]/"), "s3.endpoint", "metadata host", True)
case("s3-aws-ipv6-metadata", _s3("http://[fd00:ec2::254]/"), "s3.endpoint", "metadata host", True)
case("s3-alibaba-metadata", _s3("http://100.100.100.200/latest"), "s3.endpoint", "metadata host", True)
case("s3-credentials-in-query", _s3("https://s3.example/?X-Amz-Credential=AKIA123"), "s3.endpoint",
     "no query or fragment", True)
case("s3-file-scheme", _s3("file:///etc/passwd"), "s3.endpoint", "starting with http:// or https://", True)
case("s3-newline", _s3("http://s3.example:7070\nX-Injected: 1"), "s3.endpoint", "no user name or password", True)
case("s3-prefix-traversal", _s3("http://s3.example:7070", prefix="../../etc"), "s3.prefix", "none starting with '.'",
     True)
case("s3-prefix-newline", _s3("http://s3.example:7070", prefix="runs\nx"), "s3.prefix", "separated by '/'", True)
case("s3-secret-key-slash", _s3("http://s3.example:7070", secretRef={"name": "k", "accessKeyKey": "../key"}),
     "secretRef.accessKeyKey", "key of a Secret or ConfigMap", True)
case("s3-region-newline", _s3("http://s3.example:7070", region="us\neast"), "s3.region", "such as us-east-1", True)

K = "spec.openstack.keystone"
case("chart-helm-option", _doc({f"{K}.chart": "--post-renderer=/bin/sh"}), "keystone.chart", "never starting with '-'",
     True)
case("chart-short-option", _doc({f"{K}.chart": "-h"}), "keystone.chart", "never starting with '-'", True)
case("chart-relative-traversal", _doc({f"{K}.chart": "../../../etc/passwd"}), "keystone.chart", "no '..'", True)
case("chart-absolute-traversal", _doc({f"{K}.chart": "/charts/../../etc", f"{K}.chartRepo": ""}), "keystone.chart",
     "no '..'", True)
case("chart-repo-plain-http", _doc({f"{K}.chartRepo": "http://charts.example/x"}), "keystone.chartRepo",
     "starting with https://", True)
case("chart-repo-credentials", _doc({f"{K}.chartRepo": "https://user:token@charts.example"}), "keystone.chartRepo",
     "no user name or password", True)
case("chart-repo-metadata", _doc({f"{K}.chartRepo": "https://169.254.169.254/"}), "keystone.chartRepo",
     "metadata host", True)
case("chart-repo-file", _doc({f"{K}.chartRepo": "file:///etc"}), "keystone.chartRepo", "starting with https://", True)
case("chart-repo-option", _doc({f"{K}.chartRepo": "--insecure-skip-tls-verify"}), "keystone.chartRepo",
     "starting with https://", True)
case("chart-version-option", _doc({f"{K}.chartVersion": "--devel"}), "keystone.chartVersion", "never starting with '-'",
     True)
case("chart-version-range", _doc({f"{K}.chartVersion": ">=1.0"}), "keystone.chartVersion", "no range", True)
case("chart-version-newline", _doc({f"{K}.chartVersion": "1.0\n--devel"}), "keystone.chartVersion", "no range", True)
case("chart-oci-with-repo", _doc({f"{K}.chart": "oci://ghcr.io/org/keystone"}), "keystone.chartRepo",
     'set chartRepo: ""', True, api_says="chartRepo")
case("chart-name-without-repo", _doc({f"{K}.chartRepo": ""}), "keystone.chart", "needs chartRepo", True,
     api_says="chart")
case("chart-oci-credentials", _doc({f"{K}.chart": "oci://user:pw@ghcr.io/org/keystone", f"{K}.chartRepo": ""}),
     "keystone.chart", "never starting with '-'", True)
case("chart-oci-metadata", _doc({f"{K}.chart": "oci://169.254.169.254/x/keystone", f"{K}.chartRepo": ""}),
     "keystone.chart", "metadata host", True)

# ---- the control plane beyond Keystone (issue 45): bounded counts, known shapes and regions -------------------

OS = "spec.openstack"
_NOVA = {"enabled": True}
case("nova-a-billion-computes", _doc({f"{OS}.nova": {**_NOVA, "computes": 1_000_000_000}}), "nova.computes",
     "500 or less", True)
case("nova-computes-past-the-trial", _doc({"spec.topology": {"generate": {"count": 5}},
                                           f"{OS}.nova": {**_NOVA, "computes": 500}}),
     "spec.openstack.nova.computes", "more than 2,000 in a trial", False)
case("nova-1001-compute-regions", _doc({f"{OS}.nova": {**_NOVA, "computeRegions": ["paris"] * 1001}}),
     "nova.computeRegions", "at most 1000", True, api_says="computeRegions")
case("nova-unknown-compute-region", _doc({f"{OS}.nova": {**_NOVA, "computeRegions": ["tokyo"]}}),
     "spec.openstack.nova.computeRegions[0]", "unknown region 'tokyo'", False)
case("nova-replicas-a-million", _doc({f"{OS}.nova": {**_NOVA, "conductor": {"replicas": 1_000_000}}}),
     "conductor.replicas", "10 or less", True)
case("openstack-bad-shape", _doc({f"{OS}.shape": "mesh"}), "spec.openstack.shape", "'regions' or 'stretched'", True)
case("openstack-unknown-control-region", _doc({f"{OS}.shape": "stretched", f"{OS}.controlRegion": "tokyo",
                                               f"{OS}.nova": _NOVA}),
     "spec.openstack.controlRegion", "unknown region 'tokyo'", False)
case("openstack-control-region-newline", _doc({f"{OS}.shape": "stretched", f"{OS}.controlRegion": "paris\n"}),
     "openstack.controlRegion", "lower-case letters, digits and '-'", True)
case("openstack-control-region-without-stretched", _doc({f"{OS}.controlRegion": "paris"}),
     "spec.openstack.controlRegion", "only applies to shape stretched", True, api_says="controlRegion")
case("nova-without-placement", _doc({f"{OS}.nova": _NOVA, f"{OS}.placement": {"enabled": False}}),
     "spec.openstack.placement.enabled", "Nova needs Placement", True, api_says="Nova needs Placement")
case("messaging-file-descriptors-huge", _doc({f"{OS}.messaging": {"fileDescriptors": 10**12}}),
     "messaging.fileDescriptors", "1048576 or less", True)
case("messaging-unknown-broker", _doc({f"{OS}.messaging": {"backend": "qpid; rm -rf /"}}), "messaging.backend",
     "'rabbitmq'", True)
case("nova-chart-helm-option", _doc({f"{OS}.nova": {**_NOVA, "chart": "--post-renderer=/bin/sh"}}), "nova.chart",
     "never starting with '-'", True)
case("neutron-chart-repo-metadata", _doc({f"{OS}.neutron": {"chartRepo": "https://169.254.169.254/"}}),
     "neutron.chartRepo", "metadata host", True)
case("glance-values-101-keys", _doc({f"{OS}.glance": {"values": {f"k{i}": i for i in range(101)}}}), "glance.values",
     "more than 100", True, api_says="values")
case("nova-scenario-without-nova", _doc({"spec.workload.scenarios": [{"name": "NovaServers.boot_and_delete_server"}]}),
     "spec.workload.scenarios[0].name", "set spec.openstack.nova.enabled: true", True,
     api_says="needs Nova: set spec.openstack.nova.enabled: true")

# ---- images and tags: references, not command lines ---------------------------------------------------------

case("image-newline", _doc({"spec.runner.image": "ghcr.io/org/runner:1\n--privileged"}), "runner.image",
     "image reference", True)
case("image-option", _doc({"spec.database.image": "--privileged"}), "database.image", "image reference", True)
case("image-credentials", _doc({f"{K}.images.keystoneApi": "user:pw@registry.example/keystone:1"}),
     "images.keystoneApi", "image reference", True)
case("image-too-long", _doc({f"{K}.images.memcached": "registry.example/" + "a" * 600}), "images.memcached",
     "at most 512 characters", True)
case("image-shell", _doc({"spec.runner.image": "ghcr.io/org/runner:1;rm -rf /"}), "runner.image", "image reference",
     True)
case("cockroach-version-option", _doc({"spec.database.cockroachdb.version": "v1 --insecure"}), "cockroachdb.version",
     "must be an image tag", True)
case("task-configmap-key-traversal",
     _doc({"spec.workload.scenarios": None, "spec.workload.taskConfigMap": {"name": "task", "key": "../../x"}}),
     "taskConfigMap.key", "key of a Secret or ConfigMap", True)
case("local-dir-newline", _doc({"spec.results.localDir": "/tmp/x\n/etc"}), "results.localDir",
     "without control characters", True)


def by_id(id_: str) -> Hostile:
    return next(c for c in CASES if c.id == id_)
