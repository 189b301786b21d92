"""Write the rally-shapes corpus by editing the real Rally 5.1.1 report in ../bundles/runner-real.

Run from the repository root: ``python tests/data/rally-shapes/derive.py``. Deterministic:
every shape is the real report (its structure, keys and timings) cut down or edited as the
README says; nothing here is invented beyond those edits.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = json.loads((HERE.parent / "bundles" / "runner-real" / "rally.json").read_text())
AUTH, UPDATE = "KeystoneBasic.authenticate_user_and_validate_token", "KeystoneBasic.create_user_update_password"
CONNECT_ERR = ["ConnectFailure", "Unable to establish connection to http://keystone.r1.svc:5000/v3/auth/tokens",
               "Traceback (most recent call last):\n  ...\nkeystoneauth1.exceptions.connection.ConnectFailure"]


def _workload(scenario: str, n: int, *, scale: float = 1.0) -> dict:
    """The real workload of ``scenario`` with its first ``n`` iterations, durations × scale."""
    for st in REAL["tasks"][0]["subtasks"]:
        w = st["workloads"][0]
        if scenario in w["scenario"]:
            w = copy.deepcopy(w)
            del w["statistics"], w["contexts_results"]  # bulky, not read
            w["data"] = [_scaled(it, scale) for it in w["data"][:n]]
            w["total_iteration_count"] = len(w["data"])
            w["failed_iteration_count"] = sum(1 for it in w["data"] if it["error"])
            return w
    raise KeyError(scenario)


def _scaled(it: dict, scale: float) -> dict:
    """An iteration with its actions' offsets and durations, and its own, multiplied by ``scale``."""
    it = copy.deepcopy(it)
    t0 = it["timestamp"]
    it["duration"] *= scale
    for a in it["atomic_actions"]:
        st = t0 + (a["started_at"] - t0) * scale
        a["finished_at"] = st + (a["finished_at"] - a["started_at"]) * scale
        a["started_at"] = st
    return it


def _report(*subtasks: list[dict], status: str = "finished") -> dict:
    task = {k: v for k, v in REAL["tasks"][0].items() if k != "subtasks"}
    task["status"] = status
    task["subtasks"] = []
    for wls in subtasks:
        title = next(iter(wls[0]["scenario"])) if wls else ""
        task["subtasks"].append({"uuid": f"{task['uuid'][:-4]}{len(task['subtasks']):04d}", "title": title,
                                 "description": "", "status": status, "workloads": wls, "sla": {}})
        for i, w in enumerate(wls):
            w["position"] = i
    return {"info": dict(REAL["info"]), "tasks": [task]}


def _failed(w: dict) -> dict:
    """Every iteration failed at its first action (Rally 5: failed action kept, the rest absent)."""
    for it in w["data"]:
        it["error"] = list(CONNECT_ERR)
        first = it["atomic_actions"][0]
        first["failed"] = True
        it["atomic_actions"] = [first]
        it["duration"] = first["finished_at"] - it["timestamp"]
    w["failed_iteration_count"] = len(w["data"])
    w["pass_sla"] = False
    return w


def _nested(w: dict) -> dict:
    """create_user with a child action (as rally-openstack's composed actions nest)."""
    for it in w["data"]:
        a = it["atomic_actions"][0]
        mid = (a["started_at"] + a["finished_at"]) / 2
        a["children"] = [{"name": "keystone_v3.list_roles", "children": [], "started_at": a["started_at"],
                          "finished_at": mid}]
    return w


def _old_results(rep: dict, dict_actions: bool) -> list:
    """``rally task results`` (Rally < 1.0): one entry per workload; actions {name: s} before 0.10."""
    out = []
    for st in rep["tasks"][0]["subtasks"]:
        for pos, w in enumerate(st["workloads"]):
            name = next(iter(w["scenario"]))
            runner_type, runner = next(iter(w["runner"].items()))
            result = []
            for it in w["data"]:
                it = copy.deepcopy(it)
                if dict_actions:
                    it["atomic_actions"] = {a["name"]: (None if a.get("failed") else a["finished_at"] - a["started_at"])
                                            for a in it["atomic_actions"]}
                result.append(it)
            out.append({"key": {"name": name, "pos": pos, "kw": {"args": {}, "runner": {"type": runner_type, **runner},
                                                                  "context": {}, "sla": {}}},
                        "sla": [], "hooks": [], "load_duration": w["load_duration"],
                        "full_duration": w["full_duration"], "created_at": w["created_at"], "result": result})
    return out


