"""``wanwide lab run``: carry out a Benchmark's trials on this machine, for real.

The same plan as the operator (matrix, links, runner configuration, bundles,
report); regions are network namespaces, the WAN is shaped with netem or
wirefilter, and MariaDB/Galera, memcached and Keystone run as processes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..api.units import seconds
from ..plan.load import load_documents
from ..plan.trial import TrialPlan, plan
from ..render.rally import runner_config
from ..runner.config import S3Target
from ..runner.upload import CredentialsMissing, UploadError, credentials, upload_bundle
from . import netns, paths
from .deployment import Deployment, galera_dynamic, groups
from .netns import Network
from .procs import LabError
from .services import Service, Services

ADMIN_PASSWORD = "wanwide-admin"
DB_PASSWORD = "wanwide-keystone"
ROOT_PASSWORD = "wanwide-root"
RTT_TOLERANCE = (1.0, 0.05)  # max(1 ms, 5 %)


class Live:
    """One status line per change (also appended to ``log``); the long waits print a heartbeat."""

    def __init__(self, total: int, stream=sys.stdout, log: Path | None = None):
        self.total, self.stream, self.log = total, stream, log
        self.t0 = time.monotonic()

    def say(self, i: int, p: TrialPlan, phase: str, detail: str = "") -> None:
        params = ", ".join(f"{k}={v}" for k, v in p.parameters.items() if k != "repetition")
        el = time.monotonic() - self.t0
        line = (f"[{el:6.0f}s] trial {i + 1}/{self.total} {p.id} ({params}) {phase}"
                + (f": {detail}" if detail else "") + "\n")
        self.stream.write(line)
        self.stream.flush()
        if self.log is not None:
            with open(self.log, "a") as fh:
                fh.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {p.benchmark} {line}")


@dataclass
class TrialOutcome:
    trial: str
    result: str  # succeeded | failed | skipped
    reason: str = ""
    earlier_attempts: list[str] = field(default_factory=list)  # why each earlier attempt failed
    bundles: list[str] = field(default_factory=list)
    network: dict[str, Any] = field(default_factory=dict)


def bundles_root(out: Path, p: TrialPlan) -> Path:
    """Where a trial's bundles go: ``results.localDir`` if the Benchmark sets it, else ``OUT/bundles``."""
    d = p.spec.results.local_dir
    return Path(d).resolve() if d else out / "bundles"


def s3_target(p: TrialPlan) -> S3Target | None:
    """``results.s3`` as the runner's upload target; the keys come from the environment
    variables named like the Secret's keys (the lab has no Secret)."""
    s3 = p.spec.results.s3
    if s3 is None:
        return None
    return S3Target(endpoint=s3.endpoint, bucket=s3.bucket, prefix=s3.prefix, region=s3.region,
                    access_key_env=s3.secret_ref.access_key_key, secret_key_env=s3.secret_ref.secret_key_key)


def check_results(trials: list[TrialPlan]) -> list[str]:
    """What about the results destinations cannot work here, before anything runs."""
    errors = []
    for p in {(p.bench_namespace, p.benchmark): p for p in trials}.values():
        if p.spec.results.object_bucket_claim:
            errors.append(f"Benchmark {p.benchmark}: results.objectBucketClaim needs the Kubernetes provider; "
                          "in the lab use results.s3 (keys from the environment) or local bundles")
        target = s3_target(p)
        if target is not None:
            try:
                credentials(target)
            except CredentialsMissing as e:
                errors.append(f"Benchmark {p.benchmark}: {e}")
    return errors


def bundles_complete(out: Path, p: TrialPlan) -> list[Path] | None:
    """The succeeded bundles of every load region of a trial, or None if any is missing."""
    found = []
    for r in p.load_regions:
        hits = []
        for m in sorted((bundles_root(out, p) / p.benchmark / p.id / r).glob("attempt-*/manifest.json")):
            try:
                if json.loads(m.read_text()).get("status", {}).get("result") == "succeeded":
                    hits.append(m.parent)
            except (OSError, ValueError):
                continue
        if not hits:
            return None
        found.append(hits[-1])
    return found


