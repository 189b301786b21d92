"""The measured tables of docs/results-study.md, from the data sets beside this file.

    .venv/bin/python docs/data/study.py            # print every block
    .venv/bin/python docs/data/study.py --write    # put them into docs/results-study.md
    .venv/bin/python docs/data/study.py --figures  # redraw its figures (docs/img/study/) with `wanwide report`

Each block is read exactly as ``wanwide report DIR`` and ``wanwide compare DIR DIR`` read a data
set (``wanwide results export``), with their statistics (pipeline/results/ci.py); the page holds
each block between ``<!-- data:NAME -->`` and ``<!-- /data -->``, and tests/results/test_study_page.py
fails when the page and the data disagree.
"""

from __future__ import annotations

import functools
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from wanwide.core.plan.rounds import plan_campaign
from wanwide.inputs import load_files
from wanwide.pipeline.results.ci import t975, verdict
from wanwide.pipeline.results.compare import COLUMNS, SelectError, compare, select
from wanwide.pipeline.results.headline import RELATIVE_BOUND
from wanwide.pipeline.results.paired import BLOCK, Paired, paired_change, unit_means
from wanwide.pipeline.results.report import read_sources
from wanwide.pipeline.results.runs import machine
from wanwide.pipeline.results.stats import STUDY_READ_PCT

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pageblocks  # noqa: E402  (beside this file)
import study_effects as se  # noqa: E402  (beside this file)

PAGE = HERE.parent / "results-study.md"
WHERE = {"r1": "beside the database (r1)", "r3": "far region (r3)"}


def _ci(v: float, lo: float, hi: float) -> str:
    """A median with its interval (over runs on the log scale when there are several: never below zero)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{v:.3g} s [n/a]"
    return f"{v:.3g} s [{lo:.3g}, {hi:.3g}]"


def load_region(d: Path) -> str:
    """MariaDB at 0 and 300 ms RTT, Rally beside the database or in a far region: the medians and the
    relative change with their 95 % intervals (runs as the unit), per scenario and action."""
    with tempfile.TemporaryDirectory() as tmp:
        r = read_sources([d], Path(tmp))
        base, _ = select(r.table.copy(), ["rtt=0ms"], "base", r.noisy, False)
        new, _ = select(r.table.copy(), ["rtt=300ms"], "new", r.noisy, False)
    c = compare(base, new)
    actions = ["Total", "keystone_v3.fetch_token", "keystone_v3.validate_token"]
    c = c[c["action"].isin(actions)].copy()
    c["order"] = c["action"].map({a: i for i, a in enumerate(actions)})
    c = c.sort_values(["loadRegion", "scenario", "order"])
    lines = ["| where Rally runs | scenario | action | 0 ms: median [95 % CI] (iterations/runs) "
             "| 300 ms: median [95 % CI] | change [95 % CI] | verdict |", "|---|---|---|---|---|---|---|"]
    for _, x in c.iterrows():
        change = (f"{x['delta']:+.0%} [{x['delta_lo']:+.0%}, {x['delta_hi']:+.0%}]"
                  if np.isfinite(x["delta_lo"]) else "n/a")
        lines.append(f"| {WHERE.get(x['loadRegion'], x['loadRegion'])} | {x['scenario'].split('.')[-1]} | {x['action']} "
                     f"| {_ci(x['base'], x['base_lo'], x['base_hi'])} ({x['base_n']}) "
                     f"| {_ci(x['new'], x['new_lo'], x['new_hi'])} ({x['new_n']}) "
                     f"| {change} | {CHANGE[x['verdict']]} |")
    runs = r.runs
    noisy = sorted(f"{t}" for _, t in r.noisy)
    lines += ["", f"{len(runs)} runs ({len(r.manifests)} bundles), noisy by the report's rule: "
              f"{', '.join(noisy) if noisy else 'none'}."]
    return "\n".join(lines)


SCEN = {"KeystoneBasic.authenticate_user_and_validate_token": "authenticate", "KeystoneBasic.create_user_update_password":
        "create_user_update_password"}
CHANGE = {"up": "grows", "down": "shrinks", "same": f"no effect (within ±{RELATIVE_BOUND:.0%})", "unclear": "cannot tell",
          "too-few": "cannot tell (n too small)"}


@functools.lru_cache(maxsize=4)
def _read(d: Path):
    with tempfile.TemporaryDirectory() as tmp:
        return read_sources([d], Path(tmp))


def _pct(v: float, lo: float, hi: float) -> str:
    return f"{v:+.0%} [{lo:+.0%}, {hi:+.0%}]" if np.isfinite(lo) and np.isfinite(hi) else f"{v:+.0%} [n/a]"


def _mean(x: pd.Series, side: str) -> str:
    return f"{_ci(x[side], x[side + '_lo'], x[side + '_hi'])} ({x[side + '_n']})"


def _cmp(t: pd.DataFrame, noisy: set, base: list[str], new: list[str], stat: str = "mean",
         new_rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """``compare`` of the Total over the rows matching ``base`` and ``new`` (``new`` from ``new_rows`` if given):
    each side's mean with its interval over runs (the changes are paired: ``paired_change``)."""
    try:
        b, _ = select(t.copy(), base, "base", noisy, False)
        n, _ = select((t if new_rows is None else new_rows).copy(), new, "new", noisy, False)
    except SelectError:  # a side not measured (yet)
        return pd.DataFrame(columns=["regions", *COLUMNS])
    c = compare(b, n, stat)
    return c[c["action"] == "Total"].copy()


def _sort(c: pd.DataFrame, *cols: str) -> pd.DataFrame:
    c = c.copy()
    if "regions" in c:
        c["_r"] = c["regions"].astype(int)
    return c.sort_values([("_r" if x == "regions" else x) for x in cols])


