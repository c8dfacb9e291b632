"""A DOT-language parser: statements, attributes and subgraphs, with line numbers for errors.

Why not pydot: on a 10,000-node verbose ``cudaGraphDebugDotPrint`` dump pydot (pyparsing)
takes far longer than the 1 s target (``benchmarks/bench_dot.py`` prints both), and it loses
the line numbers an error message should name. This parser covers the DOT grammar that
graph dumps use: ``[strict] (di)graph``, node, edge (chains too), attribute and ``a=b``
statements, and nested ``subgraph`` blocks. Edges to whole subgraphs and HTML labels are
refused with a message, since no CUDA graph dump has them.
"""

from __future__ import annotations

import bisect
import itertools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import pace
from .errors import DotFormatError

# A quoted string has one reading (it ends at the first unescaped quote), so its repeats can
# be possessive. Why: with plain repeats Python's engine saves a backtracking point for each
# escape, and a 92 MB dump of escape-dense strings took 11 s to read (3 s in this pattern
# alone, measured); possessive, 0.6 s. Possessive repeats came in Python 3.11.
_STRING = (
    r'"[^"\\]*+(?:\\.[^"\\]*+)*+"' if sys.version_info >= (3, 11) else r'"[^"\\]*(?:\\.[^"\\]*)*"'
)
_TOKEN = re.compile(
    rf"""
    (?P<ws>[ \t\r\n]+)
  | (?P<comment>//[^\n]*|/\*.*?\*/|\#[^\n]*)
  | (?P<string>{_STRING})
  | (?P<id>[A-Za-z_\x80-\U0010ffff][A-Za-z_0-9\x80-\U0010ffff]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
  | (?P<edge>->|--)
  | (?P<punct>[{{}}\[\];,=:])
    """,
    re.VERBOSE | re.DOTALL,
)
_KEYWORDS = {"graph", "digraph", "subgraph", "node", "edge", "strict"}


@dataclass
class Subgraph:
    """One ``subgraph`` block: its name, ``a=b`` attributes and the nodes declared in it."""

    name: str | None  # e.g. "cluster_5"; None for an anonymous block
    attrs: dict[str, str] = field(default_factory=dict)  # label=..., graph[...] attributes
    nodes: list[str] = field(default_factory=list)  # node names in declaration order
    line: int = 0  # line of the ``subgraph`` keyword


@dataclass
class Node:
    """A declared node: its attributes, where it was declared and in which subgraph."""

    attrs: dict[str, str]  # attribute values, unquoted (escapes other than \" kept)
    line: int  # line of the node statement
    subgraph: str | None  # name of the innermost enclosing subgraph


@dataclass
class Edge:
    """One ``a -> b`` pair (a chain ``a -> b -> c`` gives two)."""

    source: str
    target: str
    attrs: dict[str, str]
    line: int


@dataclass
class DotDocument:
    """A parsed DOT file."""

    directed: bool  # digraph rather than graph
    name: str | None  # the graph's name (cudaGraphDebugDotPrint writes "dot")
    attrs: dict[str, str]  # top-level ``a=b`` attributes
    subgraphs: list[Subgraph]  # in file order, nested ones included
    nodes: dict[str, Node]  # declared nodes by name, in file order
    edges: list[Edge]  # in file order


def _unquote(text: str) -> str:
    if text.startswith('"'):
        # Only \" and line continuations are DOT-level escapes; \{ \| \< and friends belong
        # to the record-label syntax and are left for the label reader.
        return text[1:-1].replace('\\"', '"').replace("\\\r\n", "").replace("\\\n", "")
    return text


# Fast paths for the two statements that make up nearly all of a graph dump, a node with an
# attribute list and a single edge. Anything else (and any statement these do not match in
# full) goes through the token-by-token parser below, which also produces the errors.
#
# They must not backtrack without bound: an attribute list such as ``[a=bcd=efg=hij ...`` can
# be split into pairs in exponentially many ways. So every ID ends where the tokenizer's would
# (the lookaheads: an identifier or a number is never cut short), whitespace is taken in one
# place only, and each statement then has one reading, found or refused in linear time.
_ID = (
    _STRING + r"|[A-Za-z_][A-Za-z_0-9]*(?![A-Za-z_0-9\x80-\U0010ffff])"
    r"|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?![0-9.])"
)
_SKIP = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_ATTRS = rf"\[\s*((?:(?:{_ID})\s*=\s*(?:{_ID})\s*(?:[,;]\s*)?)*)\]"
_FAST_NODE = re.compile(rf"({_ID})\s*{_ATTRS}\s*;?")
_FAST_EDGE = re.compile(rf"({_ID})\s*->\s*({_ID})(?!\s*[-:])\s*(?:{_ATTRS})?\s*;?")
_ATTR_PAIR = re.compile(rf"({_ID})\s*=\s*({_ID})")


