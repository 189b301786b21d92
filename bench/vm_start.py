"""Start times of hack/vm.sh VMs: cold (nothing cached) and warm, with repetitions (docs/vm.md).

    .venv/bin/python bench/vm_start.py --cold 3 --warm 5

cold: a fresh empty ``WANWIDE_CACHE`` (the kernel package downloaded, unpacked and depmod-ed, the
initramfs built, KVM probed, the ssh key made), then ``up`` until ``exec`` works; warm: the default
cache, ``up`` until ``exec`` works. Each followed by ``down``. The Debian packages (qemu…) are not
removed between runs: installing them is measured once, by the first ``up`` on a machine. Prints one
JSON line per run (the time, the step times the script logged, the load before and after) and a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import load  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def one(kind: str, name: str, cpus: int, mem: int) -> dict:
    env = None
    tmp = None
    if kind == "cold":
        tmp = Path(tempfile.mkdtemp(prefix="wwvm-cold-", dir="/var/tmp"))
        env = {**os.environ, "WANWIDE_CACHE": str(tmp)}
    before = load()
    t0 = time.monotonic()
    r = subprocess.run([str(ROOT / "hack" / "vm.sh"), "up", name, "--cpus", str(cpus), "--mem", str(mem)],
                       capture_output=True, text=True, env=env)
    up_s = time.monotonic() - t0
    t1 = time.monotonic()
    e = subprocess.run([str(ROOT / "hack" / "vm.sh"), "exec", name, "--", "true"], capture_output=True, text=True,
                       env=env)
    exec_s = time.monotonic() - t1
    after = load()
    subprocess.run([str(ROOT / "hack" / "vm.sh"), "down", name], capture_output=True, text=True, env=env)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    steps = {m.group(1): int(m.group(2)) for m in re.finditer(r"\] (.+?): done in (\d+) s", r.stderr)}
    return {"kind": kind, "ok": r.returncode == 0 and e.returncode == 0, "up_s": round(up_s, 1),
            "exec_true_s": round(exec_s, 1), "steps_s": steps, "load_before": before, "load_after": after,
            "stderr_tail": r.stderr[-400:] if r.returncode else ""}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cold", type=int, default=3)
    p.add_argument("--warm", type=int, default=5)
    p.add_argument("--cpus", type=int, default=2)
    p.add_argument("--mem", type=int, default=2048)
    p.add_argument("--name", default="bstart")
    a = p.parse_args()
    runs = []
    for kind, n in (("cold", a.cold), ("warm", a.warm)):
        for _ in range(n):
            rec = one(kind, a.name, a.cpus, a.mem)
            runs.append(rec)
            print(json.dumps(rec), flush=True)
    for kind in ("cold", "warm"):
        ups = [r["up_s"] for r in runs if r["kind"] == kind and r["ok"]]
        if ups:
            loads = [r["load_before"]["loadavg"].split()[0] for r in runs if r["kind"] == kind]
            print(f"{kind}: up {statistics.median(ups):.1f} s median ({min(ups):.1f}–{max(ups):.1f}) over {len(ups)} runs, "
                  f"load before {', '.join(loads)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
