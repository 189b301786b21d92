from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "rally"


@pytest.fixture
def data_dir() -> Path:
    return DATA


def make_bundle(root: Path, rally_json: Path | None, *, trial: str = "t0", region: str = "r1",
                params: dict | None = None, attempt: int = 1, run_id: str = "20261122t100000z-000000000001",
                database: dict | None = None, network: dict | None = None, scenarios=None,
                benchmark: str = "bench") -> Path:
    """A bundle as the runner writes it (manifest through the runner's own model)."""
    from wanwide.pipeline.runner.bundle import (
        DatabaseInfo,
        KeystoneInfo,
        Manifest,
        NetworkInfo,
        Status,
        TrialInfo,
        bundle_relpath,
        write_manifest,
    )

    d = root / bundle_relpath(benchmark, trial, region, attempt, run_id)
    (d / "logs").mkdir(parents=True)
    (d / "logs" / "01-task-start.log").write_text("ok\n")
    if rally_json is not None:
        shutil.copy(rally_json, d / "rally.json")
    m = Manifest(
        benchmark=benchmark, namespace="lab",
        trial=TrialInfo(id=trial, index=0, repetition=0, parameters=params or {}),
        region=region, role="load", attempt=attempt, run_id=run_id,
        scenarios=scenarios or ["KeystoneBasic.authenticate_user_and_validate_token"],
        versions={"rally": "5.1.1"}, keystone=KeystoneInfo(url="http://k:5000/v3", region_name=region,
                                                           cache={"enabled": True}),
        database=DatabaseInfo(**(database or {})), network=NetworkInfo(**(network or {})),
        status=Status(result="succeeded", reason="Completed"),
    )
    write_manifest(d, m)
    json.loads((d / "manifest.json").read_text())
    return d


@pytest.fixture
def bundle_factory():
    return make_bundle


def same_table(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal tables: values, dtypes, category order, row order and attrs."""
    pd.testing.assert_frame_equal(a, b, check_exact=True, check_categorical=True)
    for col in a.select_dtypes("category"):
        assert list(a[col].cat.categories) == list(b[col].cat.categories), col
    assert a.attrs == b.attrs
