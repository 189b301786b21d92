"""Fixtures of the image tests (see helpers.py): a private containerd for the session."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .helpers import CONTAINERD_CONFIG, Containerd, images_sh


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.images)


@pytest.fixture(scope="session")
def containerd(tmp_path_factory: pytest.TempPathFactory) -> Containerd:
    if os.geteuid() != 0:
        pytest.skip("image tests need root (mmdebstrap, containerd)")
    # installs mmdebstrap, buildah, containerd, runc... when missing (apt_ensure)
    images_sh("list")
    if not shutil.which("containerd") or not shutil.which("ctr"):
        pytest.skip("containerd missing")
    d = Path(tmp_path_factory.mktemp("containerd"))
    (d / "config.toml").write_text(CONTAINERD_CONFIG.format(d=d))
    log = open(d / "containerd.log", "w")  # noqa: SIM115 (lives as long as the daemon)
    proc = subprocess.Popen(
        ["containerd", "--config", str(d / "config.toml")],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    c = Containerd(d, proc)
    deadline = time.monotonic() + 30
    while c.ctr("version", check=False, timeout=10).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(
                f"containerd did not start:\n{(d / 'containerd.log').read_text()[-3000:]}"
            )
        time.sleep(0.3)
    yield c
    # stop what is still running, then the daemon (by its pid: ours alone)
    for line in c.ctr("task", "ls", "-q", check=False).stdout.split():
        c.ctr("task", "kill", "-s", "SIGKILL", line, check=False)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()
    # overlay snapshots may still be mounted under the root: unmount before pytest cleans up
    mounts = [
        ln.split()[1]
        for ln in Path("/proc/self/mounts").read_text().splitlines()
        if str(d) in ln.split()[1]
    ]
    for m in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", m], check=False)
