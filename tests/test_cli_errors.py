"""The real command line on bad input: one line on stderr naming the file, exit code 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.plan.bad_inputs import CASES

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "manifests" / "examples" / "lab-delay.yaml"
STUDY = REPO / "manifests" / "examples" / "study.yaml"  # 5 rounds so far
# What the file-reading cases write: name -> content (bytes or text).
FILES: dict[str, str | bytes] = {
    "syntax.yaml": "apiVersion: wanwide.io/v1alpha1\nkind: Benchmark\nspec: [1,\n  2\n",
    "tab.yaml": "kind: Benchmark\nmetadata:\n\tname: x\n",
    "list.yaml": "- kind: Benchmark\n- kind: Topology\n",
    "scalar.yaml": "just some words\n",
    "kind.yaml": "apiVersion: wanwide.io/v1alpha1\nkind: Benchmarks\nmetadata: {name: x}\n",
    "nokind.yaml": "metadata: {name: x}\n",
    "latin1.yaml": b"kind: Benchmark\nmetadata: {name: caf\xe9}\n",
    "empty-metadata.yaml": "apiVersion: wanwide.io/v1alpha1\nkind: Benchmark\nmetadata:\nspec: {}\n",
    "top-field.yaml": "apiVersion: wanwide.io/v1alpha1\nkind: Benchmark\nmetadata: {name: x}\nspecs: {}\nspec: {}\n",
    "bad-topology.yaml": "apiVersion: wanwide.io/v1alpha1\nkind: Topology\nmetadata: {name: t}\nspec: {regions: []}\n"
                         "---\napiVersion: wanwide.io/v1alpha1\nkind: Benchmark\nmetadata: {name: b}\n"
                         "spec: {topologyRef: t, workload: {scenarios: [{name: get_entities}]}}\n",
    "topology-only.yaml": "apiVersion: wanwide.io/v1alpha1\nkind: Topology\nmetadata: {name: t}\n"
                          "spec: {regions: [{name: a}]}\n",
}
PICKED = ("unknown-field", "negative-delay", "override-unknown-region", "light-load-unknown-region",
          "matrix-more-regions-than-listed", "dropout-longer-than-period", "quoted-times", "quoted-boolean",
          "name-upper-case", "name-too-long", "matrix-regions-zero", "fractional-times")

# (id, argv with {d} for the directory, what stderr must name, words it must say)
TABLE: list[tuple[str, list[str], str, str]] = [
    ("missing-file", ["plan", "-f", "{d}/missing.yaml"], "missing.yaml", "no such file"),
    ("directory", ["plan", "-f", "{d}"], "{d}", "is a directory"),
    ("not-utf8", ["plan", "-f", "{d}/latin1.yaml"], "latin1.yaml", "not UTF-8"),
    ("yaml-syntax", ["plan", "-f", "{d}/syntax.yaml"], "syntax.yaml:5:1", "YAML syntax error"),
    ("yaml-tab", ["plan", "-f", "{d}/tab.yaml"], "tab.yaml:3:1", "YAML syntax error"),
    ("document-is-list", ["plan", "-f", "{d}/list.yaml"], "list.yaml:1", "the document is a list"),
    ("document-is-string", ["plan", "-f", "{d}/scalar.yaml"], "scalar.yaml:1", "the document is a string"),
    ("unknown-kind", ["plan", "-f", "{d}/kind.yaml"], "kind.yaml:1", "known kinds: Benchmark, Topology"),
    ("no-kind", ["plan", "-f", "{d}/nokind.yaml"], "nokind.yaml:1", "unknown kind None"),
    ("empty-metadata", ["plan", "-f", "{d}/empty-metadata.yaml"], "empty-metadata.yaml:1: Benchmark/?: metadata",
     "such as metadata: {name: my-benchmark}"),
    ("unknown-top-field", ["plan", "-f", "{d}/top-field.yaml"], "top-field.yaml:1: Benchmark/x: specs", "unknown field"),
    ("referenced-topology-invalid", ["plan", "-f", "{d}/bad-topology.yaml"], "bad-topology.yaml:1: Topology/t: spec.regions",
     "at least 1 item"),
    ("no-benchmark", ["plan", "-f", "{d}/topology-only.yaml"], "topology-only.yaml", "no Benchmark document"),
    ("bad-flag", ["plan", "-f", str(EXAMPLE), "--bogus"], "wanwide", "unrecognized arguments: --bogus"),
    ("bad-flag-value", ["plan", "-f", str(EXAMPLE), "--trial", "one"], "--trial", "invalid int value"),
    ("trial-out-of-range", ["plan", "-f", str(EXAMPLE), "--trial", "99"], "--trial 99", "has 36 trials"),
    ("unknown-command", ["plna"], "wanwide", "invalid choice"),
    ("lab-missing-file", ["lab", "run", "-f", "{d}/missing.yaml", "-o", "{d}/out"], "missing.yaml", "no such file"),
    ("lab-plan-error", ["lab", "run", "-f", "{d}/override-unknown-region.yaml", "-o", "{d}/out"],
     "override-unknown-region.yaml:1", "unknown region 'tokyo'"),
    ("lab-stop-after-word", ["lab", "run", "-f", str(EXAMPLE), "-o", "{d}/out", "--stop-after", "soon"], "--stop-after",
     "'soon': a duration such as 90m or 2h"),
    ("lab-stop-after-zero", ["lab", "run", "-f", str(EXAMPLE), "-o", "{d}/out", "--stop-after", "0s"], "--stop-after",
     "'0s': must be greater than 0"),
    ("lab-stop-between-trials-alone", ["lab", "run", "-f", str(EXAMPLE), "-o", "{d}/out", "--stop-between-trials"],
     "--stop-between-trials", "needs --stop-after DURATION"),
    ("lab-more-rounds-word", ["lab", "run", "-f", str(EXAMPLE), "-o", "{d}/out", "--more-rounds", "some"],
     "--more-rounds", "'some': a whole number of rounds"),
    ("lab-more-rounds-too-many", ["lab", "run", "-f", str(STUDY), "-o", "{d}/out", "--more-rounds", "96"],
     "study.yaml", "--more-rounds 96: spec.matrix.firstRepetition + repetitions is more than 100"),
    ("lab-benchmark-unknown", ["lab", "run", "-f", str(STUDY), "-o", "{d}/out", "--benchmark", "study-9-hi"],
     "--benchmark study-9-hi", "no such Benchmark in the files (they hold study-3, study-9"),
    ("lab-repetition-zero", ["lab", "run", "-f", str(STUDY), "-o", "{d}/out", "--repetition", "0"],
     "--repetition", "'0': must be greater than 0"),
    ("lab-repetition-absent", ["lab", "run", "-f", str(STUDY), "-o", "{d}/out", "--more-rounds", "3", "--repetition", "2"],
     "--repetition 2", "no trial of the selected Benchmarks has it (their repetitions, counted from 1: 6–8"),
    ("lab-quiet-threshold-word", ["lab", "run", "-f", str(EXAMPLE), "-o", "{d}/out", "--quiet-threshold", "low"],
     "--quiet-threshold", "'low': not a number"),
    ("lab-quiet-threshold-negative", ["lab", "run", "-f", str(EXAMPLE), "-o", "{d}/out", "--quiet-threshold=-1"],
     "--quiet-threshold", "'-1': must be greater than 0"),
    ("report-nothing", ["report", "{d}/missing-dir", "-o", "{d}/out"], "missing-dir", "no such file or directory"),
    ("report-bad-json", ["report", str(REPO / "tests/data/rally/malformed"), "-o", "{d}/out", "--no-progress"],
     "malformed", "malformed Rally JSON"),
    ("fetch-bad-uri", ["results", "fetch", "s3://", "-o", "{d}/out"], "s3://", "expected s3://bucket/prefix"),
    *[(f"spec-{c[0]}", ["plan", "-f", f"{{d}}/{c[0]}.yaml"], f"{c[0]}.yaml:1", c[2]) for c in CASES if c[0] in PICKED],
]


def wanwide(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The installed console script (beside this Python), as a user runs it."""
    exe = Path(sys.executable).with_name("wanwide")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "wanwide.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout,
                          env=env or {**os.environ, "PYTHONPATH": str(REPO / "operator")})


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad")
    for name, content in FILES.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    for case, doc, *_ in CASES:
        if case in PICKED or case == "override-unknown-region":
            (d / f"{case}.yaml").write_text(yaml.safe_dump(doc))
    return d


