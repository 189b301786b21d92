"""Where a trial's bundles go, and whether they arrived."""

from __future__ import annotations

from typing import Any

from wanwide.core.contracts import S3Target, object_bucket
from wanwide.core.errors import refusal, transient
from wanwide.core.plan.trial import TrialPlan
from wanwide.providers.kubernetes.kube.client import Kube
from wanwide.providers.kubernetes.render.rally import results_target


def target(kube: Kube, plan: TrialPlan, instance: str | None = None) -> S3Target | None:
    """results.s3, or the endpoint/bucket an ObjectBucketClaim's ConfigMap gives.

    ``instance`` (the Benchmark's uid) goes into the prefix with the namespace, so a
    Benchmark re-created under the same name never meets an earlier run's bundles.
    """
    t = _target(kube, plan)
    if t is None or not instance:
        return t
    return t.model_copy(update={"prefix": f"{t.prefix.strip('/')}/{plan.bench_namespace}/{instance[:8]}"})


def _target(kube: Kube, plan: TrialPlan) -> S3Target | None:
    t = results_target(plan)
    if t is not None:
        return t
    obc = plan.spec.results.object_bucket_claim
    if not obc:
        return None
    cm = kube.get("v1", "ConfigMap", obc, plan.bench_namespace) or {}
    found = object_bucket(cm.get("data") or {})
    if found is None:
        return None
    endpoint, bucket, region = found
    return S3Target(endpoint=endpoint, bucket=bucket, prefix="wanwide", region=region)


def _credentials(kube: Kube, plan: TrialPlan) -> tuple[str | None, str | None]:
    s3 = plan.spec.results.s3
    if s3 is not None:
        ref = s3.secret_ref
        if ref is None:  # the operator's own identity
            return None, None
        return (kube.secret_value(ref.name, plan.bench_namespace, ref.access_key_key),
                kube.secret_value(ref.name, plan.bench_namespace, ref.secret_key_key))
    obc = plan.spec.results.object_bucket_claim
    if obc:
        return (kube.secret_value(obc, plan.bench_namespace, "AWS_ACCESS_KEY_ID"),
                kube.secret_value(obc, plan.bench_namespace, "AWS_SECRET_ACCESS_KEY"))
    return None, None


def _client(kube: Kube, plan: TrialPlan, t: S3Target) -> Any:
    from wanwide.pipeline.runner.upload import Credentials, s3_client

    key, secret = _credentials(kube, plan)
    return s3_client(t.endpoint, t.region, Credentials(key, secret) if key and secret else None, read_timeout=10,
                     attempts=2)


def _answer(e: Exception) -> Exception:
    """``e`` when it is the store's answer (core/errors.py: the network, a refusal, a key not there); a bug is
    raised, not taken for the store's."""
    if not (transient(e) or refusal(e)):
        raise e
    return e


def store_error(e: Exception, t: S3Target) -> str:
    """One line saying why the store did not answer (never the keys)."""
    code = (getattr(e, "response", None) or {}).get("Error", {}).get("Code")
    why = f"refused ({code})" if code else f"unreachable ({type(e).__name__})"
    return f"results store {t.endpoint} bucket {t.bucket} {why}"


def probe(kube: Kube, plan: TrialPlan, instance: str | None = None) -> str | None:
    """None when the results store lists the trial's prefix, else why not."""
    t = target(kube, plan, instance)
    if t is None:
        return None
    try:
        _client(kube, plan, t).list_objects_v2(Bucket=t.bucket, Prefix=f"{t.prefix.strip('/')}/", MaxKeys=1)
    except Exception as e:
        return store_error(_answer(e), t)
    return None


