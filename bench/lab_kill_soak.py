"""Kill `wanwide lab run` with SIGKILL at random points; check `lab clean` and the rerun.

    .venv/bin/python bench/lab_kill_soak.py                 # 10 kills, seed from the clock (printed)
    .venv/bin/python bench/lab_kill_soak.py --kills 12 --seed 7 --json soak.json

A small Benchmark (2 regions, MariaDB, 3 trials: RTT 0/10/20 ms, 3 iterations,
`--fresh` so every trial deploys, loads and cleans up). Each run gets a target
stage (network setup, services starting, runner prep, Rally task, bundle
writing, clean-up; every stage once, then at random), is killed at a random
delay after entering it, either as a process group or just its main process,
then `wanwide lab clean --benchmark NAME` runs and nothing of the run may
remain: namespace, process, link, mount, state file, work or socket dir. The
next run resumes: it may start only trials whose bundles are incomplete. When
all trials are done and kills remain, a new round starts in a new output dir;
the last run is not killed and must leave exactly one succeeded bundle per
trial and load region, no partial bundle, no Rally work dir.

Exit 1 on any violation. Needs root and the lab (hack/install-lab.sh). Uses a
private state dir and work dir, so another user's lab runs are never touched.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WANWIDE = str(Path(sys.executable).with_name("wanwide"))
STAGES = ["network", "services", "prep", "task", "bundle", "cleanup"]
# Longest random delay (s) after a stage is entered before the kill; a stage that ends
# sooner is killed in whichever stage the run has reached (recorded as such).
MAX_DELAY = {"network": 1.5, "services": 25.0, "prep": 15.0, "task": 20.0, "bundle": 1.0, "cleanup": 0.5}
TRIALS = ["t000", "t001", "t002"]
LINE = re.compile(r"^\[\s*\d+s\] trial \d+/\d+ (t\d+) \([^)]*\) (\w+)(?:: (.*))?$")


def spec(name: str) -> list[dict]:
    return [
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": name},
         "spec": {"generate": {"count": 2}}},
        {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": name},
         "spec": {"topologyRef": name, "database": {"backend": "mariadb"},
                  "matrix": {"rtt": ["0ms", "10ms", "20ms"]},
                  "workload": {"load": "light", "loadRegion": "r2", "startDelay": "3s",
                               "scenarios": [{"name": "authenticate_user_and_validate_token", "times": 3,
                                              "concurrency": 1}]},
                  "timeouts": {"loading": "10m"}}},
    ]


def stage_of(phase: str, detail: str) -> str | None:
    """The soak's stage a live status line begins (None: the line begins none)."""
    if phase == "Provisioning":
        return "services" if detail.startswith("keystone") else "network"
    if phase == "VerifyingNetwork":
        return "services"
    if phase == "Loading":
        return "task" if detail.startswith(("starting rally task", "rally task")) else (
            "prep" if detail.startswith("Rally in") else None)
    if phase in ("Collecting", "Succeeded", "Failed", "Retrying"):
        return "bundle" if phase == "Collecting" else None
    if phase == "CleaningUp":
        return "cleanup"
    return None


# ---------------------------------------------------------------- what a run leaves
def bundles(out: Path, bench: str) -> dict[str, dict[str, list[str]]]:
    """trial → {succeeded, failed, partial}: bundle dirs (relative) by manifest status."""
    res: dict[str, dict[str, list[str]]] = {}
    for t in TRIALS:
        r = res[t] = {"succeeded": [], "failed": [], "partial": []}
        for b in sorted((out / "bundles" / bench / t).glob("*/attempt-*")):
            m = b / "manifest.json"
            try:
                status = json.loads(m.read_text())["status"]["result"] if m.exists() else "partial"
            except (OSError, ValueError, KeyError):
                status = "partial"
            r["succeeded" if status == "succeeded" else "failed" if status == "failed" else "partial"].append(
                str(b.relative_to(out)))
    return res


def complete(out: Path, bench: str) -> set[str]:
    return {t for t, r in bundles(out, bench).items() if r["succeeded"]}


def bundle_dirs(out: Path, bench: str) -> set[Path]:
    return set((out / "bundles" / bench).glob("t*/*/attempt-*"))


def bundle_writing(out: Path, bench: str, old: set[Path]) -> bool:
    """A runner is exporting: a bundle of this run (not in ``old``) with Rally's task report log, no manifest yet."""
    return any(not (b / "manifest.json").exists() and any(b.glob("logs/*task-report.log"))
               for b in bundle_dirs(out, bench) - old)


