"""Rendered objects with ``null`` where a map or a list belongs (issue 24): read as the API server stores them.

The openstack-helm keystone chart renders a Secret with ``annotations:`` and nothing under it; the
operator's apply then failed with ``argument of type 'NoneType' is not iterable`` for the whole
provisioning timeout. Here every reader of a rendered chart (documents → stages → next_step) takes
objects with nulls drawn at the positions templates leave empty, and must give exactly what it gives
for the same objects without those keys. The apply itself is tested against the real API server
(tests/cluster/test_apply_nulls.py).
"""

from __future__ import annotations

import yaml
from hypothesis import given, settings

from tests.nulls import nulls_in, objects_with_nulls, without
from wanwide.providers.kubernetes.render.chart import documents, next_step, stages

LABELS = {"wanwide.io/trial": "t", "wanwide.io/region": "r1"}


def _text(objs: list[dict]) -> str:
    return yaml.safe_dump_all(objs, sort_keys=False)


@settings(max_examples=200, deadline=None)
@given(objects_with_nulls())
def test_a_chart_with_nulls_stages_as_the_same_chart_without_them(drawn):
    with_nulls = documents(_text([o for o, _ in drawn]))
    plain = documents(_text([without(o, paths) for o, paths in drawn]))
    assert with_nulls == plain
    assert [nulls_in(o) for o in with_nulls] == [[] for _ in drawn]
    chart = stages(with_nulls, "keystone", "ns1", LABELS)
    assert chart == stages(plain, "keystone", "ns1", LABELS)
    assert [s.name for s in chart.stages] == ["main", "post-install 1"]
    assert all(o["metadata"]["labels"].items() >= LABELS.items() for o in chart.objects)
    first = next_step(chart, {})
    assert first.waiting == "post-install 1" and [o["kind"] for o in first.apply][-1] == "Job"
    assert next_step(chart, {"ns1/n-sync": "complete"}).done


def test_stages_read_null_metadata_maps_given_directly():
    """Objects handed to stages() without documents() (null annotations on a hook-less object, null labels
    on a hook Job) stage as well: the readers do not rely on the normalisation."""
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "labels": None, "annotations": {"helm.sh/hook": "post-install"}}}
    sec = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "annotations": None, "labels": None}}
    chart = stages([job, sec], "rel", "ns1", LABELS)
    assert [(s.name, [o["metadata"]["name"] for o in s.objects]) for s in chart.stages] == [
        ("main", ["s"]), ("post-install 0", ["j"])]
    assert chart.stages[0].objects[0]["metadata"]["labels"] == LABELS