class _Lexer:
    """Tokens on demand from a position, so that fast-path statements are never tokenized."""

    def __init__(self, text: str, path: str | Path | None) -> None:
        self.text = text
        self.path = path
        self.pos = 0
        self._newlines: list[int] | None = None
        self._ahead: list[tuple[str, str, int]] = []

    def line_of(self, pos: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, pos) + 1

    def _fail_at(self, pos: int) -> None:
        ch = self.text[pos]
        if ch == '"':
            raise DotFormatError(
                self.path, "unterminated quoted string (truncated file?)", self.line_of(pos)
            )
        if ch == "<":
            raise DotFormatError(
                self.path,
                "HTML-like labels are not part of CUDA graph dumps; "
                "this DOT file was not written by cudaGraphDebugDotPrint",
                self.line_of(pos),
            )
        raise DotFormatError(self.path, f"unexpected character {ch!r}", self.line_of(pos))

    def _scan(self) -> tuple[str, str, int] | None:
        text, pos, end = self.text, self.pos, len(self.text)
        while pos < end:
            m = _TOKEN.match(text, pos)
            if m is None:
                self._fail_at(pos)
                raise AssertionError  # _fail_at always raises
            kind = m.lastgroup or ""
            self.pos = pos = m.end()
            if kind in ("ws", "comment"):
                continue
            value = m.group()
            if (kind == "id" and value in _KEYWORDS) or kind == "punct":
                kind = value
            return kind, value, m.start()
        self.pos = end
        return None

    def at_statement(self) -> int | None:
        """Offset of the next statement if no token is buffered (fast paths may run there)."""
        if self._ahead:
            return None
        m = _SKIP.match(self.text, self.pos)
        self.pos = m.end() if m else self.pos
        return self.pos

    def peek(self, offset: int = 0) -> str | None:
        while len(self._ahead) <= offset:
            tok = self._scan()
            if tok is None:
                return None
            self._ahead.append(tok)
        return self._ahead[offset][0]

    def value(self) -> str:
        self.peek()
        return self._ahead[0][1] if self._ahead else ""

    def line(self) -> int:
        if self.peek() is not None:
            return self.line_of(self._ahead[0][2])
        return self.line_of(len(self.text))

    def take(self, *kinds: str) -> str:
        kind = self.peek()
        if kind is None:
            raise DotFormatError(
                self.path, "file ends inside the graph (truncated file?)", self.line()
            )
        if kinds and kind not in kinds:
            want = " or ".join(repr(k) for k in kinds)
            raise DotFormatError(
                self.path, f"expected {want}, found {self._ahead[0][1]!r}", self.line()
            )
        return self._ahead.pop(0)[1]

    def accept(self, value: str) -> bool:
        if self.peek() is not None and self._ahead[0][1] == value:
            self._ahead.pop(0)
            return True
        return False


