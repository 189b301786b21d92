"""The run's machine in its manifest: hostnames repeat across machines of one kind (a campaign's sittings
landed on three), so the CPU model and the kernel's boot id are recorded and the runs table shows them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from wanwide.pipeline.results.runs import runs_table
from wanwide.pipeline.runner import gauges

ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"


def lscpu_model() -> str:
    """This machine's CPU model as util-linux's lscpu reads it (independently of the runner)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    return next(ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name"))


def test_this_machine_is_named_by_its_cpu_and_boot() -> None:
    h = gauges.host_info()
    assert h["cpu_model"] == lscpu_model()
    assert h["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip() and len(h["boot_id"]) == 36


def test_a_cpuinfo_without_a_model_name_gives_none() -> None:
    assert gauges.cpu_model(ARM) is None
    assert gauges.cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nmodel name\t: other\n") == "AMD EPYC 7B13"


def _manifest(run: str, host: dict) -> dict:
    return {"benchmark": "b", "trial": {"id": "t000"}, "region": "r1", "run_id": run, "host": host,
            "status": {"result": "succeeded"}}


def test_runs_of_two_machines_of_one_name_are_told_apart() -> None:
    runs = runs_table([
        _manifest("a", {"hostname": "vm", "cpu_model": "AMD EPYC", "boot_id": "0f1e2d3c-aaaa-bbbb-cccc-000000000001"}),
        _manifest("b", {"hostname": "vm", "cpu_model": "AMD EPYC", "boot_id": "9a8b7c6d-aaaa-bbbb-cccc-000000000002"}),
        _manifest("c", {"hostname": "vm", "cpu_count": 2}),  # written before they were recorded
    ]).set_index("run_id")
    assert runs.loc["a", "machine"] == "AMD EPYC · boot 0f1e2d3c"
    assert runs.loc["b", "machine"] == "AMD EPYC · boot 9a8b7c6d"
    assert runs.loc["c", "machine"] == ""