def _write(rel: str, data) -> None:
    p = HERE / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=1) + "\n")


def main() -> None:
    a, u = (lambda **k: _workload(AUTH, 4, **k)), (lambda **k: _workload(UPDATE, 3, **k))
    # several subtasks; one with two workloads of the same scenario (different runner), one nested action
    two = u(scale=1.1)
    two["runner"] = {"constant": {"times": 3, "concurrency": 1}}
    _write("subtasks/keystone-mariadb-3-0ms.json", _report([a()], [_nested(u())], [two, a(scale=0.9)]))
    # every iteration failed
    _write("failed-only/keystone-galera-3-50ms.json", _report([_failed(a(scale=1.6))]))
    # a workload with no data (task aborted after the first subtask)
    empty = u()
    empty["data"], empty["total_iteration_count"], empty["failed_iteration_count"] = [], 0, 0
    _write("no-data/keystone-mariadb-3-50ms.json", _report([a(scale=1.6)], [empty], status="aborted"))
    # names without parameters
    _write("no-params/keystone-report.json", _report([a()]))
    _write("no-params/output.json", _report([u()]))
    # one iteration, one action: a single point
    one = _workload(AUTH, 1)
    one["data"][0]["atomic_actions"] = one["data"][0]["atomic_actions"][:1]
    _write("single/keystone-mariadb-1-0ms.json", _report([one]))
    # older `rally task results` lists: dict actions (< 0.10) and list actions (0.10 – 0.x)
    _write("old-results/keystone-galera-3-0ms-results.json", _old_results(_report([a()], [u()]), True))
    mixed_old = _report([a(scale=1.6)])
    _failed(mixed_old["tasks"][0]["subtasks"][0]["workloads"][0])["data"][1:] = a(scale=1.6)["data"][1:]
    _write("old-results/keystone-mariadb-3-50ms-results.json", _old_results(mixed_old, False))
    # the directory: MariaDB and Galera at 0 and 50 ms, plus files with other parameter sets
    for be in ("mariadb", "galera"):
        for ms, k in ((0, 1.0), (50, 1.6 if be == "mariadb" else 1.9)):
            _write(f"mixed/keystone-{be}-{ms}ms.json", _report([a(scale=k)]))
    _write("mixed/rally-nobackend-run.json", _report([_nested(u())]))  # no parameters, its own scenario
    _write("mixed/regions-only-9.json", _report([a()]))  # regions=9 only
    _write("mixed/crdb/run-a.json", _report([a()]))  # parameters from the sidecar beside it
    (HERE / "mixed/crdb/params.yaml").write_text("run-a.json:\n  backend: cockroachdb\n  regions: 3\n  rtt_ms: 0\n")
    _write("mixed/galera-3-300ms-old.json", _old_results(_report([_failed(a(scale=3.0))]), True))
    # unusable input, one directory each
    _write("unusable/not-rally/env.json", {"name": "wanwide", "creds": {}})
    _write("unusable/format-2/keystone-mariadb-0ms.json", {**_report([a()]), "info": {**REAL["info"], "format_version": "2.0"}})
    _write("unusable/no-iterations/keystone-mariadb-0ms.json", _report([empty]))
    (HERE / "unusable/truncated").mkdir(parents=True, exist_ok=True)
    (HERE / "unusable/truncated/keystone-mariadb-0ms.json").write_text(json.dumps(_report([a()]), indent=1)[:1500])
    (HERE / "unusable/html-only").mkdir(parents=True, exist_ok=True)
    (HERE / "unusable/html-only/report.html").write_text("<html><body>rally task report --html</body></html>\n")


if __name__ == "__main__":
    main()