def bundles(kube: Kube, plan: TrialPlan, attempt: int, instance: str | None = None
            ) -> tuple[list[str], list[str], str, str | None, dict[str, list[dict[str, Any]] | None] | None]:
    """(regions with a bundle manifest for this attempt, regions without, URI of the trial's results,
    why the store did not answer or None, and once every region's is there: region → the objectives its
    manifest recorded (its ``slo`` rows; None: none recorded))."""
    t = target(kube, plan, instance)
    if t is None:
        return list(plan.load_regions), [], "", None, None
    base = f"{t.prefix.strip('/')}/{plan.benchmark}/{plan.id}/"
    uri = f"s3://{t.bucket}/{base}"
    s3 = _client(kube, plan, t)
    found, missing, error = [], [], None
    manifests: dict[str, str] = {}
    for r in plan.load_regions:
        prefix = f"{base}{r}/attempt-{attempt}-"
        try:
            resp = s3.list_objects_v2(Bucket=t.bucket, Prefix=prefix)
        except Exception as e:  # the store down or refusing: keep waiting until the phase times out
            missing.append(r)
            error = store_error(_answer(e), t)
            continue
        keys = sorted(o["Key"] for o in resp.get("Contents", []) if o["Key"].endswith("/manifest.json"))
        if keys:
            found.append(r)
            manifests[r] = keys[-1]
        else:
            missing.append(r)
    if missing or error:
        return found, missing, uri, error, None
    slo: dict[str, list[dict[str, Any]] | None] = {}
    for r, key in manifests.items():  # read once: the step that reads them moves on to CleaningUp
        try:
            body = s3.get_object(Bucket=t.bucket, Key=key)["Body"].read(MANIFEST_MAX + 1)
        except Exception as e:  # the store down or refusing: wait as for a bundle not there yet
            return [x for x in found if x != r], [r], uri, store_error(_answer(e), t), None
        slo[r] = _objectives(body)
    return found, missing, uri, error, slo


def runner_said(kube: Kube, plan: TrialPlan, attempt: int, regions: list[str],
                instance: str | None = None) -> tuple[dict[str, str], dict[str, float]]:
    """(region → what its failed runner said of its failure in the bundle it stored for this attempt (its status:
    "<reason>: <message>"), region → how late it was where it refused to start late); regions with no bundle, or
    a store that does not answer, are left out."""
    t = target(kube, plan, instance)
    if t is None or not regions:
        return {}, {}
    base = f"{t.prefix.strip('/')}/{plan.benchmark}/{plan.id}/"
    s3 = _client(kube, plan, t)
    said: dict[str, str] = {}
    late: dict[str, float] = {}
    for r in regions:
        try:
            resp = s3.list_objects_v2(Bucket=t.bucket, Prefix=f"{base}{r}/attempt-{attempt}-")
            keys = sorted(o["Key"] for o in resp.get("Contents", []) if o["Key"].endswith("/manifest.json"))
            if keys:
                word, by = status_read(s3.get_object(Bucket=t.bucket, Key=keys[-1])["Body"].read(MANIFEST_MAX + 1))
                if word:
                    said[r] = word
                if by is not None:
                    late[r] = by
        except Exception:  # noqa: BLE001 - its word is a courtesy: the failure stands without it
            continue
    return said, late


def status_said(body: bytes) -> str | None:
    """A manifest's word on its failure (``lifecycle.failure_said``); None: not a manifest, or none in it."""
    return status_read(body)[0]


def status_read(body: bytes) -> tuple[str | None, float | None]:
    """A manifest's word on its failure and, for a refusal to start late, how late (``lifecycle.late_by``)."""
    import json

    from wanwide.core.lifecycle import failure_said, late_by

    try:
        m = json.loads(body) if len(body) <= MANIFEST_MAX else None
    except ValueError:
        return None, None
    return failure_said(m), late_by(m)


MANIFEST_MAX = 4 << 20  # a manifest is read whole for its objectives: a few kB; anything bigger is not one


def _objectives(body: bytes) -> list[dict[str, Any]] | None:
    """A manifest's ``slo`` rows (None: not recorded, or not a manifest: the bundle is stored all the same)."""
    import json

    from wanwide.core.lifecycle import recorded

    try:
        return recorded(json.loads(body)) if len(body) <= MANIFEST_MAX else None
    except ValueError:
        return None


def probes(kube: Kube, plan: TrialPlan, check: int, sources: list[str],
           instance: str | None = None) -> tuple[dict[tuple[str, str], list[float | None]], list[str], str | None]:
    """The network check's measurement ``check`` as the probe Jobs stored it: (samples per probed pair, None
    for a probe lost,
    sources without a result yet, why the store did not answer or None)."""
    import json

    from wanwide.core.contracts import probe_key

    t = target(kube, plan, instance)
    if t is None:
        return {}, list(sources), None
    s3 = _client(kube, plan, t)
    measured: dict[tuple[str, str], list[float | None]] = {}
    missing, error = [], None
    for src in sources:
        key = probe_key(t.prefix, plan.benchmark, plan.id, check, src)
        try:
            doc = json.loads(s3.get_object(Bucket=t.bucket, Key=key)["Body"].read())
        except Exception as e:  # not there yet, or the store down or refusing: keep waiting
            missing.append(src)
            if (getattr(_answer(e), "response", None) or {}).get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                error = store_error(e, t)
            continue
        for row in doc.get("targets") or []:
            measured[(src, row["region"])] = [None if x is None else float(x) for x in row.get("samples_ms") or []]
    return measured, missing, error
