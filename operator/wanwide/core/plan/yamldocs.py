"""YAML text → documents, every bound checked on the event stream before anything is built.

A YAML file is read as ``kubectl apply`` would send it: each document becomes one object, aliases
expanded. So before a node is composed, each document's events are counted as that object would be:
its nesting depth, its values and its size as JSON, aliases expanded by what their anchors hold (an
alias of an anchor not yet closed, a recursive document, is refused). A billion-laughs document is
refused after a few hundred events, a deeply nested one without recursion. Keys given twice in a
mapping are refused (kubectl refuses them; PyYAML would keep the last). Then the document is built
with PyYAML's safe loader (libyaml's when installed), where only what JSON can hold is taken:
timestamps stay text (as kubectl sends them), binary, sets, infinite numbers and numbers of
thousands of digits are refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from wanwide.core.errors import UserError, one_line

MAX_FILE_BYTES = 3 * 1024 * 1024
"""A file (or standard input): the API server's largest request (3 MiB)."""
MAX_OBJECT_BYTES = 1536 * 1024
"""A document as JSON, aliases expanded: the largest object the API server stores (etcd's 1.5 MiB request limit)."""
MAX_VALUES = 100_000
"""Values (mappings, lists and scalars) of one file, aliases expanded: a 200-region Topology with 2000 overrides
has about 20,000; the study's five Benchmarks and their Topology about 500."""
MAX_DEPTH = 64
"""Nesting of one document (a Benchmark's own fields nest 7 levels, chart values about 8 more)."""
MAX_ALIASES = 10_000
"""Aliases (``*name``) in one document (PyYAML writes one for each repeat of a shared value; what they expand
to is bounded by ``MAX_VALUES`` and ``MAX_OBJECT_BYTES``)."""
MAX_DIGITS = 100
"""Digits of a number (int64 has 19)."""

_C = bool(getattr(yaml, "__with_libyaml__", False))
_Parser = yaml.CSafeLoader if _C else yaml.SafeLoader


class YamlError(UserError):
    """A file that is not YAML wanwide reads, or a document over a bound: one line, ``name:line[:col]: …``."""


class _Refusal(Exception):
    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line, self.message = line, message


@dataclass
class _Frame:
    """An open mapping or sequence: what it holds so far, aliases expanded."""

    anchor: str | None
    mapping: bool
    size: int = 2
    values: int = 1
    keys: set[str] = field(default_factory=set)
    items: int = 0  # children so far (a mapping's even ones are keys)