def tags(state_dir: Path) -> set[str]:
    return {p.stem for p in state_dir.glob("*.json")}


def pids_of(tag_set: set[str], state_dir: Path, root_pid: int) -> dict[int, int]:
    """pid → start time of everything the run has running: its tree, its namespaces' processes."""
    from wanwide.providers.lab import procs

    pids = [root_pid, *procs.descendants(root_pid)]
    for t in tag_set:
        try:
            st = json.loads((state_dir / f"{t}.json").read_text())
        except (OSError, ValueError):
            continue
        pids += [p["pid"] for p in st.get("processes", [])]
        for ns in st.get("netns", []):
            r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            pids += [int(x) for x in r.stdout.split() if x.isdigit()]
    return {p: s for p in set(pids) if (s := procs.start_time(p)) is not None}


def leftovers(tag_set: set[str], known: dict[int, int], state_dir: Path, work: Path, bench: str,
              out: Path) -> list[str]:
    """Anything of the run's tags still on the machine."""
    from wanwide.providers.lab import procs

    found: list[str] = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.splitlines()
    mounts = Path("/proc/mounts").read_text().splitlines()
    for t in tag_set:
        found += [f"netns {line.split()[0]}" for line in ns if line.startswith(f"ww-{t}-")]
        found += [f"link {line.split(':')[1].strip()}" for line in links if f"ww{t}h" in line]
        found += [f"mount {m.split()[1]}" for m in mounts if f"ww-{t}-" in m or f"{bench}-{t}" in m]
        for p in (state_dir / f"{t}.json", Path("/tmp") / f"ww-{t}", work / f"{bench}-{t}",
                  *Path("/dev/shm").glob(f"ww-{t}-*")):
            if p.exists():
                found.append(f"dir {p}")
    found += [f"file {p}" for p in state_dir.glob("*.tmp*")]
    found += [f"process {p} {_cmd(p)}" for p, s in known.items() if procs.alive(p, s)]
    # anything else working in the soak's dirs (a process the snapshot missed)
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) not in known and int(d.name) != os.getpid():
            c = _cmd(int(d.name))
            if (str(out) in c or str(work) in c or any(f"ww-{t}" in c for t in tag_set)) and procs.alive(int(d.name)):
                found.append(f"process {d.name} {c}")
    return found


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        return ""


# ---------------------------------------------------------------- one run
@dataclass
class Run:
    n: int
    round: int
    target: str | None  # stage to kill in; None: let it finish
    mode: str = ""  # group | main
    delay: float = 0.0
    complete_before: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)  # trials the run worked on (not skipped)
    killed_in: str | None = None  # "start": before the first trial's first status line
    killed_trial: str | None = None
    exit_code: int | None = None
    leftovers_before_clean: int = 0
    leftovers_after_clean: list[str] = field(default_factory=list)
    rerun_complete: list[str] = field(default_factory=list)  # violations: started though complete
    seconds: float = 0.0


