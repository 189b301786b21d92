"""What the wanwide image runs works with what the image installs: the extra its Dockerfile names
(``pip install '.[operator]'``), not the ``report`` extra's numpy, pandas, scipy, ….

The real-node gate's Rally Jobs once failed in every attempt because the runner imported numpy
(``wanwide: error: runner: needs the Python module 'numpy'``) while every test on this machine, whose
venv has all the extras, passed. Here the report extra's modules are made unimportable in a fresh
interpreter, which then runs the runner's commands and imports every module of the runner and the
Kubernetes operator. (The report extra's own dependencies, e.g. matplotlib's, are not hidden: only the
distributions the extra names.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _image_extra() -> str:
    m = re.search(r"pip install [^\n]*'\.\[(\w+)\]'", (REPO / "Dockerfile").read_text())
    assert m, "the Dockerfile's pip install of the project (with an extra) not found"
    return m.group(1)


def _dist(req: str) -> str:
    return re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower().replace("_", "-")


def _hidden_modules() -> list[str]:
    """Top-level modules of the distributions the report extra names and the image's extra does not."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installed = {_dist(r) for r in extras[_image_extra()]}
    hidden = {_dist(r) for r in extras["report"]} - installed
    mods = {m for m, dists in metadata.packages_distributions().items()
            if any(d.lower().replace("_", "-") in hidden for d in dists)}
    return sorted(m for m in mods if not m.startswith("_") or m in ("_yaml",))


CHILD = r"""
import importlib, importlib.abc, json, pkgutil, sys
hidden = set(json.loads(sys.argv[1]))

class Hide(importlib.abc.MetaPathFinder):
    # every finder, but blind to the hidden modules (importlib.util.find_spec answers None: not installed)
    def __init__(self, finders):
        self.finders = finders
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in hidden:
            return None
        for f in self.finders:
            spec = f.find_spec(name, path, target) if hasattr(f, "find_spec") else None
            if spec is not None:
                return spec
        return None

sys.meta_path[:] = [Hide(list(sys.meta_path))]
from wanwide.cli import main
for cmd in (["runner", "run", "--config", sys.argv[2]], ["runner", "probe", "--config", sys.argv[2]]):
    print("rc", cmd[1], main(cmd), flush=True)
import wanwide.pipeline.runner as runner, wanwide.providers.kubernetes as kube
for pkg in (runner, kube):
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        importlib.import_module(m.name)
        print("imported", m.name, flush=True)
"""


def test_the_images_commands_run_without_the_report_extra(tmp_path):
    hidden = _hidden_modules()
    assert "numpy" in hidden and "pandas" in hidden, hidden  # what the report extra brings, hidden
    missing = tmp_path / "no-such-runner.json"
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(hidden), str(missing)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = r.stdout + r.stderr
    assert "needs the Python module" not in out and r.returncode == 0, out
    # each command got as far as reading its (missing) configuration: a config error, nothing else
    assert "rc run 2" in r.stdout and "rc probe" in r.stdout and out.count(str(missing)) >= 2, out
    imported = re.findall(r"^imported (\S+)$", r.stdout, re.M)
    assert "wanwide.pipeline.runner.run" in imported and "wanwide.pipeline.runner.slo" in imported, imported
    assert "wanwide.providers.kubernetes.controller.handlers" in imported, imported
