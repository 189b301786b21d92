"""docs/results-study.md's measured tables are what the committed data sets give (docs/data/study.py
reads them as `wanwide report` and `wanwide compare` do): a page edited by hand, or data changed
without the page, fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _study():
    spec = importlib.util.spec_from_file_location("study", DOCS / "data" / "study.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_block_of_the_page_is_regenerated_from_its_data_set():
    study = _study()
    rendered = study.render()
    on_page = study.page_blocks((DOCS / "results-study.md").read_text())
    assert set(rendered) == set(study.BLOCKS), "a data set named in docs/data/study.py is missing"
    assert set(on_page) == set(rendered), (sorted(on_page), sorted(rendered))
    for name, body in rendered.items():
        assert on_page[name] == body, f"docs/results-study.md block {name!r} differs from its data: " \
                                      f"run docs/data/study.py --write\n{body}"
