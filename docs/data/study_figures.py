"""The 2018 study's figures 7–18 read off as numbers: docs/data/study-2018-figures.csv.

    .venv/bin/python docs/data/study_figures.py --blog GITDIR            # print the table
    .venv/bin/python docs/data/study_figures.py --blog GITDIR --write    # write the CSV

The study (``../shared/reference/study-keystone-2018.txt``) shows its results as PNG figures only.
They are read from the blog's git repository at a pinned commit (``SOURCE``; ``--blog`` is a clone
or mirror of it, e.g. ``git clone https://github.com/Marie-Donnie/blog``; each PNG's blob id is
checked), never copied into this repository. How a number is read:

- the axes: the plot area is seaborn's ``darkgrid`` (background ``#EAEAF2``, white grid lines at
  the ticks). The white grid lines inside the plot area are found in a column of the panel's left
  margin (rows) or a row near its top (columns) and paired with the tick labels printed beside
  them (``TICKS``, typed in from the figure); a straight line through them gives value per pixel.
  The fit's largest residual is recorded (``fit_px``) and must stay under a pixel;
- a stacked bar (figures 7, 8, 10, 11, 13, 14, 16, 17): the bars of a panel touch each other (width
  1), so the run of bar colour along the row above the axis is cut into equal bars; in each bar's
  middle column the first action's segment (blue ``#4C72B0``) and the second's (green
  ``#55A868``) are followed upward from the axis; a segment's top is the upper edge of its topmost
  pixel (an anti-aliased pixel counts for the colour it is nearest to). ``value_s`` of the stack's
  top is the study's mean completion time (the sum of the iteration's actions: its listing 10,
  means after dropping values above the 95th percentile);
- σ (standard deviation of the total) and λ (failure rate) are the figure's own printed labels
  above each bar, typed in (``LABELS_*``);
- a CDF (figures 9, 12, 15, 18): the time at which a curve (blue dashed, green dash-dot, red
  dotted) first reaches a cumulative share: the leftmost pixel of its colour within 2 rows of that
  share's row (the legend box masked).

``resolution_s`` is the value of one pixel on that axis: a bar read here is good to about one pixel
(the printed σ says how much the iterations spread, not how well the mean is known — the study
gives no interval). A bar shorter than 3 pixels is recorded as below resolution.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CSV = HERE / "study-2018-figures.csv"
SOURCE = {"repo": "https://github.com/Marie-Donnie/blog", "commit": "4715f1f582ec09244eaf03d736f313027874a2e4",
          "dir": "assets/evaluation-of-openstack-multi-region-keystone-deployments"}

BG = (234, 234, 242)
LEGEND = (238, 238, 244)
FRAME = (229, 229, 235)  # the legend's frame
BLUE, GREEN, RED = (76, 114, 176), (85, 168, 104), (196, 78, 82)
PALETTE = {"blue": BLUE, "green": GREEN, "bg": BG, "legend": LEGEND, "white": (255, 255, 255), "text": (40, 40, 40)}
BACKENDS = ("MariaDB", "Galera", "CockroachDB")


@dataclass(frozen=True)
class Figure:
    number: int
    stem: str  # file name without .png
    kind: str  # bars | cdf
    scenario: str
    load: str
    sweep: str  # regions | delay
    xs: tuple  # the bars' (or the curves') x values, left to right (curves: legend order)
    segments: tuple = ()  # the stacked actions, bottom to top
    blob: str = ""  # git blob id of the PNG at SOURCE


AUTH = ("keystone_v3.fetch_token", "keystone_v3.validate_token")
PWD = ("keystone_v3.create_user", "keystone_v3.update_user")
FIGURES = [
    Figure(7, "oss-impact-auth-light", "bars", "authenticate", "light", "regions", (3, 9, 45), AUTH,
           "a61d5932563b0d424c9b020fe9144552a6ede9f2"),
    Figure(8, "oss-impact-auth-high", "bars", "authenticate", "high", "regions", (3, 9, 45), AUTH,
           "d35b7e343779065af52e70f07d910372a5930722"),
    Figure(9, "oss-impact-auth-high-cdf", "cdf", "authenticate", "high", "regions", (3, 9, 45), (),
           "889f316a0c4eac6e43998ba92c1af6df5468cc8a"),
    Figure(10, "oss-impact-pwd-light", "bars", "create_user_update_password", "light", "regions", (3, 9, 45), PWD,
           "cbbd47054ce2080f599a83853cb39cb213bfe176"),
    Figure(11, "oss-impact-pwd-high", "bars", "create_user_update_password", "high", "regions", (3, 9, 45), PWD,
           "9092b03b4b01751d602de5cd78f533666952b924"),
    Figure(12, "oss-impact-pwd-high-cdf", "cdf", "create_user_update_password", "high", "regions", (3, 9, 45), (),
           "674718896bac81f4dc5bfe73e9f57e36ef63c6fe"),
    Figure(13, "delay-impact-auth-light", "bars", "authenticate", "light", "delay", (0, 50, 150), AUTH,
           "41759edd63f14ce07da7bfd091404d8d19206926"),
    Figure(14, "delay-impact-auth-high", "bars", "authenticate", "high", "delay", (0, 50, 150), AUTH,
           "9968e8a9faffa9169f24b279d0c712e202bc3ce5"),
    Figure(15, "delay-impact-auth-high-cdf", "cdf", "authenticate", "high", "delay", (0, 50, 150), (),
           "664b4508664749abb8b859678ec257e4de4b952f"),
    Figure(16, "delay-impact-pwd-light", "bars", "create_user_update_password", "light", "delay", (0, 50, 150), PWD,
           "29c2faeeec14b86cb474fe4cdfb8ebb2ba48ae41"),
    Figure(17, "delay-impact-pwd-high", "bars", "create_user_update_password", "high", "delay", (0, 50, 150), PWD,
           "ee8338e6e64f290d5e0e2529a170b1957ed0cb91"),
    Figure(18, "delay-impact-pwd-high-cdf", "cdf", "create_user_update_password", "high", "delay", (0, 50, 150), (),
           "36c5f75f42c66ec0ad92007f5e166f8a96b8f56e"),
]

# The tick labels at the white grid lines inside each figure's plot area, top to bottom (y) and left to
# right (x), as printed on the figure; one entry for all three panels, or one per panel (figure 18's first
# panel has axes of its own).
TICKS: dict[int, dict] = {
    7: {"y": [0.14, 0.12, 0.10, 0.08, 0.06, 0.04, 0.02]},
    8: {"y": [0.4, 0.3, 0.2, 0.1]},
    9: {"y": [1.0, 0.8, 0.6, 0.4, 0.2, 0.0], "x": [0, 5, 10, 15, 20, 25]},
    10: {"y": [0.5, 0.4, 0.3, 0.2, 0.1]},
    11: {"y": [20, 15, 10, 5]},
    12: {"y": [1.0, 0.8, 0.6, 0.4, 0.2, 0.0], "x": [0, 25, 50, 75, 100, 125, 150]},
    13: {"y": [7, 6, 5, 4, 3, 2, 1]},
    14: {"y": [17.5, 15.0, 12.5, 10.0, 7.5, 5.0, 2.5]},
    15: {"y": [1.0, 0.8, 0.6, 0.4, 0.2, 0.0], "x": [0, 10, 20, 30, 40]},
    16: {"y": [100, 80, 60, 40, 20]},
    17: {"y": [60, 50, 40, 30, 20, 10]},
    18: {"y": [1.0, 0.8, 0.6, 0.4, 0.2, 0.0], "x": [0, 50, 100, 150]},
}

# The σ and λ printed above each bar, per panel (MariaDB, Galera, CockroachDB), left to right: typed in
# from the figures ("nan": the figure prints σ: nan, every iteration failed).
LABELS_MARIADB: dict[int, tuple] = {
    7: (("0.03", "0.0"), ("0.03", "0.0"), ("0.02", "0.0")),
    8: (("0.01", "0.0"), ("0.02", "0.0"), ("0.01", "0.98")),
    10: (("0.01", "0.0"), ("0.01", "0.0"), ("0.01", "0.0")),
    11: (("0.01", "0.0"), ("0.01", "0.0"), ("0.01", "0.98")),
    13: (("0.03", "0.0"), ("0.0", "0.0"), ("0.0", "0.0")),
    14: (("0.02", "0.0"), ("0.8", "0.0"), ("2.37", "0.0")),
    16: (("0.01", "0.0"), ("0.0", "0.0"), ("0.01", "0.0")),
    17: (("0.01", "0.0"), ("2.05", "0.0"), ("6.27", "0.0")),
}
LABELS_GALERA: dict[int, tuple] = {
    7: (("0.02", "0.0"), ("0.02", "0.0"), ("0.02", "0.0")),
    8: (("0.01", "0.0"), ("0.02", "0.0"), ("2.62", "0.0")),
    10: (("0.01", "0.0"), ("0.01", "0.0"), ("0.02", "0.0")),
    11: (("0.13", "0.0"), ("0.33", "0.0"), ("nan", "1.0")),
    13: (("0.02", "0.0"), ("0.06", "0.0"), ("0.29", "0.0")),
    14: (("0.02", "0.0"), ("0.1", "0.0"), ("0.43", "0.0")),
    16: (("0.01", "0.0"), ("0.19", "0.0"), ("0.72", "0.0")),
    17: (("0.33", "0.0"), ("5.61", "0.0"), ("13.32", "0.0")),
}
LABELS_CRDB: dict[int, tuple] = {
    7: (("0.01", "0.0"), ("0.0", "0.0"), ("0.01", "0.0")),
    8: (("0.03", "0.0"), ("0.02", "0.0"), ("0.19", "0.09")),
    10: (("0.68", "0.0"), ("0.55", "0.0"), ("0.6", "0.0")),
    11: (("1.48", "0.0"), ("5.84", "0.11"), ("32.21", "0.33")),
    13: (("0.0", "0.0"), ("0.01", "0.0"), ("0.31", "0.0")),
    14: (("0.02", "0.0"), ("2.53", "0.0"), ("7.8", "0.11")),
    16: (("0.55", "0.0"), ("25.07", "0.03"), ("48.51", "0.46")),
    17: (("5.84", "0.11"), ("57.62", "0.94"), ("nan", "0.99")),
}
CDF_SHARES = (0.5, 0.9, 0.95, 0.99)
COLUMNS = ["figure", "scenario", "load", "backend", "regions", "delay_ms", "rtt_ms", "what", "value_s", "sigma_s",
           "failure_rate", "resolution_s", "pixel", "fit_px", "note"]


def png(blog: Path, fig: Figure) -> bytes:
    """The figure's PNG from the blog's git repository at ``SOURCE``, its blob id checked."""
    spec = f"{SOURCE['commit']}:{SOURCE['dir']}/{fig.stem}.png"
    data = subprocess.run(["git", "--git-dir", str(blog), "show", spec], capture_output=True, check=True).stdout
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    if blob != fig.blob:
        raise SystemExit(f"figure {fig.number}: {spec} is blob {blob}, expected {fig.blob}")
    return data


def _pixels(data: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def _near(a: np.ndarray, colour: tuple, tol: int = 3) -> np.ndarray:
    return np.abs(a - np.array(colour)).sum(axis=-1) <= tol


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Inclusive runs of True."""
    out, start = [], None
    for i, v in enumerate(mask):
        if v and start is None:
            start = i
        if not v and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(mask) - 1))
    return out