def parse_dot(text: str, path: str | Path | None = None) -> DotDocument:
    """Parse DOT text; raise DotFormatError naming the line of the first problem."""
    toks = _Lexer(text, path)
    if toks.peek() is None:
        raise DotFormatError(path, "empty file: no DOT graph in it")
    toks.accept("strict")
    kind = toks.peek()
    if kind not in ("graph", "digraph"):
        raise DotFormatError(
            path, "not a DOT file: it does not start with 'digraph' or 'graph'", toks.line()
        )
    toks.take()
    name = _unquote(toks.take()) if toks.peek() in ("id", "string") else None
    toks.take("{")
    doc = DotDocument(kind == "digraph", name, {}, [], {}, [])
    edge_op = "->" if doc.directed else "--"
    # The open blocks, innermost last; None stands for the root graph.
    stack: list[Subgraph | None] = [None]

    def attr_list() -> dict[str, str]:
        attrs: dict[str, str] = {}
        while toks.accept("["):
            while not toks.accept("]"):
                key = _unquote(toks.take("id", "string"))
                toks.take("=")
                attrs[key] = _unquote(toks.take("id", "string"))
                if not toks.accept(","):
                    toks.accept(";")
        return attrs

    def add_node(node_name: str, attrs: dict[str, str], line: int) -> None:
        current = stack[-1]
        known = doc.nodes.get(node_name)
        if known is None:
            doc.nodes[node_name] = Node(attrs, line, current.name if current else None)
            if current is not None:
                current.nodes.append(node_name)
        else:
            known.attrs.update(attrs)

    statements = 0
    while True:
        statements += 1
        if not statements % pace.EVERY:
            pace.point()
        start = toks.at_statement()
        if start is not None:
            m = _FAST_NODE.match(text, start)
            if m and m.group(1) not in _KEYWORDS:
                attrs = {_unquote(k): _unquote(v) for k, v in _ATTR_PAIR.findall(m.group(2))}
                add_node(_unquote(m.group(1)), attrs, toks.line_of(start))
                toks.pos = m.end()
                continue
            m = _FAST_EDGE.match(text, start) if doc.directed else None
            if m and m.group(1) not in _KEYWORDS and m.group(2) not in _KEYWORDS:
                attrs = {_unquote(k): _unquote(v) for k, v in _ATTR_PAIR.findall(m.group(3) or "")}
                doc.edges.append(
                    Edge(_unquote(m.group(1)), _unquote(m.group(2)), attrs, toks.line_of(start))
                )
                toks.pos = m.end()
                continue
        kind = toks.peek()
        if kind is None:
            raise DotFormatError(path, "file ends inside the graph (truncated file?)", toks.line())
        line = toks.line()
        current = stack[-1]
        if kind == "}":
            toks.take()
            stack.pop()
            if not stack:
                break
            toks.accept(";")
            continue
        if kind == ";":
            toks.take()
            continue
        if kind in ("subgraph", "{"):
            sub_name = None
            if kind == "subgraph":
                toks.take()
                if toks.peek() in ("id", "string"):
                    sub_name = _unquote(toks.take())
            toks.take("{")
            sub = Subgraph(sub_name, line=line)
            doc.subgraphs.append(sub)
            stack.append(sub)
            continue
        if kind in ("graph", "node", "edge"):
            toks.take()
            attrs = attr_list()
            if kind == "graph":
                (current.attrs if current else doc.attrs).update(attrs)
            continue
        if kind not in ("id", "string"):
            raise DotFormatError(path, f"unexpected {toks.value()!r}", line)
        first = _unquote(toks.take())
        if toks.peek() == "=":
            toks.take()
            value = _unquote(toks.take("id", "string"))
            (current.attrs if current else doc.attrs)[first] = value
            toks.accept(";")
            continue
        if toks.accept(":"):  # a port: kept out of the node name, as Graphviz does
            toks.take("id", "string")
            if toks.accept(":"):
                toks.take("id", "string")
        if toks.peek() == "edge":
            chain = [first]
            while toks.peek() == "edge":
                op = toks.take()
                if op != edge_op:
                    raise DotFormatError(
                        path,
                        f"edge operator {op!r} in a {'digraph' if doc.directed else 'graph'}",
                        line,
                    )
                if toks.peek() in ("{", "subgraph"):
                    raise DotFormatError(
                        path,
                        "edges to subgraphs are not part of CUDA graph "
                        "dumps; not written by cudaGraphDebugDotPrint",
                        line,
                    )
                chain.append(_unquote(toks.take("id", "string")))
                if toks.accept(":"):
                    toks.take("id", "string")
            attrs = attr_list()
            for a, b in itertools.pairwise(chain):
                doc.edges.append(Edge(a, b, attrs, line))
            toks.accept(";")
            continue
        add_node(first, attr_list(), line)
        toks.accept(";")
    if toks.peek() is not None:
        raise DotFormatError(
            path, f"unexpected {toks.value()!r} after the graph's closing brace", toks.line()
        )
    return doc
