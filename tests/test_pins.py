"""One place defines each Python pin; the locks agree with what they lock."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
REQ = REPO / "requirements"


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: '{line}' is not an exact pin"
            out[canonicalize_name(name)] = version
    return out


def test_wanwide_lock_satisfies_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lock = pins(REQ / "wanwide.lock")
    extras = [spec for specs in project["optional-dependencies"].values() for spec in specs]
    for spec in project["dependencies"] + extras:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        if name == "wanwide":
            continue  # the project's own extras (all = operator + report)
        assert name in lock, f"{req.name} is not in requirements/wanwide.lock: run hack/lock.sh wanwide"
        assert req.specifier.contains(lock[name], prereleases=True), \
            f"requirements/wanwide.lock has {req.name}=={lock[name]}, pyproject wants {req.specifier}"


@pytest.mark.parametrize("name", ["keystone", "rally"])
def test_lab_lock_holds_the_same_pins(name):
    top, lock = pins(REQ / f"{name}.txt"), pins(REQ / f"{name}.lock")
    for pkg, version in top.items():
        assert lock.get(pkg) == version, f"{name}.lock has {pkg}=={lock.get(pkg)}, {name}.txt pins {version}"


def test_no_pin_outside_requirements():
    """The Dockerfile and the scripts read requirements/, never repeat a version."""
    pinned = {**pins(REQ / "keystone.txt"), **pins(REQ / "rally.txt")}
    for path in [REPO / "Dockerfile", *sorted((REPO / "hack").glob("**/*.sh"))]:
        text = path.read_text().lower()
        for pkg in pinned:
            assert not re.search(rf"\b{re.escape(pkg)}[=<>~]=", text), f"{path.name} pins {pkg} itself"


def test_every_consumer_uses_the_locks():
    docker = (REPO / "Dockerfile").read_text()
    assert "-r /tmp/rally/rally.txt -c /tmp/rally/rally.lock" in docker
    assert "pip install -c requirements/wanwide.lock '.[operator]'" in docker
    lab = (REPO / "hack" / "install-lab.sh").read_text()
    assert '-r "$req" -c "$lock"' in lab and 'requirements/$name.lock' in lab
    assert "-c \"$lock\" -e" in (REPO / "hack" / "python-env.sh").read_text()


@pytest.mark.install
@pytest.mark.slow
def test_stock_pip_resolves_exactly_the_lock(tmp_path):
    """A plain venv's own pip (no upgrade) installs wanwide with the lock: same versions."""
    import json
    import subprocess
    import sys

    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", str(tmp_path / "v")], check=True)
    pip = tmp_path / "v" / "bin" / "pip"
    version = subprocess.run([str(pip), "--version"], capture_output=True, text=True, check=True).stdout
    r = subprocess.run(
        [str(pip), "install", "--dry-run", "--quiet", "--disable-pip-version-check", "--report",
         str(tmp_path / "report.json"), "-c", str(REQ / "wanwide.lock"), "-e", f"{REPO}[test]"],
        capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{version}\n{r.stderr[-3000:]}"
    resolved = {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"]
                for i in json.loads((tmp_path / "report.json").read_text())["install"]}
    lock = pins(REQ / "wanwide.lock")
    assert resolved.pop("wanwide") == "0.1.0"
    assert {k: v for k, v in resolved.items() if lock.get(k) != v} == {}, version


@pytest.mark.install
@pytest.mark.slow
def test_report_extra_alone_analyses_results(tmp_path):
    """`pip install wanwide[report]` in a fresh venv: the report runs; no kopf, kubernetes, PyMySQL;
    the operator's sub-command is still listed and says what to install."""
    import subprocess
    import sys

    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", str(tmp_path / "v")], check=True)
    bindir = tmp_path / "v" / "bin"
    r = subprocess.run([str(bindir / "pip"), "install", "--quiet", "--disable-pip-version-check",
                        "-c", str(REQ / "wanwide.lock"), f"{REPO}[report]"], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    listed = subprocess.run([str(bindir / "python"), "-c", "import importlib.metadata as m; "
                             "print(sorted(d.metadata['Name'].lower() for d in m.distributions()))"],
                            capture_output=True, text=True, env=env, check=True).stdout
    for absent in ("kopf", "kubernetes", "pymysql", "prometheus-client"):
        assert f"'{absent}'" not in listed, listed
    out = tmp_path / "report"
    rep = subprocess.run([str(bindir / "wanwide"), "report", "--no-progress", "--no-store",
                          str(REPO / "tests" / "data" / "bundles"), "-o", str(out)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert (out / "index.html").is_file() and list(out.glob("cdf-*.svg"))
    helptext = subprocess.run([str(bindir / "wanwide"), "--help"], capture_output=True, text=True, env=env).stdout
    assert "results" in helptext and "operator" in helptext
    op = subprocess.run([str(bindir / "wanwide"), "operator"], capture_output=True, text=True, env=env)
    assert op.returncode == 2 and op.stderr.strip().endswith("pip install 'wanwide[operator]'"), op.stderr
    assert len(op.stderr.splitlines()) == 1
