"""Kafka-style ``key=value`` options of the console and perf tools, turned into client kwargs.

    parse_key_values(["acks=all", "linger.ms=5"])        # {"acks": "all", "linger.ms": "5"}
    client_kwargs(Producer, {"linger.ms": "5"}, warn)   # {"linger_ms": 5}

Kafka's config names map to the client's keyword arguments by replacing ``.`` with ``_``
(``linger.ms`` -> ``linger_ms``); the value is converted to the type of the argument's default
(int, float, bool) or kept as text. An unknown name is reported the way Kafka's clients log it
(``The configuration 'x' was supplied but isn't a known config.``) and skipped.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import javaproperties

from minikafka.client._security import ClientSecurity

__all__ = ["ConfigError", "client_kwargs", "parse_key_values", "read_properties_file"]

# Accepted by every tool and handled by the tool itself (e.g. --bootstrap-server wins).
_HANDLED_ELSEWHERE = frozenset({"bootstrap.servers"})


class ConfigError(ValueError):
    """A ``key=value`` item or a value that does not parse; the message is the user's."""


def _invalid_property(item: str) -> Exception:
    return ConfigError(f"Invalid property: {item!r} (expected key=value)")


def parse_key_values(
    items: Iterable[str], invalid: Callable[[str], Exception] = _invalid_property
) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; the first ``=`` splits, the value may be empty. An
    item without ``=`` or without a key raises ``invalid(item)``: each tool words it as its
    Kafka counterpart does."""
    parsed: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise invalid(item)
        parsed[key.strip()] = value.strip()
    return parsed


def read_properties_file(path: str) -> dict[str, str]:
    """A Java properties file (``--producer.config``, ``--consumer.config``), read with
    javaproperties by ``java.util.Properties.load``'s rules, as Kafka's tools read it."""
    try:
        with open(path, encoding="utf-8") as file:
            parsed = javaproperties.load(file)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:  # a malformed \uXXXX escape
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return {key.strip(): value.strip() for key, value in parsed.items()}


def client_kwargs(
    client: Callable[..., Any], config: Mapping[str, str], warn: Callable[[str], None]
) -> dict[str, Any]:
    """Keyword arguments of ``client`` (e.g. Producer) for Kafka-named ``config`` items; the
    security keys (security.protocol, ssl.*) go together into its ``security`` argument."""
    parameters = inspect.signature(client).parameters
    kwargs: dict[str, Any] = {}
    security = {k: v for k, v in config.items() if k in ClientSecurity.KEYS}
    if security and "security" in parameters:
        kwargs["security"] = security
    for name, text in config.items():
        if name in _HANDLED_ELSEWHERE or (name in security and "security" in parameters):
            continue
        parameter = parameters.get(name.replace(".", "_").replace("-", "_"))
        if parameter is None or parameter.kind not in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            warn(f"The configuration '{name}' was supplied but isn't a known config.")
            continue
        kwargs[parameter.name] = _convert(name, text, parameter)
    return kwargs


def _convert(name: str, text: str, parameter: inspect.Parameter) -> Any:
    default = parameter.default
    annotation = str(parameter.annotation)
    try:
        if isinstance(default, bool) or (default is None and "bool" in annotation):
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if isinstance(default, int) and "str" not in annotation:
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {name}") from None
    return text
