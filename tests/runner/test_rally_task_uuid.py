"""The task a run measured is the one ``rally task start`` says it started: Rally 5 writes
"Task [tags: 'wanwide-…'] <uuid>: started", and the runner takes the uuid from that line without a second
``rally task list`` (which loads every plugin again: on 2 saturated cores, 9 regions' Rallies at once, it outlived
its timeout with every iteration done, and the run was lost: docs/verification.md, stop 65)."""

from __future__ import annotations

from pathlib import Path

from wanwide.pipeline.runner.rally import Rally, _uuid_from_output

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests/data/bundles/runner-real/logs/04-task-start.log"  # a real Rally 5.1.1 task start
TAG = "wanwide-20261122t012932z-740ffc884284"
UUID = "5b9c9802-b105-4948-a8c5-14a8f2b3370d"


def test_rally_5s_started_line_names_the_task():
    text = REAL.read_text()
    assert _uuid_from_output(text, TAG) == UUID
    assert _uuid_from_output(text, "wanwide-another-run") is None  # another run's task is not this one
    assert _uuid_from_output(f"Task {UUID}: started") == UUID  # the form before Rally 5


def test_task_start_takes_the_uuid_from_its_output_without_task_list(tmp_path):
    calls = tmp_path / "calls"
    exe = tmp_path / "rally"
    # a Rally whose `task start` prints the real run's output and whose `task list` would hang past any timeout
    exe.write_text(f"""#!/bin/sh
echo "$3 $4" >> {calls}
case "$3 $4" in
  "task start") cat {REAL} ;;
  "task list") sleep 600 ;;
esac
""")
    exe.chmod(0o755)
    rally = Rally(exe=exe, workdir=tmp_path / "w", logdir=tmp_path / "logs")
    uuid, rc = rally.task_start(tmp_path / "task.json", TAG, timeout=30)
    assert (uuid, rc) == (UUID, 0)
    assert calls.read_text().split("\n")[:-1] == ["task start"]


def test_without_a_started_line_the_tag_finds_it(tmp_path):
    exe = tmp_path / "rally"
    exe.write_text(f"""#!/bin/sh
case "$3 $4" in
  "task start") echo "no line naming the task" ;;
  "task list") echo {UUID} ;;
esac
""")
    exe.chmod(0o755)
    rally = Rally(exe=exe, workdir=tmp_path / "w", logdir=tmp_path / "logs")
    assert rally.task_start(tmp_path / "task.json", TAG, timeout=30) == (UUID, 0)
