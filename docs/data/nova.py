"""The measured tables of docs/results-nova.md (issue 45 item 5), from the data sets beside this file.

    .venv/bin/python docs/data/nova.py            # print every block
    .venv/bin/python docs/data/nova.py --write    # put them into docs/results-nova.md
    .venv/bin/python docs/data/nova.py --figures  # redraw its figures (docs/img/nova/) with `wanwide report`

The data sets ``nova-wan-rtt`` and ``nova-wan-loss`` are ``wanwide results export`` of each Benchmark's bundles of
``wanwide lab run -f manifests/examples/nova-wan.yaml``: ``nova-wan-rtt`` (RTT swept, no loss) and ``nova-wan-loss`` (loss swept at 0 ms), each a fresh
stretched deployment per round, the round's points measured on it in an order drawn from the seed: a round is
a block. Effects are read in the unit of the cause (pipeline/results/effects.py): seconds per iteration
(paired differences), round trips per iteration (the paired slope over the RTT in seconds), the study's ratio
only beside them. The page holds each block between ``<!-- data:NAME -->`` and ``<!-- /data -->``;
tests/results/test_nova_page.py fails when the page and the data disagree.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from wanwide.pipeline.results.ci import CONFIDENCE, bonferroni, t_quantile
from wanwide.pipeline.results.effects import Effect, paired_difference, paired_slope
from wanwide.pipeline.results.headline import ROUND_TRIPS_BOUND
from wanwide.pipeline.results.paired import BLOCK, Paired, paired_change, unit_means
from wanwide.pipeline.results.report import read_sources

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pageblocks  # noqa: E402  (beside this file)

PAGE = HERE.parent / "results-nova.md"
IMG = HERE.parent / "img" / "nova"
RTT_BENCH, LOSS_BENCH, POLL_BENCH = "nova-wan-rtt", "nova-wan-loss", "nova-wan-rtt-poll"
RTT_BENCHES = {RTT_BENCH: "Rally's own polling (boot: 1 s, then every 2 s; delete: 2 s, then every 2 s), as the study's "
                          "harness ran it",
               POLL_BENCH: "Rally polling every 0.2 s (`spec.workload.pollInterval`)"}
DATA = (HERE / RTT_BENCH, HERE / LOSS_BENCH, HERE / POLL_BENCH)  # a data set per Benchmark (each drawn alone)
BOOT = "NovaServers.boot_and_delete_server"
ACTIONS = ("Total", "nova.boot_server", "nova.delete_server")
STUDY_RATIO = 2.0  # the 2017 harness study: "completion time ×2 between 0 and 200 ms" (seeds.md §2)
LINK = ("r1", "r3")  # the one link a boot crosses (the compute in r3, everything else in r1)


# ------------------------------------------------------------------ reading


@functools.lru_cache(maxsize=4)
def read(d: Path | tuple[Path, ...]):
    """The data set(s) or bundle directories ``d``, read as `wanwide report` reads them."""
    with tempfile.TemporaryDirectory() as tmp:
        return read_sources(list(d) if isinstance(d, tuple) else [d], Path(tmp))


def units(table: pd.DataFrame, manifests: list[dict], action: str) -> pd.DataFrame:
    """One row per trial of ``unit_means`` for ``action``, with the RTT in seconds and the loss in %."""
    u = unit_means(table, manifests, action=action)
    if "param.rtt" in u:
        u["rtt_s"] = u["param.rtt"].str.removesuffix("ms").astype(float) / 1000
    if "param.loss" in u:
        u["loss_pct"] = u["param.loss"].str.removesuffix("%").astype(float)
    return u


def spreads(table: pd.DataFrame, manifests: list[dict], action: str = "Total") -> pd.DataFrame:
    """``unit_means`` rows whose ``mean`` is the trial's standard deviation of the action's times (its own
    noise left out: ``var`` NaN), so that ``paired_change`` reads a change of spread paired by block."""
    u = units(table, manifests, action)
    u["mean"] = np.sqrt(u["var"].astype(float))
    u["var"] = np.nan
    return u[np.isfinite(u["mean"]) & (u["mean"] > 0)]


def at(u: pd.DataFrame, benchmark: str, **params: str) -> pd.DataFrame:
    u = u[u["benchmark"].astype(str) == benchmark]
    for k, v in params.items():
        u = u[u[f"param.{k}"] == v]
    return u


def points(u: pd.DataFrame, benchmark: str, param: str) -> list[str]:
    """The benchmark's values of ``param``, in numeric order."""
    vals = at(u, benchmark)[f"param.{param}"].dropna().unique().tolist()
    return sorted(vals, key=lambda v: float(re.sub(r"[^0-9.]", "", v) or 0))


# ------------------------------------------------------------------ failures


def failures(table: pd.DataFrame, manifests: list[dict], benchmark: str, param: str) -> dict[str, tuple[int, int, int, int]]:
    """Per value of ``param``: (failed iterations, iterations) of the Benchmark's measured Rally iterations (the
    iteration's Total row: an error is the iteration's), and (failed runs, runs) from the runs' own outcomes (a run
    whose Rally task failed or never started has fewer iterations than it meant, or none)."""
    t = table[(table["benchmark"].astype(str) == benchmark) & (table["action"].astype(str) == "Total")]
    its = {str(v): (int(g["error_type"].notna().sum()), len(g)) for v, g in t.groupby(f"param.{param}", observed=True)}
    runs: dict[str, list[int]] = {}
    for m in manifests:
        if str(m.get("benchmark")) != benchmark:
            continue
        v = str(((m.get("trial") or {}).get("parameters") or {}).get(param))
        c = runs.setdefault(v, [0, 0])
        c[0] += (m.get("status") or {}).get("result") != "succeeded"
        c[1] += 1
    return {v: (*its.get(v, (0, 0)), *runs.get(v, (0, 0))) for v in sorted(set(its) | set(runs))}


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson's score interval of a proportion k/n (0 of n still allows a few per cent)."""
    if n == 0:
        return math.nan, math.nan
    z = float(stats.norm.ppf((1 + confidence) / 2))
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


# ------------------------------------------------------------------ formatting


