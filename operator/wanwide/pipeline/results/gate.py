"""``wanwide compare --fail-on RULE``: the bounds a CI job fails on. Pure (rules and tables in, breaches out).

A rule is ``DIRECTION>BOUND`` or ``failures``:

- ``slower>10%``, ``faster>10%``, ``change>10%``: the relative change of a group (parameters,
  scenario, action) — its whole 95 % interval beyond the bound, not only its estimate: a change
  the data cannot tell from the bound does not fail the job;
- ``slower>2rtt``: the absolute change beyond that many WAN round trips (the group's ``rtt``
  parameter; a Benchmark that sweeps it gates each point at its own RTT);
- ``slower>50ms``, ``slower>0.2s``: the absolute change beyond a time;
- ``failures``: any failed iteration or failed run on the NEW side; ``failures>1%``: a
  scenario's failed share of iterations beyond the bound;
- ``slo``: any objective of the Benchmark's (``spec.workload.slo``) missed by a NEW run.

A group without an interval (too few iterations) cannot cross a bound "with its interval": it is
listed as not gated rather than passed silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from wanwide.core.errors import UserError
from wanwide.pipeline.results.compare import COLUMNS
from wanwide.pipeline.results.ingest import PARAM_PREFIX, TOTAL

_COMPARE_COLUMNS = {*COLUMNS, "blocks"}
EXIT_PASSED, EXIT_BREACHED = 0, 1  # 2: the inputs or the rules are wrong (wanwide's usage exit code)
DIRECTIONS = ("slower", "faster", "change")
_RULE = re.compile(r"^\s*(slower|faster|change|failures|slo)\s*(?:>\s*([0-9]+(?:\.[0-9]+)?)\s*(%|rtt|ms|s)?)?\s*$")
EXAMPLES = "slower>10%, change>5%, slower>2rtt, slower>50ms, failures, failures>1%, slo"


class GateError(UserError, ValueError):
    """A ``--fail-on`` rule that cannot be read or cannot apply to these results."""


@dataclass(frozen=True)
class Rule:
    """One bound: ``kind`` slower | faster | change | failures; ``bound`` a fraction (``%``), round trips
    (``rtt``), seconds (``ms``/``s``) or None (``failures``: any)."""

    kind: str
    bound: float | None
    unit: str  # "%", "rtt", "s" or ""
    text: str


def parse_rule(text: str) -> Rule:
    """``slower>10%`` → Rule; GateError naming the rule and how to write one."""
    m = _RULE.match(text)
    if not m:
        raise GateError(f"--fail-on {text!r}: write DIRECTION>BOUND (DIRECTION slower, faster or change; BOUND in %, "
                        f"rtt, ms or s) or failures[>PCT%], e.g. {EXAMPLES}")
    kind, number, unit = m.group(1), m.group(2), m.group(3)
    if kind == "slo":
        if number is not None:
            raise GateError(f"--fail-on {text!r}: slo takes no bound (the Benchmark's objectives are the bounds)")
        return Rule(kind, None, "", text.strip())
    if kind == "failures":
        if number is None:
            return Rule(kind, None, "", text.strip())
        if unit != "%":
            raise GateError(f"--fail-on {text!r}: a failure bound is a share of iterations: write failures>1%")
        return Rule(kind, float(number) / 100, "%", text.strip())
    if number is None:
        raise GateError(f"--fail-on {text!r}: {kind} needs a bound, e.g. {kind}>10% or {kind}>2rtt")
    if unit is None:
        raise GateError(f"--fail-on {text!r}: give the bound a unit: {kind}>{number}% (relative), "
                        f"{kind}>{number}rtt (round trips) or {kind}>{number}ms")
    value = float(number)
    if unit == "%":
        return Rule(kind, value / 100, "%", text.strip())
    if unit == "rtt":
        return Rule(kind, value, "rtt", text.strip())
    return Rule(kind, value / 1000 if unit == "ms" else value, "s", text.strip())


@dataclass(frozen=True)
class Breach:
    """A group (or a run) beyond a rule's bound, in words."""

    rule: str
    group: str
    detail: str


@dataclass
class Verdict:
    breaches: list[Breach]
    ungated: list[str]  # groups no interval could be had for
    checked: int  # groups (or scenarios) each rule looked at, summed

    @property
    def exit_code(self) -> int:
        return EXIT_BREACHED if self.breaches else EXIT_PASSED

    def render(self, rules: list[Rule]) -> str:
        names = ", ".join(r.text for r in rules)
        lines = [f"FAIL {b.rule}: {b.group}: {b.detail}" for b in self.breaches]
        if self.ungated:
            lines.append(f"not gated (n too small for an interval): {len(self.ungated)} group(s), e.g. "
                         + "; ".join(self.ungated[:3]))
        lines.append(f"gate {names}: " + (f"{len(self.breaches)} breach(es) -> exit {EXIT_BREACHED}" if self.breaches
                                           else f"passed ({self.checked} checked) -> exit {EXIT_PASSED}"))
        return "\n".join(lines) + "\n"


def _rtt_s(row: pd.Series, rule: Rule) -> float:
    if "rtt" not in row.index or pd.isna(row["rtt"]):
        raise GateError(f"--fail-on {rule.text!r}: a bound in round trips needs the groups' rtt parameter, which "
                        "these results do not match on (no rtt, or rtt is what changed): give it in % or ms")
    from wanwide.core.api.units import DURATION_HINT, seconds

    try:
        return seconds(str(row["rtt"]))
    except ValueError:
        raise GateError(f"--fail-on {rule.text!r}: rtt={row['rtt']!r} {DURATION_HINT}") from None


