"""The generated corpus without a cluster: the same every run, every mistake one line, the CLI agrees.

The API server's side is tests/cluster/test_corpus.py.
"""

from __future__ import annotations

import collections
import json

import pytest

from tests.plan.corpus import Case, corpus, planner_verdict
from tests.test_cli_errors import wanwide
from wanwide.core.errors import one_line

# Mutations the schema alone refuses, whatever document they hit.
ALWAYS_REFUSED = ("quoted-number", "bad-unit", "unknown-field", "out-of-range", "one-of-conflict")
CLI_SAMPLE = 25


@pytest.fixture(scope="module")
def judged() -> list[tuple[Case, str | None]]:
    return [(c, planner_verdict(c)) for c in corpus()]


def test_corpus_is_the_same_every_run(judged):
    import wanwide.providers.lab.run  # noqa: F401  (more local modules loaded must not change the draws)

    again = corpus()
    assert [c.id for c, _ in judged] == [c.id for c in again]
    assert all(json.dumps(a.docs) == json.dumps(b.docs) for (a, _), b in zip(judged, again, strict=True))


def test_corpus_covers_every_kind_of_near_miss(judged):
    count = collections.Counter(c.category for c, _ in judged)
    for cat in (*ALWAYS_REFUSED, "valid", "wrong-type", "drop", "empty-list", "bad-name", "example-perturb",
                "example-drop", "example-wrong-type"):
        assert count[cat] >= 20, (cat, count)
    valid = [v for c, v in judged if c.category == "valid"]
    assert sum(v is None for v in valid) >= 0.6 * len(valid), "most schema-valid documents also plan"


def test_every_refusal_is_one_line_naming_the_file(judged):
    """One line per problem (several problems of one file: a line each), each naming the file."""
    for c, verdict in judged:
        if verdict is not None:
            assert all(line.startswith(f"{c.id}.yaml:") for line in verdict.splitlines()), verdict
    for c, verdict in judged:
        if c.category in ALWAYS_REFUSED:
            assert verdict is not None, f"{c.id}: {c.tags} planned"


def test_the_command_line_says_the_same(judged, tmp_path):
    """A sample through the real ``wanwide plan -f``: exit 0 and YAML, or exit 2 and the same line."""
    sample = judged[:: max(1, len(judged) // CLI_SAMPLE)]
    assert {v is None for _, v in sample} == {True, False}
    for c, verdict in sample:
        path = tmp_path / f"{c.id}.yaml"
        path.write_text(c.text())
        r = wanwide("plan", "-f", str(path))
        if verdict is None:
            assert r.returncode == 0 and r.stdout.startswith("# Benchmark"), (c.id, r.stderr)
        else:
            assert r.returncode == 2 and r.stdout == "", (c.id, r.stderr)
            assert r.stderr.replace(str(tmp_path) + "/", "") == "".join(
                f"wanwide: error: {one_line(line)}\n" for line in verdict.splitlines())
