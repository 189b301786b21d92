"""`wanwide lab clean` undoes killed runs, and only those of the Benchmarks it is given."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wanwide.providers.lab.state import cleanup_all

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("need_net")]
WANWIDE = str(Path(sys.executable).with_name("wanwide"))


def _builder(tag: str, benchmark: str, state_dir: Path) -> subprocess.Popen[str]:
    """A process that builds a 2-region network for ``benchmark``, says ready, and sleeps."""
    code = textwrap.dedent(f"""
        import time
        from wanwide.providers.lab import netns
        from wanwide.core.plan.links import OneWay
        netns.build(["a", "b"], {{("a", "b"): OneWay(5), ("b", "a"): OneWay(5)}}, tag={tag!r},
                    benchmark={benchmark!r}, shaper="wirefilter")
        print("ready", flush=True)
        time.sleep(600)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "WANWIDE_LAB_STATE_DIR": str(state_dir)})
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


@pytest.mark.timeout(180)
def test_clean_is_scoped_to_its_benchmarks(lab_state_dir: Path, tmp_path: Path, leftovers) -> None:
    """Two killed runs (Benchmarks mine, theirs) and a live run recorded in another state dir:
    `lab clean --benchmark mine` removes mine only; `lab clean` (no scope) the killed theirs,
    never the live run of the other state dir (its namespaces are not this state dir's)."""
    other_dir = tmp_path / "other-state"
    tags = {name: "c" + secrets.token_hex(2) for name in ("mine", "theirs", "live")}
    mine = _builder(tags["mine"], "mine", lab_state_dir)
    theirs = _builder(tags["theirs"], "theirs", lab_state_dir)
    live = _builder(tags["live"], "mine", other_dir)
    try:
        for p in (mine, theirs):
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
        env = {**os.environ, "WANWIDE_LAB_STATE_DIR": str(lab_state_dir)}
        r = subprocess.run([WANWIDE, "lab", "clean", "--benchmark", "mine"], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "of mine" in r.stdout
        assert leftovers(tags["mine"]) == []
        assert not (lab_state_dir / f"{tags['mine']}.json").exists()
        assert leftovers(tags["theirs"]), "another Benchmark's killed run was cleaned"
        assert leftovers(tags["live"]), "a live run of another state dir was touched"

        r = subprocess.run([WANWIDE, "lab", "clean"], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert leftovers(tags["theirs"]) == []
        assert leftovers(tags["live"]), "a live run of another state dir was touched"
    finally:
        for p in (mine, theirs, live):
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
        cleanup_all(lab_state_dir)
        cleanup_all(other_dir)
    assert leftovers(tags["live"]) == []