def test_several_problems_of_one_spec_are_a_line_each(inputs):
    """Not one 750-character line: each problem on its own, each naming the file and the field."""
    r = wanwide("plan", "-f", str(inputs / "empty-metadata.yaml"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 2, r.stderr
    assert "Benchmark/?: metadata: write a mapping" in lines[0] and "spec.workload: required field" in lines[1]
    assert all(ln.startswith(f"wanwide: error: {inputs / 'empty-metadata.yaml'}:1: ") for ln in lines)


def test_table_covers_every_kind_of_mistake():
    assert {c[0].split("-")[0] for c in TABLE} >= {"missing", "yaml", "document", "unknown", "bad", "spec", "lab"}
    assert sum(c[0].startswith("spec-") for c in TABLE) == len(PICKED)


@pytest.mark.parametrize(("case", "argv", "names", "says"), TABLE, ids=[c[0] for c in TABLE])
def test_one_line_exit_2(inputs, case, argv, names, says):
    r = wanwide(*[a.replace("{d}", str(inputs)) for a in argv])
    err = r.stderr
    assert r.returncode == 2, (r.returncode, err)
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert lines and all(ln.startswith(lines[0].split(": ")[0] + ": error: ") for ln in lines), err  # a line each
    named = names.replace("{d}", str(inputs))
    assert named in err and all(named.split(":")[0] in ln for ln in lines), err  # each line names the file
    assert says in err, err
    assert r.stdout == "", "nothing partial on stdout"


BLOCKER = """
import importlib.abc, sys
BLOCKED = set(sys.argv.pop(1).split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from wanwide.cli import main
rc = main(sys.argv[1:])
print("loaded:", ",".join(sorted(m for m in BLOCKED if m in sys.modules)))
sys.exit(rc)
"""


def without(modules: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a Python where ``modules`` (comma-separated) are not installed."""
    return subprocess.run([sys.executable, "-c", BLOCKER, modules, *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO / "operator")})


def test_missing_dependency_says_what_to_install():
    r = without("kopf", "operator", "--namespaces=x")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "'kopf'" in r.stderr and "pip install 'wanwide[operator]'" in r.stderr
    r = without("pandas", "report", str(REPO / "tests/data/bundles"), "-o", "/nonexistent/x")
    assert r.returncode == 2 and "pip install 'wanwide[report]'" in r.stderr, r.stderr


PLUGIN = """
import sys
import wanwide.cli as c
c.COMMANDS = (*c.COMMANDS, c.Command("extra", "wwplugin.cli", "add_parser", "extra", "a command in another module"))
sys.exit(c.main(sys.argv[1:]))
"""


def test_command_whose_module_fails_is_listed_and_explains(tmp_path):
    """A sub-command module that cannot be imported (a package it needs is missing) still shows."""
    (tmp_path / "wwplugin").mkdir()
    (tmp_path / "wwplugin" / "__init__.py").write_text("")
    (tmp_path / "wwplugin" / "cli.py").write_text("import package_not_installed_here\n")
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'operator'}:{tmp_path}"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", PLUGIN, *args], capture_output=True, text=True, env=env,
                              timeout=120)

    r = run("--help")
    assert r.returncode == 0, r.stderr
    assert "a command in another module [unavailable: pip install 'wanwide[extra]']" in " ".join(r.stdout.split())
    for args in (["extra"], ["extra", "--help"], ["extra", "run", "-x"]):
        r = run(*args)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert "extra: needs the Python module 'package_not_installed_here'" in r.stderr, r.stderr
        assert "pip install 'wanwide[extra]'" in r.stderr and "Traceback" not in r.stderr
    r = without("pydantic", "runner", "validate", "--config", "x.json")  # found missing when it runs
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "runner: needs the Python module 'pydantic'" in r.stderr and "wanwide[operator]" in r.stderr


def test_report_without_operator_dependencies(tmp_path):
    """`wanwide report` needs none of kopf, kubernetes, PyMySQL (what `wanwide[report]` leaves out)."""
    r = without("kopf,kubernetes,pymysql,prometheus_client", "report", "--no-progress", "--no-store",
                str(REPO / "tests/data/bundles"), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "loaded: \n" in r.stdout
    assert (tmp_path / "out" / "index.html").is_file()
