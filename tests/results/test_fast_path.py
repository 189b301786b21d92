"""The typed, parallel ingest gives the reference loop's table on every data file, or its error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.results.conftest import same_table
from wanwide.pipeline.results import decode
from wanwide.pipeline.results.ingest import IngestError, discover, ingest_sources, read_part
from wanwide.pipeline.results.reference import reference_frame
from wanwide.pipeline.results.sources import source_input
from wanwide.pipeline.results.table import frame

DATA = Path(__file__).resolve().parents[1] / "data"
SOURCES = discover([DATA / "bundles", DATA / "rally", DATA / "rally-shapes"])
# What the typed decoder must take itself (not hand to the reference): every format 1.x report
# that is not broken. The rest is the old list format or unusable on purpose.
REFUSED = {"rally/galera-9-300ms-high-results.json", "rally-shapes/mixed/galera-3-300ms-old.json",
           "rally-shapes/old-results/keystone-galera-3-0ms-results.json",
           "rally-shapes/old-results/keystone-mariadb-3-50ms-results.json", "rally/malformed/duration-string.json",
           "rally/malformed/missing-started.json", "rally/malformed/truncated.json",
           "rally-shapes/unusable/not-rally/env.json", "rally-shapes/unusable/format-2/keystone-mariadb-0ms.json",
           "rally-shapes/unusable/truncated/keystone-mariadb-0ms.json"}


def _outcome(fn, sources):
    try:
        return fn(sources)
    except IngestError as e:
        return str(e)


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: str(s.path.relative_to(DATA)))
def test_each_file_as_the_reference_reads_it(source):
    fast, ref = _outcome(ingest_sources, [source]), _outcome(reference_frame, [source])
    if isinstance(ref, str):
        assert fast == ref  # the same one-line error
    else:
        assert not isinstance(fast, str), fast
        same_table(fast, ref)


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: str(s.path.relative_to(DATA)))
def test_typed_decoder_takes_format_1(source):
    """Not the reference in disguise: the decoder itself reads every well-formed 1.x report."""
    inp = source_input(source)
    if str(inp.rally.relative_to(DATA)) in REFUSED:
        with pytest.raises(decode.Refused):
            decode.decode(inp.rally.read_bytes())
    else:
        decode.decode(inp.rally.read_bytes())


def _usable() -> list:
    return [s for s in SOURCES if not isinstance(_outcome(reference_frame, [s]), str)]


@pytest.mark.parametrize("workers", [1, 2])
def test_all_together_in_one_or_two_processes(workers):
    srcs = _usable()
    same_table(ingest_sources(srcs, workers=workers), reference_frame(srcs))


def test_first_error_in_source_order_wins(tmp_path):
    """With a pool, the error raised is the first failing source's, as when reading one by one."""
    for name in ("a.json", "b.json"):
        shutil.copy(DATA / "rally" / "malformed" / ("truncated.json" if name == "a.json" else "duration-string.json"),
                    tmp_path / name)
    shutil.copy(DATA / "rally" / "mariadb-3-100ms-light-20261122.json", tmp_path / "c.json")
    srcs = discover([tmp_path])
    with pytest.raises(IngestError, match=r"a\.json: invalid JSON"):
        ingest_sources(srcs, workers=2)


def test_nested_deeper_and_odd_values(tmp_path):
    """Three levels of nesting, repeated names under different parents, null times, a dict error,
    an action named like the Total row: the fast path lays them out as the reference does."""
    def act(name, t, children=(), **kw):
        return {"name": name, "started_at": t, "finished_at": None if t is None else t + 0.5,
                "children": list(children), **kw}

    data = [
        {"timestamp": 1.0, "duration": 2.0, "idle_duration": None, "error": [],
         "atomic_actions": [act("a", 1.0, [act("b", 1.1, [act("c", 1.2), act("b", 1.3)]), act("c", 1.4)]),
                            act("b", None)]},
        {"timestamp": 3.0, "duration": 1.0, "error": {"odd": "error"},
         "atomic_actions": [act("Total", 3.0, failed=True), act("a", 3.5, [act("c", 3.6)])]},
        {"timestamp": 5, "duration": 1, "error": ["Boom"], "atomic_actions": []},
    ]
    report = {"info": {"format_version": "1.2"}, "tasks": [{"uuid": "u", "subtasks": [
        {"title": "s", "workloads": [{"scenario": {"X.y": {}}, "data": data}, {"scenario": "Z", "data": []}]},
        {"workloads": [{"scenario": {"X.y": {}}, "uuid": 7, "data": data[::-1]}]}]}]}
    p = tmp_path / "mariadb-3-nested.json"
    p.write_text(json.dumps(report))
    [src] = discover([p])
    decode.decode(p.read_bytes())  # taken by the typed decoder
    same_table(ingest_sources([src]), reference_frame([src]))


def test_frame_of_parts_read_back(tmp_path):
    """A part written to Parquet and read back joins others as the original would (the store's path)."""
    from wanwide.pipeline.results import partfile

    srcs = _usable()
    parts = [read_part(s) for s in srcs]
    back = []
    for i, p in enumerate(parts):
        partfile.write(p, tmp_path / f"{i}.parquet")
        back.append(partfile.read(tmp_path / f"{i}.parquet", p.workloads, p.params))
    same_table(frame(back), frame(parts))
    # and the file holds the table as the report has it (pandas reads it with the same values)
    one = pd.read_parquet(tmp_path / "0.parquet")
    want = frame([parts[0]])
    assert list(one.columns) == list(want.columns)
    for col in want.columns:
        assert one[col].astype(object).where(one[col].notna(), None).tolist() == \
            want[col].astype(object).where(want[col].notna(), None).tolist(), col
