"""``wanwide compare BASE NEW``: per parameter point, scenario and action, how NEW differs from
BASE — the relative difference of the medians (or means) with its 95 % interval, a
benchstat-style marker (``~`` cannot tell, ``≈`` no difference beyond ±10 %: headline.LEGEND) and,
as benchstat gives, the Mann-Whitney U test's p over the replication units (runs' medians when a
side has several runs, else iterations).

Both sides are read like ``wanwide report`` reads them; groups are matched on every parameter
both sides have, the scenario and the action — except a parameter with one value on each side,
different on the two: that is the change being compared (MariaDB vs Galera), as benchstat treats
a key that is constant per file. ``where`` selects each side's rows, so both sides can come from
one directory. Intervals and replicates: pipeline/results/ci.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from wanwide.core.errors import UserError
from wanwide.pipeline.results.ci import (
    SAME,
    TOO_FEW,
    Estimate,
    GroupCI,
    difference_interval,
    group_ci,
    ratio_interval,
    u_test,
    verdict,
)
from wanwide.pipeline.results.headline import LEGEND, RELATIVE_BOUND
from wanwide.pipeline.results.ingest import PARAM_PREFIX, TOTAL
from wanwide.pipeline.results.paired import BLOCK, paired_change, unit_means
from wanwide.pipeline.results.runs import in_trials
from wanwide.pipeline.results.stats import natural, ordered_params, param_columns, run_ids

COLUMNS = ["scenario", "action", "base", "base_ci", "base_lo", "base_hi", "base_n", "new", "new_ci", "new_lo",
           "new_hi", "new_n", "delta", "delta_lo", "delta_hi", "p", "significant", "verdict", "diff", "diff_lo", "diff_hi"]


def _groups(df: pd.DataFrame, keys: list[str]) -> dict[tuple, GroupCI]:
    ok = df[df["error_type"].isna() & df["action_duration"].notna()]
    rid = run_ids(ok)
    vals = ok["action_duration"].to_numpy(dtype=float)
    out = {}
    for key, idx in ok.groupby(keys, observed=True, dropna=False, sort=True).indices.items():
        out[key if isinstance(key, tuple) else (key,)] = group_ci(vals[idx], rid[idx])
    return out


def _center(g: GroupCI, stat: str) -> Estimate:
    return g.median if stat == "median" else g.mean


class SelectError(UserError, ValueError):
    """A ``--base-where``/``--new-where`` condition that names no parameter or selects nothing."""


def where(df: pd.DataFrame, conds: list[str], side: str, flag: str | None = None) -> pd.DataFrame:
    """The rows of ``df`` whose parameters equal every ``NAME=VALUE`` of ``conds`` (errors name ``flag``,
    by default ``--SIDE-where``)."""
    flag = flag or f"--{side}-where"
    for cond in conds:
        name, eq, value = (x.strip() for x in cond.partition("="))
        col = PARAM_PREFIX + name
        if not eq or not name:
            raise SelectError(f"{flag} {cond!r}: write NAME=VALUE, e.g. backend=mariadb")
        if col not in df.columns:
            have = ", ".join(c[len(PARAM_PREFIX):] for c in param_columns(df)) or "none"
            raise SelectError(f"{flag} {cond!r}: {side} has no parameter {name!r} (its parameters: {have})")
        present = df[col].astype(str)
        if not (present == value).any():
            vals = ", ".join(sorted(set(present[df[col].notna()]))) or "none"
            raise SelectError(f"{flag} {cond!r}: no {side} result has {name}={value} (its values: {vals})")
        df = df[present == value]
    return df


def select(df: pd.DataFrame, conds: list[str], side: str, noisy: set[tuple[str, str]],
           exclude_noisy: bool) -> tuple[pd.DataFrame, set[tuple[str, str]]]:
    """One side's rows: ``where`` its conditions, noisy trials dropped if asked; with the noisy
    (benchmark, trial) pairs among the selected rows."""
    df = where(df, conds, side)
    here = {bt for bt in noisy if in_trials(df, {bt}).any()}
    return (df[~in_trials(df, here)] if exclude_noisy and here else df), here


def changed(base: pd.DataFrame, new: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Parameters both sides have with exactly one value each, different: ``{name: (base, new)}``."""
    out = {}
    for c in ordered_params(param_columns(base)):
        if c not in new.columns:
            continue
        b, n = base[c].dropna().astype(str).unique(), new[c].dropna().astype(str).unique()
        if len(b) == 1 and len(n) == 1 and b[0] != n[0]:
            out[c[len(PARAM_PREFIX):]] = (b[0], n[0])
    return out