def one_run(run: Run, rng: random.Random, files: Path, out: Path, env: dict[str, str], bench: str,
            state_dir: Path, work: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    run.complete_before = sorted(complete(out, bench))
    old = bundle_dirs(out, bench)  # an interrupted run's partial bundle is not this run writing one
    t0 = time.monotonic()
    p = subprocess.Popen([WANWIDE, "lab", "run", "-f", str(files), "-o", str(out), "--fresh", "--no-report"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    stage: list[str | None] = [None]
    trial: list[str | None] = [None]
    log = out / f"run-{run.n:02d}.log"

    def read() -> None:
        assert p.stdout is not None
        with log.open("w") as fh:
            for line in p.stdout:
                fh.write(line)
                fh.flush()
                m = LINE.match(line.strip())
                if not m:
                    continue
                t, phase, detail = m[1], m[2], m[3] or ""
                if phase not in ("Skipped", "Resuming") and t not in run.started:
                    run.started.append(t)
                s = stage_of(phase, detail)
                if s:
                    stage[0], trial[0] = s, t

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen: set[str] = set()
    known: dict[int, int] = {}
    entered: float | None = None
    while p.poll() is None:
        seen |= tags(state_dir)
        if stage[0] == "task" and bundle_writing(out, bench, old):
            stage[0] = "bundle"
        if run.target and stage[0] == run.target and entered is None:
            entered = time.monotonic()
            run.delay = round(rng.uniform(0, MAX_DELAY[run.target]), 2)
        if entered is not None and time.monotonic() - entered >= run.delay:
            known = pids_of(seen | tags(state_dir), state_dir, p.pid)
            if run.mode == "group":
                os.killpg(p.pid, signal.SIGKILL)
            else:
                os.kill(p.pid, signal.SIGKILL)
            run.killed_in, run.killed_trial = stage[0] or "start", trial[0]
            break
        time.sleep(0.1)
    p.wait()
    reader.join(timeout=5 if run.mode == "group" or run.killed_in is None else 0.5)
    run.exit_code = p.returncode
    seen |= tags(state_dir)
    run.rerun_complete = [t for t in run.started if t in run.complete_before]
    if run.killed_in is not None:
        time.sleep(1)
        run.leftovers_before_clean = len(leftovers(seen, known, state_dir, work, bench, out))
        c = subprocess.run([WANWIDE, "lab", "clean", "--benchmark", bench], capture_output=True, text=True,
                           env=env, timeout=300)
        (out / f"clean-{run.n:02d}.log").write_text(c.stdout + c.stderr)
        run.leftovers_after_clean = leftovers(seen, known, state_dir, work, bench, out)
    run.seconds = round(time.monotonic() - t0, 1)


# ---------------------------------------------------------------- the soak
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--dir", type=Path, default=Path("/var/tmp/wanwide-labsoak"),
                    help="outputs, private state and work dirs (must be traversable by the mysql user)")
    ap.add_argument("--name", default="labsoak", help="Benchmark name (keep it apart from other users' runs)")
    ap.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)
    print(f"seed {seed}", flush=True)
    base = a.dir
    shutil.rmtree(base, ignore_errors=True)
    state_dir, work = base / "state", base / "work"
    for d in (base, state_dir, work):
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)
    files = base / "bench.yaml"
    files.write_text(yaml.safe_dump_all(spec(a.name)))
    env = dict(os.environ, WANWIDE_LAB_STATE_DIR=str(state_dir), WANWIDE_LAB_WORK=str(work),
               PYTHONPATH=os.environ.get("PYTHONPATH", str(ROOT / "operator")))
    targets = STAGES[:] + [rng.choice(STAGES) for _ in range(max(0, a.kills - len(STAGES)))]
    rng.shuffle(targets)
    runs: list[Run] = []
    rounds_done: list[dict] = []
    rnd, kills, closing = 0, 0, False
    out = base / f"out-{rnd}"
    t_start = time.monotonic()
    load_before = Path("/proc/loadavg").read_text().strip()
    while len(runs) < 4 * a.kills + 6:
        # after a kill that left every trial complete, one run that is not killed closes the round
        target = targets[kills] if kills < a.kills and not closing else None
        run = Run(n=len(runs), round=rnd, target=target, mode=rng.choice(["group", "main"]) if target else "")
        one_run(run, rng, files, out, dict(env), a.name, state_dir, work)
        runs.append(run)
        print(f"run {run.n:2d} round {rnd}: target {target or '-':8} mode {run.mode or '-':5} "
              f"killed in {run.killed_in or '-':8} (trial {run.killed_trial or '-'}, +{run.delay:.2f}s) "
              f"exit {run.exit_code} started {run.started} complete before {run.complete_before} "
              f"leftovers {run.leftovers_before_clean}→{len(run.leftovers_after_clean)} {run.seconds}s", flush=True)
        for x in run.leftovers_after_clean:
            print(f"    LEFT: {x}", flush=True)
        if run.killed_in is not None:
            kills += 1
            closing = complete(out, a.name) == set(TRIALS)
            continue
        rounds_done.append(final_check(out, a.name, rnd, run))
        closing = False
        if kills >= a.kills:
            break
        rnd += 1
        out = base / f"out-{rnd}"
    res = summary(seed, a, runs, rounds_done, round(time.monotonic() - t_start), load_before)
    print(table(res))
    text = json.dumps(res, indent=1)
    print(text)
    if a.json:
        a.json.write_text(text)
    return 1 if res["violations"] else 0


def final_check(out: Path, bench: str, rnd: int, last: Run) -> dict:
    """After a run that was not killed: every trial complete, one succeeded bundle per load region, nothing else."""
    b = bundles(out, bench)
    work_left = sorted(str(p) for p in (out / "bundles" / ".work").glob("*")) if (out / "bundles" / ".work").exists() else []
    return {
        "round": rnd,
        "finished_by_run": last.n,
        "exit_code": last.exit_code,
        "missing": [t for t in TRIALS if not b[t]["succeeded"]],
        "duplicates": {t: r["succeeded"] for t, r in b.items() if len(r["succeeded"]) > 1},
        "partial": {t: r["partial"] for t, r in b.items() if r["partial"]},
        "failed_kept": {t: r["failed"] for t, r in b.items() if r["failed"]},
        "rally_work_left": work_left,
    }


