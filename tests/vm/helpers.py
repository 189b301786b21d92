"""hack/vm.sh as the VM tests call it, and what they check the machine for."""

from __future__ import annotations

import math
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


PING_STEP = 1.0  # ms: ping prints three significant digits, so whole ms at 100 ms


def quantile(xs: list[float], p: float) -> float:
    """The nearest-rank p-quantile (0 < p <= 1) of xs."""
    s = sorted(xs)
    return s[max(0, math.ceil(p * len(s)) - 1)]


def delay_verdict(floor: list[float], shaped: list[float], rtt: float, step: float) -> tuple[bool, dict]:
    """Whether the shaped pings show ``rtt`` added to the unshaped path, judged against the unshaped path's
    own spread; with the figures. Noise only adds: the shaper's delay shows in the fastest samples."""
    noise = quantile(floor, 0.9) - quantile(floor, 0.1)
    added = quantile(shaped, 0.1) - quantile(floor, 0.1)
    fig = {"added_p10_ms": round(added, 3), "noise_p10_p90_ms": round(noise, 3), "step_ms": step,
           "min_ms": min(shaped), "floor_p10_ms": quantile(floor, 0.1), "floor_p90_ms": quantile(floor, 0.9)}
    ok = min(shaped) >= rtt - step and abs(added - rtt) <= noise + step
    return ok, fig
