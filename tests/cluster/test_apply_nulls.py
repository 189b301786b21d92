"""Objects with ``null`` where a map or a list belongs, applied by the operator's client to the real API server.

Issue 24: the real keystone chart renders a Secret with ``annotations:`` and nothing under it, and
``Kube.apply`` read that as a map (``TypeError: argument of type 'NoneType' is not iterable``). Here
hypothesis draws a chart's worth of objects with nulls at the positions templates leave empty
(tests/nulls.py); each is applied twice by :class:`wanwide.providers.kubernetes.kube.client.Kube` (as given, and as
``helm template`` output read by the operator), and the API server must store what the same object
without those keys would be.
"""

from __future__ import annotations

import base64
import copy
import itertools

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from tests.nulls import copy_from_secret, nulls_in, objects_with_nulls, without
from wanwide.providers.kubernetes.kube.client import Kube, load_config
from wanwide.providers.kubernetes.render.chart import documents

pytestmark = pytest.mark.cluster
COUNTER = itertools.count()


@pytest.fixture(scope="module")
def kube_ns(testcluster):
    ns = testcluster.namespace("nulls")
    testcluster.kubectl("create", "secret", "generic", "source", "-n", ns, "--from-literal=k=v")
    yield Kube(load_config(str(testcluster.kubeconfig))), ns
    testcluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def _live(kube: Kube, o: dict, ns: str) -> dict:
    live = kube.get(o["apiVersion"], o["kind"], o["metadata"]["name"], ns)
    assert live is not None, f"{o['kind']}/{o['metadata']['name']} not stored"
    return live


SERVER_SET = ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


def _stored(live: dict) -> dict:
    """What the API server keeps of an object, but for the fields it sets itself (and the status)."""
    meta = {k: v for k, v in live["metadata"].items() if k not in SERVER_SET}
    notes = {k: v for k, v in (meta.pop("annotations", None) or {}).items() if "kubernetes.io/" not in k}
    meta |= {"annotations": notes} if notes else {}  # a controller's own (a Deployment's revision) come later
    out = {k: v for k, v in live.items() if k not in ("metadata", "status")} | {"metadata": meta}
    if live["kind"] == "Service":  # addresses allocated per Service
        out["spec"] = {k: v for k, v in out["spec"].items() if k not in ("clusterIP", "clusterIPs")}
    if live["kind"] == "Job":  # its selector and labels carry the Job's own uid and name
        out["spec"] = {k: v for k, v in out["spec"].items() if k != "selector"}
        for m in (meta, out["spec"]["template"]["metadata"]):
            m["labels"] = {k: v for k, v in (m.get("labels") or {}).items() if "uid" not in k and "job-name" not in k}
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=objects_with_nulls())
def test_objects_with_nulls_are_applied_as_the_api_server_stores_them(kube_ns, drawn):
    """Each object is applied with its nulls (as given, and as ``helm template`` output the operator reads),
    and its twin without those keys; the API server keeps the three alike."""
    kube, ns = kube_ns
    n = next(COUNTER)

    def named(o: dict, how: str) -> dict:
        o = copy.deepcopy(o)
        o["metadata"] |= {"name": f"{o['metadata']['name']}-{n}-{how}", "namespace": ns}
        return o

    given_ = [named(o, "given") for o, _ in drawn]
    rendered = documents(yaml.safe_dump_all([named(o, "rendered") for o, _ in drawn]))
    twins = [named(without(o, paths), "twin") for o, paths in drawn]
    assert [nulls_in(o) for o in rendered] == [[] for _ in drawn]  # what the operator reads holds no null
    for objs in (given_, rendered, twins):
        for o in objs:
            kube.apply(o)
    for g, r, t in zip(given_, rendered, twins, strict=True):
        want = _stored(_live(kube, t, ns))
        assert _stored(_live(kube, g, ns)) == want, g["kind"]
        assert _stored(_live(kube, r, ns)) == want, r["kind"]


def test_a_copy_from_secret_with_null_labels_and_data_is_filled_from_its_source(kube_ns):
    kube, ns = kube_ns
    o = copy_from_secret("copied", f"{ns}/source")
    o["metadata"]["namespace"] = ns
    kube.apply(o)
    live = _live(kube, o, ns)
    assert base64.b64decode(live["data"]["k"]).decode() == "v"
