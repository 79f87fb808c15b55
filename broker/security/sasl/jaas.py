"""Kafka's ``sasl.jaas.config``: a JAAS login module entry as one property value.

    <login module class> <control flag> [<key>=<value> ...];

The control flag is ``required``, ``requisite``, ``sufficient`` or ``optional``; a value is a
bare word or a double-quoted string (a backslash escapes the next character); the entry ends
with ``;``. Kafka's brokers read the options they know: ``username`` and ``password`` (what the
broker logs in as, inter-broker) and, for PlainLoginModule, one ``user_<name>="<password>"``
per user the listener accepts.

    >>> [m] = parse_jaas_config(
    ...     'org.apache.kafka.common.security.plain.PlainLoginModule required '
    ...     'username="admin" password="admin-secret" user_alice="alice-secret";')
    >>> m.options["username"], dict(m.plain_users())
    ('admin', {'alice': 'alice-secret'})

Errors never quote the text: it holds passwords.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "PLAIN_LOGIN_MODULE",
    "SCRAM_LOGIN_MODULE",
    "JaasLoginModule",
    "parse_jaas_config",
    "parse_single_login_module",
]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True)
class JaasLoginModule:
    login_module: str
    control_flag: str
    options: Mapping[str, str]

    def plain_users(self) -> Mapping[str, str]:
        """The users PlainLoginModule accepts on a listener: ``user_<name>`` -> password."""
        return MappingProxyType(
            {k[len("user_") :]: v for k, v in self.options.items() if k.startswith("user_")}
        )

    def __repr__(self) -> str:
        # The options hold passwords: a repr in a log or a traceback shows only their keys.
        return (
            f"JaasLoginModule({self.login_module!r}, {self.control_flag!r}, "
            f"options={sorted(self.options)})"
        )


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is "word", "quoted" or the punctuation "=" / ";"."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "=;":
            tokens.append((ch, ch))
            i += 1
        elif ch == '"':
            out: list[str] = []
            i += 1
            while True:
                if i >= len(text):
                    raise ValueError("Invalid JAAS config: a quoted value is not closed")
                if text[i] == "\\" and i + 1 < len(text):
                    out.append(text[i + 1])
                    i += 2
                elif text[i] == '"':
                    i += 1
                    break
                else:
                    out.append(text[i])
                    i += 1
            tokens.append(("quoted", "".join(out)))
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in '=;"':
                i += 1
            tokens.append(("word", text[start:i]))
    return tokens


def parse_jaas_config(text: str) -> tuple[JaasLoginModule, ...]:
    """Every login module entry in ``text``; ValueError (without the text) when malformed."""
    tokens = _tokens(text)
    modules: list[JaasLoginModule] = []
    i = 0
    while i < len(tokens):
        kind, module = tokens[i]
        if kind != "word":
            raise ValueError("Invalid JAAS config: expected a login module class name")
        if i + 1 >= len(tokens) or tokens[i + 1][1] not in _CONTROL_FLAGS:
            raise ValueError(
                f"Invalid JAAS config: login module {module} must be followed by a control "
                f"flag ({', '.join(_CONTROL_FLAGS)})"
            )
        flag = tokens[i + 1][1]
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(tokens):
                raise ValueError(f"Invalid JAAS config: login module {module} does not end with ;")
            kind, key = tokens[i]
            if kind == ";":
                i += 1
                break
            if (
                kind != "word"
                or i + 2 >= len(tokens)
                or tokens[i + 1][0] != "="
                or tokens[i + 2][0] not in ("word", "quoted")
            ):
                raise ValueError(
                    f"Invalid JAAS config: login module {module} has an option that is not "
                    'key=value or key="value"'
                )
            options[key] = tokens[i + 2][1]
            i += 3
        modules.append(JaasLoginModule(module, flag, MappingProxyType(options)))
    if not modules:
        raise ValueError("Invalid JAAS config: no login module")
    return tuple(modules)


def parse_single_login_module(text: str, key: str) -> JaasLoginModule:
    """A ``sasl.jaas.config`` value, which Kafka requires to hold exactly one login module."""
    modules = parse_jaas_config(text)
    if len(modules) != 1:
        raise ValueError(
            f"JAAS config property {key} contains {len(modules)} login modules, should be 1 module"
        )
    return modules[0]
