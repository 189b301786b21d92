"""Every command on a machine where nothing is configured: no kubeconfig, not in a pod, no S3 keys or
endpoint, no Rally, no lab install, an empty home, and no network at all (a network namespace of its
own: nothing can be reached, nothing leaves). Each either works or says in one line what is missing
and how to fix it — never a traceback. And `--help` explains every flag of every command."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "manifests" / "examples" / "lab-delay.yaml"
BUNDLES = REPO / "tests" / "data" / "bundles"
UNSHARE = shutil.which("unshare")


def _runner_config(d: Path) -> Path:
    """A valid runner configuration (what a Rally Job mounts), its Keystone on a closed port."""
    cfg = {"benchmark": "b1", "namespace": "lab",
           "trial": {"id": "t-0", "index": 0, "repetition": 0, "parameters": {"backend": "mariadb"}},
           "region": "r1", "role": "load", "attempt": 1,
           "keystone": {"url": "http://127.0.0.1:1/v3", "region_name": "r1", "username": "admin",
                        "password_env": "OS_PASSWORD", "project_name": "admin", "user_domain_name": "Default",
                        "project_domain_name": "Default", "cache": {"enabled": False}},
           "task": {"version": 2, "title": "t", "subtasks": [{
               "title": "auth", "scenario": {"KeystoneBasic.authenticate_user_and_validate_token": {}},
               "runner": {"constant": {"times": 2, "concurrency": 1}}}]},
           "start_at": None, "max_start_skew_s": 10, "gauges": {"database": None, "rtt_targets": [], "samples": 0},
           "network_requested": [], "results": {"local_dir": str(d / "results"), "s3": None}, "versions": {}}
    p = d / "runner.json"
    p.write_text(json.dumps(cfg))
    return p


# (id, argv with {d} for a scratch directory, exit codes allowed, what stderr must say: the one line of an
# exit 2, a line of the run's log otherwise)
CASES: list[tuple[str, list[str], set[int], str | None]] = [
    ("plan", ["plan", "-f", str(EXAMPLE)], {0}, None),
    ("crds", ["crds"], {0}, None),
    ("operator", ["operator"], {2}, "operator: no cluster configured: not in a pod (KUBERNETES_SERVICE_HOST unset), "
     "no kubeconfig at the default {home}/.kube/config: give --kubeconfig FILE or set KUBECONFIG"),
    ("doctor", ["doctor"], {2}, "doctor: no cluster configured"),
    ("doctor-kubeconfig", ["doctor", "--kubeconfig", "{d}/none.yaml"], {2},
     "no kubeconfig at --kubeconfig {d}/none.yaml"),
    ("runner-run", ["runner", "run", "--config", "{d}/runner.json"], {1}, "rally not found"),
    ("runner-validate", ["runner", "validate", "--config", "{d}/runner.json"], {0}, None),
    ("runner-probe", ["runner", "probe", "--config", "{d}/none.json"], {2}, "none.json"),
    ("runner-upload", ["runner", "upload", "--config", "{d}/runner.json", "{d}"], {2}, "no S3 target"),
    ("report", ["report", str(BUNDLES), "-o", "{d}/report", "--no-progress", "--no-store"], {0}, None),
    ("compare", ["compare", str(BUNDLES), str(BUNDLES)], {0}, None),
    ("results-fetch-s3", ["results", "fetch", "s3://bucket/prefix", "-o", "{d}/fetched", "-q"], {2},
     "no S3 credentials found: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"),
    ("results-fetch-benchmark", ["results", "fetch", "my-benchmark", "-o", "{d}/fetched", "-q"], {2},
     "kubectl get benchmarks.wanwide.io my-benchmark"),
    ("results-export", ["results", "export", str(BUNDLES), "-o", "{d}/set", "--no-progress"], {0}, None),
    ("history", ["history", "--history", "{d}/empty-history"], {2}, "holds no runs"),
    ("lab-run", ["lab", "run", "-f", str(EXAMPLE), "-o", "{d}/lab"], {2}, "run hack/install-lab.sh"),
    ("lab-clean", ["lab", "clean"], {0}, None),
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("unconfigured")
    (d / "home").mkdir()
    _runner_config(d)
    return d


def _run(d: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(d / "home"), "LANG": "C.UTF-8",
           "PYTHONPATH": str(REPO / "operator"), "WANWIDE_LAB_STATE_DIR": str(d / "lab-state"),
           "OS_PASSWORD": "x"}  # the runner's Keystone password: the Job's Secret gives it
    exe = Path(sys.executable).with_name("wanwide")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "wanwide.cli"]
    net = [UNSHARE, "--net"] if UNSHARE and os.geteuid() == 0 else []
    return subprocess.run([*net, *cmd, *[a.replace("{d}", str(d)) for a in argv]], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.parametrize(("case", "argv", "codes", "says"), CASES, ids=[c[0] for c in CASES])
def test_nothing_configured(scratch, case, argv, codes, says):
    r = _run(scratch, argv)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr[-3000:]
    assert r.returncode in codes, (r.returncode, r.stderr[-2000:])
    if r.returncode == 2:
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # the error alone, one line
    if says:
        assert says.replace("{d}", str(scratch)).replace("{home}", str(scratch / "home")) in r.stderr, r.stderr


def test_the_table_covers_every_command():
    from wanwide.cli import COMMANDS

    covered = {c[1][0] for c in CASES}
    assert covered >= {"plan", "crds", *(c.name for c in COMMANDS)}


def _flags(p: argparse.ArgumentParser, path: list[str]):
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield from _flags(sp, [*path, name])
        elif not isinstance(a, argparse._HelpAction | argparse._VersionAction):
            yield " ".join(path), "/".join(a.option_strings) or a.dest, a.help


def test_every_flag_has_help():
    from wanwide.cli import build_parser

    bare = [f"{cmd} {flag}" for cmd, flag, text in _flags(build_parser(), ["wanwide"])
            if not text or text == argparse.SUPPRESS]
    assert bare == []