def cpu_per_iteration(manifests: list[dict]) -> dict[tuple[str, str], tuple[float, float]]:
    """(benchmark, trial) → (CPU-seconds the experiment used per measured iteration, CPU pressure %): the
    CPU busy minus the CPU used outside the experiment, over the measured window, on every core, shared
    by every region's iterations of the trial (its runs start together)."""
    acc: dict[tuple[str, str], list] = {}
    for m in manifests:
        c, it = m.get("contention") or {}, (m.get("rally") or {}).get("iterations")
        if (m.get("status") or {}).get("result") != "succeeded" or c.get("busy_pct") is None or not it:
            continue
        k = (str(m.get("benchmark")), str((m.get("trial") or {}).get("id")))
        if c.get("own_cpu_s") is not None:  # recorded by the runner (from issue 46 on)
            cpu_s = float(c["own_cpu_s"])
        else:
            cpus = (m.get("host") or {}).get("cpu_count") or 2
            cpu_s = max(0.0, c["busy_pct"] - (c.get("foreign_cpu_pct") or 0.0)) / 100 * cpus * c["window_s"]
        a = acc.setdefault(k, [0.0, 0, [], []])
        a[0] = max(a[0], cpu_s)  # one window for the trial: the largest of its runs'
        a[1] += it
        a[3].append(c.get("cpu_some_pct") or np.nan)
    return {k: (a[0] / a[1], float(np.nanmedian(a[3]))) for k, a in acc.items()}


def _cost(r, **params: str) -> str:
    """Median over the matching trials of their CPU-seconds per iteration, and of their CPU pressure."""
    t = r.table.drop_duplicates(["benchmark", "trial_id"])
    for k, v in params.items():
        t = t[t[f"param.{k}"].astype(str) == v]
    cost = cpu_per_iteration(r.manifests)
    vals = [cost[(str(b), str(i))] for b, i in zip(t["benchmark"], t["trial_id"], strict=True) if (str(b), str(i)) in cost]
    if not vals:
        return "—"
    return f"{np.median([v[0] for v in vals]):.2f} s · {np.median([v[1] for v in vals]):.0f} %"


def _table(lines: list[str], what: str) -> str:
    """A table, or what is not measured yet when it has no row."""
    return "\n".join(lines) if len(lines) > 2 else f"*Not measured yet: {what}.*"


def _noise(r) -> str:
    runs = r.runs
    ok = runs[runs["result"] == "succeeded"]
    cp, fc = ok["cpu_pressure_pct"].astype(float), ok["foreign_cpu_pct"].astype(float)
    return (f"{len(ok)} runs; CPU pressure over their measured windows median {cp.median():.0f} % "
            f"(range {cp.min():.0f}–{cp.max():.0f} %), CPU used outside the experiment median {fc.median():.1f} % "
            f"(max {fc.max():.1f} %); noisy by the report's rule: {int(ok['noisy'].astype(bool).sum())}.")


# The campaign's first two machines predate host.boot_id in the manifests (sitting 6 on): sittings 1-4 ran on the
# first (2026-11-27 10:45 - 11-28 01:59), sitting 5 on the second (11-28 02:57-05:07); see "Sittings differ" on the page.
SECOND_MACHINE_FROM = "2026-11-28T02:00"


def machine_of(m: dict) -> str:
    """A run's machine: the manifest's CPU model and boot id, else the campaign's first or second machine by date."""
    said = machine(m.get("host") or {})
    if said:
        return said
    return "first machine" if str((m.get("start") or {}).get("actual") or "") < SECOND_MACHINE_FROM else "second machine"


def _units(r, regions: set[str] | None = None) -> pd.DataFrame:
    return unit_means(r.table, r.manifests, regions, machine_of)


def _at(u: pd.DataFrame, scenario: str | None = None, **params: str) -> pd.DataFrame:
    """The unit rows of one scenario (if given) whose parameters have these values."""
    if scenario is not None:
        u = u[u["scenario"] == scenario]
    for k, v in params.items():
        u = u[u[f"param.{k}"] == v]
    return u


def _paired(p: Paired) -> str:
    """A paired change with its interval and what its blocks shared."""
    if not p.blocks:
        return "—"
    on = ("deployment" if p.shared == p.blocks else "round") + ("s" if p.blocks > 1 else "")
    mixed = f", {p.shared} on one deployment" if 0 < p.shared < p.blocks else ""
    near = p.defined and max(abs(p.lo), abs(p.hi)) < 1  # near the ±10 % bound a rounded +10 % would mislead
    cell = f"{p.value:+.1%} [{p.lo:+.1%}, {p.hi:+.1%}]" if near else _pct(p.value, p.lo, p.hi)
    return f"{cell} ({p.blocks} {on}{mixed})"


def sizes(d: Path) -> str:
    """Light load, no delay: each backend's mean iteration time per size, and Galera against MariaDB paired
    on the round (both backends' deployments of one round, on one machine)."""
    r = _read(d)
    c = _cmp(r.table, r.noisy, ["backend=mariadb", "rtt=0ms", "load=light"], ["backend=galera", "rtt=0ms", "load=light"])
    u = _at(_units(r), rtt="0ms", load="light")
    lines = ["| regions | scenario | MariaDB: mean [95 % CI] (iterations/runs) | Galera: mean [95 % CI] "
             "| Galera vs MariaDB, paired on the round [95 % CI] | verdict | CPU-s per iteration · CPU pressure (MariaDB / Galera) |",
             "|---|---|---|---|---|---|---|"]
    for _, x in _sort(c, "regions", "scenario").iterrows():
        n, sc = str(x["regions"]), x["scenario"]
        p = paired_change(_at(u, backend="mariadb", regions=n, scenario=sc),
                          _at(u, backend="galera", regions=n, scenario=sc), BLOCK)
        said = p.verdict(RELATIVE_BOUND)
        word = {"up": "Galera slower", "down": "Galera faster"}.get(said, CHANGE[said])
        cost = " / ".join(_cost(r, backend=b, regions=n, rtt="0ms", load="light") for b in ("mariadb", "galera"))
        lines.append(f"| {x['regions']} | {SCEN.get(sc, sc)} | {_mean(x, 'base')} | {_mean(x, 'new')} "
                     f"| {_paired(p)} | {word} | {cost} |")
    return _table(lines, "no light-load trials at RTT 0 of both backends in the data")


