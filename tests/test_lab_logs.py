"""What a failed lab deployment leaves to read: a log's tail with its repeated lines counted (a Galera
joiner's minutes of "Connection refused" hid the line that said why it stopped, at 45 regions and 300 ms)
and every service log's tail kept in the run's output."""

from __future__ import annotations

from pathlib import Path

from wanwide.providers.lab.procs import keep_tails, tail, tail_text

SPAM = "0 [Note] WSREP: Failed to establish connection: Connection refused"


def _joiner_log() -> str:
    lines = ["2026-11-27 14:48:34 0 [Note] WSREP: gcomm: connecting to group 'ww-038c5'"]
    lines += [f"2026-11-27 14:{49 + s // 60:02d}:{s % 60:02d} {SPAM}" for s in range(120)]
    lines += ["2026-11-27 14:50:51 0 [ERROR] WSREP: failed to open gcomm backend connection: 110",
              "2026-11-27 14:50:51 0 [ERROR] Aborting"]
    return "\n".join(lines) + "\n"


def test_a_tail_counts_lines_that_differ_only_in_their_timestamp() -> None:
    out = tail_text(_joiner_log(), 5).splitlines()
    assert out == [
        "2026-11-27 14:48:34 0 [Note] WSREP: gcomm: connecting to group 'ww-038c5'",
        f"2026-11-27 14:49:00 {SPAM}",
        "    (the line above 119 more time(s), the last: 2026-11-27 14:50:59)",
        "2026-11-27 14:50:51 0 [ERROR] WSREP: failed to open gcomm backend connection: 110",
        "2026-11-27 14:50:51 0 [ERROR] Aborting",
    ]
    # lines with different text stay, each
    assert tail_text("a\nb\na\n", 5) == "a\nb\na"
    assert tail_text("x\nx\n", 5) == "x\n    (the line above 1 more time(s), the last: x)"


def test_a_failed_deployments_service_logs_are_kept(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "r34-galera").mkdir(parents=True)
    (run / "r34-galera" / "error.log").write_text(_joiner_log())
    (run / "r34-galera" / "my.cnf").write_text("[mysqld]\n")
    (run / "r1-keystone").mkdir()
    (run / "r1-keystone" / "keystone.log").write_bytes(b"x" * 1000 + b"the end\n")
    dest = tmp_path / "out" / "logs" / "study-45" / "t010" / "deploy-failed"
    assert keep_tails(run, dest, limit=100) == dest
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                  if p.is_file()) == ["r1-keystone/keystone.log", "r34-galera/error.log"]
    assert (dest / "r1-keystone" / "keystone.log").read_bytes().endswith(b"the end\n")
    assert len((dest / "r1-keystone" / "keystone.log").read_bytes()) == 100
    assert "[ERROR] Aborting" in tail(dest / "r34-galera" / "error.log")
    assert keep_tails(tmp_path / "nothing", tmp_path / "d2") is None