def compare(base: pd.DataFrame, new: pd.DataFrame, stat: str = "median") -> pd.DataFrame:
    """One row per group present on both sides (see the module's docstring); ``attrs["changed"]``
    holds the parameters the comparison is about."""
    change = changed(base, new)
    pcols = [c for c in ordered_params(param_columns(base))
             if c in set(param_columns(new)) and c[len(PARAM_PREFIX):] not in change]
    keys = [*pcols, "scenario", "action"]
    for d in (base, new):
        d["action"] = d["action"].astype(str)
        d["scenario"] = d["scenario"].astype(str)
    b, n = _groups(base, keys), _groups(new, keys)
    rows = []
    for key in sorted(set(b) & set(n), key=lambda k: tuple(str(x) for x in k)):
        eb, en = _center(b[key], stat), _center(n[key], stat)
        r, d = ratio_interval(eb, en), difference_interval(eb, en)
        rows.append({**{c[len(PARAM_PREFIX):]: v for c, v in zip(pcols, key[:-2], strict=True)},
                     "scenario": key[-2], "action": key[-1],
                     "base": eb.value, "base_ci": _half(eb), "base_lo": eb.lo, "base_hi": eb.hi,
                     "base_n": f"{b[key].n}/{b[key].runs}",
                     "new": en.value, "new_ci": _half(en), "new_lo": en.lo, "new_hi": en.hi,
                     "new_n": f"{n[key].n}/{n[key].runs}",
                     "delta": r.value, "delta_lo": r.lo, "delta_hi": r.hi, "p": u_test(b[key].units, n[key].units),
                     "significant": r.significant, "verdict": verdict(r.lo, r.hi, RELATIVE_BOUND),
                     "diff": d.value, "diff_lo": d.lo, "diff_hi": d.hi})
    out = pd.DataFrame(rows, columns=[c[len(PARAM_PREFIX):] for c in pcols] + COLUMNS)
    names = [c[len(PARAM_PREFIX):] for c in pcols]
    if names and len(out):  # 3, 9, 45 regions, not 3, 45, 9; scenario and action as they were
        out = out.sort_values(names, key=natural, kind="stable").reset_index(drop=True)
    out.attrs["changed"] = change
    return out


def pair(c: pd.DataFrame, base: pd.DataFrame, new: pd.DataFrame, manifests: tuple[list[dict], list[dict]],
         block: list[str] = BLOCK) -> pd.DataFrame:
    """``compare``'s rows (``stat="mean"``) with each change paired instead (pipeline/results/paired.py): per
    block (a repetition on one machine) the log ratio of its two means, a t interval over blocks and the
    one-sample t test's p. ``blocks`` says how many blocks paired and how many shared one deployment."""
    pnames = _params(c)
    ub, un = (unit_means(side, m, action=None) for side, m in ((base, manifests[0]), (new, manifests[1])))
    out = c.copy()
    out["blocks"] = ""
    for i, r in c.iterrows():
        def rows(u: pd.DataFrame, r: pd.Series = r) -> pd.DataFrame:
            keep = (u["scenario"] == str(r["scenario"])) & (u["action"] == str(r["action"]))
            for p in pnames:
                if pd.notna(r[p]):
                    keep &= u[PARAM_PREFIX + p] == str(r[p])
            return u[keep]

        p = paired_change(rows(ub), rows(un), block)
        out.loc[i, ["delta", "delta_lo", "delta_hi", "p"]] = [p.value, p.lo, p.hi, p.p]
        out.loc[i, ["significant", "verdict", "blocks"]] = [p.significant, p.verdict(RELATIVE_BOUND), f"{p.blocks}/{p.shared}"]
        # seconds: the paired ratio applied to the base's estimate (the pairing has no absolute replicates)
        out.loc[i, ["diff", "diff_lo", "diff_hi"]] = [p.value * r["base"], p.lo * r["base"], p.hi * r["base"]]
    out.attrs = {**c.attrs, "paired": True}
    return out


def _half(e: Estimate) -> float:
    """Half the interval's width relative to the estimate (benchstat's ``±``)."""
    return (e.hi - e.lo) / 2 / abs(e.value) if e.defined and e.value else np.nan


