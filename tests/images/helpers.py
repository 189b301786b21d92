"""Helpers of the image tests: hack/images.sh builds, a private containerd runs them.

The containerd is this session's own (root, state and socket in a temp dir), configured
as on the real node (docs/images.md, /work/shared/reference/real-node.md): the CRI plugin
clamps oom_score_adj (this kernel refuses negative scores). Containers run with plain
`ctr run` (runc). Needs root; a cold cache builds for minutes.
"""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.upstream import upstream_dir, upstream_env

ROOT = Path(__file__).resolve().parents[2]
IMAGES_SH = ROOT / "hack" / "images.sh"
UPSTREAM = upstream_dir() or Path("/nonexistent")  # the mirror, when this machine has one


def images_env() -> dict[str, str]:
    return upstream_env()  # the mirrored upstream sources when this machine has them (else images.sh fetches)


def images_sh(*args: str, timeout: float = 3600) -> str:
    r = subprocess.run(
        [str(IMAGES_SH), *args], env=images_env(), capture_output=True, text=True, timeout=timeout
    )
    if r.returncode != 0:
        raise AssertionError(
            f"hack/images.sh {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-4000:]}"
        )
    return r.stdout


CONTAINERD_CONFIG = """version = 2
root = "{d}/root"
state = "{d}/state"
[grpc]
  address = "{d}/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
"""


@dataclass
class Containerd:
    dir: Path
    proc: subprocess.Popen
    imported: dict[str, str] = field(default_factory=dict)

    @property
    def sock(self) -> str:
        return str(self.dir / "containerd.sock")

    def ctr(
        self, *args: str, timeout: float = 300, check: bool = True
    ) -> subprocess.CompletedProcess:
        r = subprocess.run(
            ["ctr", "--address", self.sock, "-n", "k8s.io", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and r.returncode != 0:
            raise AssertionError(
                f"ctr {' '.join(args)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
            )
        return r

    def image(self, name: str) -> str:
        """Build (cached by content) and import NAME; its reference."""
        if name not in self.imported:
            images_sh("build", name)
            images_sh("import", name, "--address", self.sock)
            self.imported[name] = images_sh("ref", name).strip()
        return self.imported[name]

    def run(
        self,
        name: str,
        *cmd: str,
        env: dict[str, str] | None = None,
        mounts: list[str] | None = None,
        read_only: bool = False,
        timeout: float = 300,
        check: bool = True,
    ) -> subprocess.CompletedProcess:
        """`ctr run --rm` image NAME with CMD (replacing entrypoint and command)."""
        ref = self.image(name)
        args = ["run", "--rm"]
        for k, v in (env or {}).items():
            args += ["--env", f"{k}={v}"]
        for m in mounts or []:
            args += ["--mount", m]
        if read_only:
            args.append("--read-only")
        # `ctr run` (containerd 1.6) now and then loses all output of a process that
        # exits at once (its fifos attach late): a silent success is run once more.
        for attempt in (1, 2):
            cid = f"t-{name}-{uuid.uuid4().hex[:8]}"
            try:
                r = self.ctr(*args, ref, cid, *cmd, timeout=timeout, check=check)
            finally:
                self.ctr("task", "kill", "-s", "SIGKILL", cid, check=False, timeout=30)
                self.ctr("task", "rm", "-f", cid, check=False, timeout=30)
                self.ctr("container", "rm", cid, check=False, timeout=30)
            if r.returncode != 0 or r.stdout or r.stderr or attempt == 2:
                return r
        raise AssertionError("unreachable")