def _num(v: float, digits: int = 2) -> str:
    return f"{v:+.{digits}f}" if np.isfinite(v) else "n/a"


def fmt(e: Effect, digits: int = 2) -> str:
    if not e.blocks:
        return "—"
    return f"{_num(e.value, digits)} [{_num(e.lo, digits)}, {_num(e.hi, digits)}]" if e.defined else \
        f"{_num(e.value, digits)} [n/a: 1 block]"


def factor(p: Paired) -> str:
    """A paired change as a factor: ×3.71 [3.40, 4.05]."""
    if not p.blocks:
        return "—"
    if not p.defined:
        return f"×{1 + p.value:.2f} [n/a]"
    return f"×{1 + p.value:.2f} [{1 + p.lo:.2f}, {1 + p.hi:.2f}]"


def _mean_of_blocks(u: pd.DataFrame) -> str:
    if u.empty:
        return "—"
    m = u["mean"].astype(float)
    return f"{m.mean():.2f} ({m.min():.2f}–{m.max():.2f})"


def rt_words(e: Effect) -> str:
    said = e.verdict(ROUND_TRIPS_BOUND)
    return {"up": "grows", "down": "shrinks", "same": f"no effect (within ±{ROUND_TRIPS_BOUND:g} round trips)",
            "unclear": "cannot tell", "too-few": "cannot tell (n too small)"}[said]


# ------------------------------------------------------------------ the blocks


def family(r) -> tuple[int, float]:
    """The intervals this page reads as findings (a slope per action, and the two ratios and two spread changes of
    the findings table), and the level each is read at (Bonferroni)."""
    k = len(ACTIONS) * len(RTT_BENCHES) + 4
    return k, bonferroni(k)


def rtt_rows(r, confidence: float = CONFIDENCE, bench: str = RTT_BENCH) -> list[dict]:
    out = []
    for action in ACTIONS:
        u = at(units(r.table, r.manifests, action), bench)
        if u.empty:
            continue
        rtts = points(u, bench, "rtt")
        base = at(u, bench, rtt=rtts[0])
        out.append({"action": action, "means": {v: at(u, bench, rtt=v) for v in rtts},
                    "diffs": {v: paired_difference(base, at(u, bench, rtt=v), BLOCK, confidence) for v in rtts[1:]},
                    "slope": paired_slope(u, "rtt_s", BLOCK, confidence),
                    "ratio": paired_change(base, at(u, bench, rtt=rtts[-1]), BLOCK, confidence),
                    "last": rtts[-1]})
    return out


def rtt(d: Path | tuple[Path, ...]) -> str:
    r = read(d)
    _, level = family(r)
    parts = [rtt_table(bench, what, rtt_rows(r, level, bench), level) for bench, what in RTT_BENCHES.items()]
    return "\n\n".join(p for p in parts if p) or "*Not measured yet: the RTT sweep (nova-wan-rtt).*"


