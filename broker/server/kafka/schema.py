"""Kafka's message schemas, through kio (types generated from Kafka's own JSON schemas).

kio has one frozen dataclass per message and version (``kio.schema.produce.v9.request
.ProduceRequest``), a native reader and a writer for each. This module is the only place that
loads them, and it gives handlers one way to answer any version:

    response = build(response_class(api_key, version), {"throttle_time": 0, "topics": [...]})

``build`` takes the fields of the newest version as plain values (ints, strings, bytes, lists
of dicts for nested structures) and keeps those the target version has: a handler is written
once, against the newest schema, and older versions drop what they never carried. Fields
the values leave out get their schema default, else a zero value of their type. A key that is
a field of no version of the message is a mistake in the handler, not a field to drop: it
raises ``ValueError`` (a misspelt ``error_code`` would otherwise answer NONE).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import importlib
import pkgutil
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer

__all__ = [
    "Entity",
    "build",
    "read_entity",
    "request_class",
    "response_class",
    "write_entity",
]

Entity = Any  # a kio dataclass instance (kio types them by Protocol only)


@functools.cache
def request_class(api_key: int, version: int) -> type[Entity]:
    """The kio request type; raises kio's KioIndexError for an unknown key or version."""
    return load_request_schema(api_key, version)


@functools.cache
def response_class(api_key: int, version: int) -> type[Entity]:
    return load_response_schema(api_key, version)


def read_entity(cls: type[Entity], data: bytes | memoryview, offset: int) -> tuple[Entity, int]:
    """Decode one ``cls`` at ``offset``: the entity and the bytes it took."""
    value, size = entity_reader(cls)(data, offset)
    return value, size


class Writable(typing.Protocol):
    """Where kio writes: a binary file, or anything with its ``write``."""

    def write(self, data: Any, /) -> int: ...


def write_entity(cls: type[Entity], buffer: Writable, entity: Entity) -> None:
    # kio's writers only call ``write`` (its type says a file or a StreamWriter).
    entity_writer(cls)(typing.cast(typing.BinaryIO, buffer), entity)


def build(cls: type[Entity], values: Mapping[str, Any]) -> Entity:
    """An instance of the kio type ``cls`` from plain ``values`` (see the module docstring)."""
    return _builder(cls)(values)  # type: ignore[arg-type]  # kio's classes are hashable


@functools.cache
def _builder(cls: type[Entity]) -> Callable[[Mapping[str, Any]], Entity]:
    hints = typing.get_type_hints(cls)
    converters: list[tuple[str, Callable[[Any], Any], Callable[[], Any] | None]] = []
    for field in dataclasses.fields(cls):
        convert = _converter(field, hints[field.name])
        if field.default is not dataclasses.MISSING:
            default: Callable[[], Any] | None = None  # the dataclass fills it in
        elif field.default_factory is not dataclasses.MISSING:
            default = None
        else:
            zero = _zero(field, hints[field.name])
            default = lambda zero=zero: zero  # noqa: E731
        converters.append((field.name, convert, default))

    def make(values: Mapping[str, Any]) -> Entity:
        kwargs = {}
        taken = 0
        for name, convert, default in converters:
            if name in values:
                kwargs[name] = convert(values[name])
                taken += 1
            elif default is not None:
                kwargs[name] = default()
        if taken < len(values):  # some are not this version's: dropped if another version's
            _check_known(cls, values)
        return cls(**kwargs)

    return make


def _check_known(cls: type[Entity], values: Mapping[str, Any]) -> None:
    """Values this version of ``cls`` lacks must be fields of another version of it."""
    unknown = sorted(values.keys() - _fields_of_every_version(cls.__module__, cls.__qualname__))
    if unknown:
        raise ValueError(
            f"{cls.__qualname__} ({cls.__module__}) has no field {', '.join(map(repr, unknown))} "
            "in any version"
        )


@functools.cache
def _fields_of_every_version(module: str, name: str) -> frozenset[str]:
    """The field names of the kio class ``name`` (a message, or a struct inside one) of
    ``module`` in every version kio has of its message. kio lays a message out as
    ``kio.schema.<message>.v<N>.<module>``, each struct a class of the same name in every
    version's module."""
    package, version, leaf = module.rsplit(".", 2)
    paths = [module]
    if version.startswith("v"):
        paths = [
            f"{package}.{found.name}.{leaf}"
            for found in pkgutil.iter_modules(importlib.import_module(package).__path__)
            if found.ispkg and found.name.startswith("v")
        ]
    names: set[str] = set()
    for path in paths:
        try:
            other = importlib.import_module(path)
        except ImportError:  # a version without this module
            continue
        same = getattr(other, name, None)
        if isinstance(same, type) and dataclasses.is_dataclass(same):
            names.update(f.name for f in dataclasses.fields(same))
    return frozenset(names)


def _kafka_type(field: dataclasses.Field[Any]) -> str | None:
    kafka_type = field.metadata.get("kafka_type")
    return str(kafka_type) if kafka_type is not None else None


def _nested(hint: Any) -> tuple[type[Entity] | None, bool]:
    """(the kio entity type inside ``hint``, whether it is an array of them)."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin is tuple and args and isinstance(args[0], type) and dataclasses.is_dataclass(args[0]):
        return args[0], True
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            found, many = _nested(arg)
            if found is not None:
                return found, many
        return None, False
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint, False
    return None, False


def _converter(field: dataclasses.Field[Any], hint: Any) -> Callable[[Any], Any]:
    kafka_type = _kafka_type(field)
    if kafka_type == "error_code":
        return lambda v: KioErrorCode(int(v))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return lambda v: v if isinstance(v, datetime.timedelta) else _millis(v)
    if kafka_type == "datetime_i64":
        return lambda v: v if v is None or isinstance(v, datetime.datetime) else _datetime(v)
    if kafka_type == "uuid":
        return lambda v: (
            None if v in (None, "") else v if isinstance(v, uuid.UUID) else uuid.UUID(str(v))
        )
    if kafka_type == "records":
        # bytes or a memoryview of a segment read, as they are: kio's writer takes any buffer,
        # and a copy here would copy every fetched record once more.
        return lambda v: v
    nested, many = _nested(hint)
    if nested is not None:
        if many:
            return lambda v: None if v is None else tuple(_item(nested, item) for item in v)
        return lambda v: None if v is None else _item(nested, v)
    if _is_array(hint):  # an array of a primitive type: kio holds tuples
        return lambda v: None if v is None else tuple(v)
    return lambda v: v


def _is_array(hint: Any) -> bool:
    if typing.get_origin(hint) is tuple:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(typing.get_origin(arg) is tuple for arg in typing.get_args(hint))
    return False


def _item(cls: type[Entity], value: Any) -> Entity:
    return value if isinstance(value, cls) else build(cls, value)


def _zero(field: dataclasses.Field[Any], hint: Any) -> Any:
    kafka_type = _kafka_type(field) or ""
    if type(None) in typing.get_args(hint):
        return None
    if kafka_type == "error_code":
        return KioErrorCode.none
    if kafka_type.startswith("timedelta"):
        return datetime.timedelta(0)
    if kafka_type == "datetime_i64":
        return _datetime(0)
    if kafka_type in ("string",):
        return ""
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    if kafka_type == "uuid":
        return None
    if kafka_type == "float64":
        return 0.0
    nested, many = _nested(hint)
    if many or _is_array(hint):
        return ()
    if nested is not None:
        return build(nested, {})
    return 0


def _millis(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=int(value))


def _datetime(value: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(int(value) / 1000, tz=datetime.UTC)
