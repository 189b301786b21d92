"""One version source: operator/wanwide/__init__.py. Everything that cannot read it agrees with it,
and the release job refuses a tag that does not."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import yaml

from wanwide import __version__

ROOT = Path(__file__).resolve().parents[1]
FIX = f"run hack/version.sh {__version__}"


def test_the_chart_carries_the_packages_version():
    chart = yaml.safe_load((ROOT / "charts" / "wanwide" / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (__version__, __version__), FIX


def test_pyproject_reads_the_version_instead_of_writing_it():
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in doc["project"] and "version" in doc["project"]["dynamic"], \
        'pyproject.toml writes a version: use dynamic = ["version"]'
    assert doc["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "wanwide.__version__"}


def test_every_image_tag_shown_is_the_current_version():
    files = [ROOT / "README.md", ROOT / "Dockerfile", *(ROOT / "docs").rglob("*.md"), *(ROOT / "hack").rglob("*.*")]
    stale = sorted({f"{f.relative_to(ROOT)}: {m}" for f in files if f.is_file()
                    for m in re.findall(r"ghcr\.io/wanwide/wanwide:([0-9][0-9A-Za-z.+-]*)", f.read_text(errors="ignore"))
                    if m != __version__})
    assert not stale, f"image tags other than {__version__} ({FIX}):\n" + "\n".join(stale)


def test_version_script_checks_a_tag(tmp_path):
    script = ROOT / "hack" / "version.sh"
    ok = subprocess.run([script, "--check", __version__], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([script, "--check", "99.0.0"], capture_output=True, text=True)
    assert bad.returncode == 1 and "hack/version.sh 99.0.0" in bad.stderr, bad.stderr
    assert subprocess.run([script], capture_output=True, text=True).stdout.strip() == __version__


def test_version_script_sets_every_place(tmp_path):
    """On a copy of the tree: the script moves the package, the chart and the docs to the new version."""
    t = tmp_path / "t"
    for rel in ["hack", "docs", "charts/wanwide"]:
        shutil.copytree(ROOT / rel, t / rel)
    for rel in ["README.md", "Dockerfile", "operator/wanwide/__init__.py"]:
        (t / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, t / rel)
    (t / ".venv").symlink_to(ROOT / ".venv")
    r = subprocess.run([t / "hack" / "version.sh", "7.8.9"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '__version__ = "7.8.9"' in (t / "operator" / "wanwide" / "__init__.py").read_text()
    chart = yaml.safe_load((t / "charts" / "wanwide" / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == ("7.8.9", "7.8.9")
    assert "ghcr.io/wanwide/wanwide:7.8.9" in (t / "README.md").read_text()
    assert "ghcr.io/wanwide/wanwide:" + __version__ not in (t / "README.md").read_text()
    assert "7.8.9" in (t / "charts" / "wanwide" / "README.md").read_text()
    # where no file shows the image tag any more, setting a version still works (grep finding nothing)
    for f in [t / "README.md", t / "Dockerfile", *(t / "docs").rglob("*.md"), *(t / "hack").rglob("*.*")]:
        f.write_text(f.read_text(errors="ignore").replace("ghcr.io/wanwide/wanwide:7.8.9", "IMAGE"))
    r = subprocess.run([t / "hack" / "version.sh", "7.9.0"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert yaml.safe_load((t / "charts" / "wanwide" / "Chart.yaml").read_text())["version"] == "7.9.0"


def test_the_release_job_checks_the_tag_and_publishes_to_pypi():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    steps = [s.get("run", "") for job in wf["jobs"].values() for s in job.get("steps", [])]
    assert any("hack/version.sh --check" in s for s in steps), "the release job does not check the tag"
    pypi = wf["jobs"].get("pypi") or {}
    assert pypi.get("permissions", {}).get("id-token") == "write", "PyPI: trusted publishing needs id-token"
    assert any("pypa/gh-action-pypi-publish" in s.get("uses", "") for s in pypi.get("steps", []))
