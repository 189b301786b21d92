"""hack/vm.sh for real: a VM on Debian's stock kernel with netem, commands run in it from the host, and
nothing of it left after `down` or after its qemu is killed and `clean` runs (docs/vm.md)."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from .helpers import ROOT, VmSh, alive, leftovers, links


def test_the_guest_runs_debians_kernel_with_netem_on_the_hosts_files(vmsh: VmSh, vm: str) -> None:
    kernel = vmsh("exec", vm, "--", "uname", "-r").stdout.strip()
    assert re.fullmatch(r"\d+\.\d+\.\d+-\d+-amd64", kernel), kernel
    assert kernel != os.uname().release
    # the lab's own probe (a netem qdisc in a throw-away namespace) says yes inside the VM
    r = vmsh("exec", vm, "--", "env", f"PYTHONPATH={ROOT / 'operator'}", sys.executable, "-c",
             "from wanwide.providers.lab import shaping; print(shaping.netem_available())")
    assert r.stdout.strip() == "True", r.stdout + r.stderr
    # this checkout, as the host has it now (a file written after the VM booted included)
    probe = Path("/var/tmp") / f"wwvm-probe-{secrets.token_hex(4)}"
    probe.write_text("from the host\n")
    try:
        assert vmsh("exec", vm, "--", "cat", str(probe)).stdout == "from the host\n"
    finally:
        probe.unlink()
    assert vmsh("exec", vm, "--", "head", "-1", "pyproject.toml").stdout == \
        (ROOT / "pyproject.toml").read_text().splitlines(keepends=True)[0]
    # the guest's writes stay in the guest (the host's root is read-only under a tmpfs overlay)
    mark = f"/var/tmp/wwvm-written-in-guest-{secrets.token_hex(4)}"
    vmsh("exec", vm, "--", "sh", "-c", f"echo x > {mark} && cat {mark}")
    assert not Path(mark).exists()


def test_exec_passes_every_word_stdin_and_the_exit_code(vmsh: VmSh, vm: str) -> None:
    words = ["a b", "it's", '"q"', "$HOME", "back\\slash", "", "new\nline", "*"]
    r = vmsh("exec", vm, "--", sys.executable, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))", *words)
    assert json.loads(r.stdout) == words
    assert vmsh("exec", vm, "--", "cat", input="through stdin\n").stdout == "through stdin\n"
    r = vmsh("exec", vm, "--", "sh", "-c", "echo out; echo err >&2; exit 7", check=False)
    assert (r.returncode, r.stdout, r.stderr.strip()) == (7, "out\n", "err")
    # the current directory by default (the guest has the same paths), else --cd
    assert vmsh("exec", vm, "--", "pwd").stdout.strip() == str(ROOT)
    assert vmsh("exec", vm, "--cd", "/usr", "--", "pwd").stdout.strip() == "/usr"


def test_host_and_vm_reach_each_other_and_nothing_else(vmsh: VmSh, vm: str) -> None:
    ip = vmsh.ip(vm)
    assert subprocess.run(["ping", "-c", "2", "-W", "5", ip], capture_output=True).returncode == 0
    assert vmsh("exec", vm, "--", "ping", "-c", "1", "-W", "5", "10.78.0.1").returncode == 0
    routes = vmsh("exec", vm, "--", "ip", "route").stdout
    assert "default" not in routes and "10.78.0.0/24 dev eth0" in routes, routes


def test_up_again_is_a_no_op_and_another_spec_is_refused(vmsh: VmSh, vm: str) -> None:
    pid = vmsh.pid(vm)
    r = vmsh("up", vm, "--cpus", "2", "--mem", "2048")
    assert "up already" in r.stderr and vmsh.pid(vm) == pid
    r = vmsh("up", vm, "--cpus", "1", check=False)
    assert r.returncode != 0 and f"hack/vm.sh down {vm} first" in r.stderr, r.stderr
    assert vmsh.pid(vm) == pid and alive(pid)
    status = vmsh("status").stdout
    assert re.search(rf"^{vm}\s+running\s+{re.escape(vmsh.ip(vm))}\s+{pid}\s", status, re.M), status


def test_bad_input_gets_one_line_naming_the_field(vmsh: VmSh) -> None:
    r = vmsh("up", "Bad_Name", check=False)
    assert r.returncode != 0 and "VM name 'Bad_Name': 1-10 characters of [a-z0-9]" in r.stderr
    r = vmsh("up", "ok1", "--mem", "12", check=False)
    assert r.returncode != 0 and "--mem 12: MiB, at least 256" in r.stderr
    r = vmsh("exec", "nosuchvm", "--", "true", check=False)
    assert r.returncode != 0 and "nosuchvm is not up (hack/vm.sh up nosuchvm)" in r.stderr
    r = vmsh("exec", "nosuchvm", "true", check=False)
    assert r.returncode != 0 and "put the command after --" in r.stderr


def test_a_second_vm_gets_its_own_address_and_down_leaves_nothing_of_it(vmsh: VmSh, vm: str) -> None:
    two = "u" + secrets.token_hex(3)
    vmsh("up", two, "--cpus", "1", "--mem", "768")
    pid = vmsh.pid(two)
    try:
        assert vmsh.ip(two) != vmsh.ip(vm)
        assert vmsh("exec", vm, "--", "ping", "-c", "1", "-W", "5", vmsh.ip(two)).returncode == 0
    finally:
        vmsh("down", two)
    assert leftovers(vmsh, two, pid) == []
    assert "wwvm0" in links() and alive(vmsh.pid(vm))  # the other VM keeps its bridge


def test_after_qemu_is_killed_clean_leaves_nothing(vmsh: VmSh, vm: str, tmp_path: Path) -> None:
    """A VM whose qemu died with SIGKILL (a crash) leaves its tap and state; `clean` removes them. This
    VM is recorded in a state directory of its own, so `clean` keeps the session's VM and the bridge its
    tap is on (the bridge goes with its last tap)."""
    mine = VmSh(tmp_path / "state")
    name = "k" + secrets.token_hex(3)
    mine("up", name, "--cpus", "1", "--mem", "512")
    pid = mine.pid(name)
    assert mine.ip(name) != vmsh.ip(vm)  # addresses of VMs in other state dirs are taken too
    os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        if not alive(pid):
            break
        time.sleep(0.1)
    assert re.search(rf"^{name}\s+dead\s", mine("status").stdout, re.M)
    assert f"wwvm-{name}" in links()
    mine("clean")
    assert leftovers(mine, name, pid) == []
    assert not (tmp_path / "state").exists()
    assert alive(vmsh.pid(vm)) and f"wwvm-{vm}" in links() and "wwvm0" in links()
    assert vmsh("exec", vm, "--", "true").returncode == 0
