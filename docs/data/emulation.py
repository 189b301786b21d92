"""The measured tables of docs/emulation.md, from docs/data/emulation/*.jsonl.

    .venv/bin/python docs/data/emulation.py            # print every block
    .venv/bin/python docs/data/emulation.py --write    # put them into docs/emulation.md

The data: bench/emulation.py's JSON lines (one per shaper, round and link shape, with the raw
samples and the host's and guest's load). The page holds each block between ``<!-- data:NAME -->``
and ``<!-- /data -->``; tests/test_emulation_page.py fails when the page and the data disagree.

Statistics (all seeded: the same page every time):

- a median RTT's 95 % interval: a two-level bootstrap (rounds drawn with replacement, then the pings
  within each drawn round), since pings of one round share its moment of the machine's load; the
  same for a difference of two shapers' medians (each resampled on its own);
- loss: the lost datagrams of every round pooled, an exact (Clopper–Pearson) binomial interval; a
  difference of two shapers' loss with Newcombe's hybrid score interval (from Wilson intervals);
- throughput: each round's goodput is one value; mean and Student's t interval over rounds.

Verdicts of linkemu (and wirefilter) against netem, per shape (``wanwide.pipeline.results.ci.verdict``
on the difference's interval against a bound): **agrees** when the whole interval lies within ±bound,
**differs** when it excludes 0 and reaches beyond the bound, **unclear** otherwise. Bounds: delay
max(1 ms, 5 % of the requested RTT) (the lab's own network check), jitter 1 ms on the RTT's standard
deviation, loss max(0.02 points, 10 % of the requested loss), rate 5 % of the requested rate.
"""

from __future__ import annotations

import json
import math
import re
import sys
import zlib
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pageblocks  # noqa: E402  (beside this file)

DATA = HERE / "emulation"
PAGE = HERE.parent / "emulation.md"
SEED = 48
B = 2000
SHAPERS = ("netem", "linkemu", "wirefilter")
GOODPUT = 1448 / 1514  # TCP payload per Ethernet frame (1500-byte MTU, timestamps): what iperf3 can see of a rate
JITTER_SD = 10 * math.sqrt(2 / 3)  # RTT = two uniform ±10 ms delays: triangular, sd = 10·sqrt(2/3)


def records() -> list[dict]:
    """The link shapes' lines (bench/emulation.py)."""
    out: list[dict] = []
    for f in sorted(DATA.glob("measurements*.jsonl")):
        out += [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
    return out


def by(recs: list[dict], shaper: str, shape: str) -> list[dict]:
    return sorted((r for r in recs if r["shaper"] == shaper and r["shape"] == shape), key=lambda r: r["round"])


# ---------------------------------------------------------------- statistics (pure)
def _stable_rng(*key: object) -> np.random.Generator:
    """Seeded by the key's text (Python's hash() of a str changes per process)."""
    return np.random.default_rng([SEED, zlib.crc32("|".join(map(str, key)).encode())])


def boot_medians(rounds: list[np.ndarray], rng: np.random.Generator, stat=np.median) -> np.ndarray:
    """``B`` two-level bootstrap replicates of ``stat`` (a NaN-aware numpy reduction is used: ``np.median``
    → ``np.nanmedian``, else ``stat`` over each replicate's values) over the pooled samples: rounds with
    replacement, then samples within each drawn round."""
    rounds = [np.asarray(r, dtype=float) for r in rounds if len(r)]
    k, n = len(rounds), np.array([len(r) for r in rounds])
    padded = np.full((k, n.max()), np.nan)
    for j, r in enumerate(rounds):
        padded[j, : len(r)] = r
    pick = rng.integers(0, k, size=(B, k))
    pos = np.arange(n.max())
    idx = np.floor(rng.random((B, k, n.max())) * n[pick][..., None]).astype(int)
    vals = padded[pick[..., None], idx]
    vals[pos[None, None, :] >= n[pick][..., None]] = np.nan
    flat = vals.reshape(B, -1)
    if stat is np.median:
        return np.nanmedian(flat, axis=1)
    if stat is sd:
        return np.nanstd(flat, axis=1, ddof=1)
    return np.array([stat(row[~np.isnan(row)]) for row in flat])


def sd(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1))