def _params(c: pd.DataFrame) -> list[str]:
    """The parameter columns of ``compare``'s rows."""
    return [x for x in c.columns if x not in COLUMNS and x != "blocks"]


def labels(c: pd.DataFrame, varying_only: bool = False) -> list[str]:
    """Each row's group in words: its parameters (``varying_only``: those not the same on every row), the
    scenario's short name, the action."""
    pnames = [x for x in _params(c) if not (varying_only and c[x].astype(str).nunique() < 2)]
    return [(", ".join(f"{p}={r[p]}" for p in pnames if pd.notna(r[p])) + " " if pnames else "")
            + f"{r['scenario'].split('.')[-1]} {r['action']}" for _, r in c.iterrows()]


def plot(c: pd.DataFrame, path: Path, only_total: bool = False) -> Path:
    """``compare``'s rows as a forest plot (figures.plot_changes), titled with what changed."""
    from wanwide.pipeline.results.figures import plot_changes

    rows = c[c["action"] == TOTAL] if only_total else c
    change = ", ".join(f"{k}: {b} → {n}" for k, (b, n) in (c.attrs.get("changed") or {}).items()) or "base → new"
    same = ", ".join(f"{p}={rows[p].iloc[0]}" for p in _params(c) if len(rows) and rows[p].astype(str).nunique() < 2)
    how = "paired per repetition" if c.attrs.get("paired") else "unpaired"
    title = f"{change} ({how})" + (f"; all: {same}" if same else "")
    return plot_changes(rows, labels(rows, varying_only=True), path, RELATIVE_BOUND, title)


@dataclass
class Text:
    """``compare``'s table as text, benchstat's way."""

    stat: str

    def render(self, c: pd.DataFrame, only_total: bool = False) -> str:
        change = c.attrs.get("changed") or {}
        head = "".join(f"{k}: {b} (base) -> {n} (new)\n" for k, (b, n) in change.items())
        if c.empty:
            return head + "no group (parameters, scenario, action) is on both sides\n"
        rows = c[c["action"] == TOTAL] if only_total else c
        name = labels(rows)
        w = max(len(x) for x in [*name, "group"])
        cols = f"{'group':<{w}}  {'base ' + self.stat + ' (s)':>22}  {'new ' + self.stat + ' (s)':>22}  vs base"
        lines = [*head.splitlines(), cols, "-" * len(cols)]
        paired = bool(c.attrs.get("paired"))
        for label, (_, r) in zip(name, rows.iterrows(), strict=True):
            k, shared = r["blocks"].split("/") if paired else ("", "")
            blocks = f"  ({k} blocks, {shared} on one deployment)" if paired else ""
            lines.append(f"{label:<{w}}  {_cell(r['base'], r['base_ci'], r['base_n']):>22}  "
                         f"{_cell(r['new'], r['new_ci'], r['new_n']):>22}  {_delta(r)}{blocks}")
        sig = int(rows["significant"].sum())
        how = ("Paired: per block (a repetition on one machine) the ratio of its two means, a t interval "
               "over blocks; p: t test over blocks" if paired else "p: Mann-Whitney U over runs (iterations with one run)")
        lines += ["", f"{sig} of {len(rows)} differ significantly (95 % interval of the relative difference "
                      f"excludes 0); {LEGEND}. {how}.",
                  "n = iterations/runs; ± = half the 95 % interval."]
        return "\n".join(lines) + "\n"


def _cell(v: float, half: float, n: str) -> str:
    return f"{v:.4g} ±{half:.0%} n={n}" if np.isfinite(half) else f"{v:.4g} ±?  n={n}"


def _delta(r: pd.Series) -> str:
    if r["verdict"] == TOO_FEW or not np.isfinite(r["delta_lo"]):
        return "? (cannot tell: n too small for an interval)"
    p = f"(p={r['p']:.3f})" if np.isfinite(r["p"]) else "(p: n too small)"
    if r["verdict"] == SAME:
        return f"≈ {p}  [{r['delta_lo']:+.1%}, {r['delta_hi']:+.1%}]"
    if not r["significant"]:
        return f"~ {p}  [{r['delta_lo']:+.1%}, {r['delta_hi']:+.1%}]"
    return f"{r['delta']:+.1%} {p}  [{r['delta_lo']:+.1%}, {r['delta_hi']:+.1%}]"