def rtt_table(bench: str, what: str, rows: list[dict], level: float) -> str:
    if not rows:
        return ""
    rtts = list(rows[0]["means"])
    head = ["action", *[f"mean at {v} (s)" for v in rtts], *[f"Δ at {v} (s)" for v in rtts[1:]],
            "round trips per iteration", f"ratio {rtts[-1]} / {rtts[0]}"]
    lines = [f"**{bench}**: {what}.", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for x in rows:
        lines.append("| " + " | ".join([
            f"`{x['action']}`", *[_mean_of_blocks(x["means"][v]) for v in rtts],
            *[fmt(x["diffs"][v]) for v in rtts[1:]], f"{fmt(x['slope'], 1)} — {rt_words(x['slope'])}",
            factor(x["ratio"])]) + " |")
    blocks = rows[0]["slope"].blocks
    lines.append("")
    lines.append(f"Means: the mean of the blocks' means (their range). Δ and the round trips: paired by block "
                 f"({blocks} block{'s' if blocks != 1 else ''}), {level:.1%} intervals (Bonferroni over the page's family of findings); "
                 f"round trips = the least-squares slope of an iteration's time over the RTT in seconds, per block.")
    return "\n".join(lines)


def loss_rows(r, confidence: float = CONFIDENCE) -> list[dict]:
    u = at(units(r.table, r.manifests, "Total"), LOSS_BENCH)
    if u.empty:
        return []
    s = at(spreads(r.table, r.manifests), LOSS_BENCH)
    fails = failures(r.table, r.manifests, LOSS_BENCH, "loss")
    losses = points(u, LOSS_BENCH, "loss")
    base, sbase = at(u, LOSS_BENCH, loss=losses[0]), at(s, LOSS_BENCH, loss=losses[0])
    return [{"loss": v, "mean": at(u, LOSS_BENCH, loss=v),
             "diff": paired_difference(base, at(u, LOSS_BENCH, loss=v), BLOCK, confidence) if v != losses[0] else None,
             "spread": paired_difference(sbase, at(s, LOSS_BENCH, loss=v), BLOCK, confidence) if v != losses[0] else None,
             "spread_ratio": paired_change(sbase, at(s, LOSS_BENCH, loss=v), BLOCK, confidence) if v != losses[0] else None,
             "sd": at(s, LOSS_BENCH, loss=v)["mean"], "failed": fails.get(v, (0, 0, 0, 0))} for v in losses]


def loss(d: Path | tuple[Path, ...]) -> str:
    r = read(d)
    _, level = family(r)
    rows = loss_rows(r, level)
    if not rows:
        return "*Not measured yet: the loss sweep (nova-wan-loss).*"
    lines = ["| loss (each way) | mean Total (s) | Δ Total (s) | within-trial sd (s) | Δ sd (s) | sd ratio | failed iterations "
             "| failed runs |", "|---|---|---|---|---|---|---|---|"]
    for x in rows:
        k, n, fr, nr = x["failed"]
        lo, hi = wilson(k, n)
        sd = x["sd"]
        lines.append(f"| {x['loss']} | {_mean_of_blocks(x['mean'])} | {fmt(x['diff']) if x['diff'] else 'base'} | "
                     f"{(f'{sd.median():.2f} (median of {len(sd)})') if len(sd) else '—'} | "
                     f"{fmt(x['spread']) if x['spread'] else 'base'} | "
                     f"{factor(x['spread_ratio']) if x['spread_ratio'] else 'base'} | "
                     + (f"{k} of {n} ({k / n:.0%}, [{lo:.0%}, {hi:.0%}])" if n else "—") + f" | {fr} of {nr} |")
    lines.append("")
    lines.append(f"Means: the mean of the blocks' means (their range). Δ and Δ sd (a trial's standard deviation of its "
                 "iterations, less the same round's at 0 %) and the sd ratio (on the log scale, the scale spreads "
                 f"compare on: the verdict's) paired by block, {level:.1%} intervals; failed iterations with Wilson's "
                 "95 % interval; a failed run is a trial's Rally run whose outcome was not `succeeded`.")
    return "\n".join(lines)


def _wan_rows(manifests: list[dict], benchmark: str, param: str) -> list[dict]:
    rows = []
    for m in manifests:
        if str(m.get("benchmark")) != benchmark:
            continue
        v = str(((m.get("trial") or {}).get("parameters") or {}).get(param))
        net = m.get("network") or {}
        check = {(p["src"], p["dst"]): p for p in (net.get("check") or {}).get("pairs") or []}
        pair = check.get(LINK) or check.get(LINK[::-1]) or {}
        during = {(t["src"], t["dst"]): t for t in (net.get("during") or {}).get("targets") or []}
        dur = during.get(LINK) or {}
        delta = ((net.get("shaper_counters") or {}).get("delta") or {})
        frames = [delta.get(f"{a}→{b}") or {} for a, b in (LINK, LINK[::-1])]
        rows.append({"value": v, "before_rtt": pair.get("measured_rtt_ms"), "before_loss": pair.get("loss_measured_pct"),
                     "before_ok": pair.get("ok"), "during_rtt": dur.get("median_ms"), "during_sent": dur.get("sent", 0),
                     "during_lost": dur.get("lost", 0),
                     "frames": sum(int(f.get("frames") or 0) for f in frames),
                     "dropped": sum(int(f.get("lost") or 0) for f in frames)})
    return rows


def wan(d: Path | tuple[Path, ...]) -> str:
    r = read(d)
    lines = ["| Benchmark | point | trials | r1↔r3 before the load: RTT (ms), round-trip loss | during the load: RTT median (ms), "
             "probes lost | the emulator on r1↔r3: frames, dropped |", "|---|---|---|---|---|---|"]
    for bench, param in ((RTT_BENCH, "rtt"), (POLL_BENCH, "rtt"), (LOSS_BENCH, "loss")):
        rows = _wan_rows(r.manifests, bench, param)
        for v in sorted({x["value"] for x in rows}, key=lambda s: float(re.sub(r"[^0-9.]", "", s) or 0)):
            g = [x for x in rows if x["value"] == v]
            b_rtt = [x["before_rtt"] for x in g if x["before_rtt"] is not None]
            b_loss = [x["before_loss"] for x in g if x["before_loss"] is not None]
            d_rtt = [x["during_rtt"] for x in g if x["during_rtt"] is not None]
            sent, lost = sum(x["during_sent"] for x in g), sum(x["during_lost"] for x in g)
            frames, dropped = sum(x["frames"] for x in g), sum(x["dropped"] for x in g)
            ok = sum(bool(x["before_ok"]) for x in g)
            lines.append(f"| {bench} | {param} {v} | {len(g)} | "
                         f"{min(b_rtt):.1f}–{max(b_rtt):.1f}, {np.mean(b_loss):.1f} % ({ok} of {len(g)} within tolerance) | "
                         f"{(f'{min(d_rtt):.1f}–{max(d_rtt):.1f}' if d_rtt else '—')}, {lost} of {sent} | "
                         f"{frames:,}, {dropped:,} ({(dropped / frames if frames else 0):.1%}) |")
    return "\n".join(lines) if len(lines) > 2 else "*Not measured yet.*"


def setup(d: Path | tuple[Path, ...]) -> str:
    r = read(d)
    runs = r.runs
    ok = runs[runs["result"] == "succeeded"]
    ms = [m for m in r.manifests if str(m.get("benchmark")) in (*RTT_BENCHES, LOSS_BENCH)]
    starts = sorted(str((m.get("start") or {}).get("actual") or "") for m in ms)
    hosts = {((m.get("host") or {}).get("cpu_model"), (m.get("host") or {}).get("boot_id")) for m in ms}
    deps = {(str(m.get("benchmark")), str((m.get("deployment") or {}).get("id"))) for m in ms}
    versions = (ms[0].get("versions") or {}) if ms else {}
    cp = ok["cpu_pressure_pct"].astype(float)
    fc = ok["foreign_cpu_pct"].astype(float)
    per_it = [((m.get("contention") or {}).get("scenarios") or {}).get(BOOT, {}).get("cpu_s_per_iteration") for m in ms]
    per_it = [float(x) for x in per_it if x is not None]
    mem = [((m.get("deployment") or {}).get("openstack") or {}).get("memory") or {} for m in ms]
    r1 = [x["r1"]["pss_mib"] for x in mem if "r1" in x]
    r3 = [x["r3"]["pss_mib"] for x in mem if "r3" in x]
    return "\n".join([
        f"- **Trials**: {len({(str(m.get('benchmark')), str((m.get('trial') or {}).get('id'))) for m in ms})} "
        f"({len(ok)} runs succeeded of {len(runs)}), {len(deps)} deployments (one per Benchmark and round), "
        f"{starts[0][:16].replace('T', ' ') if starts else '—'} – {starts[-1][:16].replace('T', ' ') if starts else '—'} UTC, "
        f"{len(hosts)} machine(s): " + "; ".join(f"{c}, boot {str(b)[:8]}" for c, b in sorted(hosts, key=str)) + ".",
        f"- **Versions**: Nova {versions.get('nova', '?')}, Placement {versions.get('openstack.placement', '?')}, "
        f"Glance {versions.get('glance', '?')}, Neutron {versions.get('neutron', '?')}, "
        f"Keystone {versions.get('keystone', '?')}, Rally {versions.get('rally', '?')}, "
        f"rally-openstack {versions.get('rally-openstack', '?')}.",
        f"- **The machine during the load**: CPU pressure median {cp.median():.1f} % (max {cp.max():.1f} %), CPU used "
        f"outside the experiment median {fc.median():.2f} % (max {fc.max():.2f} %); noisy runs by the report's rule: "
        f"{int(ok['noisy'].astype(bool).sum())}. CPU per iteration (the experiment's CPU-seconds over the task's "
        f"window per iteration): median {np.median(per_it) if per_it else math.nan:.2f} s "
        f"({min(per_it) if per_it else math.nan:.2f}–{max(per_it) if per_it else math.nan:.2f}).",
        f"- **Memory** (PSS, every process of the region's namespace): r1, the whole control plane, "
        f"{np.median(r1) if r1 else math.nan:,.0f} MiB; r3, a Keystone and the fake compute, "
        f"{np.median(r3) if r3 else math.nan:,.0f} MiB (medians over the trials).",
    ])


def findings(d: Path | tuple[Path, ...]) -> str:
    r = read(d)
    _, level = family(r)
    rows = {x["action"]: x for x in rtt_rows(r, level)}
    lrows = loss_rows(r, level)
    out = ["| the 2017 harness study says | measured here | verdict |", "|---|---|---|"]
    tot = rows.get("Total")
    if tot is not None:
        ratio = tot["ratio"]
        said = ratio_words(ratio)
        out.append(f"| completion time ×2 between 0 and 200 ms | ×(1 + Δ): {factor(ratio)} for boot-and-delete "
                   f"({fmt(tot['diffs'][tot['last']])} s); {fmt(tot['slope'], 1)} round trips per iteration | "
                   f"{said}. The direction agrees; a ratio divides by this machine's 0 ms time (its own, not "
                   "the study's hardware): the round trips per iteration are the figure another machine can check |")
        fine = {x["action"]: x for x in rtt_rows(r, level, POLL_BENCH)}.get("Total")
        if fine is not None:
            out.append(f"| (the same, Rally polling every 0.2 s) | ×(1 + Δ): {factor(fine['ratio'])} "
                       f"({fmt(fine['diffs'][fine['last']])} s); {fmt(fine['slope'], 1)} round trips per iteration | "
                       f"{ratio_words(fine['ratio'])}; the slope read through Rally's own 2 s grid, less this one: "
                       f"{fmt_diff(tot['slope'], fine['slope'])} round trips |")
        s = spread_change(r, RTT_BENCH, "rtt", level)
        if s is not None:
            out.append(f"| higher latency → more variance | within-trial sd {fmt(s[0])} s, {factor(s[1])}, from 0 to "
                       f"{tot['last']} | {verdict_of_change(s[1])} |")
    if len(lrows) > 1:
        top = lrows[-1]
        k, n, _, _ = top["failed"]
        k0, n0, _, _ = lrows[0]["failed"]
        out.append(f"| higher loss → more variance and errors | at {top['loss']}: Δ {fmt(top['diff'])} s, sd "
                   f"{fmt(top['spread'])} s, {factor(top['spread_ratio'])}, failed {k} of {n} (at {lrows[0]['loss']}: {k0} of {n0}) | "
                   f"variance: {verdict_of_change(top['spread_ratio'])}; errors: "
                   f"{'seen' if k else 'none seen'} (at most {wilson(k, n)[1]:.0%} at 95 %) |")
    return "\n".join(out) if len(out) > 2 else "*Not measured yet.*"


def ratio_words(ratio: Paired) -> str:
    """The study's ×2 against a paired ratio's interval."""
    if not ratio.defined:
        return "cannot tell (n too small)"
    lo, hi = 1 + ratio.lo, 1 + ratio.hi
    if lo <= STUDY_RATIO <= hi:
        return "agrees"
    if lo > STUDY_RATIO:
        return f"contradicts in size: ×{lo:.1f} or more, where the study saw ×{STUDY_RATIO:g}"
    return f"contradicts in size: at most ×{hi:.1f}, where the study saw ×{STUDY_RATIO:g}"


def fmt_diff(a: Effect, b: Effect) -> str:
    """``a − b`` of two effects from independent blocks (their values; the interval of each is in the table)."""
    return _num(a.value - b.value, 1) if a.blocks and b.blocks else "n/a"


def spread_change(r, benchmark: str, param: str, confidence: float) -> tuple[Effect, Paired] | None:
    """The trials' standard deviation at the last value of ``param`` against the first's, paired by block: the
    difference (s) and the ratio (log scale)."""
    s = at(spreads(r.table, r.manifests), benchmark)
    if s.empty:
        return None
    vals = points(s, benchmark, param)
    a, b = at(s, benchmark, **{param: vals[0]}), at(s, benchmark, **{param: vals[-1]})
    return paired_difference(a, b, BLOCK, confidence), paired_change(a, b, BLOCK, confidence)


def verdict_of_change(p: Effect | Paired | None) -> str:
    """More, less or cannot tell, from an interval of a difference or of a ratio − 1 (both: above 0 is more)."""
    if p is None or not p.blocks:
        return "not measured"
    if not p.defined:
        return "cannot tell (n too small)"
    return "agrees (more)" if p.lo > 0 else ("contradicts (less)" if p.hi < 0 else "cannot tell (the interval holds no change)")


# ------------------------------------------------------------------ figures


def figures() -> list[Path]:
    """The report's figures of the data set that carry the page: the actions stacked per point (Nova's atomic
    actions by RTT and by loss), and the Total against each swept parameter."""
    from wanwide.pipeline.results.report import build_report

    IMG.mkdir(parents=True, exist_ok=True)
    done = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in DATA:
            bench = d.name
            out = Path(tmp) / bench
            build_report([d], out, progress=False, store_parquet_beside=False)
            for png in sorted(out.rglob("*.png")):
                if png.name.startswith(("bars-", "headline-")):
                    dest = IMG / f"{bench}-{png.name}"
                    shutil.copy(png, dest)
                    done.append(dest)
    return done


CONTROLLER = HERE / "nova-controller.jsonl"  # bench/nova_scale.py --computes N --tenants T --broker-fds F, a line a run
STUDY_BREAK = 148  # the single-controller study: the broker out of socket descriptors near ~148 computes (seeds.md)
DEFAULT_FDS = 1024  # the open-file limit a service gets by default (the study's broker's, by its figure)


def controller_runs(path: Path = CONTROLLER) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def came_up(run: dict) -> bool:
    return run.get("computes_up") == computes_of(run)


def at_limit(run: dict) -> bool:
    """Whether the broker ran out of descriptors: its peak open files at its limit, or its own alarm said so."""
    said = run.get("broker_said") or {}
    b = run["broker_peak"]
    return bool(b["limit"] and b["files"] >= b["limit"]) or bool(said.get("alarm_at") or said.get("accept_refusals"))


def computes_of(run: dict) -> int:
    return int(str(run["benchmark"]).split("-")[2])


def users_of(run: dict) -> int:
    return int(run.get("users_per_tenant") or 1)  # the runs before the option had one user per tenant


SPINNING = "until 2e31b72"  # the lab's loop spun a core through each warm-up (a run records its harness from then on)
FIXED = "from 2e31b72"


def era_of(run: dict) -> str:
    """Which lab measured the run: the runs that name no harness were measured before its loop stopped spinning."""
    return FIXED if run.get("harness") else SPINNING


def point_of(run: dict) -> tuple[str, int, int, int, int]:
    """(the lab's era, the broker's limit given, 0 for the lab's; computes; tenants; users per tenant): the runs of
    one point."""
    return era_of(run), run.get("broker_fds") or 0, computes_of(run), int(run.get("tenants") or 0), users_of(run)


@dataclasses.dataclass(frozen=True)
class BrokerFit:
    """The broker's sampled peak sockets = ``base`` + ``per`` × computes, least squares over ``n`` runs, with each
    coefficient's interval (Student's t over n − 2 degrees of freedom; None under 3 runs)."""

    base: float
    per: float
    n: int
    base_ci: tuple[float, float] | None
    per_ci: tuple[float, float] | None
    cov: tuple[float, float, float] | None = None  # var(base), var(per), cov(base, per)
    t: float | None = None  # the t quantile of the intervals

    def crossing(self, sockets: int) -> tuple[float, tuple[float, float] | None]:
        """Where the line meets ``sockets``: the computes (sockets − base) / per, and its interval (the delta
        method over the fit's covariance; None without one)."""
        n = (sockets - self.base) / self.per
        if self.cov is None or self.t is None:
            return n, None
        va, vb, cab = self.cov
        h = self.t * math.sqrt(max(0.0, va + n * n * vb + 2 * n * cab)) / abs(self.per)
        return n, (n - h, n + h)


ANNOUNCED = re.compile(r"approx (\d+) file handles \((\d+) sockets\)")


def announced(runs: list[dict]) -> dict[int, tuple[int, int]]:
    """What RabbitMQ announced at boot for each open-file limit it ran with: (file handles, sockets it lets
    connections obtain). Its file-descriptor alarm is the sockets' count reaching the second."""
    out = {}
    for r in runs:
        m = ANNOUNCED.search(str((r.get("broker_said") or {}).get("announced") or ""))
        if m and r["broker_peak"].get("limit"):
            out[int(r["broker_peak"]["limit"])] = (int(m[1]), int(m[2]))
    return out


def socket_limit(limit: int, seen: dict[int, tuple[int, int]]) -> tuple[int, str]:
    """The sockets RabbitMQ lets connections obtain under an open-file limit, and how it is known: announced by a run,
    else by RabbitMQ's rule (file_handle_cache's OBTAIN_LIMIT: trunc(0.9 × handles − 2)) over the handles it keeps
    below the limit in the runs that announced theirs (the same offset at every limit seen)."""
    if limit in seen:
        return seen[limit][1], "announced"
    offsets = sorted({f - h for f, (h, _) in seen.items()})
    if len(offsets) != 1:
        raise ValueError(f"RabbitMQ's handles below its limit: {offsets or 'none announced'}; cannot carry them over")
    return math.trunc(0.9 * (limit - offsets[0]) - 2), f"by RabbitMQ's rule, {offsets[0]} handles kept below the limit"


def broker_fit(runs: list[dict], confidence: float = CONFIDENCE) -> BrokerFit | None:
    """The broker's peak open sockets against the computes, over the runs whose computes all came up and whose broker
    stayed under its limit; None under two distinct counts."""
    pts = [(computes_of(r), r["broker_peak"]["sockets"]) for r in runs if came_up(r) and not at_limit(r)]
    if len({n for n, _ in pts}) < 2:
        return None
    x, y = np.array([n for n, _ in pts], float), np.array([f for _, f in pts], float)
    per, base = np.polyfit(x, y, 1)
    n = len(pts)
    if n < 3:
        return BrokerFit(float(base), float(per), n, None, None)
    sxx = float(((x - x.mean()) ** 2).sum())
    s = math.sqrt(float(((y - (base + per * x)) ** 2).sum()) / (n - 2))
    t = t_quantile(n - 2, confidence)
    h_per, h_base = t * s / math.sqrt(sxx), t * s * math.sqrt(1 / n + x.mean() ** 2 / sxx)
    cov = (s * s * (1 / n + x.mean() ** 2 / sxx), s * s / sxx, -x.mean() * s * s / sxx)
    return BrokerFit(float(base), float(per), n, (base - h_base, base + h_base), (per - h_per, per + h_per),
                     tuple(map(float, cov)), t)


@dataclasses.dataclass(frozen=True)
class AtLimit:
    """One broker limit's runs by computes: held in every run, out of descriptors in every run, or some of each."""

    limit: int
    held: list[int]  # every run came up and stayed under the limit
    broke: list[int]  # every run ran the broker out of descriptors
    mixed: dict[int, tuple[int, int]]  # computes: (runs out of descriptors, runs)
    runs: dict[int, int]  # computes: runs


def at_each_limit(runs: list[dict]) -> list[AtLimit]:
    """Per broker limit given, its counts of computes sorted by what the broker did in their runs (a run whose
    computes did not all come up counts for neither side)."""
    out = []
    for f in sorted({r["broker_fds"] for r in runs if r.get("broker_fds")}):
        by: dict[int, list[dict]] = {}
        for r in runs:
            if r.get("broker_fds") == f and (came_up(r) or at_limit(r)):
                by.setdefault(computes_of(r), []).append(r)
        held = sorted(n for n, rs in by.items() if not any(map(at_limit, rs)))
        broke = sorted(n for n, rs in by.items() if all(map(at_limit, rs)))
        mixed = {n: (sum(map(at_limit, rs)), len(rs)) for n, rs in sorted(by.items()) if n not in held + broke}
        out.append(AtLimit(f, held, broke, mixed, {n: len(rs) for n, rs in by.items()}))
    return out


@dataclasses.dataclass(frozen=True)
class Bracket:
    """A compute's demand on the broker's sockets, bracketed by a limit that held with ``held`` computes in every run
    and ran out with ``broke`` in every run: between ``low`` and ``high`` sockets, the base's interval included."""

    low: float
    high: float
    limit: int  # the open-file limit
    sockets: int  # the sockets RabbitMQ let connections obtain under it
    held: int
    broke: int
    runs_held: int
    runs_broke: int


def _bases(fit: BrokerFit) -> tuple[float, float]:
    """The base's interval (or the base twice), rounded to 1e-9: a line through two exact points lands on the base
    only up to the machine's last bit, which decided whether (141 − 20) / 20 printed 6.0 or 6.1 on different CPUs."""
    lo, hi = fit.base_ci or (fit.base, fit.base)
    return round(lo, 9), round(hi, 9)


def bracket(runs: list[dict], fit: BrokerFit, seen: dict[int, tuple[int, int]]) -> Bracket | None:
    """The tightest bracket over the limits that both held and broke; None when no limit did both. With S the
    sockets a limit lets connections obtain: held at H, base + H × d < S; out at B, base + B × d ≥ S; so d lies in
    [(S − base) / B, (S − base) / H], widened by the base's interval where it has one."""
    lo_base, hi_base = _bases(fit)
    best = None
    for a in at_each_limit(runs):
        if a.held and a.broke and max(a.held) < min(a.broke):
            h, b = max(a.held), min(a.broke)
            cap = socket_limit(a.limit, seen)[0]
            lo, hi = (cap - hi_base) / b, (cap - lo_base) / h
            if best is None or hi - lo < best.high - best.low:
                best = Bracket(lo, hi, a.limit, cap, h, b, a.runs[h], a.runs[b])
    return best


def predicted(fit: BrokerFit, b: Bracket, sockets: int) -> tuple[float, float]:
    """(held below, out of descriptors from): the computes a socket limit holds whatever the demand and base inside
    their intervals, and those it cannot."""
    lo_base, hi_base = _bases(fit)
    return (sockets - hi_base) / b.high, (sockets - lo_base) / b.low


def _pct(v) -> str:
    return f"{float(v):.0f} %" if v is not None else "—"


def _spread(vals: list[float], fmt: str = "{:.0f}") -> str:
    """One value, or the median and the range of a point's runs."""
    if not vals:
        return "—"
    if len(vals) == 1 or min(vals) == max(vals):
        return fmt.format(vals[0])
    return f"{fmt.format(statistics.median(vals))} [{fmt.format(min(vals))}–{fmt.format(max(vals))}]"


def _failures(rs: list[dict]) -> str:
    """What failed the iterations of a point's runs: each error's type (and, for an API error, the exception it names),
    most frequent first."""
    c: dict[str, int] = {}
    for r in rs:
        for k, n in (r.get("errors") or {}).items():
            kind = k.split(":", 1)[0]
            inner = re.search(r"<class '[\w.]*?(\w+)'>", k)
            kind = f"{kind} ({inner[1]})" if inner else kind
            c[kind] = c.get(kind, 0) + n
        for e in r.get("rally_errors") or []:
            kind = str(e).split(":", 1)[0][:60]
            c[kind] = c.get(kind, 0) + 1
    return ", ".join(f"{k} ×{n}" for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) or "—"


def _ci(ci: tuple[float, float] | None, digits: int) -> str:
    return f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else " (no interval: 2 runs)"


def controller(_d=None, path: Path = CONTROLLER) -> str:
    runs = controller_runs(path)
    if not runs:
        return "*Not measured yet: no docs/data/nova-controller.jsonl committed.*"
    lines = ["| lab | computes | tenants × users | broker's file limit | runs | came up | broker's peak files (sockets), "
             "median [range] | out of descriptors | the broker said | boot-and-deletes ok | what failed | mean (s) | "
             "per second | CPU pressure | deployed in (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by: dict[tuple[str, int, int, int, int], list[dict]] = {}
    for r in runs:
        by.setdefault(point_of(r), []).append(r)
    for (era, f, n, t, u), rs in sorted(by.items(), key=lambda kv: (kv[0][0] != SPINNING, *kv[0][1:])):
        alarms = sum(bool((r.get("broker_said") or {}).get("alarm_at")) for r in rs)
        refused = sum((r.get("broker_said") or {}).get("accept_refusals") or 0 for r in rs)
        said = "; ".join(x for x in (f"alarm in {alarms}" if alarms else "",
                                     f"{refused} accepts refused" if refused else "") if x) or "—"
        its = [r for r in rs if r.get("iterations") is not None and r.get("failed_iterations") is not None]
        ok = (f"{sum(r['iterations'] - r['failed_iterations'] for r in its)} / {sum(r['iterations'] for r in its)}"
              if its else "— (no load)")
        means = [r["mean_iteration_s"] for r in rs if r.get("mean_iteration_s")]
        rates = [t / m for m in means] if t else []
        out = sum(map(at_limit, rs))
        limit = f"{f}" if f else f"{rs[0]['broker_peak']['limit']} (the lab's)"
        up = sum(map(came_up, rs))
        failed = [r for r in rs if (r.get("trial") or {}).get("result") == "failed"]
        came = ("all" if up == len(rs) else f"**{up} of {len(rs)}**") + "".join(
            f"; **trial failed**: {str(r['trial'].get('reason'))[:72]}" for r in failed)
        lines.append(
            f"| {era} | {n} | {t} × {u} | {limit} | {len(rs)} | {came} | "
            f"{_spread([r['broker_peak']['files'] for r in rs])} "
            f"({_spread([r['broker_peak']['sockets'] for r in rs])}) | "
            f"{f'**{out} of {len(rs)}**' if out else 'none'} | {said} | {ok} | {_failures(rs)} | "
            f"{_spread(means, '{:.2f}')} | {_spread(rates, '{:.2f}')} | "
            f"{_spread([r['cpu_pressure_pct'] for r in rs if r.get('cpu_pressure_pct') is not None], '{:.0f} %')} | "
            f"{_spread([r['deploy_s'] for r in rs if r.get('deploy_s')])} |")
    # the broker's sweep: the runs given a limit, all at one load (the files over the computes' own grow with the
    # tenants' concurrency: the API's and conductor's connections), fitted and bracketed alone, each lab's alone
    for era in (SPINNING, FIXED):
        sweep = [r for r in runs if r.get("broker_fds") and era_of(r) == era]
        if sweep:
            lines += sweep_text(sweep, era, announced(runs))
    return "\n".join(lines)


def sweep_text(sweep: list[dict], era: str, seen: dict[int, tuple[int, int]]) -> list[str]:
    """The broker's sweep of one lab: the fit, the bracket, the bracket tested at the other limits."""
    lines: list[str] = []
    fit = broker_fit(sweep)
    if fit is None:
        return lines
    level = f"{CONFIDENCE:.0%}"
    caps = {f: socket_limit(f, seen) for f in sorted({r["broker_fds"] for r in sweep} | {DEFAULT_FDS})}
    def at(cap: int) -> str:
        n, ci = fit.crossing(cap)
        return f"{n:.0f}" + (f" [{ci[0]:.0f}, {ci[1]:.0f}]" if ci else "")
    pred = ", ".join(f"{at(cap)} computes at {f} files ({cap} sockets, {how})" for f, (cap, how) in caps.items())
    observed = []
    for a in at_each_limit(sweep):
        mixed = "".join(f"; with {n}, out in {k} of {m} runs" for n, (k, m) in a.mixed.items())
        observed.append(f"at {a.limit} files, under the limit in every run with "
                        f"{', '.join(f'{n} ({a.runs[n]})' for n in a.held) or 'none'} computes, out of descriptors "
                        f"in every run with {', '.join(f'{n} ({a.runs[n]})' for n in a.broke) or 'none'}{mixed}")
    lines += ["", f"*The lab {era}*: the broker's peak open sockets, sampled every 2 s, grow by "
              f"**{fit.per:.2f} per compute**{_ci(fit.per_ci, 2)} over {fit.base:.0f}"
              f"{_ci(fit.base_ci, 0) if fit.base_ci else ''} with none (least squares over the {fit.n} runs of its "
              f"sweep under their limit, {'/'.join(sorted({str(r.get('tenants')) for r in sweep}))} tenants; "
              f"intervals {level}). Where that line meets a limit: {pred}. Observed (runs in brackets): "
              f"{'; '.join(observed)}."]
    tested = []
    for a in at_each_limit(sweep):
        # out of sample where it can be: the line fitted without this limit's runs (else all of them, said)
        alone = broker_fit([r for r in sweep if r["broker_fds"] != a.limit])
        line, whose = (alone, "fitted without its runs") if alone and alone.per_ci else (fit, "fitted with its runs")
        cap_a = socket_limit(a.limit, seen)[0]
        n, ci = line.crossing(cap_a)
        lo, hi = ci or (n, n)
        below, above = max(a.held, default=0), min(a.broke, default=math.inf)
        ok = ("agrees" if below < lo and hi <= above else  # the crossing between the last held and the first out
              "contradicts" if hi <= below or lo > above else "cannot tell")
        tested.append(f"at {a.limit} files the line {whose} ({line.per:.2f} a compute over {line.base:.0f}, "
                      f"{line.n} runs) meets the limit at {n:.0f}" + (f" [{lo:.0f}, {hi:.0f}]" if ci else "")
                      + f" computes, the broker held in every run up to {below or 'none'} and ran out in every run "
                      f"from {above if above != math.inf else 'none'}: **{ok}**")
    n, ci = fit.crossing(caps[DEFAULT_FDS][0])
    if ci:
        side = ("agrees" if ci[0] <= STUDY_BREAK <= ci[1] else
                f"contradicts: the study's broker ran out at {STUDY_BREAK / n:.0%} of what this line predicts")
        tested.append(f"at the {DEFAULT_FDS}-file default it predicts {at(caps[DEFAULT_FDS][0])} computes; the 2014 "
                      f"study's broker ran out near {STUDY_BREAK}: **{side}**")
    lines += ["", "**The line tested where the broker ran out**: " + "; ".join(tested) + "."]
    b = bracket(sweep, fit, seen)
    if b is None:
        return lines
    cap, how = caps[DEFAULT_FDS]
    lo_n, hi_n = predicted(fit, b, cap)
    verdict = "agrees" if lo_n <= STUDY_BREAK <= hi_n else "contradicts"
    lines += ["", f"**What a compute costs the broker, bracketed by the limit itself**: at {b.limit} files "
              f"({b.sockets} sockets) it held with {b.held} computes in {b.runs_held} of {b.runs_held} runs and ran "
              f"out with {b.broke} in {b.runs_broke} of {b.runs_broke}, so a compute's demand (its sockets while the "
              f"computes start and the load runs) is between **{b.low:.1f} and {b.high:.1f} sockets** (over the base"
              f"{' and its interval' if fit.base_ci else f' of {fit.base:.0f}'}). At the {DEFAULT_FDS}-file default "
              f"({cap} sockets, {how}) that is **{lo_n:.0f} to {hi_n:.0f} computes**; the 2014 study's broker ran out "
              f"near {STUDY_BREAK}: {verdict}."]
    checks = []
    for a in at_each_limit(sweep):
        if a.limit == b.limit:
            continue
        hold, out = predicted(fit, b, socket_limit(a.limit, seen)[0])
        for n in sorted(a.runs):
            did = "held" if n in a.held else "ran out" if n in a.broke else "held in some runs only"
            want = "hold" if n < hold else "run out" if n >= out else "either"
            ok = ("agrees" if (want, did) in (("hold", "held"), ("run out", "ran out")) else
                  "cannot tell" if want == "either" else "contradicts")
            checks.append(f"{n} computes at {a.limit} files (held below {hold:.0f}, out from {out:.0f}): predicted "
                          f"to {want}, {did} in {a.runs[n]} run{'s' if a.runs[n] > 1 else ''}: **{ok}**")
    if checks:
        lines += ["", "**The bracket tested at another limit** (what it predicts with the demand and the base anywhere "
                  "inside their intervals): " + "; ".join(checks) + "."]
    return lines


SCALE = HERE / "nova-scale.jsonl"  # bench/nova_scale.py --regions N, a line a run


def _mean_ci(vals: list[float], confidence: float = CONFIDENCE) -> tuple[float, tuple[float, float] | None]:
    """The mean and its t interval (None under 2 values)."""
    m = statistics.mean(vals)
    if len(vals) < 2:
        return m, None
    h = t_quantile(len(vals) - 1, confidence) * statistics.stdev(vals) / math.sqrt(len(vals))
    return m, (m - h, m + h)


def _mci(vals: list[float], digits: int = 0) -> str:
    m, ci = _mean_ci(vals)
    return f"{m:,.{digits}f}" + (f" [{ci[0]:,.{digits}f}, {ci[1]:,.{digits}f}]" if ci else " (one run)")


def lost_per_region(run: dict) -> float:
    """What the machine lost while the run's regions were up (MemAvailable before less its lowest), per region: the
    processes' PSS and what they do not count (the in-memory databases' files, the page cache)."""
    return (run["available_before_mib"] - run["available_min_mib"]) / run["regions"]


def scale(_d=None, path: Path = SCALE) -> str:
    runs = [r for r in controller_runs(path) if r.get("regions")]
    if not runs:
        return "*Not measured yet: no docs/data/nova-scale.jsonl committed.*"
    level = f"{CONFIDENCE:.0%}"
    lines = [f"| regions | runs | succeeded | deployed in (s), mean [{level}] | whole run (s) | a region's PSS (MiB), "
             "median [range] | processes a region | MemAvailable before → lowest (MiB), median | lost per region (MiB), "
             f"mean [{level}] | boots ok | CPU pressure |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    by: dict[int, list[dict]] = {}
    for r in runs:
        by.setdefault(r["regions"], []).append(r)
    for n, rs in sorted(by.items()):
        pss = [v["pss_mib"] for r in rs for v in (r.get("memory") or {}).values()]
        procs = [v["processes"] for r in rs for v in (r.get("memory") or {}).values()]
        its = [r for r in rs if r.get("iterations") is not None]
        ok = sum(r["iterations"] - (r.get("failed_iterations") or 0) for r in its)
        lines.append(
            f"| {n} | {len(rs)} | {sum(r.get('result') == 'succeeded' for r in rs)} | "
            f"{_mci([r['deploy_s'] for r in rs if r.get('deploy_s')])} | {_spread([r['wall_s'] for r in rs])} | "
            f"{_spread(pss)} | {_spread(procs)} | {statistics.median(r['available_before_mib'] for r in rs):,.0f} → "
            f"{statistics.median(r['available_min_mib'] for r in rs):,.0f} | {_mci([lost_per_region(r) for r in rs])} | "
            f"{ok} / {sum(r['iterations'] for r in its)} | "
            f"{_spread([r['cpu_pressure_pct'] for r in rs if r.get('cpu_pressure_pct') is not None], '{:.0f} %')} |")
    small = min(by)
    per, ci = _mean_ci([lost_per_region(r) for r in by[small]])
    avail = statistics.median(r["available_before_mib"] for r in by[small])
    headroom = statistics.median(r["headroom_mib"] for r in by[small])  # what bench/nova_scale.py leaves aside
    fits = [(avail - headroom) / x for x in ((ci[1], per, ci[0]) if ci else (per, per, per))]
    out = ["", f"**How many regions fit by memory** (what the machine lost per region at {small} regions, "
           f"{len(by[small])} run{'s' if len(by[small]) > 1 else ''}, against the {avail:,.0f} MiB available less "
           f"{headroom:,.0f} MiB headroom): **{fits[1]:.0f} regions**"
           + (f" [{fits[0]:.0f}, {fits[2]:.0f}]" if ci else " (one run: no interval)") + ". The CPU (2 cores) is the "
           "other bound; the table's CPU pressure is the deploy's and the light load's, not a limit found."]
    for n in sorted(by):
        if n == small or ci is None:
            continue
        lost = [r["available_before_mib"] - r["available_min_mib"] for r in by[n]]
        lo, hi = n * ci[0], n * ci[1]
        verdict = ("agrees" if all(lo <= x <= hi for x in lost) else
                   "more than predicted" if all(x > hi for x in lost) else
                   "less than predicted" if all(x < lo for x in lost) else "mixed")
        out.append("")
        out.append(f"**{n} regions against the prediction from {small}**: {n} × [{ci[0]:,.0f}, {ci[1]:,.0f}] = "
                   f"[{lo:,.0f}, {hi:,.0f}] MiB lost predicted, {', '.join(f'{x:,.0f}' for x in lost)} MiB measured: "
                   f"**{verdict}**.")
    return "\n".join(lines + out)


BLOCKS = {"nova-setup": setup, "nova-findings": findings, "nova-rtt": rtt, "nova-loss": loss, "nova-wan": wan,
          "nova-controller": controller, "nova-scale": scale}


def render() -> dict[str, str]:
    have = tuple(d for d in DATA if (d / "dataset.json").is_file())
    return {name: fn(have) if have else "*Not measured yet: no data set docs/data/nova-wan-* committed.*"
            for name, fn in BLOCKS.items()}


def page_blocks(text: str) -> dict[str, str]:
    return pageblocks.page_blocks(text)


def write(blocks: dict[str, str]) -> None:
    pageblocks.write(PAGE, blocks)


if __name__ == "__main__":
    pageblocks.main(PAGE, render, figures)