def verify_network(net: Network, p: TrialPlan, samples: int = 20) -> tuple[list[dict[str, Any]], list[str]]:
    """Measured RTT of every region pair against the request; the pairs that are off.

    A pair found off is measured once more before it counts as off (a
    scheduling hiccup of the user-space shaper on a busy machine is not the
    network); both measurements are kept.
    """
    rows, off = [], []
    names = p.region_names
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            want = p.links[(a, b)].delay_ms + p.links[(b, a)].delay_ms
            tol = max(RTT_TOLERANCE[0], RTT_TOLERANCE[1] * want)
            row: dict[str, Any] = {"src": a, "dst": b, "requested_rtt_ms": want, "tolerance_ms": tol}
            for k in range(2):
                got = net.measure_rtt(a, b, samples=samples)
                med = sorted(got)[len(got) // 2] if got else float("nan")
                ok = bool(got) and abs(med - want) <= tol
                if k == 1:
                    row["first_measurement"] = {"measured_rtt_ms": row["measured_rtt_ms"],
                                                "samples_ms": row["samples_ms"]}
                row |= {"measured_rtt_ms": med, "samples_ms": got, "ok": ok}
                if ok:
                    break
            rows.append(row)
            if not row["ok"]:
                off.append(f"{a}↔{b}: requested {want:g} ms, measured {row['first_measurement']['measured_rtt_ms']:.2f} "
                           f"then {row['measured_rtt_ms']:.2f} ms (tolerance {tol:.2f} ms)")
    return rows, off


class FaultPlayer(threading.Thread):
    """Partitions, dropouts and loss windows on the lab links, timed from the load start."""

    def __init__(self, net: Network, p: TrialPlan, start: float):
        super().__init__(daemon=True)
        self.net, self.p, self.start_at = net, p, start
        self.stop_flag = threading.Event()
        self.log: list[dict[str, Any]] = []

    def _cut(self, regions: list[str], extra_loss: float | None) -> None:
        from ..plan.links import OneWay

        others = [r for r in self.p.region_names if r not in regions]
        pairs = [(a, b) for a in regions for b in others] + [(b, a) for a in regions for b in others]
        if extra_loss is not None:  # loss window on every link of these regions
            pairs = [(a, b) for a in regions for b in self.p.region_names if a != b]
            pairs += [(b, a) for a, b in pairs]
        for a, b in set(pairs):
            base = self.p.links[(a, b)]
            if extra_loss is None:
                ow = OneWay(base.delay_ms, base.jitter_ms, 100.0, base.rate_mbit)
            else:
                ow = OneWay(base.delay_ms, base.jitter_ms, min(100.0, base.loss_pct + extra_loss), base.rate_mbit)
            self.net.set_link(a, b, ow)

    def _restore(self, regions: list[str]) -> None:
        for a in self.p.region_names:
            for b in self.p.region_names:
                if a != b and (a in regions or b in regions):
                    self.net.set_link(a, b, self.p.links[(a, b)])

    def events(self) -> list[tuple[float, str, list[str], float | None]]:
        """(time from start, 'cut'|'restore', regions, extra loss)."""
        f = self.p.spec.faults
        ev: list[tuple[float, str, list[str], float | None]] = []
        for w in f.partitions:
            t = seconds(w.start)
            ev += [(t, "cut", list(w.regions), None), (t + seconds(w.duration), "restore", list(w.regions), None)]
        for w in f.loss_windows:
            from ..api.units import pct

            t = seconds(w.start)
            ev += [(t, "cut", list(w.regions), pct(w.loss)), (t + seconds(w.duration), "restore", list(w.regions), None)]
        for d in f.dropouts:
            regs = list(d.regions) if d.regions else [r for r in self.p.region_names if r != self.p.primary_region]
            every, length = seconds(d.every), seconds(d.for_)
            for k in range(1, 200):
                ev += [(k * every, "cut", regs, None), (k * every + length, "restore", regs, None)]
        return sorted(ev, key=lambda e: e[0])

    def run(self) -> None:
        for t, what, regions, loss in self.events():
            while not self.stop_flag.is_set() and time.time() < self.start_at + t:
                time.sleep(0.2)
            if self.stop_flag.is_set():
                return
            (self._cut(regions, loss) if what == "cut" else self._restore(regions))
            self.log.append({"at_s": t, "event": what, "regions": regions, "extra_loss_pct": loss})


class LabRun:
    def __init__(self, out: Path, live: Live, shaper: str = "auto", work: Path | None = None):
        self.out = out
        self.live = live
        self.shaper = shaper
        self.work = work or Path(os.environ.get("WANWIDE_LAB_WORK", "/var/tmp/wanwide-lab"))

    def trial(self, i: int, p: TrialPlan, attempt: int, dep: Deployment | None,
              shared: bool = False) -> tuple[TrialOutcome, Deployment | None]:
        """Run trial ``p`` on ``dep`` (deployed first when None).

        Returns the outcome and the deployment, still running when the trial
        succeeded (the caller closes it after its last trial), else removed.
        """
        if p.backend == "cockroachdb" and not shutil.which("cockroach"):
            raise LabError("backend cockroachdb needs the Kubernetes provider (or a `cockroach` binary on PATH); "
                           "use mariadb or galera in the lab")
        say = lambda phase, detail="": self.live.say(i, p, phase, detail)  # noqa: E731
        player: FaultPlayer | None = None
        ok = False
        try:
            if dep is None:
                say("Provisioning", f"{len(p.regions)} namespaces, shaper {self.shaper}"
                    + (" (a deployment shared by this Benchmark's trials)" if shared else ""))
                net = netns.build(p.region_names, p.links, shaper=self.shaper, handle_signals=False,
                                  shapeable=shared)
                dep = Deployment(net, Services(net, self.work / f"{p.benchmark}-{net.tag}"), {}, {}, shared)
            else:
                say("Provisioning", f"re-shaping the links of deployment {dep.id} "
                    f"(trial {len(dep.trials) + 1} on it)")
                dep.adapt(p)
            rows, off = verify_network(dep.net, p)
            # per Benchmark: a file may hold several, whose trial ids (t000…) repeat
            (self.out / "network" / p.benchmark).mkdir(parents=True, exist_ok=True)
            (self.out / "network" / p.benchmark / f"{p.id}.json").write_text(json.dumps(
                {"shaper": dep.net.shaper, "deployment": dep.describe(p), "pairs": rows}, indent=1))
            say("VerifyingNetwork", f"{len(rows)} pairs measured; shaper {dep.net.shaper}")
            if off:
                raise LabError("emulated network off by more than max(1 ms, 5 %): " + "; ".join(off))
            if not dep.ks:
                dep.db = self._database(dep.svc, p)
                dep.galera_dynamic = galera_dynamic(p)
                dep.ks = self._keystones(dep.svc, p, dep.db, say)
            say("Loading", f"Rally in {', '.join(p.load_regions)} ({p.load} load)")
            # Each runner first creates Rally's database and environment (10–45 s, depending on
            # the machine's load); they are released together (SIGUSR1) once every one of them
            # waits, and at the latest at this deadline.
            lead = max(seconds(p.spec.workload.start_delay), 300.0)
            start = datetime.now(UTC) + timedelta(seconds=lead)
            player = FaultPlayer(dep.net, p, start.timestamp())
            player.start()
            results = self._load(dep, p, start, attempt, say)
            player.stop_flag.set()
            player.join(timeout=30)
            dep.trials.append(p.id)
            failed = [r for r, rc in results.items() if rc != 0]
            say("Collecting", "bundles written" + (f"; runner failed in {', '.join(failed)}" if failed else ""))
            if failed:
                return TrialOutcome(p.id, "failed", f"runner failed in {', '.join(failed)}"), None
            found = bundles_complete(self.out, p) or []
            ok = True
            reason = self._upload(p, found, say)
            return TrialOutcome(p.id, "succeeded", reason, [str(b) for b in found], {"pairs": rows}), dep
        finally:
            if player:
                player.stop_flag.set()
            if not ok and dep is not None:
                say("CleaningUp", f"deployment {dep.id}")
                dep.close()

    def _upload(self, p: TrialPlan, bundles: list[Path], say) -> str:
        """Copy the trial's bundles to ``results.s3`` from the host (the runners write locally).

        Returns "" or why the upload failed; the bundles stay local either way.
        """
        target = s3_target(p)
        if target is None:
            return ""
        root = bundles_root(self.out, p)
        try:
            keys = [k for b in bundles for k in upload_bundle(b, target, str(b.relative_to(root)), log=lambda m: None)]
        except UploadError as e:
            say("Collecting", f"upload failed: {e}")
            return f"upload failed: {e}"
        say("Collecting", f"{len(keys)} file(s) uploaded to {target.endpoint} bucket {target.bucket}")
        return ""

    def _database(self, svc: Services, p: TrialPlan) -> dict[str, Service]:
        """Region → the database endpoint its Keystone uses."""
        grant = (f"CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '{ROOT_PASSWORD}'; "
                 "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%'; FLUSH PRIVILEGES;")
        in_mem = p.spec.database.in_memory
        if p.backend == "mariadb":
            db = svc.start_mariadb(p.primary_region, in_memory=in_mem)
            svc.create_database(db, "keystone", "keystone", DB_PASSWORD)
            svc.sql(db, grant)
            return {r: db for r in p.region_names}
        members = svc.start_galera(p.region_names, in_memory=in_mem, provider_options=p.galera_options)
        svc.create_database(members[0], "keystone", "keystone", DB_PASSWORD)
        svc.sql(members[0], grant)
        return dict(zip(p.region_names, members, strict=True))

    def _keystones(self, svc: Services, p: TrialPlan, db: dict[str, Service], say) -> dict[str, Service]:
        """The first region creates the schema; the others then bootstrap and start in parallel."""
        from concurrent.futures import ThreadPoolExecutor

        def one(k: int, r: str) -> Service:
            mc = svc.start_memcached(r) if p.spec.openstack.keystone.cache else None
            ks = svc.start_keystone(r, db_host=db[r].host, db_port=db[r].port, db_password=DB_PASSWORD,
                                    memcached=mc, admin_password=ADMIN_PASSWORD, db_sync=k == 0)
            say("Provisioning", f"keystone {r} up ({ks.start_s:.0f}s)")
            return ks

        names = p.region_names
        out = {names[0]: one(0, names[0])}
        with ThreadPoolExecutor(max_workers=min(8, max(1, len(names) - 1))) as ex:
            futures = {r: ex.submit(one, k, r) for k, r in enumerate(names) if k > 0}
            for r, f in futures.items():
                out[r] = f.result()
        return out

    def _load(self, dep: Deployment, p: TrialPlan, start: datetime, attempt: int, say) -> dict[str, int]:
        net, ks, db = dep.net, dep.ks, dep.db
        procs: dict[str, subprocess.Popen] = {}
        logs = self.out / "logs" / p.benchmark / p.id
        logs.mkdir(parents=True, exist_ok=True)
        wanwide = str(Path(sys.executable).with_name("wanwide"))
        for r in p.load_regions:
            targets = []
            for o in p.region_names:
                if o == r:
                    continue
                targets.append({"region": o, "kind": "keystone", "host": ks[o].host, "port": ks[o].port})
                if db[o].host != db[r].host:
                    targets.append({"region": o, "kind": "database", "host": db[o].host, "port": db[o].port})
            cfg = runner_config(p, r, start_at=start.strftime("%Y-%m-%dT%H:%M:%SZ"), attempt=attempt,
                                keystone_url=ks[r].url, rtt_targets=targets, db_host=db[r].host,
                                db_port=db[r].port, local_dir=str(bundles_root(self.out, p)))
            cfg["results"]["s3"] = None
            cfg["keystone"]["cache"] = ks[r].info["cache"]
            cfg["versions"].pop("keystone-chart", None)  # the Kubernetes provider's chart: not run here
            cfg["versions"].update(lab_versions())
            cfg["versions"]["lab-shaper"] = net.shaper
            cfg["deployment"] = dep.describe(p)
            cfg["namespace"] = "lab"
            path = logs / f"runner-{r}.json"
            path.write_text(json.dumps(cfg, indent=1))
            env = dict(os.environ, OS_PASSWORD=ADMIN_PASSWORD, DB_ROOT_PASSWORD=ROOT_PASSWORD,
                       WANWIDE_RALLY=str(paths.rally_bin()))
            fh = open(logs / f"runner-{r}.log", "w")  # noqa: SIM115 - closed after wait
            procs[r] = net.popen_in(r, [wanwide, "runner", "run", "--config", str(path)], env=env,
                                    stdout=fh, stderr=subprocess.STDOUT)
        budget = seconds(p.spec.timeouts.loading)
        t0 = time.monotonic()
        last = ""
        released = False
        while any(pr.poll() is None for pr in procs.values()):
            if not released and all("waiting for start_at" in _text(logs / f"runner-{r}.log") or procs[r].poll() is not None
                                    for r in p.load_regions):
                for pr in procs.values():
                    if pr.poll() is None:
                        pr.send_signal(signal.SIGUSR1)
                released = True
                say("Loading", f"all {len(procs)} runner(s) ready: released together")
            if time.monotonic() - t0 > budget:
                for pr in procs.values():
                    pr.kill()
                raise LabError(f"load took longer than spec.timeouts.loading ({p.spec.timeouts.loading})")
            line = _last_progress(logs / f"runner-{p.load_regions[0]}.log")
            if line and line != last:
                say("Loading", line)
                last = line
            time.sleep(2)
        return {r: pr.returncode for r, pr in procs.items()}


_VERSIONS: dict[str, str] = {}


def lab_versions() -> dict[str, str]:
    """Versions of what the lab runs (Keystone from its venv, MariaDB, Galera), for the bundles."""
    if not _VERSIONS:
        site = sorted(paths.keystone_venv().glob("lib/python3*/site-packages"))
        for dist in ("keystone", "oslo_db", "pymysql"):
            for d in (site[-1].glob(f"{dist}-*.dist-info") if site else []):
                _VERSIONS[dist.replace("_", ".")] = d.name[len(dist) + 1:-len(".dist-info")]
        for key, argv in (("mariadb", ["mariadbd", "--version"]),
                          ("galera", ["dpkg-query", "-W", "-f", "${Version}", "galera-4"])):
            try:
                out = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            words = out.split()
            ver = words[words.index("Ver") + 1] if "Ver" in words[:-1] else out.strip()
            if ver:
                _VERSIONS[key] = ver
    return dict(_VERSIONS)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _last_progress(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.startswith("[runner]")]
    except OSError:
        return ""
    return lines[-1][len("[runner] "):][:150] if lines else ""


def run(files: list[str], out_dir: str, shaper: str = "auto", report: bool = True, fresh: bool = False) -> int:
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    missing = [m for m in paths.missing() if "versitygw" not in m]  # S3 is optional here
    if missing:
        print("error: the lab needs: " + ", ".join(missing) + " — run hack/install-lab.sh", file=sys.stderr)
        return 2
    docs = load_documents([Path(f).read_text() for f in files])
    trials: list[TrialPlan] = []
    for b in docs.benchmarks:
        trials += plan(b, docs.topology_for(b))
    problems = check_results(trials)
    if problems:
        print("error: " + "\n       ".join(problems), file=sys.stderr)
        return 2
    live = Live(len(trials), log=out / "lab.log")
    runner = LabRun(out, live, shaper)
    outcomes: list[TrialOutcome] = []
    interrupted = False

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_signal)
    # Also when started in the background, where the shell leaves SIGINT ignored.
    old_int = signal.signal(signal.SIGINT, on_signal)
    position = {id(p): i for i, p in enumerate(trials)}
    try:
        for group in groups(trials, fresh):
            todo = []
            for p in group:
                if bundles_complete(out, p):
                    live.say(position[id(p)], p, "Skipped", "complete bundles already in the output")
                    outcomes.append(TrialOutcome(p.id, "skipped"))
                else:
                    todo.append(p)
            dep: Deployment | None = None
            try:
                for p in todo:
                    i = position[id(p)]
                    attempts = p.spec.runner.max_attempts
                    earlier: list[str] = []
                    for attempt in range(1, attempts + 1):
                        try:
                            o, dep = runner.trial(i, p, attempt, dep, shared=len(todo) > 1)
                        except LabError as e:
                            o, dep = TrialOutcome(p.id, "failed", str(e)[:2000]), None
                        except Exception as e:  # a bug: this trial fails, the others still run
                            traceback.print_exc()
                            o, dep = TrialOutcome(p.id, "failed", f"internal error: {type(e).__name__}: {e}"), None
                        if o.result == "succeeded":
                            break
                        if attempt < attempts:
                            earlier.append(f"attempt {attempt}: {o.reason}")
                        live.say(i, p, "Failed" if attempt == attempts else "Retrying",
                                 f"attempt {attempt}/{attempts}: {o.reason[:300]}"
                                 + ("" if attempt == attempts else "; on a new deployment"))
                    o.earlier_attempts = earlier
                    outcomes.append(o)
                    live.say(i, p, o.result.capitalize())
            finally:
                if dep is not None:
                    live.say(position[id(todo[-1])], todo[-1], "CleaningUp", f"deployment {dep.id}")
                    dep.close()
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: cleaning up", file=sys.stderr)
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
        (out / "trials.json").write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    if interrupted:
        return 130
    failed = [o for o in outcomes if o.result == "failed"]
    not_uploaded = [o for o in outcomes if o.result == "succeeded" and o.reason.startswith("upload failed")]
    roots = sorted({bundles_root(out, p) for p in trials})
    if report and any(r.exists() for r in roots):
        from ..results.report import build_report

        res = build_report([r for r in roots if r.exists()], out / "report")
        index = getattr(res, "index", None) or out / "report" / "index.html"
        print(f"report: {index}")
        print(f"summary: {out / 'report' / 'summary.csv'}")
    print(f"{len(outcomes) - len(failed)}/{len(outcomes)} trials done, {len(failed)} failed; "
          f"bundles in {', '.join(map(str, roots))}")
    for o in not_uploaded:
        print(f"trial {o.trial}: {o.reason}", file=sys.stderr)
    return 1 if failed or not_uploaded else 0
