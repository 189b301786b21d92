"""What a rerun keeps of an interrupted run's bundles (pure: no root needed)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.lab.results import bundles_complete, drop_interrupted

DOCS = [{"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
         "spec": {"generate": {"count": 2}}},
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "b"},
         "spec": {"topologyRef": "t", "workload": {"load": "high", "scenarios": [
             {"name": "authenticate_user_and_validate_token"}]}}}]


def _trial():
    docs = load_documents([yaml.safe_dump_all(DOCS)])
    (b,) = docs.benchmarks
    (p,) = plan(b, docs.topology_for(b))
    return p


def _bundle(out: Path, region: str, run_id: str, result: str | None) -> Path:
    d = out / "bundles" / "b" / "t000" / region / f"attempt-1-{run_id}"
    (d / "logs").mkdir(parents=True)
    if result:
        (d / "manifest.json").write_text(json.dumps({"status": {"result": result}}))
    (out / "bundles" / ".work" / run_id).mkdir(parents=True)
    return d


def test_incomplete_trial_loses_every_earlier_bundle(tmp_path: Path) -> None:
    """r1 finished, r2 was killed mid-write: both go (a re-run of r1 alone would not be simultaneous)."""
    p = _trial()
    assert p.load_regions == ["r1", "r2"]
    done = _bundle(tmp_path, "r1", "20260101t000000z-aaaaaaaaaaaa", "succeeded")
    partial = _bundle(tmp_path, "r2", "20260101t000000z-bbbbbbbbbbbb", None)
    assert bundles_complete(tmp_path, p) is None
    removed = drop_interrupted(tmp_path, p, keep=[])
    assert done in removed and partial in removed
    assert not done.exists() and not partial.exists()
    assert list((tmp_path / "bundles" / ".work").iterdir()) == []


def test_complete_trial_keeps_its_bundles_but_not_rallys_work(tmp_path: Path) -> None:
    p = _trial()
    a = _bundle(tmp_path, "r1", "20260101t000000z-aaaaaaaaaaaa", "succeeded")
    b = _bundle(tmp_path, "r2", "20260101t000000z-bbbbbbbbbbbb", "succeeded")
    complete = bundles_complete(tmp_path, p)
    assert complete == [a, b]
    drop_interrupted(tmp_path, p, keep=complete)
    assert a.is_dir() and b.is_dir()
    assert bundles_complete(tmp_path, p) == [a, b]
    assert list((tmp_path / "bundles" / ".work").iterdir()) == []


def test_a_campaign_in_sittings_stops_starting_deployments_after_its_time(tmp_path: Path, monkeypatch) -> None:
    """``--stop-after``: the groups after the deadline are left pending (nothing of them started), the
    next run with the same output skips what is complete and runs the rest; trials.json keeps the
    earlier sitting's record of each trial it skips — by Benchmark, as two Benchmarks have the same trial ids."""
    from wanwide.providers.lab import run as lab_run
    from wanwide.providers.lab.run import TrialOutcome

    spec = {**DOCS[1]["spec"], "matrix": {"rtt": ["0ms", "100ms"], "repetitions": 3, "seed": 5}}
    docs = load_documents([yaml.safe_dump_all([DOCS[0], {**DOCS[1], "spec": spec},
                                               {**DOCS[1], "metadata": {"name": "b2"}, "spec": spec}])])
    trials = [p for b in docs.benchmarks for p in plan(b, docs.topology_for(b))]
    assert {p.id for p in trials if p.benchmark == "b"} == {p.id for p in trials if p.benchmark == "b2"}
    clock = [0.0]
    sitting = [1]
    started: list[list[str]] = []
    done: set[tuple[str, str]] = set()

    class Time:
        @staticmethod
        def monotonic() -> float:
            return clock[0]

    def group(runner, g, position, out, stop=None):
        assert stop is None  # without --stop-between-trials a started deployment runs all its trials
        started.append([p.id for p in g])
        if any((p.benchmark, p.id) not in done for p in g):
            clock[0] += 600.0  # a deployment takes 10 min; a group complete from an earlier sitting no time
        for p in g:
            if (p.benchmark, p.id) in done:
                out.append(TrialOutcome(p.benchmark, p.id, "skipped"))
            else:
                done.add((p.benchmark, p.id))
                out.append(TrialOutcome(p.benchmark, p.id, "succeeded",
                                        network={"pairs": [{"sitting": sitting[0], "benchmark": p.benchmark}]}))

    monkeypatch.setattr(lab_run, "time", Time)
    monkeypatch.setattr(lab_run, "_group", group)
    monkeypatch.setattr(lab_run.paths, "missing", lambda: [])
    monkeypatch.setattr(lab_run, "bundles_complete",
                        lambda out, p: [out / p.benchmark / p.id] if (p.benchmark, p.id) in done else None)
    out = tmp_path / "out"
    assert lab_run.run(trials, str(out), report=False, stop_after_s=900.0) == 0
    assert len(started) == 2  # started at 0 s and 600 s; the next group would start at 1,200 s
    first = json.loads((out / "trials.json").read_text())
    assert [t["result"] for t in first] == ["succeeded"] * 4 + ["pending"] * 8
    assert "--stop-after" in first[-1]["reason"]
    for n in (2, 3):
        clock[0], sitting[0] = 0.0, n
        assert lab_run.run(trials, str(out), report=False, stop_after_s=900.0) == 0
    record = json.loads((out / "trials.json").read_text())
    assert {t["result"] for t in record} == {"succeeded"}  # the skipped keep their earlier record
    assert sorted((t["benchmark"], t["trial"]) for t in record) == sorted((p.benchmark, p.id) for p in trials)
    assert all(t["network"]["pairs"][0]["benchmark"] == t["benchmark"] for t in record)  # not another's t000
    assert sorted(t["network"]["pairs"][0]["sitting"] for t in record) == [1] * 4 + [2] * 4 + [3] * 4
    assert len(done) == len(trials) == 12
    # a run interrupted before it reaches them keeps the records of the complete trials, too
    def interrupted(runner, g, position, out, stop=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(lab_run, "_group", interrupted)
    assert lab_run.run(trials, str(out), report=False) == 130
    assert json.loads((out / "trials.json").read_text()) == record


def test_stop_between_trials_tears_a_shared_deployment_down_and_the_rest_deploy_anew(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """``--stop-between-trials``: the trials of one shared deployment after the deadline are left pending and
    the deployment goes (not kept for a next run); the same command later runs them on a deployment of their
    own. Without it the deployment's trials all run, however late (the sitting overruns by the deployment)."""
    from wanwide.providers.lab import run as lab_run

    spec = {**DOCS[1]["spec"], "matrix": {"rtt": ["0ms", "100ms", "300ms"], "seed": 5}}
    docs = load_documents([yaml.safe_dump_all([DOCS[0], {**DOCS[1], "spec": spec}])])
    (b,) = docs.benchmarks
    trials = plan(b, docs.topology_for(b))
    clock = [0.0]
    done: set[str] = set()
    deps: list = []
    ran: list[tuple[str, int, bool]] = []  # (trial, its deployment's number, the deployment it was given)

    class Time:
        @staticmethod
        def monotonic() -> float:
            return clock[0]

    class Dep:
        def __init__(self) -> None:
            self.id, self.trials, self.closed = f"d{len(deps)}", [], 0
            deps.append(self)

        def close(self) -> None:
            self.closed += 1

    class Trial:  # the lifecycle of one trial: 10 min, on the deployment it is given or a new one
        def __init__(self, runner, p, say, events_dir, dep, shared, keep) -> None:
            self.p, self.dep, self.given = p, dep, dep is not None
            self.runners: dict = {}
            self.log: list = []
            self.rows: list = []

        def run(self) -> dict:
            self.dep = self.dep or Dep()
            clock[0] += 600.0
            done.add(self.p.id)
            ran.append((self.p.id, deps.index(self.dep), self.given))
            return {"phase": "Succeeded"}

    monkeypatch.setattr(lab_run, "time", Time)
    monkeypatch.setattr(lab_run, "LabTrial", Trial)
    monkeypatch.setattr(lab_run.paths, "missing", lambda: [])
    monkeypatch.setattr(lab_run, "bundles_complete", lambda out, p: [out / p.id] if p.id in done else None)
    out = tmp_path / "out"
    assert lab_run.run(trials, str(out), report=False, stop_after_s=900.0, between_trials=True) == 0
    first = json.loads((out / "trials.json").read_text())
    assert [t["result"] for t in first] == ["succeeded", "succeeded", "pending"]  # the third would start at 1,200 s
    assert "--stop-between-trials" in first[2]["reason"]
    assert [(n, given) for _, n, given in ran] == [(0, False), (0, True)]  # two trials on one deployment
    assert deps[0].closed == 1 and deps[0].trials == [t["trial"] for t in first[:2]]
    (cleanup,) = [ln for ln in (out / "lab.log").read_text().splitlines() if "CleaningUp: deployment d0" in ln]
    assert f" {first[1]['trial']} (" in cleanup  # said of the trial that used it last, not of the one left
    clock[0] = 0.0
    assert lab_run.run(trials, str(out), report=False, stop_after_s=900.0, between_trials=True) == 0
    assert ran[2] == (first[2]["trial"], 1, False)  # anew, on a deployment of its own
    assert deps[1].closed == 1
    assert {t["result"] for t in json.loads((out / "trials.json").read_text())} == {"succeeded"}
    # without the flag the deadline only holds back deployments: all three run on the one started in time
    done.clear(), ran.clear(), deps.clear()
    clock[0] = 0.0
    assert lab_run.run(trials, str(tmp_path / "out2"), report=False, stop_after_s=900.0) == 0
    assert [n for _, n, _ in ran] == [0, 0, 0] and len(deps) == 1 and deps[0].closed == 1


def _campaign() -> list:
    spec = {**DOCS[1]["spec"], "matrix": {"rtt": ["0ms", "100ms"], "repetitions": 2, "seed": 5}}
    docs = load_documents([yaml.safe_dump_all([DOCS[0], {**DOCS[1], "spec": spec}])])
    (b,) = docs.benchmarks
    return plan(b, docs.topology_for(b))


def _exported(path: Path, runs: list[tuple]) -> Path:
    """A data set as `wanwide results export` writes it, holding these (trial, region, result, parameters) runs."""
    import pandas as pd

    from wanwide.pipeline.results import dataset

    manifests = [{"benchmark": p.benchmark, "region": r, "role": "load", "status": {"result": result},
                  "trial": {"id": p.id, "parameters": params or dict(p.parameters), "seed": p.seed}}
                 for p, r, result, params in runs]
    dataset.write(path, pd.DataFrame({"action": pd.Series([], dtype=str)}), manifests, pd.DataFrame(),
                  ["bundles"], [], [])
    return path


def _fake_trials(monkeypatch) -> list[str]:
    """Every trial the lab would deploy and load, recorded instead (and succeeding)."""
    from wanwide.providers.lab import run as lab_run

    ran: list[str] = []

    class Trial:
        def __init__(self, runner, p, say, **kw):
            ran.append(p.id)
            self.dep, self.log, self.runners, self.status = None, [], {}, {}

        def run(self) -> dict:
            return {"phase": "Succeeded"}

    monkeypatch.setattr(lab_run, "LabTrial", Trial)
    monkeypatch.setattr(lab_run.paths, "missing", lambda: [])
    return ran


def test_a_campaign_resumes_from_its_exported_data_set(tmp_path: Path, monkeypatch) -> None:
    """``--done DATASET``: the bundles are gone (another machine), the export is not: the trials it holds
    with every load region succeeded are skipped; one with a region failed runs again, as do the rest."""
    from wanwide.providers.lab import run as lab_run

    trials = _campaign()
    assert len(trials) == 4 and all(p.load_regions == ["r1", "r2"] for p in trials)
    a, b, c, _ = trials
    ds = _exported(tmp_path / "ds", [(a, "r1", "succeeded", None), (a, "r2", "succeeded", None),
                                     (b, "r1", "failed", None), (b, "r1", "succeeded", None),
                                     (b, "r2", "succeeded", None),
                                     (c, "r1", "succeeded", None), (c, "r2", "failed", None)])
    ran = _fake_trials(monkeypatch)
    out = tmp_path / "out"
    assert lab_run.run(trials, str(out), report=False, done=[str(ds)]) == 0
    assert sorted(ran) == sorted(p.id for p in trials[2:])
    record = {t["trial"]: t["result"] for t in json.loads((out / "trials.json").read_text())}
    assert record == {a.id: "skipped", b.id: "skipped", c.id: "succeeded", trials[3].id: "succeeded"}
    assert "done in a --done data set" in (out / "lab.log").read_text()


def test_a_data_set_of_another_plan_stops_the_run_before_it_starts(tmp_path: Path, monkeypatch, capsys) -> None:
    from wanwide.providers.lab import run as lab_run

    trials = _campaign()
    p = trials[0]
    other = {**p.parameters, "rtt": "50ms"}
    ds = _exported(tmp_path / "ds", [(p, "r1", "succeeded", other), (p, "r2", "succeeded", None)])
    ran = _fake_trials(monkeypatch)
    assert lab_run.run(trials, str(tmp_path / "out"), report=False, done=[str(ds)]) == 2
    err = capsys.readouterr().err
    assert f"trial {p.id} region r1" in err and "'rtt': '50ms'" in err
    assert "drop --done" in err and "region r2" not in err
    assert ran == [] and not (tmp_path / "out" / "trials.json").exists()
    plain = tmp_path / "bundles"
    plain.mkdir()
    assert lab_run.run(trials, str(tmp_path / "out"), report=False, done=[str(plain)]) == 2
    assert "not a data set" in capsys.readouterr().err and ran == []
