"""Where the lab's bundles go, whether a trial's are complete, and the copy to ``results.s3``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wanwide.core import contracts
from wanwide.core.contracts import S3Target
from wanwide.core.lifecycle.objectives import failure_said, recorded
from wanwide.core.plan.trial import TrialPlan
from wanwide.pipeline.runner.upload import (
    CredentialsMissing,
    UploadError,
    credentials,
    upload_bundle,
)


def bundles_root(out: Path, p: TrialPlan) -> Path:
    """Where a trial's bundles go: ``results.localDir`` if the Benchmark sets it, else ``OUT/bundles``."""
    d = p.spec.results.local_dir
    return Path(d).resolve() if d else out / "bundles"


def s3_target(p: TrialPlan) -> S3Target | None:
    """``results.s3`` as the upload target; the keys come from the environment variables named like the
    Secret's keys (the lab has no Secret)."""
    return contracts.s3_target(p.spec.results.s3, keys_from_secret_names=True)


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


def succeeded_bundles(out: Path, p: TrialPlan) -> dict[str, Path]:
    """Load region → its latest succeeded bundle of trial ``p`` (regions without one left out)."""
    found: dict[str, Path] = {}
    for r in p.load_regions:
        for m in sorted((bundles_root(out, p) / p.benchmark / p.id / r).glob("attempt-*/manifest.json")):
            try:
                if json.loads(m.read_text()).get("status", {}).get("result") == "succeeded":
                    found[r] = m.parent
            except (OSError, ValueError):
                continue
    return found


def failure_of(out: Path, p: TrialPlan, region: str, attempt: int) -> str | None:
    """What a region's runner said of its failure in its latest bundle of ``attempt`` (None: none, or unreadable)."""
    found = sorted((bundles_root(out, p) / p.benchmark / p.id / region).glob(f"attempt-{attempt}-*/manifest.json"))
    try:
        return failure_said(json.loads(found[-1].read_text())) if found else None
    except (OSError, ValueError):
        return None


def manifest_objectives(manifest: Path) -> list[dict[str, Any]] | None:
    """The objectives a bundle's manifest recorded (its ``slo`` rows); None: none, or unreadable."""
    try:
        return recorded(json.loads(manifest.read_text()))
    except (OSError, ValueError):
        return None


def bundles_complete(out: Path, p: TrialPlan) -> list[Path] | None:
    """The succeeded bundles of every load region of a trial, or None if any is missing."""
    found = succeeded_bundles(out, p)
    return [found[r] for r in p.load_regions] if len(found) == len(p.load_regions) else None


Earlier = dict[tuple[str, str], dict[str, dict[str, Any]]]
"""(Benchmark, trial) → load region → the manifest of its succeeded run in a ``--done`` data set."""


def earlier_runs(sets: list[Path]) -> Earlier:
    """The succeeded load runs of data sets (``wanwide results export``): a campaign whose bundles were
    exported, resumed where the bundles are not (another machine, a lost disk)."""
    from wanwide.pipeline.results import dataset

    runs: Earlier = {}
    for s in sets:
        if not dataset.is_dataset(s):
            raise dataset.DatasetError(f"--done {s}: not a data set (no {dataset.META}; make one with "
                                       "`wanwide results export BUNDLES -o DIR`)")
        for m in dataset.read(s).manifests:
            if m.get("role", "load") == "load" and (m.get("status") or {}).get("result") == "succeeded":
                trial = m.get("trial") or {}
                runs.setdefault((str(m.get("benchmark")), str(trial.get("id"))), {})[str(m.get("region"))] = m
    return runs


def done_earlier(earlier: Earlier, p: TrialPlan) -> bool:
    """Whether a ``--done`` data set holds a succeeded run of every load region of trial ``p``."""
    return set(p.load_regions) <= set(earlier.get((p.benchmark, p.id), {}))


def earlier_mismatches(earlier: Earlier, trials: list[TrialPlan]) -> list[str]:
    """The trials a ``--done`` data set holds under another plan (parameters, seed, regions): their runs
    measured something else, so they cannot stand for this plan's trials. Where the data set's run is another
    trial of this plan under another id, the rounds were numbered otherwise (added rounds in other batches)."""
    def key(parameters: dict, seed: object) -> str:
        return json.dumps({"parameters": parameters, "seed": seed}, sort_keys=True, default=str)

    ids = {(p.benchmark, key(dict(p.parameters), p.seed)): p.id for p in trials}
    problems = []
    for p in trials:
        for region, m in sorted(earlier.get((p.benchmark, p.id), {}).items()):
            t = m.get("trial") or {}
            have = {"parameters": dict(t.get("parameters") or {}), "seed": t.get("seed")}
            want = {"parameters": dict(p.parameters), "seed": p.seed}
            if region not in p.load_regions:
                problems.append(f"{p.benchmark} trial {p.id}: the data set has a run in region {region}, "
                                f"which this plan does not load ({', '.join(p.load_regions)})")
            elif have != want:
                other = ids.get((p.benchmark, key(have["parameters"], have["seed"])))
                why = (f"that is this plan's {other}: the data set numbers its rounds otherwise; give --more-rounds "
                       "as the runs that made it did, then the new rounds as another batch (e.g. --more-rounds 3 "
                       "--more-rounds 1)" if other else
                       "the Benchmark changed since; drop --done or give the Benchmark as it was")
                problems.append(f"{p.benchmark} trial {p.id} region {region}: the data set's run had "
                                f"{have}, this plan {want}: {why}")
    return problems


def upload(out: Path, p: TrialPlan, bundles: list[Path], say: Callable[[str, str], None]) -> str:
    """Copy the trial's bundles to ``results.s3`` from the host (the runners write locally).

    Returns "" or why the upload failed; the bundles stay local either way.
    """
    target = s3_target(p)
    if target is None:
        return ""
    root = bundles_root(out, p)
    try:
        keys = [k for b in bundles for k in upload_bundle(b, target, str(b.relative_to(root)), log=lambda m: None)]
    except UploadError as e:
        say("Collecting", f"upload failed: {e}")
        return f"upload failed: {e}"
    say("Collecting", f"{len(keys)} file(s) uploaded to {target.endpoint} bucket {target.bucket}")
    return ""


def drop_interrupted(out: Path, p: TrialPlan, keep: list[Path]) -> list[Path]:
    """Remove what an interrupted run left of trial ``p``; returns what was removed.

    An incomplete trial (``keep`` empty) is run again as a whole (its load
    regions start together), so all its earlier bundles go: partial ones (no
    manifest: killed while writing) and complete ones of some regions, which
    would duplicate the re-run's. A complete trial keeps its bundles. Rally's
    work dirs (``.work/<run id>``, its database and credentials) of the trial's
    bundles go in both cases (a runner killed just after its manifest leaves one).
    """
    root = bundles_root(out, p)
    trial = root / p.benchmark / p.id
    removed: list[Path] = []
    for b in sorted(trial.glob("*/attempt-*")) if trial.is_dir() else []:
        work = root / ".work" / b.name.split("-", 2)[-1]
        if work.is_dir():
            shutil.rmtree(work, ignore_errors=True)
            removed.append(work)
        if not keep:
            shutil.rmtree(b, ignore_errors=True)
            removed.append(b)
    return removed
