"""JAAS login configuration text, as Java's ConfigFile and Kafka's ``sasl.jaas.config`` read it.

A JAAS file names sections (login contexts), each a list of login modules; the
``sasl.jaas.config`` form is one section's entries alone::

    Client {
        org.apache.zookeeper.server.auth.DigestLoginModule required
        username="kafka"
        password="kafka-secret";
    };

    parse_jaas_file(text)["Client"][0].options["username"]        # "kafka"
    parse_jaas_entries('PlainLoginModule required user_a="a";')  # (JaasEntry(...),)

Grammar (what Java accepts, less ``${property}`` expansion, which is left as written)::

    file    := { name "{" { entry } "}" ";" }
    entry   := login-module flag { key "=" value } ";"
    flag    := required | requisite | sufficient | optional    (any case)
    value   := "quoted" (\\" \\\\ \\n \\t ... escapes) | a bare word

``//`` and ``/* */`` comments; a section named twice is an error, as in Java. Pure functions
on text, no I/O: the one parser for both the broker's ZooKeeper client (zk/zk_auth.py) and
SASL on the listeners. A malformed text raises ``JaasConfigError`` naming the line, and never
quotes a value: values are passwords.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["CONTROL_FLAGS", "JaasConfigError", "JaasEntry", "parse_jaas_entries", "parse_jaas_file"]

CONTROL_FLAGS = frozenset({"required", "requisite", "sufficient", "optional"})

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}
# A bare word runs to whitespace, a quote, a comment or one of the punctuation marks.
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*.*?\*/)
    | (?P<quoted>"(?:[^"\\]|\\.)*")
    | (?P<mark>[{};=])
    | (?P<word>(?:[^\s{};="/]|/(?![/*]))+)
    """,
    re.VERBOSE | re.DOTALL,
)


class JaasConfigError(ValueError):
    """Malformed JAAS text; the message names the line, never a value."""


@dataclass(frozen=True)
class JaasEntry:
    """One login module of a section: its class, control flag and options.

    The repr leaves the option values out: they are passwords.
    """

    login_module: str
    control_flag: str
    options: Mapping[str, str] = field(default_factory=dict, repr=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def __repr__(self) -> str:
        return (
            f"JaasEntry({self.login_module!r}, {self.control_flag!r}, "
            f"options={sorted(self.options)})"
        )


@dataclass(frozen=True)
class _Token:
    kind: str  # "quoted", "mark" or "word"
    text: str  # a quoted string's value, unescaped
    line: int


def _tokens(text: str) -> Iterator[_Token]:
    position, line = 0, 1
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            if text.startswith("/*", position):
                raise JaasConfigError(f"line {line}: a /* comment is never closed")
            if text[position] == '"':
                raise JaasConfigError(f"line {line}: a quoted value is never closed")
            raise JaasConfigError(f"line {line}: unexpected character {text[position]!r}")
        kind = match.lastgroup
        raw = match.group()
        if kind == "quoted":
            yield _Token("quoted", _unescape(raw[1:-1]), line)
        elif kind in ("mark", "word"):
            yield _Token(kind or "", raw, line)
        line += raw.count("\n")
        position = match.end()


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.DOTALL)


class _Parser:
    def __init__(self, text: str) -> None:
        self._tokens = list(_tokens(text))
        self._next = 0

    def at_end(self) -> bool:
        return self._next >= len(self._tokens)

    def peek(self) -> _Token | None:
        return None if self.at_end() else self._tokens[self._next]

    def take(self, what: str) -> _Token:
        token = self.peek()
        if token is None:
            last = self._tokens[-1].line if self._tokens else 1
            raise JaasConfigError(f"line {last}: the text ends where {what} was expected")
        self._next += 1
        return token

    def mark(self, mark: str) -> None:
        token = self.take(f"'{mark}'")
        if token.kind != "mark" or token.text != mark:
            raise JaasConfigError(f"line {token.line}: expected '{mark}', found {_shown(token)}")

    def word(self, what: str) -> _Token:
        token = self.take(what)
        if token.kind != "word":
            raise JaasConfigError(f"line {token.line}: expected {what}, found {_shown(token)}")
        return token

    def entries(self, closing: str | None) -> tuple[JaasEntry, ...]:
        """Entries up to ``closing`` (a section's ``}``) or the end of the text."""
        entries: list[JaasEntry] = []
        while True:
            token = self.peek()
            if token is None and closing is None:
                return tuple(entries)
            if token is not None and token.kind == "mark" and token.text == closing:
                return tuple(entries)
            entries.append(self.entry())

    def entry(self) -> JaasEntry:
        module = self.word("a login module class name")
        flag = self.word(f"the control flag of {module.text}")
        control_flag = flag.text.lower()
        if control_flag not in CONTROL_FLAGS:
            raise JaasConfigError(
                f"line {flag.line}: invalid control flag {flag.text!r} for {module.text} "
                f"(one of {', '.join(sorted(CONTROL_FLAGS))})"
            )
        options: dict[str, str] = {}
        while True:
            token = self.take(f"an option of {module.text} or ';'")
            if token.kind == "mark" and token.text == ";":
                return JaasEntry(module.text, control_flag, options)
            if token.kind != "word":
                raise JaasConfigError(
                    f"line {token.line}: expected an option name of {module.text} or ';', "
                    f"found {_shown(token)}"
                )
            self.mark("=")
            value = self.take(f"the value of option {token.text}")
            if value.kind == "mark":
                raise JaasConfigError(
                    f"line {value.line}: option {token.text} of {module.text} has no value"
                )
            options[token.text] = value.text


def _shown(token: _Token) -> str:
    # A quoted token is a value, which may be a secret: never echoed.
    return "a quoted value" if token.kind == "quoted" else repr(token.text)


def parse_jaas_file(text: str) -> Mapping[str, tuple[JaasEntry, ...]]:
    """The sections of a JAAS file, by name, each with its entries in order.

    >>> sections = parse_jaas_file('Client { a.B required user="k"; };')
    >>> sections["Client"][0].login_module, dict(sections["Client"][0].options)
    ('a.B', {'user': 'k'})
    """
    parser = _Parser(text)
    sections: dict[str, tuple[JaasEntry, ...]] = {}
    while not parser.at_end():
        name = parser.word("a section name")
        if name.text in sections:
            raise JaasConfigError(f"line {name.line}: section {name.text} is given twice")
        parser.mark("{")
        sections[name.text] = parser.entries("}")
        parser.mark("}")
        parser.mark(";")
    return MappingProxyType(sections)


def parse_jaas_entries(text: str) -> tuple[JaasEntry, ...]:
    """The entries of one section given alone, as Kafka's ``sasl.jaas.config`` value.

    >>> [e.login_module for e in parse_jaas_entries('x.Plain required a="1" b=2;')]
    ['x.Plain']
    """
    return _Parser(text).entries(None)