def _scan(events: Iterator[yaml.Event]) -> None:
    """Go through the events of every document; a _Refusal when one passes a bound."""
    values = 0  # in the whole text, aliases expanded
    size = aliases = 0  # in the current document
    anchors: dict[str, tuple[int, int]] = {}  # closed anchors of the current document: (size, values)
    stack: list[_Frame] = []

    def grow(n_size: int, n_values: int, line: int) -> None:
        nonlocal values, size
        values += n_values
        size += n_size
        if values > MAX_VALUES:
            raise _Refusal(line, f"more than {MAX_VALUES:,} values (mappings, lists and scalars, aliases expanded) "
                           "in one file: split it, or write repeated parts once")
        if size > MAX_OBJECT_BYTES:
            raise _Refusal(line, f"the document is more than {MAX_OBJECT_BYTES // 1024} KiB as JSON (aliases "
                           "expanded): the API server stores at most 1.5 MiB per object (etcd's request limit); "
                           "make it smaller")

    def child(n_size: int, n_values: int) -> None:
        if stack:
            top = stack[-1]
            top.size += n_size
            top.values += n_values
            top.items += 1

    for e in events:
        line = e.start_mark.line + 1 if e.start_mark is not None else 0
        if isinstance(e, yaml.DocumentStartEvent):
            size = aliases = 0
            anchors = {}
            stack = []
        elif isinstance(e, yaml.ScalarEvent):
            top = stack[-1] if stack else None
            if top is not None and top.mapping and top.items % 2 == 0 and e.value != "<<":
                if e.value in top.keys:
                    raise _Refusal(line, f"key {e.value!r} is given twice in one mapping: keep one (kubectl "
                                   "refuses it; YAML readers differ on which wins)")
                top.keys.add(e.value)
            n = len(e.value) + 3
            grow(n, 1, line)
            child(n, 1)
            if e.anchor is not None:
                anchors[e.anchor] = (n, 1)
        elif isinstance(e, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise _Refusal(line, f"more than {MAX_ALIASES:,} aliases (*name) in one document: write the values "
                               "out, or use fewer anchors")
            if any(f.anchor == e.anchor for f in stack):
                raise _Refusal(line, f"alias *{e.anchor} is inside the value it names: a recursive document has "
                               "no JSON form")
            if e.anchor not in anchors:
                raise _Refusal(line, f"alias *{e.anchor} names no anchor &{e.anchor} before it in the document")
            n, v = anchors[e.anchor]
            grow(n, v, line)
            child(n, v)
        elif isinstance(e, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(stack) >= MAX_DEPTH:
                raise _Refusal(line, f"the document nests deeper than {MAX_DEPTH} levels: no spec field nests "
                               "that deep")
            grow(2, 1, line)
            stack.append(_Frame(e.anchor, isinstance(e, yaml.MappingStartEvent)))
        elif isinstance(e, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frame = stack.pop()
            child(frame.size, frame.values)
            if frame.anchor is not None:
                anchors[frame.anchor] = (frame.size, frame.values)


class _Loader(_Parser):  # type: ignore[misc, valid-type]
    """The safe loader, taking only what JSON holds."""


def _timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(node.value)  # kubectl sends 2024-01-01 as the text it is


def _int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    digits = sum(c.isdigit() for c in str(node.value))
    if digits > MAX_DIGITS:
        raise yaml.constructor.ConstructorError(None, None, f"a number of {digits} digits: no field takes one "
                                                "(quote it if it is text)", node.start_mark)
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


def _float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    value = yaml.constructor.SafeConstructor.construct_yaml_float(loader, node)
    if value != value or value in (float("inf"), float("-inf")):
        raise yaml.constructor.ConstructorError(None, None, f"{node.value} is not a number JSON can hold (the API "
                                                "server refuses it): write a finite number, or quote it",
                                                node.start_mark)
    return value


def _not_json(what: str):
    def refuse(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        raise yaml.constructor.ConstructorError(None, None, f"{what} is not a JSON value (the API server takes JSON "
                                                "only): write text, numbers, lists and mappings", node.start_mark)

    return refuse


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
_Loader.add_constructor("tag:yaml.org,2002:int", _int)
_Loader.add_constructor("tag:yaml.org,2002:float", _float)
for _tag, _what in (("binary", "!!binary"), ("set", "a !!set"), ("omap", "an !!omap"), ("pairs", "!!pairs")):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_json(_what))

# the pure-Python reader's messages are the more precise ("found character '\t'"): worth it on small files
_PRECISE_BELOW = 128 * 1024


def _syntax_error(name: str, e: yaml.YAMLError, text: str = "") -> YamlError:
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, e.position) + 1
        return YamlError(f"{name}:{line}: YAML error: character #x{e.character:04x} is not allowed ({e.reason}): "
                         "remove it, or write it escaped in a double-quoted string")
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        ctx = e.context or ""
        if ctx and e.context_mark is not None and e.context_mark is not mark and \
                (e.context_mark.line, e.context_mark.column) != (mark.line if mark else -1, mark.column if mark else -1):
            ctx += f" (at {e.context_mark.line + 1}:{e.context_mark.column + 1})"
        what = one_line(", ".join(p for p in (ctx, e.problem) if p))
        if isinstance(e, yaml.constructor.ConstructorError) and not ctx:
            return YamlError(f"{where}: {what}")
        return YamlError(f"{where}: YAML syntax error: {what}")
    return YamlError(f"{name}: YAML error: {one_line(str(e))}")


def _precise(name: str, text: str, e: yaml.YAMLError) -> YamlError:
    """The syntax error as the pure-Python reader words it (small texts), else as ``e`` says."""
    if _C and len(text) <= _PRECISE_BELOW:
        try:
            for _ in yaml.parse(text, Loader=yaml.SafeLoader):
                pass
        except yaml.YAMLError as pure:
            return _syntax_error(name, pure, text)
    return _syntax_error(name, e, text)


def documents(name: str, text: str) -> list[tuple[int, Any]]:
    """(line where it starts, value) of each YAML document of ``text`` (the file ``name``); a YamlError of
    one line when the text is over a bound or not YAML."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise YamlError(f"{name}: {size / 1024 / 1024:.1f} MiB, more than {MAX_FILE_BYTES // 1024 // 1024} MiB (the "
                        "API server's largest request): split the file or shorten it")
    try:
        _scan(yaml.parse(text, Loader=_Parser))
    except _Refusal as r:
        raise YamlError(f"{name}:{r.line}: {r.message}") from None
    except yaml.YAMLError as e:
        raise _precise(name, text, e) from None
    out: list[tuple[int, Any]] = []
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            out.append((node.start_mark.line + 1, loader.construct_document(node)))
    except yaml.YAMLError as e:
        raise _precise(name, text, e) from None
    finally:
        loader.dispose()
    return out


def read_bounded(stream: Any, name: str) -> str:
    """At most ``MAX_FILE_BYTES`` of a binary stream as UTF-8 text; a YamlError when there is more or it is
    not UTF-8."""
    data = stream.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise YamlError(f"{name}: more than {MAX_FILE_BYTES // 1024 // 1024} MiB (the API server's largest "
                        "request): split the file or shorten it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise YamlError(f"{name}: not UTF-8 text (byte {e.start}); expected a YAML file") from None