def summary(seed: int, a: argparse.Namespace, runs: list[Run], rounds: list[dict], wall: int,
            load_before: str) -> dict:
    killed = [r for r in runs if r.killed_in]
    per_stage = {s: sum(1 for r in killed if r.killed_in == s) for s in ["start", *STAGES]}
    per_mode = {m: sum(1 for r in killed if r.mode == m) for m in ("group", "main")}
    left = [x for r in runs for x in r.leftovers_after_clean]
    rerun_complete = [(r.n, t) for r in runs for t in r.rerun_complete]
    # trials a run started again after an earlier run of the same round had started them (resumed)
    reruns = sum(1 for r in runs for t in r.started
                 if any(t in q.started for q in runs if q.round == r.round and q.n < r.n))
    dup = sum(len(v) - 1 for rd in rounds for v in rd["duplicates"].values())
    partial = sum(len(v) for rd in rounds for v in rd["partial"].values())
    missing = sum(len(rd["missing"]) for rd in rounds)
    violations = []
    if len(killed) < a.kills:
        violations.append(f"only {len(killed)} kills")
    if unkilled := [s for s in STAGES if not per_stage[s]]:
        violations.append(f"no kill in {', '.join(unkilled)}")
    if left:
        violations.append(f"{len(left)} leftover(s) after lab clean")
    if rerun_complete:
        violations.append(f"trials re-run though complete: {rerun_complete}")
    if dup or partial or missing:
        violations.append(f"bundles: {dup} duplicated, {partial} partial, {missing} missing")
    if any(rd["rally_work_left"] or rd["failed_kept"] for rd in rounds):
        violations.append("Rally work dirs or failed bundles kept")
    if any(rd["exit_code"] != 0 for rd in rounds):
        violations.append("a final run failed")
    return {
        "seed": seed, "kills": len(killed), "runs": len(runs), "rounds": len(rounds), "wall_s": wall,
        "kills_per_stage": per_stage, "kills_per_mode": per_mode,
        "leftovers_before_clean": sum(r.leftovers_before_clean for r in killed),
        "leftovers_after_clean": len(left), "trials_rerun_though_complete": len(rerun_complete),
        "trials_resumed": reruns, "bundles_duplicated": dup, "bundles_partial": partial, "trials_missing": missing,
        "loadavg_before": load_before, "loadavg_after": Path("/proc/loadavg").read_text().strip(),
        "pressure_cpu_after": _pressure(),
        "violations": violations,
        "per_run": [r.__dict__ for r in runs], "per_round": rounds,
    }


def _pressure() -> str:
    try:
        return Path("/proc/pressure/cpu").read_text().strip().replace("\n", " | ")
    except OSError:
        return "n/a"


def table(res: dict) -> str:
    rows = ["| run | round | target | mode | killed in (trial, delay) | exit | started | complete before | "
            "leftovers before → after clean | s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["per_run"]:
        rows.append(f"| {r['n']} | {r['round']} | {r['target'] or '–'} | {r['mode'] or '–'} | "
                    f"{r['killed_in'] or '–'} ({r['killed_trial'] or '–'}, {r['delay']:.2f}s) | {r['exit_code']} | "
                    f"{' '.join(r['started']) or '–'} | {' '.join(r['complete_before']) or '–'} | "
                    f"{r['leftovers_before_clean']} → {len(r['leftovers_after_clean'])} | {r['seconds']:.0f} |")
    stages = " ".join(f"{s} {n}" for s, n in res["kills_per_stage"].items())
    rows += ["", f"kills {res['kills']} ({stages}; group {res['kills_per_mode']['group']}, "
             f"main only {res['kills_per_mode']['main']}); leftovers after clean {res['leftovers_after_clean']}; "
             f"trials re-run though complete {res['trials_rerun_though_complete']}; trials resumed "
             f"{res['trials_resumed']}; bundles duplicated {res['bundles_duplicated']}, partial "
             f"{res['bundles_partial']}, missing {res['trials_missing']}; violations: "
             f"{'; '.join(res['violations']) or 'none'}"]
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(main())
