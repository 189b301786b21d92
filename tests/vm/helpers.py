"""hack/vm.sh as the VM tests call it, and what they check the machine for."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VM_SH = ROOT / "hack" / "vm.sh"


@dataclass
class VmSh:
    """hack/vm.sh with a private state directory."""

    state: Path

    def __call__(self, *args: str, check: bool = True, timeout: float = 1200,
                 input: str | None = None) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([str(VM_SH), *args], capture_output=True, text=True, timeout=timeout, input=input,
                           env={**os.environ, "WANWIDE_VM_STATE": str(self.state)}, cwd=ROOT)
        if check and r.returncode != 0:
            raise AssertionError(f"hack/vm.sh {' '.join(args)} exited {r.returncode}:\n{r.stderr[-3000:]}")
        return r

    def pid(self, name: str) -> int | None:
        f = self.state / name / "qemu.pid"
        return int(f.read_text()) if f.is_file() else None

    def ip(self, name: str) -> str:
        return (self.state / name / "ip").read_text().strip()


def links() -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [ln.split(": ")[1].split("@")[0] for ln in out.splitlines()]


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] not in ("Z", "X")
    except OSError:
        return False


def leftovers(vmsh: VmSh, name: str, pid: int | None) -> list[str]:
    """What of VM ``name`` is still on the machine: its qemu, its tap, its state."""
    out = []
    if alive(pid):
        out.append(f"qemu {pid}")
    if f"wwvm-{name}" in links():
        out.append(f"tap wwvm-{name}")
    if (vmsh.state / name).exists():
        out.append(f"state {vmsh.state / name}")
    return out