def _beyond(kind: str, lo: float, hi: float, bound: float) -> bool:
    """Whether the interval [lo, hi] lies wholly beyond ``bound`` in the rule's direction."""
    up, down = lo > bound, hi < -bound
    return up if kind == "slower" else down if kind == "faster" else up or down


def _change(c: pd.DataFrame, labels: list[str], rule: Rule, out: Verdict) -> None:
    for label, (_, r) in zip(labels, c.iterrows(), strict=True):
        if rule.unit == "%":
            lo, hi, value, bound = r["delta_lo"], r["delta_hi"], r["delta"], rule.bound or 0.0
            shown = f"{value:+.1%} [{lo:+.1%}, {hi:+.1%}], bound {rule.bound:.0%}"
        else:
            scale = _rtt_s(r, rule) if rule.unit == "rtt" else 1.0
            lo, hi, value = r["diff_lo"], r["diff_hi"], r["diff"]
            bound = (rule.bound or 0.0) * scale
            shown = f"{value * 1000:+.1f} ms [{lo * 1000:+.1f}, {hi * 1000:+.1f}], bound {bound * 1000:.1f} ms"
            if rule.unit == "rtt":
                shown += f" ({rule.bound:g} × rtt {r['rtt']})"
        out.checked += 1
        if not (np.isfinite(lo) and np.isfinite(hi)):
            if label not in out.ungated:
                out.ungated.append(label)
            continue
        if _beyond(rule.kind, float(lo), float(hi), bound):
            out.breaches.append(Breach(rule.text, label, f"{shown}; base {r['base']:.4g} s, new {r['new']:.4g} s"))


def failure_counts(df: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Per parameter point and scenario: iterations and failed iterations (Total rows)."""
    total = df[df["action"].astype(str) == TOTAL]
    keys = [PARAM_PREFIX + p for p in params if PARAM_PREFIX + p in total.columns] + ["scenario"]
    failed = total["error_type"].notna()
    g = pd.DataFrame({**{k: total[k].astype(str) for k in keys}, "failed": failed.to_numpy()})
    return g.groupby(keys, observed=True, sort=True)["failed"].agg(iterations="size", failures="sum").reset_index()


def _failures(new: pd.DataFrame, params: list[str], failed_runs: list[str], rule: Rule, out: Verdict) -> None:
    counts = failure_counts(new, params)
    for _, r in counts.iterrows():
        out.checked += 1
        share = r["failures"] / r["iterations"] if r["iterations"] else 0.0
        if (rule.bound is None and r["failures"] > 0) or (rule.bound is not None and share > rule.bound):
            where = ", ".join(f"{p}={r[PARAM_PREFIX + p]}" for p in params if PARAM_PREFIX + p in r.index)
            out.breaches.append(Breach(rule.text, (where + " " if where else "") + str(r["scenario"]).split(".")[-1],
                                       f"{int(r['failures'])} of {int(r['iterations'])} iterations failed ({share:.1%})"))
    if rule.bound is None:
        for run in failed_runs:
            out.checked += 1
            out.breaches.append(Breach(rule.text, "run " + run.split(":", 1)[0], run.split(":", 1)[-1].strip()))


def evaluate(rules: list[Rule], c: pd.DataFrame, labels: list[str], new: pd.DataFrame,
             failed_runs: list[str] | None = None, slo: pd.DataFrame | None = None) -> Verdict:
    """Every rule over ``compare``'s rows (``labels``: each row in words) and NEW's table; ``failed_runs``:
    NEW's runs that did not succeed, as ``run: why``; ``slo``: NEW's objectives (runs.slo_table)."""
    out = Verdict([], [], 0)
    params = [x for x in c.columns if x not in _COMPARE_COLUMNS]
    for rule in rules:
        if rule.kind == "slo":
            _slo(slo if slo is not None else pd.DataFrame(), rule, out)
        elif rule.kind == "failures":
            _failures(new, params, failed_runs or [], rule, out)
        else:
            _change(c, labels, rule, out)
    return out




def _slo(slo: pd.DataFrame, rule: Rule, out: Verdict) -> None:
    if slo.empty:
        raise GateError(f"--fail-on {rule.text!r}: NEW's runs recorded no objectives (bundles from before "
                        "spec.workload.slo, or plain Rally JSON): gate on slower>…/failures instead")
    for _, r in slo.iterrows():
        out.checked += 1
        if r["met"] is False or str(r["met"]) == "False":
            out.breaches.append(Breach(rule.text, f"{r['benchmark']}/{r['trial']}/{r['region']} {r['scenario']}",
                                       f"{r['objective']}: {r['detail']}"))


def new_slo(manifests: list[dict], conds: list[str]) -> pd.DataFrame:
    """The objectives of the runs among ``manifests`` whose trial parameters match ``conds``."""
    from wanwide.pipeline.results.runs import slo_table

    return slo_table([m for m in manifests if _matches(m, conds)])


def _matches(m: dict, conds: list[str]) -> bool:
    params = {k: str(v) for k, v in ((m.get("trial") or {}).get("parameters") or {}).items()}
    return all(params.get(n.strip()) == v.strip() for n, _, v in (c.partition("=") for c in conds))


def failed_runs(manifests: list[dict], conds: list[str]) -> list[str]:
    """``run: why`` of each run that did not succeed among ``manifests`` whose trial parameters match every
    ``NAME=VALUE`` of ``conds`` (a failed run may have left no iterations to select by)."""
    out = []
    for m in manifests:
        st = m.get("status") or {}
        if st.get("result") == "succeeded":
            continue
        if _matches(m, conds):
            out.append(f"{m.get('benchmark')}/{(m.get('trial') or {}).get('id')}/{m.get('region')} "
                       f"{m.get('run_id')}: {st.get('reason')}: {st.get('message') or ''}".rstrip(": "))
    return out
