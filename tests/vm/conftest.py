"""Fixtures of the VM tests: hack/vm.sh for real (qemu, Debian's kernel, a bridge and taps), root.

Marker ``vm``: these tests boot virtual machines (under TCG on a machine where KVM does not run Linux:
a minute or two per boot), so they run only when selected (``-m vm``), never as part of another tier
that does not exclude them. Every test VM is recorded in a private state directory
(``WANWIDE_VM_STATE``), so the tests never touch a developer's VMs; the bridge and the tap names are
the machine's, shared with any VM running beside them.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import VmSh, links


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    chosen = re.search(r"(?<!not )\bvm\b", config.getoption("markexpr") or "")
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.vm)
            item.add_marker(pytest.mark.slow)
            if not chosen:
                item.add_marker(pytest.mark.skip(reason="boots VMs: select with -m vm (docs/vm.md)"))


@pytest.fixture(scope="session")
def vmsh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmSh]:
    if os.geteuid() != 0:
        pytest.skip("VM tests need root (bridge, taps, qemu)")
    if not Path("/dev/net/tun").exists():
        pytest.skip("no /dev/net/tun: no tap devices here")
    v = VmSh(tmp_path_factory.mktemp("vm-state"))
    yield v
    v("clean")
    ours = [ln for ln in links() if ln.startswith("wwvm-")]  # VMs of other state dirs may run beside
    assert ("wwvm0" in links()) == bool(ours), f"bridge left without taps, or taps without it: {ours}"


@pytest.fixture(scope="session")
def vm(vmsh: VmSh) -> Iterator[str]:
    """One VM for the session (2 vCPUs, 2 GiB), down at the end whatever happened."""
    name = "t" + secrets.token_hex(3)
    vmsh("up", name, "--cpus", "2", "--mem", "2048")
    yield name
    vmsh("down", name, check=False)
