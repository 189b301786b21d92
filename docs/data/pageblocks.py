"""The measured blocks of a results page: each between ``<!-- data:NAME -->`` and ``<!-- /data -->``, regenerated
from its data by the page's script (docs/data/study.py, emulation.py, nova.py) and compared with the page by its test."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path


def page_blocks(text: str) -> dict[str, str]:
    """NAME → the block's body, as the page holds it."""
    return {m[1]: m[2].strip("\n") for m in re.finditer(r"<!-- data:([\w-]+) -->\n(.*?)<!-- /data -->", text, re.S)}


def write(page: Path, blocks: dict[str, str]) -> None:
    """Put each block's body into ``page``; a block the page lacks stops with its name."""
    text = page.read_text()
    for name, body in blocks.items():
        pat = re.compile(rf"(<!-- data:{re.escape(name)} -->\n).*?(<!-- /data -->)", re.S)
        if not pat.search(text):
            raise SystemExit(f"{page.name} has no block {name!r} (<!-- data:{name} --> … <!-- /data -->)")
        text = pat.sub(lambda m, b=body: m[1] + b + "\n" + m[2], text)
    page.write_text(text)


def main(page: Path, render: Callable[[], dict[str, str]], figures: Callable[[], list[Path]] | None = None,
         argv: list[str] | None = None) -> None:
    """A page script's command line: print every block; ``--write`` puts them into ``page``; ``--figures`` redraws
    its figures."""
    argv = sys.argv if argv is None else argv
    out = render()
    if "--write" in argv:
        write(page, out)
    if "--figures" in argv and figures is not None:
        print("\n".join(map(str, figures())))
    for k, v in out.items():
        print(f"<!-- data:{k} -->\n{v}\n<!-- /data -->\n")