def axes(a: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Each panel's plot area (x0, x1, y0, y1, inclusive), left to right: the non-white runs along the row just
    above the bottom edge, and for each the rows its left margin column has background in."""
    bottom = max(y for y in range(a.shape[0]) if _near(a[y], BG).sum() > 50)
    out, spans = [], []
    for x0, x1 in _runs(~_near(a[bottom], (255, 255, 255), 0)):  # white grid lines cross it: bridge short gaps
        if spans and x0 - spans[-1][1] <= 6:
            spans[-1] = (spans[-1][0], x1)
        else:
            spans.append((x0, x1))
    for x0, x1 in spans:
        if x1 - x0 < 80:
            continue
        rows = np.where(_near(a[:, x0 + 2], BG) | _near(a[:, x0 + 2], LEGEND))[0]
        out.append((x0, x1, int(rows.min()), int(rows.max())))
    return out


def _grid(line: np.ndarray, lo: int, hi: int) -> list[float]:
    """Centres of the white grid lines strictly inside [lo, hi] along a line of pixels."""
    white = np.zeros(len(line), bool)
    white[lo + 1:hi] = _near(line[lo + 1:hi], (255, 255, 255), 30)
    return [(s + e) / 2 + 0.5 for s, e in _runs(white)]


def _fit(pos: list[float], ticks: list[float], what: str) -> tuple[float, float, float]:
    """value = a + b · pixel through the grid lines; (a, b, largest residual in pixels)."""
    if len(pos) != len(ticks):
        raise SystemExit(f"{what}: {len(pos)} grid lines at {pos}, {len(ticks)} tick labels {ticks}")
    b, a = np.polyfit(pos, ticks, 1)
    resid = float(np.max(np.abs((np.array(ticks) - a - b * np.array(pos)) / b)))
    if resid > 1.0:
        raise SystemExit(f"{what}: grid lines not evenly spaced (residual {resid:.2f} px)")
    return float(a), float(b), resid


def _ticks(fig: Figure, axis: str, panel: int) -> list[float]:
    t = TICKS[fig.number][axis]
    return t[panel] if isinstance(t[0], list) else t


def _labels(fig: Figure, panel: int) -> tuple:
    return (LABELS_MARIADB, LABELS_GALERA, LABELS_CRDB)[panel][fig.number]


def _point(fig: Figure, panel: int, x) -> dict:
    delay = x if fig.sweep == "delay" else 0
    return {"figure": fig.number, "scenario": fig.scenario, "load": fig.load, "backend": BACKENDS[panel],
            "regions": x if fig.sweep == "regions" else 9, "delay_ms": delay, "rtt_ms": 2 * delay}


def bars(fig: Figure, a: np.ndarray) -> list[dict]:
    rows = []
    for panel, (x0, x1, y0, y1) in enumerate(axes(a)):
        margin = a[:, x0 + 2]
        ya, yb, yres = _fit(_grid(margin, y0, y1), _ticks(fig, "y", panel), f"figure {fig.number} panel {panel} y")
        coloured = (_near(a[:, x0:x1 + 1], BLUE, 60) | _near(a[:, x0:x1 + 1], GREEN, 60)).sum(axis=1) > 10
        coloured[: y0 + (y1 - y0) // 2] = False  # the legend's patches are higher up
        base = int(np.where(coloured)[0].max()) + 1 if coloured.any() else y1 + 1  # the axis: below the lowest bar row
        bar_row = a[base - 1, x0:x1 + 1]
        runs = [(s + x0, e + x0) for s, e in _runs(_near(bar_row, BLUE, 60) | _near(bar_row, GREEN, 60)) if e - s > 10]
        labels = _labels(fig, panel)
        centres = _grid(a[y0 + 2], x0, x1)  # the x ticks' grid lines, seen above the bars: the bars' centres
        if len(centres) != len(fig.xs) and runs and all(s != "nan" for s, _ in labels):
            width = (runs[-1][1] - runs[0][0] + 1) / len(fig.xs)  # a tick line hidden (legend): every bar drawn
            centres = [runs[0][0] + (i + 0.5) * width for i in range(len(fig.xs))]
        if len(centres) != len(fig.xs):
            raise SystemExit(f"figure {fig.number} panel {panel}: {len(centres)} bar positions found")
        for i, x in enumerate(fig.xs):
            sigma, lam = labels[i]
            p = _point(fig, panel, x) | {"sigma_s": sigma, "failure_rate": lam, "resolution_s": round(abs(yb), 5),
                                         "fit_px": round(yres, 2)}
            if sigma == "nan":
                rows.append(p | {"what": "Total", "value_s": "", "pixel": "",
                                 "note": "no bar: every iteration failed (λ printed)"})
                continue
            xc = int(centres[i])
            col = a[:, xc]
            names = list(PALETTE)
            cls = [names[int(np.argmin([np.abs(col[y] - np.array(PALETTE[n])).sum() for n in names]))] for y in range(len(col))]
            y = base - 1
            tops = {}
            for seg, colour in zip(fig.segments, ("blue", "green"), strict=True):
                while y >= y0 and cls[y] == colour:
                    y -= 1
                tops[seg] = y + 1  # the upper edge of the segment's topmost pixel
            top = tops[fig.segments[-1]]
            total = (base - top) * abs(yb)  # zero at the bars' base, the scale from the grid lines
            if base - top < 3:
                rows.append(p | {"what": "Total", "value_s": "", "pixel": top,
                                 "note": f"below resolution: a bar under 3 px (< {3 * abs(yb):.3g} s)"})
                continue
            first = (base - tops[fig.segments[0]]) * abs(yb)
            rows.append(p | {"what": "Total", "value_s": round(total, 4), "pixel": top,
                             "note": f"stack top (rows {top}–{base - 1}); the grid lines put the base at "
                                     f"{(ya + yb * base) / abs(yb):+.1f} px"})
            rows.append(p | {"what": fig.segments[0], "value_s": round(first, 4), "pixel": tops[fig.segments[0]],
                             "sigma_s": "", "failure_rate": "", "note": "lower segment"})
            rows.append(p | {"what": fig.segments[1], "value_s": round(total - first, 4), "pixel": "",
                             "sigma_s": "", "failure_rate": "", "note": "upper segment: stack top minus lower"})
    return rows


def cdfs(fig: Figure, a: np.ndarray) -> list[dict]:
    rows = []
    for panel, (x0, x1, y0, y1) in enumerate(axes(a)):
        ya, yb, yres = _fit(_grid(a[:, x0 + 2], y0, y1), _ticks(fig, "y", panel), f"figure {fig.number} panel {panel} y")
        xa, xb, xres = _fit(_grid(a[y0 + 2], x0, x1), _ticks(fig, "x", panel), f"figure {fig.number} panel {panel} x")
        box = a[y0:y1 + 1, x0:x1 + 1]
        frame = _near(box, FRAME, 0)
        mask = np.ones(box.shape[:2], bool)
        if frame.sum() > 100:  # the legend (first panel): masked inside its frame
            ys, xs = np.where(frame)
            mask[ys.min():ys.max() + 1, xs.min():xs.max() + 1] = False
        for x, colour in zip(fig.xs, (BLUE, GREEN, RED), strict=True):
            hit = _near(box, colour, 40) & mask
            base = _point(fig, panel, x) | {"sigma_s": "", "failure_rate": "", "resolution_s": round(abs(xb), 4),
                                            "fit_px": round(max(xres, yres), 2)}
            ys, xs = np.where(hit)
            if not len(xs):
                rows.append(base | {"what": "curve", "value_s": "", "pixel": "", "note": "curve not found"})
                continue
            for q in CDF_SHARES:
                yq = (q - ya) / yb - y0
                band = hit[max(int(yq) - 5, 0):int(yq) + 6]
                cols = np.where(band.any(axis=0))[0]
                p = base | {"what": f"time at cumulative share {q:g}"}
                if not len(cols):
                    rows.append(p | {"value_s": "", "pixel": "",
                                     "note": "not separable: under another curve or a gap of the dash pattern"})
                    continue
                px = int(cols.min()) + x0
                v = xa + xb * (px + 0.5)
                rows.append(p | {"value_s": round(max(v, 0.0), 3), "pixel": px,
                                 "note": "leftmost pixel of the curve within 5 rows of the share"
                                         + ("; at zero within a pixel" if v < abs(xb) else "")})
            px = int(xs.max()) + x0
            rows.append(base | {"what": "slowest iteration", "value_s": round(xa + xb * (px + 0.5), 3), "pixel": px,
                                "note": "rightmost pixel of the curve"})
    return rows


def read(blog: Path) -> list[dict]:
    out = []
    for fig in FIGURES:
        a = _pixels(png(blog, fig))
        out += bars(fig, a) if fig.kind == "bars" else cdfs(fig, a)
    return out


def write(rows: list[dict], path: Path = CSV) -> None:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in COLUMNS})


def load(path: Path = CSV) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--blog", type=Path, required=True, help="git dir of a clone or mirror of " + SOURCE["repo"])
    ap.add_argument("--write", action="store_true", help=f"write {CSV.name}")
    args = ap.parse_args()
    got = read(args.blog)
    if args.write:
        write(got)
    w = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in got:
        w.writerow({k: r.get(k, "") for k in COLUMNS})