def delay(d: Path) -> str:
    """Light load: each backend's mean iteration time at RTT 0 and its change at 100 and 300 ms, per size,
    paired on the round (one deployment where the RTTs share it)."""
    r = _read(d)
    u = _at(_units(r), load="light")
    c = pd.concat([_cmp(r.table, r.noisy, [f"backend={be}", "rtt=0ms", "load=light"], [f"backend={be}", "rtt=0ms", "load=light"])
                   .assign(backend=be) for be in ("mariadb", "galera")])
    lines = ["| backend | regions | scenario | RTT 0: mean [95 % CI] (iterations/runs) | RTT 100 ms: change, paired [95 % CI] "
             "| RTT 300 ms: change, paired [95 % CI] | verdict at 300 ms | CPU-s per iteration · CPU pressure at RTT 0 |",
             "|---|---|---|---|---|---|---|---|"]
    for _, x in c.assign(_b=c["backend"] != "mariadb", _r=c["regions"].astype(int)).sort_values(["_b", "_r", "scenario"]).iterrows():
        be, n, sc = x["backend"], str(x["regions"]), x["scenario"]
        here = _at(u, backend=be, regions=n, scenario=sc)
        p = {rtt: paired_change(_at(here, rtt="0ms"), _at(here, rtt=rtt), BLOCK) for rtt in ("100ms", "300ms")}
        if not (p["100ms"].blocks or p["300ms"].blocks):
            continue
        word = CHANGE[p["300ms"].verdict(RELATIVE_BOUND)] if p["300ms"].blocks else "—"
        lines.append(f"| {'MariaDB' if be == 'mariadb' else 'Galera'} | {n} | {SCEN.get(sc, sc)} | {_mean(x, 'base')} "
                     f"| {_paired(p['100ms'])} | {_paired(p['300ms'])} | {word} "
                     f"| {_cost(r, backend=be, regions=n, rtt='0ms', load='light')} |")
    return _table(lines, "no light-load trials at RTT 0 and 100 or 300 ms of one backend in the data")


def high(d: Path) -> str:
    """High load (a Rally in every region, one user each): the mean in r1 (beside MariaDB) and in the far
    regions (pooled: exchangeable on a uniform WAN; each region's own numbers are in the report's tables),
    and far against r1 paired on the trial (both measured at once on one deployment). Not against light
    load: light runs 10 users in r1, high 1 per region, so their difference would be the concurrency's."""
    r = _read(d)
    t = r.table
    near = _at(_units(r, {"r1"}), load="high")
    far = _at(_units(r, set(t["region"].astype(str)) - {"r1"}), load="high")
    rows = []
    for be in ("mariadb", "galera"):
        for rtt in ("0ms", "100ms", "300ms"):
            conds = [f"backend={be}", f"rtt={rtt}", "load=high"]
            c = _cmp(t[t["region"] == "r1"], r.noisy, conds, conds, new_rows=t[t["region"] != "r1"])
            rows += [(be != "mariadb", int(x["regions"]), int(rtt[:-2]), x["scenario"], be, rtt, x) for _, x in c.iterrows()]
    lines = ["| backend | regions | RTT | scenario | r1: mean [95 % CI] (iterations/runs) | far regions: mean [95 % CI] "
             "| far vs r1, paired on the trial [95 % CI] | verdict | CPU-s per iteration · CPU pressure |",
             "|---|---|---|---|---|---|---|---|---|"]
    for *_, sc, be, rtt, x in sorted(rows, key=lambda z: z[:4]):
        n = str(x["regions"])
        p = paired_change(_at(near, backend=be, regions=n, rtt=rtt, scenario=sc),
                          _at(far, backend=be, regions=n, rtt=rtt, scenario=sc), BLOCK)
        lines.append(f"| {'MariaDB' if be == 'mariadb' else 'Galera'} | {n} | {rtt} | {SCEN.get(sc, sc)} "
                     f"| {_mean(x, 'base')} | {_mean(x, 'new')} | {_paired(p)} "
                     f"| {CHANGE[p.verdict(RELATIVE_BOUND)]} | {_cost(r, backend=be, regions=n, rtt=rtt, load='high')} |")
    return _table(lines, "no high-load trials in the data")


def failures(d: Path) -> str:
    """Failed iterations per backend, size, load and RTT, with the Clopper-Pearson 95 % interval."""
    from scipy.stats import binomtest

    r = _read(d)
    t = r.table[r.table["action"] == "Total"]
    lines = ["| backend | regions | load | RTT | iterations | failed | failure rate [95 % CI] | study |", "|---|---|---|---|---|---|---|---|"]
    g = t.groupby(["param.backend", "param.regions", "param.load", "param.rtt"], observed=True)
    keyf = lambda k: (k[0] != "mariadb", int(k[1]), k[2], int(str(k[3]).rstrip("ms")))  # noqa: E731
    for k in sorted(g.groups, key=keyf):
        x = g.get_group(k)
        n, bad = len(x), int(x["error_type"].notna().sum())
        ci = binomtest(bad, n).proportion_ci(0.95, method="exact")
        study = "0.98 at 45 regions, high load" if k[0] == "mariadb" and k[2] == "high" else ""
        lines.append(f"| {'MariaDB' if k[0] == 'mariadb' else 'Galera'} | {k[1]} | {k[2]} | {k[3]} | {n} | {bad} "
                     f"| {bad / n:.3f} [{ci.low:.3f}, {ci.high:.3f}] | {study} |")
    return "\n".join(lines)


def noise(d: Path) -> str:
    """The machine while the campaign measured: its pressure per size and backend, and the sittings."""
    r = _read(d)
    runs = r.runs.copy()
    ok = runs[runs["result"] == "succeeded"].copy()
    ok["start"] = pd.to_datetime(ok["start"], utc=True)
    params = r.table.drop_duplicates(["benchmark", "trial_id"]).set_index(["benchmark", "trial_id"])
    ok = ok.join(params[["param.backend", "param.regions", "param.load"]], on=["benchmark", "trial"])
    lines = ["| backend | regions | load | runs | CPU pressure, median (range) | CPU outside the experiment, median (max) | noisy |",
             "|---|---|---|---|---|---|---|"]
    for k, x in ok.groupby(["param.backend", "param.regions", "param.load"], observed=True):
        cp, fc = x["cpu_pressure_pct"].astype(float), x["foreign_cpu_pct"].astype(float)
        lines.append(f"| {'MariaDB' if k[0] == 'mariadb' else 'Galera'} | {k[1]} | {k[2]} | {len(x)} "
                     f"| {cp.median():.0f} % ({cp.min():.0f}–{cp.max():.0f}) | {fc.median():.1f} % ({fc.max():.1f}) "
                     f"| {int(x['noisy'].astype(bool).sum())} |")
    days = ok["start"].dt.strftime("%Y-%m-%d %H:%M")
    lines += ["", f"{ok.drop_duplicates(['benchmark', 'trial']).shape[0]} trials, {days.min()} – {days.max()} UTC: " + _noise(r)]
    return "\n".join(lines)


