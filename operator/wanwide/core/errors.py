"""The command line's user errors: one line on stderr, exit code 2, never a traceback."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in what the user gave; ``str()`` is one line for stderr."""


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines too) as one space."""
    return " ".join(text.split())