def interval(reps: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(reps, [0.025, 0.975])
    return float(lo), float(hi)


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return float(ci.low), float(ci.high)


def wilson(k: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return float(ci.low), float(ci.high)


def newcombe(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """95 % interval of p1 − p2 (Newcombe 1998, method 10: hybrid score from Wilson intervals)."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1)
    l2, u2 = wilson(k2, n2)
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def t_interval(x: list[float]) -> tuple[float, float, float]:
    a = np.asarray(x, dtype=float)
    m = float(a.mean())
    if len(a) < 2:
        return m, float("nan"), float("nan")
    h = float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a)))
    return m, m - h, m + h


def verdict(lo: float, hi: float, bound: float) -> str:
    """agrees (the interval within ±bound), differs (it excludes 0 and passes the bound), else unclear."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "too few"
    if -bound <= lo and hi <= bound:
        return "agrees"
    if lo > bound or hi < -bound or (lo > 0 and hi > bound) or (hi < 0 and lo < -bound):
        return "differs"
    return "unclear"


def delay_bound(rtt: float) -> float:
    return max(1.0, 0.05 * rtt)


def loss_bound(pct: float) -> float:
    return max(0.02, 0.10 * pct)


# ---------------------------------------------------------------- formatting
def _ms(v: float) -> str:
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def _ci_ms(v: float, lo: float, hi: float) -> str:
    return f"{_ms(v)} [{_ms(lo)}, {_ms(hi)}]"


def _load(rs: list[dict]) -> str:
    lo = min(r["host_load1_min"] for r in rs)
    hi = max(r["host_load1_max"] for r in rs)
    med = float(np.median([r["host_load1_median"] for r in rs]))
    return f"{med:.1f} ({lo:.1f}–{hi:.1f})"


def _samples(rs: list[dict], key: str) -> list[np.ndarray]:
    return [np.asarray(r[key], dtype=float) for r in rs]


def _median_ci(rs: list[dict], key: str, *rkey: object) -> tuple[float, float, float]:
    rounds = _samples(rs, key)
    pooled = np.concatenate(rounds)
    lo, hi = interval(boot_medians(rounds, _stable_rng(key, *rkey)))
    return float(np.median(pooled)), lo, hi


def _diff_ci(a: list[dict], b: list[dict], key: str, *rkey: object, stat=np.median) -> tuple[float, float, float]:
    ra, rb = _samples(a, key), _samples(b, key)
    d = stat(np.concatenate(ra)) - stat(np.concatenate(rb))
    reps = boot_medians(ra, _stable_rng("a", key, *rkey), stat) - boot_medians(rb, _stable_rng("b", key, *rkey), stat)
    lo, hi = interval(reps)
    return float(d), lo, hi


# ---------------------------------------------------------------- blocks
def setup(recs: list[dict]) -> str:
    rounds = sorted({r["round"] for r in recs})
    times = sorted(r["time"] for r in recs)
    spec = sorted({r.get("vm_spec", "") for r in recs})
    guest = [float(r["guest_load_after"].split()[0]) for r in recs]
    return "\n".join([
        "| what | value |", "|---|---|",
        f"| VM | {'; '.join(spec)} |",
        f"| guest kernel | {', '.join(sorted({r['kernel'] for r in recs}))} |",
        f"| rounds | {len(rounds)} (each: the shapers in an order drawn per round, the shapes of a shaper in an order drawn per shaper and round) |",
        f"| measurements | {len(recs)} lines, {times[0]} – {times[-1]} (UTC) |",
        f"| host load (1-min average, sampled every 5 s while each shaper ran) | median {np.median([r['host_load1_median'] for r in recs]):.1f}, "
        f"range {min(r['host_load1_min'] for r in recs):.1f}–{max(r['host_load1_max'] for r in recs):.1f} |",
        f"| guest load (1-min average after each shape) | median {np.median(guest):.2f}, range {min(guest):.2f}–{max(guest):.2f} |",
    ])


def floor(recs: list[dict]) -> str:
    lines = ["| path, no shaping | ping RTT median [95 % CI], ms | ping p95, ms | lab probe (TCP connect) median, ms "
             "| pings lost | host load |", "|---|---|---|---|---|---|"]
    for shaper, label in (("none", "veth pair (no shaper)"), ("netem", "netem link, nothing set (veth)"),
                          ("linkemu", "linkemu, nothing set (through the process)"),
                          ("wirefilter", "wirefilter, nothing set (through VDE)")):
        rs = by(recs, shaper, "none")
        if not rs:
            continue
        m, lo, hi = _median_ci(rs, "ping_ms", shaper, "none")
        pooled = np.concatenate(_samples(rs, "ping_ms"))
        tcp = float(np.median(np.concatenate(_samples(rs, "tcp_ms"))))
        sent = sum(r["ping_sent"] for r in rs)
        lines.append(f"| {label} | {_ci_ms(m, lo, hi)} | {_ms(float(np.quantile(pooled, 0.95)))} | {_ms(tcp)} "
                     f"| {sent - len(pooled)} of {sent} | {_load(rs)} |")
    udp = by(recs, "none", "udp-floor")
    tcp = by(recs, "none", "tcp-floor")
    if udp:
        k = sum(r["udp_lost"] for r in udp)
        n = sum(r["udp_sent"] for r in udp)
        lo, hi = clopper_pearson(k, n)
        lines += ["", "| unshaped veth pair | measured | host load |", "|---|---|---|",
                  f"| UDP datagrams lost at {udp[0]['udp_pps']}/s (iperf3, 100-byte) | {k} of {n}: "
                  f"{100 * k / n:.3f} % [{100 * lo:.3f}, {100 * hi:.3f}] | {_load(udp)} |"]
    if tcp:
        m, lo, hi = t_interval([r["goodput_bps"] / 1e6 for r in tcp])
        lines.append(f"| TCP goodput (iperf3, {tcp[0]['tcp_seconds']} s) | {m:.0f} Mbit/s [{lo:.0f}, {hi:.0f}] "
                     f"over {len(tcp)} rounds | {_load(tcp)} |")
    return "\n".join(lines)


def _delay_shapes(recs: list[dict]) -> list[str]:
    names = {r["shape"] for r in recs if r["kind"] == "delay" and r["shape"].startswith("rtt")}
    return sorted(names, key=lambda s: float(s[3:]))


def delay(recs: list[dict]) -> str:
    lines = ["| requested RTT | shaper | ping median [95 % CI], ms | p5–p95, ms | lab probe median, ms "
             "| within max(1 ms, 5 %) | − netem: median [95 % CI], ms | verdict vs netem | host load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for shape in _delay_shapes(recs):
        want = float(shape[3:])
        base = by(recs, "netem", shape)
        for shaper in SHAPERS:
            rs = by(recs, shaper, shape)
            if not rs:
                continue
            m, lo, hi = _median_ci(rs, "ping_ms", shaper, shape)
            pooled = np.concatenate(_samples(rs, "ping_ms"))
            p5, p95 = np.quantile(pooled, [0.05, 0.95])
            tcp = float(np.median(np.concatenate(_samples(rs, "tcp_ms"))))
            ok = "yes" if abs(m - want) <= delay_bound(want) else f"no ({m - want:+.2f} ms)"
            if shaper == "netem" or not base:
                cmp_, v = "—", "—"
            else:
                d, dlo, dhi = _diff_ci(rs, base, "ping_ms", shaper, shape)
                cmp_ = f"{d:+.2f} [{dlo:+.2f}, {dhi:+.2f}]"
                v = verdict(dlo, dhi, delay_bound(want))
            lines.append(f"| {want:g} ms | {shaper} | {_ci_ms(m, lo, hi)} | {_ms(p5)}–{_ms(p95)} | {_ms(tcp)} | {ok} "
                         f"| {cmp_} | {v} | {_load(rs)} |")
    return "\n".join(lines)


def jitter(recs: list[dict]) -> str:
    lines = ["| shaper | ping median, ms | sd [95 % CI], ms | p5–p95, ms | − netem: sd [95 % CI], ms "
             "| verdict vs netem (±1 ms) | host load |", "|---|---|---|---|---|---|---|"]
    base = by(recs, "netem", "jitter")
    for shaper in SHAPERS:
        rs = by(recs, shaper, "jitter")
        if not rs:
            continue
        rounds = _samples(rs, "ping_ms")
        pooled = np.concatenate(rounds)
        s_lo, s_hi = interval(boot_medians(rounds, _stable_rng("sd", shaper), sd))
        p5, p95 = np.quantile(pooled, [0.05, 0.95])
        if shaper == "netem" or not base:
            cmp_, v = "—", "—"
        else:
            d, dlo, dhi = _diff_ci(rs, base, "ping_ms", "sd", shaper, stat=sd)
            cmp_, v = f"{d:+.2f} [{dlo:+.2f}, {dhi:+.2f}]", verdict(dlo, dhi, 1.0)
        lines.append(f"| {shaper} | {_ms(float(np.median(pooled)))} | {_ci_ms(sd(pooled), s_lo, s_hi)} "
                     f"| {_ms(p5)}–{_ms(p95)} | {cmp_} | {v} | {_load(rs)} |")
    lines.append("")
    lines.append(f"Requested: 50 ms ± 10 ms (uniform) each way, RTT 100 ms; without other noise the RTT is "
                 f"triangular on 80–120 ms: sd {JITTER_SD:.2f} ms, p5–p95 86.3–113.7 ms.")
    return "\n".join(lines)


def _loss_shapes(recs: list[dict]) -> list[str]:
    names = {r["shape"] for r in recs if r["kind"] == "loss" and r["shape"].startswith("loss")}
    return sorted(names, key=lambda s: float(s[4:]))


_TC = re.compile(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+),")


def link_count(r: dict) -> tuple[int, int] | None:
    """(dropped, offered) a→b by the shaper's own count over the measurement: netem's qdisc (a fresh one per
    shape), linkemu's per-direction counters; wirefilter (VDE) by its TAP devices (frames into a's, out of
    b's). Includes the few packets of iperf3's control connection."""
    b, a = r.get("counters_before") or {}, r.get("counters_after") or {}
    if "tc_a" in a and "tc_a" in b:
        (s1, d1), (s0, d0) = (map(int, _TC.search(x["tc_a"]).groups()) for x in (a, b))
        return d1 - d0, (s1 + d1) - (s0 + d0)
    if a.get("linkemu") and b.get("linkemu"):
        la, lb = a["linkemu"], b["linkemu"]
        return la["lost_ab"] - lb["lost_ab"], la["frames_ab"] - lb["frames_ab"]
    if "dev_a" in a and "dev_b" in a and "dev_a" in b and "dev_b" in b:
        sent = a["dev_a"]["tx"]["packets"] - b["dev_a"]["tx"]["packets"]
        got = a["dev_b"]["rx"]["packets"] - b["dev_b"]["rx"]["packets"]
        return sent - got, sent
    return None


def loss(recs: list[dict]) -> str:
    lines = ["| requested loss (a→b) | shaper | lost / sent (per round) | loss [exact 95 % CI], % | request inside? "
             "| the shaper's own count, % | − netem [95 % CI], points | verdict vs netem | host load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for shape in _loss_shapes(recs):
        want = float(shape[4:])
        base = by(recs, "netem", shape)
        for shaper in SHAPERS:
            rs = [r for r in by(recs, shaper, shape) if r.get("udp_sent")]
            if not rs:
                continue
            k, n = sum(r["udp_lost"] for r in rs), sum(r["udp_sent"] for r in rs)
            lo, hi = clopper_pearson(k, n)
            per = ", ".join(f"{r['udp_lost']}/{r['udp_sent']}" for r in rs)
            inside = "yes" if lo * 100 <= want <= hi * 100 else "no"
            b = [r for r in base if r.get("udp_sent")]
            if shaper == "netem" or not b:
                cmp_, v = "—", "—"
            else:
                kb, nb = sum(r["udp_lost"] for r in b), sum(r["udp_sent"] for r in b)
                dlo, dhi = newcombe(k, n, kb, nb)
                cmp_ = f"{100 * (k / n - kb / nb):+.3f} [{100 * dlo:+.3f}, {100 * dhi:+.3f}]"
                v = verdict(100 * dlo, 100 * dhi, loss_bound(want))
            own = [c for c in (link_count(r) for r in rs) if c and c[1] > 0]
            own_s = f"{100 * sum(c[0] for c in own) / sum(c[1] for c in own):.3f}" if own else "–"
            lines.append(f"| {want:g} % | {shaper} | {per} | {100 * k / n:.3f} [{100 * lo:.3f}, {100 * hi:.3f}] "
                         f"| {inside} | {own_s} | {cmp_} | {v} | {_load(rs)} |")
    failed = [r for r in recs if r["kind"] in ("loss", "rate") and r.get("iperf_error")]
    if failed:
        lines.append("")
        lines.append("Not measured (iperf3 failed: the loss being measured dropped the one datagram that sets "
                     "its UDP stream up, which iperf3 3.12 does not resend, esnet/iperf#862; bench/emulation.py "
                     "now runs such a run again): " + "; ".join(
            f"{r['shaper']} round {r['round']} {r['shape']}: \"{r['iperf_error'].strip()}\"" for r in failed) + ".")
    return "\n".join(lines)


def _rate_shapes(recs: list[dict]) -> list[str]:
    names = {r["shape"] for r in recs if r["kind"] == "rate" and r["shape"].startswith("rate")}
    return sorted(names, key=lambda s: float(s[4:]))


def rate(recs: list[dict]) -> str:
    lines = ["| requested rate | shaper | goodput per round, Mbit/s | mean [95 % CI], Mbit/s | as wire rate, % of request "
             "| retransmits | − netem [95 % CI], Mbit/s | verdict vs netem (±5 %) | host load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for shape in _rate_shapes(recs):
        want = float(shape[4:])
        base = [r["goodput_bps"] / 1e6 for r in by(recs, "netem", shape) if r.get("goodput_bps")]
        for shaper in SHAPERS:
            rs = [r for r in by(recs, shaper, shape) if r.get("goodput_bps")]
            if not rs:
                continue
            g = [r["goodput_bps"] / 1e6 for r in rs]
            m, lo, hi = t_interval(g)
            wire = 100 * m / GOODPUT / want
            if shaper == "netem" or len(base) < 2:
                cmp_, v = "—", "—"
            else:
                d = m - float(np.mean(base))
                se = math.sqrt(np.var(g, ddof=1) / len(g) + np.var(base, ddof=1) / len(base))
                dof = len(g) + len(base) - 2
                h = float(stats.t.ppf(0.975, dof)) * se
                cmp_ = f"{d:+.2f} [{d - h:+.2f}, {d + h:+.2f}]"
                v = verdict((d - h) / GOODPUT, (d + h) / GOODPUT, 0.05 * want)
            lines.append(f"| {want:g} Mbit/s | {shaper} | {', '.join(f'{x:.2f}' for x in g)} | {m:.2f} [{lo:.2f}, {hi:.2f}] "
                         f"| {wire:.1f} | {sum(r.get('retransmits') or 0 for r in rs)} | {cmp_} | {v} | {_load(rs)} |")
    lines.append("")
    lines.append(f"Goodput is TCP payload; a frame of 1514 bytes carries 1448 (×{GOODPUT:.3f}), so the wire rate is "
                 "goodput / 0.956. Both shapers count the Ethernet frame against the rate.")
    return "\n".join(lines)


def partition(recs: list[dict]) -> str:
    lines = ["| shaper | pings through while cut | first answer after the lift began, ms (per round) "
             "| lifting took (set_link), ms | first answer after it was lifted, ms | host load |",
             "|---|---|---|---|---|---|"]

    def each(rs: list[dict], key: str) -> str:
        v = [r.get(key) for r in rs]
        return ", ".join("–" if x is None else f"{x:.0f}" for x in v) if any(x is not None for x in v) else "not recorded"

    for shaper in SHAPERS:
        rs = by(recs, shaper, "partition")
        if not rs:
            continue
        through = sum(r["ping_through"] for r in rs)
        sent = sum(r["ping_sent"] for r in rs)
        lines.append(f"| {shaper} | {through} of {sent} | {each(rs, 'resume_ms')} | {each(rs, 'lift_ms')} "
                     f"| {each(rs, 'resume_after_lift_ms')} | {_load(rs)} |")
    lines.append("")
    lines.append("A cut is loss 100 % both ways (what the lab's lifecycle sets for a partition on a direct link); "
                 "a ping every 10 ms runs across the lift. Lifting is `Network.set_link` on both directions: "
                 "netem runs `tc` in each namespace (processes: slow under TCG), linkemu sends a command on its "
                 "socket; each call re-applies both ends of the link, so netem's traffic flows again partway through the "
                 "second call (the negative figures: answers before `set_link` had returned). The lift's own time "
                 "was recorded from round 2 on (`–`: not recorded).")
    return "\n".join(lines)


# ---------------------------------------------------------------- Galera's write penalty (bench/galera_penalty.py)
GALERA_BOUND = 0.5  # round trips: the project's bound for "no effect" and for agreement (docs/results-study.md)
GALERA_SHAPERS = ("netem", "linkemu")
GALERA_ARMS = (("none", "none (veth, nothing shaped)"), ("netem", "netem"), ("linkemu", "linkemu"))
"""The arms and their labels; netem at RTT 0 is a plain veth pair (the lab's NetemShaper sets no qdisc for nothing)."""


def galera_records() -> list[dict]:
    """bench/galera_penalty.py's lines: clusters, cells (one cluster at one RTT), rows at the end."""
    out: list[dict] = []
    for f in sorted(DATA.glob("galera-penalty*.jsonl")):
        out += [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
    return out


def cells(recs: list[dict], arm: str | None = None, rtt: float | None = None) -> list[dict]:
    return sorted((r for r in recs if r.get("event") == "cell" and arm in (None, r["arm"]) and rtt in (None, r["rtt_ms"])),
                  key=lambda r: r["seq"])


def cell_median(r: dict) -> float:
    return float(np.median(r["commit_ms"]))


def cell_ping(r: dict) -> float:
    """The RTT in force during a cell: the median of its pings r1→r2 and r1→r3."""
    return float(np.median(r["ping_r2_ms"] + r["ping_r3_ms"]))


def penalties(recs: list[dict], arm: str, rtt: float, per: str = "requested") -> dict[int, float]:
    """Per block: (median commit at ``rtt`` − median commit at 0, same arm and block) in round trips of the requested
    RTT (``per="requested"``: ÷ rtt) or of the RTT measured in the two cells (``per="measured"``: ÷ (ping at rtt −
    ping at 0))."""
    base = {r["block"]: r for r in cells(recs, arm, 0.0)}
    out: dict[int, float] = {}
    for r in cells(recs, arm, rtt):
        b = base.get(r["block"])
        if b is None:
            continue
        d = cell_median(r) - cell_median(b)
        out[r["block"]] = d / rtt if per == "requested" else d / (cell_ping(r) - cell_ping(b))
    return out


def penalty_boot(recs: list[dict], arm: str, rtt: float) -> np.ndarray:
    """``B`` replicates of the blocks' mean penalty with each cell's writes resampled (within the cells only: with one
    block the interval holds the writes' spread, not the drift from block to block)."""
    base = {r["block"]: np.asarray(r["commit_ms"], dtype=float) for r in cells(recs, arm, 0.0)}
    pairs = [(np.asarray(r["commit_ms"], dtype=float), base[r["block"]]) for r in cells(recs, arm, rtt) if r["block"] in base]
    rng = _stable_rng("penalty", arm, rtt)
    reps = np.zeros(B)
    for hi, lo in pairs:
        reps += (np.median(rng.choice(hi, (B, len(hi))), axis=1) - np.median(rng.choice(lo, (B, len(lo))), axis=1)) / rtt
    return reps / max(1, len(pairs))


def _pen(recs: list[dict], arm: str, rtt: float, other: str | None = None) -> tuple[str, float, float]:
    """A penalty (or linkemu − ``other``'s) with its interval: Student's t over blocks from 2 blocks on, else the
    bootstrap over the writes of the one block (said so)."""
    p = penalties(recs, arm, rtt)
    x = paired(p, penalties(recs, other, rtt)) if other else list(p.values())
    if len(x) >= 2:
        m, lo, hi = t_interval(x)
        return f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]", lo, hi
    if not x:
        return "–", float("nan"), float("nan")
    reps = penalty_boot(recs, arm, rtt) - (penalty_boot(recs, other, rtt) if other else 0)
    lo, hi = interval(reps)
    return f"{x[0]:+.2f} [{lo:+.2f}, {hi:+.2f}] (one block: writes resampled)", lo, hi


def paired(a: dict[int, float], b: dict[int, float]) -> list[float]:
    """a − b for the blocks both have."""
    return [a[k] - b[k] for k in sorted(a) if k in b]


def _t(x: list[float]) -> str:
    if not x:
        return "–"
    m, lo, hi = t_interval(x)
    return f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]" if np.isfinite(lo) else f"{m:+.2f} (one block)"


def _gload(rs: list[dict]) -> str:
    return _load(rs) if rs else "–"


def galera_setup(recs: list[dict]) -> str:
    cs = cells(recs)
    if not cs:
        return "No measurements yet."
    clusters = {r["arm"]: r for r in recs if r.get("event") == "cluster"}
    times = sorted(r["time"] for r in cs)
    guest = [float(r["guest_load_after"].split()[0]) for r in cs]
    opts = cs[0]["galera_options"]
    windows = sorted({tuple(sorted(r["provider_options"].items())) for r in cs})
    read = "; ".join(", ".join(f"{k} {v}" for k, v in w) for w in windows)
    others = ", ".join(f"{k} {v}" for k, v in sorted(opts.items()) if k not in ("evs.send_window", "evs.user_send_window"))
    blocks = sorted({r["block"] for r in cs})
    rtts = sorted({r["rtt_ms"] for r in cs})
    return "\n".join([
        "| what | value |", "|---|---|",
        f"| VM | {'; '.join(sorted({r.get('vm_spec', '') for r in cs}))}; guest {', '.join(sorted({r['kernel'] for r in cs}))} |",
        "| clusters | " + "; ".join(f"{a}: links {', '.join(c['link_kind'])}, 3 members Synced in {c['start_s']:.0f} s"
                                    for a, c in clusters.items()) + " |",
        f"| Galera's send windows, read back in every cell | {read} (the study's plan asks evs.send_window "
        f"{opts['evs.send_window']}, evs.user_send_window {opts['evs.user_send_window']}) |",
        f"| its other provider options (the study's 3-region plan at RTT {max(rtts):g} ms) | {others} |",
        f"| blocks | {len(blocks)}, each: {'the unshaped cluster, ' if cells(recs, 'none') else ''}the two shapers in "
        f"ABBA order across blocks (each at RTT {', '.join(f'{x:g}' for x in rtts)} ms, ascending or descending)"
        f"{', the unshaped cluster again' if cells(recs, 'none') else ''} |",
        f"| writes per cell | {cs[0]['warmup']} not counted, then {cs[0]['writes']} timed (INSERT and UPDATE of one row, "
        "alternately, autocommit, one connection from r1 to r1's member) |",
        f"| measurements | {len(cs)} cells, {times[0]} – {times[-1]} (UTC); "
        f"{sum(r.get('event') == 'cell-failed' for r in recs)} failed |",
        f"| host load (1-min average, sampled every 5 s) | median {np.median([r['host_load1_median'] for r in cs]):.1f}, "
        f"range {min(r['host_load1_min'] for r in cs):.1f}–{max(r['host_load1_max'] for r in cs):.1f} |",
        f"| guest load (1-min average after each cell) | median {np.median(guest):.2f}, range {min(guest):.2f}–{max(guest):.2f} |",
    ])


def galera_commit(recs: list[dict]) -> str:
    lines = ["| requested RTT | shaper | RTT measured (pings r1→r2, r1→r3): median, ms | commit median [95 % CI], ms "
             "| commit p95, ms | penalty, round trips: mean [95 % CI] over blocks | per block | "
             "per measured RTT [95 % CI] | host load |", "|---|---|---|---|---|---|---|---|---|"]
    rtts = sorted({r["rtt_ms"] for r in cells(recs)})
    for rtt in rtts:
        for arm, label in GALERA_ARMS:
            rs = cells(recs, arm, rtt)
            if not rs:
                continue
            rounds = [np.asarray(r["commit_ms"], dtype=float) for r in rs]
            pooled = np.concatenate(rounds)
            lo, hi = interval(boot_medians(rounds, _stable_rng("galera", arm, rtt)))
            ping = float(np.median([x for r in rs for x in r["ping_r2_ms"] + r["ping_r3_ms"]]))
            if rtt == 0:
                pen = per = meas = "—"
            else:
                p = penalties(recs, arm, rtt)
                pen = _pen(recs, arm, rtt)[0]
                per = ", ".join(f"{p[k]:+.2f}" for k in sorted(p))
                meas = _t(list(penalties(recs, arm, rtt, per="measured").values()))
            lines.append(f"| {rtt:g} ms | {label} | {_ms(ping)} | {_ci_ms(float(np.median(pooled)), lo, hi)} "
                         f"| {_ms(float(np.quantile(pooled, 0.95)))} | {pen} | {per} | {meas} | {_gload(rs)} |")
    return "\n".join(lines)


def galera_verdict(recs: list[dict]) -> str:
    lines = [f"| requested RTT | netem: round trips | linkemu: round trips | linkemu − netem, paired by block [95 % CI] "
             f"| verdict (±{GALERA_BOUND:g} round trips) |", "|---|---|---|---|---|"]
    for rtt in sorted({r["rtt_ms"] for r in cells(recs)} - {0.0}):
        d = paired(penalties(recs, "linkemu", rtt), penalties(recs, "netem", rtt))
        text, lo, hi = _pen(recs, "linkemu", rtt, other="netem")
        v = {"unclear": "cannot tell", "too few": "too few blocks"}.get(verdict(lo, hi, GALERA_BOUND),
                                                                      verdict(lo, hi, GALERA_BOUND))
        if len(d) < 5:  # the design's least: an interval over the writes of one block ignores the drift between blocks
            v = f"not judged: {len(d)} block{'s' if len(d) != 1 else ''} (the design asks ≥ 5); the interval alone reads {v}"
        lines.append(f"| {rtt:g} ms | {_pen(recs, 'netem', rtt)[0]} | {_pen(recs, 'linkemu', rtt)[0]} | {text} "
                     f"({len(d)} block{'s' if len(d) != 1 else ''}) | {v} |")
    return "\n".join(lines)


def galera_noise(recs: list[dict]) -> str:
    """Nothing shaped: what the VM alone does to a commit (netem at RTT 0 is a plain veth pair, no qdisc; the
    unshaped cluster where there is one), and what linkemu's process adds with nothing set."""
    if not cells(recs):
        return "No measurements yet."
    lines = ["| what | value |", "|---|---|"]
    rtts = sorted({r["rtt_ms"] for r in cells(recs)} - {0.0})
    for arm, label in GALERA_ARMS:
        meds = [cell_median(r) for r in cells(recs, arm, 0.0)]
        if len(meds) < 2:
            continue
        lines.append(f"| {label} at RTT 0: commit median per cell, ms | " + ", ".join(f"{x:.1f}" for x in meds)
                     + f" (sd {sd(np.asarray(meds)):.2f}; as round trips of {', '.join(f'{x:g}' for x in rtts)} ms: "
                     + ", ".join(f"{sd(np.asarray(meds)) / x:.3f}" for x in rtts) + ") |")
    for arm in GALERA_SHAPERS:
        pooled = [x for r in cells(recs, arm, 0.0) for x in r["commit_ms"]]
        if pooled:
            p5, p50, p95 = np.quantile(pooled, [0.05, 0.5, 0.95])
            lines.append(f"| {arm} at RTT 0 ({'a plain veth pair' if arm == 'netem' else 'through the process'}): "
                         f"commits p5 / median / p95, ms | {p5:.1f} / {p50:.1f} / {p95:.1f} ({len(pooled)} writes) |")
    at0 = {a: {r["block"]: cell_median(r) for r in cells(recs, a, 0.0)} for a in GALERA_SHAPERS}
    lines.append(f"| linkemu − netem at RTT 0 (nothing set; paired by block), ms [95 % CI] | {_t(paired(at0['linkemu'], at0['netem']))} |")
    rows = [r for r in recs if r.get("event") == "rows"]
    ok = all(set(r["rows"].values()) == {r["inserted"]} for r in rows)
    lines.append("| rows at the end, per cluster: inserted / on r1, r2, r3 | "
                 + "; ".join(f"{r['arm']}: {r['inserted']} / {', '.join(str(r['rows'][m]) for m in sorted(r['rows']))}"
                             for r in rows) + (" (every write reached every member)" if rows and ok else "") + " |")
    return "\n".join(lines)

BLOCKS = {"setup": setup, "floor": floor, "delay": delay, "jitter": jitter, "loss": loss, "rate": rate,
          "partition": partition}
GALERA_BLOCKS = {"galera_setup": galera_setup, "galera_commit": galera_commit, "galera_verdict": galera_verdict,
                 "galera_noise": galera_noise}


def galera_host_records() -> list[dict]:
    """The same cells with linkemu on the host itself, no VM (``measure`` run there: its "guest" load is the host's)."""
    f = DATA / "galera-host-linkemu.jsonl"
    out = [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()] if f.exists() else []
    for r in out:
        if r.get("event") == "cell":
            a, b = (float(r[k].split()[0]) for k in ("guest_load_before", "guest_load_after"))
            r |= {"host_load1_min": min(a, b), "host_load1_median": (a + b) / 2, "host_load1_max": max(a, b)}
    return out


def render() -> dict[str, str]:
    recs, grecs = records(), galera_records()
    return {**{name: fn(recs) for name, fn in BLOCKS.items()}, **{name: fn(grecs) for name, fn in GALERA_BLOCKS.items()},
            "galera_host": galera_commit(galera_host_records())}


def page_blocks(text: str) -> dict[str, str]:
    return pageblocks.page_blocks(text)


def write(blocks: dict[str, str]) -> None:
    pageblocks.write(PAGE, blocks)


if __name__ == "__main__":
    blocks = render()
    if "--write" in sys.argv:
        write(blocks)
    else:
        for name, body in blocks.items():
            print(f"## {name}\n{body}\n")
