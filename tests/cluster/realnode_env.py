"""The test cluster's real node for tests: ``hack/testcluster.sh up --real-node`` and helpers.

The ``realnode`` fixture (tests/cluster/conftest.py) brings the node up once per module.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.upstream import upstream_env

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "testcluster.sh"
NODE = "real-1"


def run(cmd: list[str], timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=upstream_env())
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n"
                             f"{p.stderr[-6000:]}{p.stdout[-2000:]}")
    return p


def wait_for(pred, timeout: float, what: str, interval: float = 0.5):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


@dataclass
class RealNode:
    tc: object
    state: Path
    address: str  # containerd socket
    busybox: str  # image reference (imported; imagePullPolicy Never)

    def pod(self, name: str, command: list[str], labels: dict[str, str] | None = None,
            restart: str = "Never") -> dict:
        """A Pod for the real node: its label selected and its taint tolerated."""
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": self.pod_spec(command, restart),
        }

    def pod_spec(self, command: list[str], restart: str = "Never") -> dict:
        return {
            "nodeSelector": {"wanwide.io/real-node": "true"},
            "tolerations": [{"key": "wanwide.io/real-node", "operator": "Exists",
                             "effect": "NoSchedule"}],
            "terminationGracePeriodSeconds": 1,
            "restartPolicy": restart,
            "containers": [{"name": "main", "image": self.busybox, "imagePullPolicy": "Never",
                            "command": command}],
        }

    def running(self, ns: str, name: str, timeout: float = 120) -> dict:
        def ready():
            p = self.tc.kubectl_json("get", "pod", "-n", ns, name)
            return p if p["status"].get("phase") == "Running" and p["status"].get("podIP") else None
        try:
            return wait_for(ready, timeout, f"pod {ns}/{name} Running")
        except AssertionError:
            print(self.tc.kubectl("describe", "pod", "-n", ns, name, check=False).stdout)
            raise

    def logs(self, ns: str, name: str) -> str:
        return self.tc.kubectl("logs", "-n", ns, name).stdout


def env_exports() -> dict[str, str]:
    out = {}
    for line in run([SCRIPT, "env"]).stdout.splitlines():
        if line.startswith("export ") and "=" in line:
            k, v = line[len("export "):].split("=", 1)
            out[k] = v
    return out


def start_realnode(testcluster) -> RealNode:
    if os.environ.get("WANWIDE_REALNODE") == "skip":
        pytest.skip("WANWIDE_REALNODE=skip")
    up = run([SCRIPT, "up", "--real-node"], timeout=3600, check=False)
    if up.returncode != 0:
        pytest.fail(f"hack/testcluster.sh up --real-node failed:\n{up.stderr[-6000:]}", pytrace=False)
    env = env_exports()
    return RealNode(tc=testcluster, state=Path(env["WANWIDE_TESTCLUSTER_DIR"]),
                    address=env["WANWIDE_CONTAINERD_ADDRESS"],
                    busybox=env["WANWIDE_REALNODE_BUSYBOX_IMAGE"])


