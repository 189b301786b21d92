#!/usr/bin/env python3
"""The decoders measured for the ingest, on the same bundles, each in its own child process.

    PYTHONPATH=operator PY/bin/python bench/decoders.py --dir /var/tmp/wwb1m [--repeat 3] [--only NAME,…]

PY: a Python with wanwide's [report] extra, and duckdb and polars for those candidates
(absent ones are skipped). Every candidate reads every rally.json under DIR; the table ones
produce one row per iteration (Total) plus one per action, nested ones included:

- ``orjson+loop``: the previous ingest (orjson dicts walked by a Python loop), one process;
- ``json+loop``: the same with the stdlib parser;
- ``orjson parse``, ``msgspec decode``: parsing alone (no table): the floors of each parser;
- ``msgspec+columns ×1`` / ``×2``: wanwide's ingest in one process / one per CPU (the full table);
- ``duckdb``: ``read_json`` with an explicit schema, ``unnest`` to rows (its threads: the CPUs);
- ``polars``: ``read_json`` with an explicit schema, ``explode``/``unnest`` to rows;
- ``pyarrow.json``: ``read_json`` (newline-delimited only: one report must be one line, which
  ``rally task report --json`` never writes; the synthetic set is), flattened with compute.

DuckDB, polars and pyarrow get a schema two levels deep (actions and their children) and
give five columns (iteration, action, started, finished, duration), not wanwide's table with
workload and parameter columns: figures to compare parsing and flattening, not equals.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

CANDIDATES = ["orjson+loop", "json+loop", "orjson parse", "msgspec decode", "msgspec+columns ×1",
              "msgspec+columns ×2", "duckdb", "polars", "pyarrow.json"]


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("rally.json"))


def _duckdb(files: list[Path]) -> int:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {len(os.sched_getaffinity(0))}")
    act = "STRUCT(name VARCHAR, started_at DOUBLE, finished_at DOUBLE"
    it = f"STRUCT(\"timestamp\" DOUBLE, duration DOUBLE, atomic_actions {act}, children {act})[])[])"
    schema = f"STRUCT(subtasks STRUCT(workloads STRUCT(data {it}[])[])[])[]"
    rows = 0
    for f in files:
        q = f"""
        WITH t AS (SELECT unnest(tasks) AS t FROM read_json('{f}', columns = {{'tasks': '{schema}'}},
                                                             maximum_object_size = 2000000000)),
        st AS (SELECT unnest(t.subtasks) AS st FROM t),
        w AS (SELECT unnest(st.workloads) AS w FROM st),
        its AS (SELECT row_number() OVER () AS i, it FROM (SELECT unnest(w.data) AS it FROM w)),
        a0 AS (SELECT i, unnest(it.atomic_actions) AS a FROM its)
        SELECT i, 'Total' AS action, it.timestamp AS started, it.timestamp + it.duration AS finished,
               it.duration AS duration FROM its
        UNION ALL SELECT i, a.name, a.started_at, a.finished_at, a.finished_at - a.started_at FROM a0
        UNION ALL SELECT i, c.name, c.started_at, c.finished_at, c.finished_at - c.started_at
                  FROM (SELECT i, unnest(a.children) AS c FROM a0)
        """
        res = con.execute(q)
        rows += (res.to_arrow_table() if hasattr(res, "to_arrow_table") else res.arrow()).num_rows
    return rows


def _polars(files: list[Path]) -> int:
    import polars as pl

    leaf = pl.Struct({"name": pl.String, "started_at": pl.Float64, "finished_at": pl.Float64})
    act = pl.Struct({"name": pl.String, "started_at": pl.Float64, "finished_at": pl.Float64,
                     "children": pl.List(leaf)})
    it = pl.Struct({"timestamp": pl.Float64, "duration": pl.Float64, "atomic_actions": pl.List(act)})
    schema = {"tasks": pl.List(pl.Struct({"subtasks": pl.List(pl.Struct({"workloads": pl.List(
        pl.Struct({"data": pl.List(it)}))}))}))}
    rows = 0
    for f in files:
        df = pl.read_json(f, schema=schema)
        its = (df.explode("tasks").select(pl.col("tasks").struct.field("subtasks")).explode("subtasks")
               .select(pl.col("subtasks").struct.field("workloads")).explode("workloads")
               .select(pl.col("workloads").struct.field("data")).explode("data").unnest("data")
               .with_row_index("i"))
        total = its.select("i", pl.lit("Total").alias("action"), pl.col("timestamp").alias("started"),
                           (pl.col("timestamp") + pl.col("duration")).alias("finished"), "duration")
        a0 = its.select("i", "atomic_actions").explode("atomic_actions").unnest("atomic_actions")
        a1 = a0.select("i", "children").explode("children").unnest("children").drop_nulls("name")

        def rows_of(a):
            return a.select("i", pl.col("name").alias("action"), pl.col("started_at").alias("started"),
                            pl.col("finished_at").alias("finished"),
                            (pl.col("finished_at") - pl.col("started_at")).alias("duration"))

        rows += pl.concat([total, rows_of(a0), rows_of(a1)]).height
    return rows


def _pyarrow_json(files: list[Path]) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    leaf = [("name", pa.string()), ("started_at", pa.float64()), ("finished_at", pa.float64())]
    act = pa.struct([*leaf, ("children", pa.list_(pa.struct(leaf)))])
    it = pa.struct([("timestamp", pa.float64()), ("duration", pa.float64()), ("atomic_actions", pa.list_(act))])
    schema = pa.schema([("tasks", pa.list_(pa.struct([("subtasks", pa.list_(pa.struct([("workloads", pa.list_(
        pa.struct([("data", pa.list_(it))])))])))])))])
    rows = 0
    for f in files:
        t = pj.read_json(f, read_options=pj.ReadOptions(block_size=f.stat().st_size + 1),
                         parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))
        col = t.column("tasks").combine_chunks()
        for field in ("subtasks", "workloads", "data"):
            col = pc.struct_field(pc.list_flatten(col), field)
        its = pc.list_flatten(col)
        a0 = pc.list_flatten(pc.struct_field(its, "atomic_actions"))
        a1 = pc.list_flatten(pc.struct_field(a0, "children"))
        parts = [pa.table({"started": pc.struct_field(its, "timestamp"),
                           "duration": pc.struct_field(its, "duration")})]
        for a in (a0, a1):
            s, fin = pc.struct_field(a, "started_at"), pc.struct_field(a, "finished_at")
            parts.append(pa.table({"started": s, "duration": pc.subtract(fin, s)}))
        rows += pa.concat_tables(parts).num_rows
    return rows


def run_candidate(name: str, root: Path) -> dict:
    files = _files(root)
    t0 = time.perf_counter()
    if name in ("orjson+loop", "json+loop"):
        from wanwide.pipeline.results import sources
        from wanwide.pipeline.results.ingest import discover
        from wanwide.pipeline.results.reference import reference_frame

        if name == "json+loop":
            sources._orjson = None
        rows = len(reference_frame(discover([root])))
    elif name == "orjson parse":
        import orjson

        rows = 0
        for f in files:
            data = orjson.loads(f.read_bytes())
            rows += sum(len(w["data"]) for t in data["tasks"] for s in t["subtasks"] for w in s["workloads"])
            del data
    elif name == "msgspec decode":
        from wanwide.pipeline.results.decode import decode

        rows = 0
        for f in files:
            r = decode(f.read_bytes())
            rows += sum(len(w.data) for t in r.tasks for s in t.subtasks for w in s.workloads)
            del r
    elif name.startswith("msgspec+columns"):
        from wanwide.pipeline.results.ingest import ingest_paths

        rows = len(ingest_paths([root], workers=1 if name.endswith("×1") else None))
    elif name == "duckdb":
        rows = _duckdb(files)
    elif name == "polars":
        rows = _polars(files)
    elif name == "pyarrow.json":
        rows = _pyarrow_json(files)
    else:
        raise SystemExit(f"unknown candidate {name}")
    return {"candidate": name, "s": round(time.perf_counter() - t0, 3), "rows": rows}


def _available(name: str) -> bool:
    mod = {"duckdb": "duckdb", "polars": "polars", "msgspec decode": "msgspec"}.get(name)
    if mod is None:
        return True
    import importlib.util

    return importlib.util.find_spec(mod) is not None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, required=True, help="a set written by bench/ingest.py --dir")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", help="comma-separated candidates (default: all available)")
    ap.add_argument("--wait-quiet", type=float, metavar="PCT", help="before each measurement wait for CPU some avg10 < PCT")
    ap.add_argument("--quiet-timeout", type=float, default=1800, metavar="S",
                    help="give up waiting for a quiet machine after S seconds (default 1800)")
    ap.add_argument("--candidate", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.candidate:
        print(json.dumps(run_candidate(a.candidate, a.dir)))
        return 0
    names = a.only.split(",") if a.only else CANDIDATES
    print("| candidate | rows | time, s: median (min–max) | peak RSS, MB (tree) | load before → after, last run |")
    print("|---|---|---|---|---|")
    for name in names:
        if not _available(name):
            print(f"| {name} | skipped: not installed in {sys.executable} | | | |")
            continue
        runs = []
        for _ in range(a.repeat):
            if a.wait_quiet:
                benchlib.wait_quiet(a.wait_quiet, a.quiet_timeout, log=lambda m: print(m, file=sys.stderr))
            before = benchlib.load()
            r = benchlib.run([sys.executable, __file__, "--dir", str(a.dir), "--candidate", name])
            after = benchlib.load()
            if r["rc"] != 0:
                err = r["stderr"].strip().splitlines()[-1] if r["stderr"].strip() else f"exit {r['rc']}"
                print(f"| {name} | failed: {err[:150]} | | | |")
                break
            runs.append({**r["result"], "rss": r["tree_rss_mb"], "before": before, "after": after})
        else:
            print(f"| {name} | {runs[0]['rows']:,} | {benchlib.spread([x['s'] for x in runs])} | "
                  f"{benchlib.spread([x['rss'] for x in runs], '{:.0f}')} | "
                  f"{benchlib.load_text(runs[-1]['before'], runs[-1]['after'])} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