def _rw_runs(d: Path) -> tuple[pd.DataFrame, dict[str, list[float]]]:
    """Per run: scenario (its short name), reads, writes, read share; and per scenario the CPU-seconds one
    iteration cost in each trial (the experiment's CPU over the measured window)."""
    from wanwide.pipeline.results.stats import read_write_runs

    r = _read(d)
    runs = read_write_runs(r.manifests)
    runs["scenario"] = runs["scenario"].astype(str).str.rsplit(".", n=1).str[-1]
    cost = cpu_per_iteration(r.manifests)
    cpu: dict[str, list[float]] = {}
    for m in r.manifests:
        k = (str(m.get("benchmark")), str((m.get("trial") or {}).get("id")))
        if k in cost:
            cpu.setdefault(str(m["trial"]["parameters"].get("scenario")), []).append(cost[k][0])
    return runs, cpu


def read_write(d: Path) -> str:
    """Reads and writes per scenario, one scenario per task (statement counters before and after it), each
    run's share, and the CPU one iteration costs on this machine."""
    runs, cpu = _rw_runs(d)
    lines = ["| scenario | study: % reads / % writes | wanwide: % reads, median [min, max] over runs | runs | "
             "CPU s per iteration (median over runs) |", "|---|---|---|---|---|"]
    for name, sr in STUDY_READ_PCT.items():
        sc = name.rsplit(".", 1)[-1]
        share = runs.loc[runs["scenario"] == sc, "read_pct"]
        if not len(share):
            lines.append(f"| {sc} | {sr:.2f} / {100 - sr:.2f} | not measured | 0 | — |")
            continue
        cs = cpu.get(sc)
        lines.append(f"| {sc} | {sr:.2f} / {100 - sr:.2f} | {share.median():.2f} [{share.min():.2f}, {share.max():.2f}] "
                     f"| {len(share)} | {f'{np.median(cs):.2f}' if cs else '—'} |")
    return "\n".join(lines)


def rw_verdict(runs: pd.DataFrame) -> str:
    """The study's finding that create_user_update_password writes most of its scenarios, against per-run
    read shares: agrees when every run says so (its fewest writes above every other scenario's most),
    contradicts when every run says another writes more, else cannot tell."""
    w = (100 - runs["read_pct"]).groupby(runs["scenario"]).agg(["min", "max", "size"])
    top = "create_user_update_password"
    if top not in w.index or len(w) < len(STUDY_READ_PCT) or (w["size"] < 2).any():
        return "**cannot tell (n too small)**: fewer than 2 runs of some scenario"
    others = w.drop(index=top)
    if w.at[top, "min"] > others["max"].max():
        return "**agrees**: the most writes in every run (its fewest above every other scenario's most)"
    if w.at[top, "max"] < others["min"].max():
        return f"**contradicts**: {others['min'].idxmax()} writes more in every run"
    return "**cannot tell**: the runs' ranges overlap"


def _rw_finding() -> dict[str, str]:
    """The read/write row of the first table, from docs/data/study-rw: its finding, the study's values, ours, verdict."""
    d = HERE / "study-rw"
    row = {"finding": "Read/write share per scenario (one scenario per task): create_user_update_password writes most",
           "study": ", ".join(f"{short} {STUDY_READ_PCT[full]:.2f}/{100 - STUDY_READ_PCT[full]:.2f} %" for full, short in SCEN.items())}
    if not (d / "dataset.json").is_file():
        return row | {"ours": "—", "verdict": "**not measured yet** (manifests/examples/study-rw.yaml)"}
    runs, _cpu = _rw_runs(d)
    share = runs.groupby("scenario")["read_pct"].agg(["median", "size"])

    def cell(sc: str) -> str:
        if sc not in share.index:
            return "not measured"
        return f"{share.at[sc, 'median']:.2f}/{100 - share.at[sc, 'median']:.2f} % (median of {int(share.at[sc, 'size'])})"

    return row | {"ours": ", ".join(f"{short} {cell(full.rsplit('.', 1)[-1])}" for full, short in SCEN.items()),
                  "verdict": rw_verdict(runs)}


# Sitting 1 ran before the bundles recorded their link layout (deployment.layout); its 9-region deployments'
# layouts are the lab.log's "Provisioning: 9 namespaces, shaper linkemu, mesh layout (36 links)" / "star layout
# (9 links, hubs _hub)" lines of 2026-11-27 10:45-12:47 (a bug wired four of them as a mesh: results-study.md, Design).
SITTING1_LAYOUT = {"4a38e": "mesh", "533f9": "mesh", "5e3cc": "mesh", "b9750": "mesh", "e7f5f": "star", "77e3b": "star"}


def trial_means(r, benchmarks: tuple[str, ...] = ("study-9", "study-9-high")) -> pd.DataFrame:
    """Per trial and scenario: the mean Total of its successful iterations (every region's), with the trial's
    point (backend, load, rtt), its deployment and that deployment's link layout."""
    t = r.table
    t = t[(t["action"] == "Total") & t["error_type"].isna() & t["benchmark"].isin(benchmarks)]
    g = t.groupby(["benchmark", "trial_id", "scenario"], observed=True)
    out = g["action_duration"].mean().rename("mean").reset_index()
    for k in ("backend", "load", "rtt"):
        out[k] = g[f"param.{k}"].first().astype(str).to_numpy()
    dep = {(str(m.get("benchmark")), str((m.get("trial") or {}).get("id"))): m.get("deployment") or {} for m in r.manifests}
    ids = [str(dep.get((b, i), {}).get("id")) for b, i in zip(out["benchmark"], out["trial_id"], strict=True)]
    out["deployment"] = ids
    out["layout"] = [dep.get((b, i), {}).get("layout") or SITTING1_LAYOUT.get(d, "unknown")
                     for b, i, d in zip(out["benchmark"], out["trial_id"], ids, strict=True)]
    return out


