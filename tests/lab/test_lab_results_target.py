"""Where the lab puts bundles, and what it refuses before running (pure: no root needed)."""

from __future__ import annotations

from pathlib import Path

import yaml

from wanwide.core.plan.load import load_documents
from wanwide.core.plan.trial import plan
from wanwide.providers.lab.results import bundles_root, check_results, s3_target

TOPOLOGY = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"generate": {"count": 2}}}


def _trials(results: dict) -> list:
    bench = {"apiVersion": "wanwide.io/v1alpha1", "kind": "Benchmark", "metadata": {"name": "b"},
             "spec": {"topologyRef": "t", "results": results,
                      "workload": {"scenarios": [{"name": "authenticate_user_and_validate_token"}]}}}
    docs = load_documents([yaml.safe_dump_all([TOPOLOGY, bench])])
    (b,) = docs.benchmarks
    return plan(b, docs.topology_for(b))


S3 = {"endpoint": "http://127.0.0.1:7070", "bucket": "res", "prefix": "p",
      "secretRef": {"name": "keys", "accessKeyKey": "MY_AK", "secretKeyKey": "MY_SK"}}


def test_s3_keys_named_before_anything_runs(monkeypatch) -> None:
    monkeypatch.delenv("MY_AK", raising=False)
    monkeypatch.delenv("MY_SK", raising=False)
    (err,) = check_results(_trials({"s3": S3}))
    assert "Benchmark b" in err and "MY_AK" in err and "MY_SK" in err and "res" in err
    monkeypatch.setenv("MY_AK", "a")
    monkeypatch.setenv("MY_SK", "b")
    assert check_results(_trials({"s3": S3})) == []
    t = s3_target(_trials({"s3": S3})[0])
    assert (t.endpoint, t.bucket, t.prefix, t.access_key_env) == ("http://127.0.0.1:7070", "res", "p", "MY_AK")


def test_object_bucket_claim_needs_kubernetes() -> None:
    (err,) = check_results(_trials({"objectBucketClaim": "obc"}))
    assert "objectBucketClaim needs the Kubernetes provider" in err and "results.s3" in err


def test_local_dir_or_output(tmp_path) -> None:
    (p,) = _trials({})
    assert bundles_root(tmp_path, p) == tmp_path / "bundles"
    (q,) = _trials({"localDir": str(tmp_path / "elsewhere")})
    assert bundles_root(tmp_path, q) == Path(tmp_path / "elsewhere")
    assert check_results([p, q]) == []