def layout_effect(means: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Mesh- against star-wired deployments of the same points: per point (benchmark, backend, rtt, scenario)
    the log of the mesh trial's mean over the geometric mean of its star trials; per mesh deployment the mean of
    its points' logs (a deployment's points share its state: it is the unit); over the deployments a t interval
    (the report's ``t975`` and ``verdict``). Returns the per-deployment rows and the summary (ratio, lo, hi, n, verdict)."""
    key = ["benchmark", "backend", "rtt", "scenario"]
    star = means[means["layout"] == "star"].groupby(key)["mean"].agg(
        ref=lambda x: float(np.exp(np.log(x).mean())), star_runs="size").reset_index()
    mesh = means[means["layout"] == "mesh"].merge(star, on=key)
    mesh["log_ratio"] = np.log(mesh["mean"] / mesh["ref"])
    per = mesh.groupby("deployment").agg(
        benchmark=("benchmark", "first"), backend=("backend", "first"), rtts=("rtt", lambda x: ", ".join(sorted(set(x), key=lambda v: int(v[:-2])))),
        points=("log_ratio", "size"), star_runs=("star_runs", "min"), log_ratio=("log_ratio", "mean"),
        lo=("log_ratio", "min"), hi=("log_ratio", "max")).reset_index()
    n = len(per)
    summary: dict = {"n": n, "ratio": float(np.exp(per["log_ratio"].mean())) if n else np.nan, "lo": np.nan, "hi": np.nan}
    if n >= 2:
        m, half = per["log_ratio"].mean(), t975(n - 1) * per["log_ratio"].std(ddof=1) / np.sqrt(n)
        summary.update(lo=float(np.exp(m - half)), hi=float(np.exp(m + half)))
    said = verdict(summary["lo"] - 1, summary["hi"] - 1, RELATIVE_BOUND)
    summary["verdict"] = {"up": "mesh slower", "down": "mesh faster"}.get(said, CHANGE[said])
    return per, summary


def layout(d: Path) -> str:
    """Sitting 1's four mesh-wired 9-region deployments against the star-wired repetitions of the same points."""
    per, s = layout_effect(trial_means(_read(d)))
    lines = ["| mesh deployment | benchmark | backend | RTTs | points (× 2 scenarios) | star runs per point | mesh vs star: "
             "geometric mean [range over points] |", "|---|---|---|---|---|---|---|"]
    for _, x in per.sort_values(["benchmark", "backend", "deployment"]).iterrows():
        lines.append(f"| {x['deployment']} | {x['benchmark']} | {'MariaDB' if x['backend'] == 'mariadb' else 'Galera'} | {x['rtts']} "
                     f"| {x['points'] // 2} | {x['star_runs']} | {np.exp(x['log_ratio']) - 1:+.0%} "
                     f"[{np.exp(x['lo']) - 1:+.0%}, {np.exp(x['hi']) - 1:+.0%}] |")
    if len(lines) == 2:
        return "*Not measured yet: the star-wired repetitions (rounds 2–3 of study-9 and study-9-high) of the mesh-wired points.*"
    ci = (f"{s['ratio'] - 1:+.0%} [{s['lo'] - 1:+.0%}, {s['hi'] - 1:+.0%}] (t interval over {s['n']} deployments)"
          if np.isfinite(s["lo"]) else f"{s['ratio'] - 1:+.0%} [n/a] ({s['n']} deployment)")
    return "\n".join(lines + ["", f"Mesh against star, the deployments' mean: {ci}: **{s['verdict']}**."])


def _trials(r) -> str:
    ok = r.runs[r.runs["result"] == "succeeded"]
    return f"{ok.drop_duplicates(['benchmark', 'trial'])['trial'].count()} trials"


STUDY = HERE.parent.parent / "manifests/examples/study.yaml"
MORE_ROUNDS = 3  # the page's command for more blocks: `--more-rounds 3`, rounds 6–8 of every Benchmark


@functools.lru_cache(maxsize=1)
def _plans() -> dict[str, tuple[list, list]]:
    """Per Benchmark of the campaign (manifests/examples/study.yaml), its trials as written and those of the rounds
    the page's command adds — planned as `wanwide lab run --more-rounds` plans them."""
    docs = load_files([str(STUDY)]).docs
    written, more = (plan_campaign(docs.benchmarks, docs.topology_for, sizes) for sizes in ((), (MORE_ROUNDS,)))
    return {b.metadata.name: ([t for t in written if t.benchmark == b.metadata.name],
                              [t for t in more if t.benchmark == b.metadata.name]) for b in docs.benchmarks}


def planned() -> dict[str, tuple[frozenset, frozenset]]:
    """Per Benchmark, the trial ids as written and those of the rounds the page's command adds."""
    return {b: (frozenset(t.id for t in w), frozenset(t.id for t in m)) for b, (w, m) in _plans().items()}


def open_rounds(done: dict[str, set], rtt: str = "0ms") -> dict[str, list[int]]:
    """Per Benchmark, the rounds of the page's command (counted from 1) none of whose trials at this RTT (the size
    comparisons': no delay) has run: a round whose 0 ms trials are still to run can still be a size block."""
    out: dict[str, list[int]] = {}
    for b, (_, more) in _plans().items():
        ran = {t.repetition for t in more if t.id in done.get(b, set()) and t.parameters.get("rtt") == rtt}
        out[b] = sorted({t.repetition + 1 for t in more} - {r + 1 for r in ran})
    return out


def _done(r) -> dict[str, set]:
    """The trial ids with a succeeded run, per Benchmark."""
    ok = r.runs[r.runs["result"] == "succeeded"].drop_duplicates(["benchmark", "trial"])
    return {b: set(g["trial"].astype(str)) for b, g in ok.groupby("benchmark")}


KIND = {"finding": "finding", "control": "**control**"}


@functools.lru_cache(maxsize=2)
def context(d: Path) -> se.Ctx:
    """The unit tables (Total and the actions' sum; every region, r1, the far regions), CPU per trial and the
    study's figures read off, for the reading in round trips (docs/data/study_effects.py)."""
    r = _read(d)
    t = r.table
    ta = se.with_actions(t)
    far = set(t["region"].astype(str)) - {"r1"}

    def u(tab: pd.DataFrame, regions: set[str] | None, action: str) -> pd.DataFrame:
        return se.units(tab, r.manifests, machine_of, regions, action)

    return se.Ctx(u(t, None, "Total"), u(t, {"r1"}, "Total"), u(t, far, "Total"), u(ta, None, se.ACTIONS),
                  u(ta, {"r1"}, se.ACTIONS), u(ta, far, se.ACTIONS), cpu_per_iteration(r.manifests), t, se.figures(),
                  lambda be, n, load: _fail_rate(t, be, n, load))


def family(d: Path) -> tuple[int, float]:
    """How many intervals the findings table reads verdicts from, and the level each is read at (Bonferroni)."""
    rows = se.findings(context(d), 0.95)
    m = sum(1 for x in rows if x["effect"] is not None and x["effect"].defined)
    return m, se.family_level(m)


def findings(d: Path) -> str:
    """The first table: every finding of the study (its words, its size read off its figures), wanwide's size with
    its 95 % interval and the interval at the family's level, and the verdict read from the latter and why."""
    r = _read(d)
    done = _done(r)
    progress = ", ".join(f"{b} {len(done.get(b, set()) & w)}/{len(w)}" for b, (w, _) in planned().items())
    more = [(len(done.get(b, set()) & m), len(m)) for b, (_, m) in planned().items()]
    c = context(d)
    m, level = family(d)
    rows95, rows = se.findings(c, 0.95), se.findings(c, level)
    head = ["| # | study finding (its words; the reading chosen) | kind | study's size (read off its figure) "
            "| wanwide [95 %] | the verdict's interval, at the family's level | verdict, and why |",
            "|---|---|---|---|---|---|---|"]
    lines = []
    for i, (a, b) in enumerate(zip(rows95, rows, strict=True), 1):
        e = b["effect"]
        fam = "—" if e is None or not e.blocks else (se.pct(e) if b.get("unit") == "%" else se.fmt(e, 2) + " round trips")
        lines.append(f"| {i} | {b['finding']} | {KIND[b['kind']]} | {b['study']} | {a['ours']} | {fam} | {b['verdict']} |")
    rw = _rw_finding()
    lines.append(f"| {len(rows) + 1} | {rw['finding']} | finding | {rw['study']} | {rw['ours']} | — | {rw['verdict']} |")
    summary = (f"{m} intervals carry a verdict in this table; each verdict is read from its interval at "
               f"{level:.2%} (Bonferroni: all {m} hold together with 95 %), the 95 % one beside it.")
    state = "complete" if all(w <= done.get(b, set()) for b, (w, _) in planned().items()) else "so far"
    return "\n".join(head + lines + ["", summary, "",
                                      f"Campaign {state}: {progress} trials; rounds 6–8 (more blocks, below): "
                                      f"{sum(a for a, _ in more)} of {sum(n for _, n in more)} "
                                      f"({_trials(r)} with data)."])


def rtt(d: Path) -> str:
    """Every point with RTTs: the delay's effect in seconds and round trips (per iteration and per user's request
    chain), the ratio beside it, and what the row can show (a control or an effect)."""
    c = context(d)
    return se.rtt_table(se.delay_effects(c.light, c.near, c.far))


def machines(d: Path) -> str:
    return se.machine_blocks(context(d).light)


def controls(d: Path) -> str:
    c = context(d)
    return se.controls_table(se.size_controls(c.light, c.cost, c.table))


def wan(d: Path) -> str:
    return se.wan_table(se.wan_checked(_read(d).manifests))


def wan_during(d: Path) -> str:
    """The WAN during the load between the regions themselves (network.during.pairs): per pair the probes sent and
    lost — inside a fault window and outside it — and the median round trip against the plan's."""
    r = _read(d)
    lines = ["| run | pair (from → to) | kind | probes | lost in a fault window | lost outside | median RTT (ms) | "
             "asked (ms) |", "|---|---|---|---|---|---|---|---|"]
    for m in r.manifests:
        during = (m.get("network") or {}).get("during") or {}
        # the fault windows as the member watch recorded them (the manifest's database.members)
        spans = [(w["start_s"], w["end_s"]) for w in ((m.get("database") or {}).get("members") or {}).get("windows", [])]
        run = f"{m.get('benchmark')} {(m.get('trial') or {}).get('id')}"
        cov = during.get("coverage") or {}
        for p in during.get("pairs") or []:
            lost = [at for at, ms in p["samples"] if ms is None]
            # a probe sent up to its 1 s timeout before a window opens is lost to it too
            inside = sum(any(a - during.get("timeout_s", 1.0) <= at < b for a, b in spans) for at in lost)
            lines.append(f"| {run} | {p['src']} → {p['dst']} | {p['kind']} | {p['sent']} | {inside} | "
                         f"{len(lost) - inside} | {p['median_ms']:.2f} | {p['requested_rtt_ms']:g} |")
        lines.append(f"| {run} | *{cov.get('how', 'no pairs')}: {cov.get('pairs', 0)} of {cov.get('of', '?')}* "
                     f"| | | | | | |")
    return "\n".join(lines)


def windows(d: Path) -> str:
    """Galera's send windows as the data ran them, per size and RTT (the deployments' record)."""
    r = _read(d)
    seen: dict[tuple, set] = {}
    for m in r.manifests:
        p = (m.get("trial") or {}).get("parameters") or {}
        w = (m.get("deployment") or {}).get("galera_dynamic_options")
        if p.get("backend") != "galera" or not w:
            continue
        seen.setdefault((int(p["regions"]), p["load"], p["rtt"]), set()).add(
            f"{w.get('evs.send_window')}/{w.get('evs.user_send_window')}")
    lines = ["| regions | load | RTT | evs.send_window / evs.user_send_window |", "|---|---|---|---|"]
    for (n, load, rtt_), v in sorted(seen.items(), key=lambda kv: (kv[0][0], kv[0][1], int(kv[0][2][:-2]))):
        lines.append(f"| {n} | {load} | {rtt_} | {', '.join(sorted(v))} |")
    return "\n".join(lines)


def plan(d: Path) -> str:
    """The sittings the page needs for at least 5 blocks per cell: per Benchmark the blocks its cells have now, the
    trials of rounds 6–8 (the page's command) in the data and still to run, the blocks its cells will have when they
    have run (a round whole on one machine is a block), and the measured hours a round took (median over the rounds
    done). A size comparison pairs a round of two Benchmarks on one machine: it gains a block per round of 6–8 that
    both run there."""
    r = _read(d)
    c = context(d)
    u = c.light
    done = _done(r)
    spans: dict[tuple, list] = {}
    for m in r.manifests:
        k = (m.get("benchmark"), (m.get("trial") or {}).get("repetition"), (m.get("trial") or {}).get("id"))
        a, b = (m.get("start") or {}).get("actual"), m.get("end")
        if a and b:
            spans.setdefault(k, []).append((pd.Timestamp(a), pd.Timestamp(b)))
    per_round: dict[tuple, float] = {}
    for (bench, rep, _), v in spans.items():
        per_round[(bench, rep)] = per_round.get((bench, rep), 0.0) + (max(x[1] for x in v) - min(x[0] for x in v)).total_seconds()
    lines = ["| benchmark | cells (backend × RTT × scenario) | blocks per cell now (fewest) | rounds 6–8: trials in the "
             "data · to run | blocks per cell when they have run | measured load per round (h, median) |",
             "|---|---|---|---|---|---|"]
    left, total, total_h, hours_of = 0, 0, 0.0, {}
    for bench, (_, more) in planned().items():
        x = u[u["benchmark"] == bench]
        cells = x.groupby(["param.backend", "param.rtt", "scenario"])[["round", "machine"]].apply(
            lambda g: len(g.drop_duplicates()))
        fewest = int(cells.min()) if len(cells) else 0
        todo = more - done.get(bench, set())
        per = max(1, len(more) // MORE_ROUNDS)  # trials per round
        rounds_open = -(-len(todo) // per)  # the rounds still to run (whole rounds: a block each)
        hours_of[bench] = float(np.median([v for (b, _), v in per_round.items() if b == bench])) / 3600
        left, total, total_h = left + len(todo), total + len(more), total_h + len(todo) / per * hours_of[bench]
        lines.append(f"| {bench} | {len(cells)} | {fewest} | {len(more) - len(todo)} · {len(todo)} "
                     f"| {fewest + rounds_open} | {hours_of[bench]:.1f} |")
    lines += ["", f"To run: {left} of {total} trials, about {total_h:.0f} h of measured load plus a deployment per "
                  "backend and round.", "", *_size_plan(c, done, hours_of)]
    return "\n".join(lines)


def _size_plan(c: se.Ctx, done: dict[str, set], hours_of: dict[str, float]) -> list[str]:
    """Per size comparison: its blocks now (a round of each Benchmark on one machine, ``se.size_pairs``), the rounds
    of 6–8 whose 0 ms trials neither has run, and the most blocks those give when each runs beside one of the other's on one machine;
    then the sittings that gets them and what falls short of 5."""
    u, left = c.light, open_rounds(done)
    blocks: dict[tuple[str, str], int] = {}
    for x in se.size_controls(u, c.cost, c.table):
        k = (x["what"], x["load"])
        blocks[k] = min(blocks.get(k, x["contrast"].blocks), x["contrast"].blocks)
    rows = ["| size comparison | load | Benchmarks | blocks now (fewest of its scenarios) | rounds of 6–8 whose 0 ms "
            "trials are still to run (3 regions · N) | blocks at most, each such round beside one of the other's on one machine |",
            "|---|---|---|---|---|---|"]
    short, sittings = [], []
    for (what, load), now in blocks.items():
        n = what.split()[0]
        pair = [str(_at(u, regions=k, load=load)["benchmark"].iloc[0]) for k in ("3", n)]
        a, b = left.get(pair[0], []), left.get(pair[1], [])
        most = now + min(len(a), len(b))
        rows.append(f"| {what} | {load} | {' · '.join(pair)} | {now} | {_rounds(a)} · {_rounds(b)} | {most} |")
        h = sum(hours_of.get(x, 0.0) for x in pair)
        sittings.append(f"{' + '.join(pair)} (≈ {h:.1f} h of load)")
        if most < 5:
            short.append(f"{what} at {load} load: {most}, {5 - most} more round(s) of {' and '.join(pair)} beside "
                         "each other needed")
    text = ["A size comparison's block is a round of each Benchmark on one machine (CPU model and boot): the same round "
            "where both ran it there, else the rounds each ran there in the order they ran. A round of 6–8 run without "
            "its partner on that machine (round 6 of study-45, study-9 and study-3-high, on boot a8c3b78d, gone) gives "
            "the size comparisons nothing. A sitting that runs one round of each of a comparison's Benchmarks on one "
            f"machine gains it a block: `wanwide lab run -f manifests/examples/study.yaml -o DIR --done docs/data/study "
            f"--more-rounds {MORE_ROUNDS} --repetition R --benchmark A --benchmark B` — {'; '.join(sittings)}."]
    text.append("The light comparisons share study-3's rounds: one of its rounds serves both only in a sitting that "
                "runs study-9's and study-45's beside it.")
    text.append("Short of 5: " + "; ".join(short) + ". Rounds after 8 are a second batch: `--more-rounds "
                f"{MORE_ROUNDS} --more-rounds K --repetition 9 …` keeps rounds 6–8's trial ids and numbers rounds 9 on "
                f"after them (`--more-rounds {MORE_ROUNDS + 1}` would number rounds 6–8 otherwise; `--done` refuses "
                "it, checking the whole plan against the data set)."
                if short else "Every size comparison can reach 5 blocks within rounds 6–8.")
    return [*rows, "", " ".join(text)]


def _rounds(rs: list[int]) -> str:
    return ", ".join(str(r) for r in rs) if rs else "none"


def _fail_rate(t: pd.DataFrame, be: str, n: str, load: str) -> str:
    from scipy.stats import binomtest

    x = t[(t["action"] == "Total") & (t["param.backend"].astype(str) == be) & (t["param.regions"].astype(str) == n)
          & (t["param.load"].astype(str) == load)]
    if not len(x):
        return f"{n} regions: not measured yet"
    bad = int(x["error_type"].notna().sum())
    ci = binomtest(bad, len(x)).proportion_ci(0.95, method="exact")
    return f"{n} regions, every RTT: {bad}/{len(x)} = {bad / len(x):.3f} [{ci.low:.3f}, {ci.high:.3f}]"



IMG = HERE.parent / "img" / "study"
FIGURES = {  # page figure name → (data set, the slice `wanwide report --where` draws it from, the report's file)
    "sizes-authenticate": ("study", ["load=light", "rtt=0ms"], "bars-KeystoneBasic.authenticate_user_and_validate_token.png"),
    "sizes-create_user": ("study", ["load=light", "rtt=0ms"], "bars-KeystoneBasic.create_user_update_password.png"),
    "delay-9-authenticate": ("study", ["load=light", "regions=9"], "bars-KeystoneBasic.authenticate_user_and_validate_token.png"),
    "delay-9-create_user": ("study", ["load=light", "regions=9"], "bars-KeystoneBasic.create_user_update_password.png"),
    "high-cdf-authenticate": ("study", ["load=high", "rtt=0ms"], "cdf-KeystoneBasic.authenticate_user_and_validate_token.png"),
}


COMPARED = {  # page figure name → (data set, base and new slices): `wanwide compare --paired --total-only --plot`
    "delay-paired-100": ("study", ["load=light", "rtt=0ms"], ["load=light", "rtt=100ms"]),
    "delay-paired-300": ("study", ["load=light", "rtt=0ms"], ["load=light", "rtt=300ms"]),
}


def compare_args(name: str, out: str = "OUT.png") -> list[str]:
    """The `wanwide compare` arguments that draw one of the COMPARED figures (``out``: its PNG)."""
    data, base, new = COMPARED[name]
    src = f"docs/data/{data}"
    return ["compare", src, src, *[a for c in base for a in ("--base-where", c)],
            *[a for c in new for a in ("--new-where", c)], "--paired", "--total-only", "--plot", out]


def draw(name: str, out: Path) -> Path:
    """One figure of the page as `wanwide report DATA --where ...` (or, for COMPARED, `wanwide compare
    … --plot`) draws it (into ``out``)."""
    if name in COMPARED:
        import contextlib
        import io
        import os

        from wanwide.cli import main

        out.mkdir(parents=True, exist_ok=True)
        png = out / f"{name}.png"
        cwd = os.getcwd()
        try:
            os.chdir(HERE.parents[1])
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(compare_args(name, str(png))) == 0, f"wanwide {' '.join(compare_args(name))} failed"
        finally:
            os.chdir(cwd)
        return png
    from wanwide.pipeline.results.report import build_report

    data, conds, file = FIGURES[name]
    build_report([HERE / data], out, progress=False, store_parquet_beside=False, conds=conds)
    return out / file


CAPTIONS = {
    "sizes-authenticate": "Light load, no delay: mean time of each action by size (authenticate), a panel per backend",
    "sizes-create_user": "Light load, no delay: mean time of each action by size (create_user_update_password)",
    "delay-9-authenticate": "Light load, 9 regions: mean time of each action by RTT (authenticate)",
    "delay-9-create_user": "Light load, 9 regions: mean time of each action by RTT (create_user_update_password)",
    "high-cdf-authenticate": "High load, no delay: CDF of an iteration's time (authenticate), per backend and size",
    "delay-paired-100": "Light load: the change of each point's mean from RTT 0 to 100 ms, paired per repetition, with its 95 % interval",
    "delay-paired-300": "Light load: the change of each point's mean from RTT 0 to 300 ms, paired per repetition, with its 95 % interval",
}


def _slice(t: pd.DataFrame, conds: list[str]) -> pd.DataFrame:
    """The rows with every ``NAME=VALUE`` of ``conds`` (none when a parameter is missing)."""
    for cond in conds:
        k, _, v = cond.partition("=")
        t = t[t[f"param.{k}"].astype(str) == v] if f"param.{k}" in t else t.iloc[:0]
    return t


def drawable() -> list[str]:
    """The page's figures whose slices of the data have iterations (of their scenario, for the report's)."""
    out = []
    for name, (data, base, new) in COMPARED.items():
        if (HERE / data / "dataset.json").is_file():
            t = _read(HERE / data).table
            if len(_slice(t, base)) and len(_slice(t, new)):
                out.append(name)
    for name, (data, conds, file) in FIGURES.items():
        if not (HERE / data / "dataset.json").is_file():
            continue
        t = _slice(_read(HERE / data).table, conds)
        scen = file.split("-", 1)[1].removesuffix(".png")
        if len(t) and (t["scenario"].astype(str) == scen).any():
            out.append(name)
    return out


def figure_links(_d: Path) -> str:
    """The figures block: every drawable figure of the page, as `wanwide report --where` draws it."""
    lines = []
    for name in drawable():
        if name in COMPARED:
            how = "wanwide " + " ".join(compare_args(name))
        else:
            data, conds, _ = FIGURES[name]
            how = f"wanwide report docs/data/{data} {' '.join('--where ' + c for c in conds)} -o OUT"
        lines += [f"![{CAPTIONS[name]}](img/study/{name}.png)", "", f"*`{how}`*", ""]
    return "\n".join(lines).rstrip("\n") or "*No figure yet: no slice of the data has iterations.*"


def figures() -> list[Path]:
    """Every drawable figure of the page, redrawn into docs/img/study/ (PNG and SVG)."""
    import shutil

    IMG.mkdir(parents=True, exist_ok=True)
    done = []
    for name in drawable():
        with tempfile.TemporaryDirectory() as tmp:
            png = draw(name, Path(tmp))
            for src, suffix in ((png, ".png"), (png.with_suffix(".svg"), ".svg")):
                shutil.copy(src, IMG / f"{name}{suffix}")
        done.append(IMG / f"{name}.png")
    return done


BLOCKS = {"study-findings": findings, "study-rtt": rtt, "study-machines": machines, "study-controls": controls,
          "study-wan": wan, "study-windows": windows, "study-plan": plan, "load-region": load_region, "study-sizes": sizes, "study-delay": delay, "study-high": high,
          "study-failures": failures, "study-noise": noise, "study-rw": read_write, "study-figures": figure_links,
          "study-layout": layout, "study-wan-during": wan_during}
DATA = {"study-findings": "study", "study-rtt": "study", "study-machines": "study", "study-controls": "study",
        "study-wan": "study", "study-windows": "study", "study-plan": "study", "study-sizes": "study", "study-delay": "study", "study-high": "study", "study-failures": "study",
        "study-noise": "study", "study-rw": "study-rw", "study-figures": "study", "study-layout": "study",
        "study-wan-during": "wan-watch"}


def render() -> dict[str, str]:
    return {name: fn(HERE / DATA.get(name, name)) if (HERE / DATA.get(name, name) / "dataset.json").is_file()
            else f"*Not measured yet: no data set docs/data/{DATA.get(name, name)} committed.*" for name, fn in BLOCKS.items()}


def page_blocks(text: str) -> dict[str, str]:
    return pageblocks.page_blocks(text)


def write(blocks: dict[str, str]) -> None:
    pageblocks.write(PAGE, blocks)


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    pageblocks.main(PAGE, render, figures)
