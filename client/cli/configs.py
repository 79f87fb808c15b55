"""``minikafka configs``: Kafka's kafka-configs.sh for topics, brokers and users' SCRAM
credentials, its options and output.

    minikafka configs --bootstrap-server H:P --entity-type topics --entity-name T --describe [--all]
    minikafka configs --bootstrap-server H:P --entity-type topics --entity-name T --alter \\
        --add-config retention.ms=60000,cleanup.policy=[compact,delete] --delete-config flush.ms
    minikafka configs --bootstrap-server H:P --entity-type brokers --entity-name 1 --describe
    minikafka configs --bootstrap-server H:P --entity-type brokers --entity-default --alter \\
        --add-config log.retention.ms=3600000
    minikafka configs --bootstrap-server H:P --entity-type users --entity-name alice --alter \
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=secret],SCRAM-SHA-512=[password=s]'
    minikafka configs --bootstrap-server H:P --entity-type users --entity-name alice --alter \
        --delete-config SCRAM-SHA-512
    minikafka configs --bootstrap-server H:P --entity-type users [--entity-name alice] --describe

--describe prints, for each entity (every topic, or every live broker, without --entity-name)::

    Dynamic configs for topic T are:
      retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000, ...}

only the dynamic configs (a topic's overrides; a broker's own, or with --entity-default the
cluster-wide ones) unless --all is given ("All configs for ..."). --alter prints ``Completed
updating config for topic T.`` (``broker 1``, or ``default config for brokers in the
cluster``). Values holding a comma go in square brackets, as in Kafka. A failure prints
``Error while executing config command : <message>`` to stderr and exits 1.

Users: a SCRAM credential is ``<mechanism>=[iterations=<n>,password=<p>]`` (iterations default
to 4096, Kafka's minimum); the salt and the salted password are made here, and only they are
sent. --describe prints one line per user, mechanisms and iterations, never a secret::

    SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, ...

(a user without credentials: ``Error retrieving SCRAM credential configs for user-principal
'bob': ResourceNotFoundError: ...``). Quotas, Kafka's other user configs, are not supported.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TextIO

from minikafka.client.cli._admin_tool import add_command_config, kafka_error_message, run_admin_tool
from minikafka.proto.errors import ErrorCode, InvalidConfigError, KafkaError

if TYPE_CHECKING:  # client.admin loads grpc: only when the command runs (see minikafka.cli)
    from minikafka.client.admin import (
        ClientQuotaAlteration,
        ClientQuotaEntity,
        ClientQuotaFilterComponent,
        ClusterDescription,
        ConfigEntry,
        UserScramCredentialDeletion,
        UserScramCredentialsDescription,
        UserScramCredentialUpsertion,
    )

__all__ = ["add_arguments", "execute", "parse_add_config", "parse_scram_credentials", "run"]

_ENTITY_TYPES = ("topics", "brokers", "users", "clients")
# Client quota keys (Kafka's QuotaConfigs for users and client-ids) and the entity type the
# broker's AdminClient names for each --entity-type.
_QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")
_QUOTA_ENTITY_TYPES = {"users": "user", "clients": "client-id"}
_SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_DEFAULT_ITERATIONS = 4096  # Kafka's, when a credential names none
_SOURCE_NAMES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
}


class ConfigAdmin(Protocol):
    """What this tool needs of AdminClient (tests pass a fake)."""

    def list_topics(self, *, include_internal: bool = ...) -> list[str]: ...
    def describe_cluster(self) -> ClusterDescription: ...
    def describe_topic_configs(self, topic: str) -> dict[str, ConfigEntry]: ...
    def describe_broker_configs(self, broker_id: int | None = ...) -> dict[str, ConfigEntry]: ...
    def incremental_alter_configs(
        self, topic: str, operations: Mapping[str, str | None]
    ) -> None: ...
    def alter_broker_configs(
        self, broker_id: int | None, operations: Mapping[str, str | None]
    ) -> None: ...
    def describe_user_scram_credentials(
        self, users: Sequence[str] | None = ...
    ) -> dict[str, UserScramCredentialsDescription | KafkaError]: ...
    def alter_user_scram_credentials(
        self, alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion]
    ) -> dict[str, KafkaError | None]: ...
    def describe_client_quotas(
        self, components: Sequence[ClientQuotaFilterComponent] = ..., *, strict: bool = ...
    ) -> dict[ClientQuotaEntity, dict[str, float]]: ...
    def alter_client_quotas(
        self, alterations: Iterable[ClientQuotaAlteration]
    ) -> dict[ClientQuotaEntity, KafkaError | None]: ...


class CommandError(Exception):
    """A failure to report as ``Error while executing config command : <message>``."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="brokers to connect to"
    )
    add_command_config(parser)
    # Given twice for a user's client-id, as kafka-configs.sh: --entity-type users
    # --entity-name alice --entity-type clients --entity-name app. The first pair is also
    # entity_type / entity_name / entity_default; every pair, in order, is ``entities``.
    parser.add_argument(
        "--entity-type",
        choices=_ENTITY_TYPES,
        action=_EntityType,
        help="topics, brokers, users or clients",
    )
    parser.add_argument(
        "--entity-name", action=_EntityName, help="topic name, broker id, user or client-id"
    )
    parser.add_argument(
        "--entity-default",
        action=_EntityName,
        nargs=0,
        help="the default (brokers: cluster-wide; users, clients: of client quotas)",
    )
    parser.add_argument("--describe", action="store_true", help="list configs of the entity")
    parser.add_argument("--alter", action="store_true", help="alter configs of the entity")
    parser.add_argument("--all", action="store_true", help="with --describe: every config")
    parser.add_argument(
        "--add-config",
        metavar="K=V,K=V",
        help="configs to set; a value with a comma goes in square brackets: k=[a,b]",
    )
    parser.add_argument("--delete-config", metavar="K,K", help="configs to remove")


_DEFAULT = None  # an entity's name in ``entities`` when --entity-default stands for it


class _EntityType(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        types = list(getattr(namespace, "entity_types", None) or [])
        namespace.entity_types = [*types, str(values)]
        if namespace.entity_type is None:
            namespace.entity_type = str(values)


class _EntityName(argparse.Action):
    """--entity-name X, or --entity-default (no value): the next entity's name."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        name = None if option_string == "--entity-default" else str(values)
        names = list(getattr(namespace, "entity_names", None) or [])
        namespace.entity_names = [*names, name]
        if len(names) == 0:
            if name is None:
                namespace.entity_default = True
            else:
                namespace.entity_name = name


def entities(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """Each --entity-type with its --entity-name (None: --entity-default), in order."""
    types = list(getattr(args, "entity_types", None) or [])
    names = list(getattr(args, "entity_names", None) or [])
    return list(zip(types, names, strict=False))


def check_args(args: argparse.Namespace) -> str | None:
    """A one-line reason the options do not fit together, or None."""
    if args.entity_type is None:
        return "--entity-type must be specified"
    if args.entity_default is None:
        args.entity_default = False
    types = list(getattr(args, "entity_types", None) or [])
    if len(types) > 1:
        if types != ["users", "clients"]:
            return (
                "Only one entity type is valid, except for --entity-type users with "
                "--entity-type clients (a user's client-id)"
            )
        if len(list(getattr(args, "entity_names", None) or [])) != 2 and args.alter:
            return "an entity name must be specified for each entity type with --alter"
    if args.describe == args.alter:
        return "Command must include exactly one action: --describe, --alter"
    if args.entity_name is not None and args.entity_default:
        return "--entity-name and --entity-default cannot be used together"
    if args.entity_type == "topics" and args.entity_default:
        return "--entity-default is not valid with --entity-type topics"
    if args.entity_type in ("users", "clients") and args.all:
        return f"--all is not valid with --entity-type {args.entity_type}"
    if args.alter:
        if args.entity_name is None and not args.entity_default:
            if args.entity_type in ("brokers", "users", "clients"):
                return (
                    f"an entity name must be specified with --alter of {args.entity_type} "
                    "(--entity-name or --entity-default)"
                )
            return f"an entity name must be specified with --alter of {args.entity_type}"
        if not args.add_config and not args.delete_config:
            return "--alter needs --add-config or --delete-config"
    elif args.add_config or args.delete_config:
        return "--add-config and --delete-config are only valid with --alter"
    if args.all and not args.describe:
        return "--all is only valid with --describe"
    if args.entity_type == "brokers" and args.entity_name is not None:
        try:
            if int(args.entity_name) < 0:
                raise ValueError
        except ValueError:
            return (
                "The entity name for brokers must be a valid integer broker id, but it is: "
                f"{args.entity_name}"
            )
    return None


def parse_add_config(text: str) -> dict[str, str]:
    """``k=v,k=[a,b]`` -> ``{"k": "v", "k": "a,b"}``: commas split entries except inside
    square brackets, which are dropped (Kafka's --add-config rule)."""
    entries: list[str] = []
    depth, current = 0, list[str]()
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            entries.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise InvalidConfigError(f"Invalid config: unbalanced square brackets in {text!r}")
    entries.append("".join(current))
    configs: dict[str, str] = {}
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise InvalidConfigError(
                f"Invalid entity config: all configs to be added must be in the format "
                f'"key=val": {entry}'
            )
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[key.strip()] = value
    return configs


def _delete_keys(text: str | None) -> list[str]:
    return [k.strip() for k in (text or "").split(",") if k.strip()]


def parse_scram_credentials(configs: Mapping[str, str]) -> dict[str, tuple[int, str]]:
    """--add-config of a user, as parse_add_config gives it, -> ``{mechanism: (iterations,
    password)}``: ``{"SCRAM-SHA-256": "iterations=8192,password=p"}`` -> ``{"SCRAM-SHA-256":
    (8192, "p")}``. CommandError for anything else (messages never quote a password)."""
    out: dict[str, tuple[int, str]] = {}
    for mechanism, text in configs.items():
        if mechanism not in _SCRAM_MECHANISMS:
            raise CommandError(
                f"Invalid config {mechanism} for users: only {', '.join(_SCRAM_MECHANISMS)} "
                f"credentials and the quotas {', '.join(_QUOTA_KEYS)} are supported"
            )
        fields: dict[str, str] = {}
        for item in text.split(","):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in ("iterations", "password"):
                raise CommandError(
                    f"Invalid {mechanism} credential: expected "
                    f"{mechanism}=[iterations=<n>,password=<password>]"
                )
            fields[key] = value
        password = fields.get("password", "")
        if not password:
            raise CommandError(f"Invalid {mechanism} credential: a password must be given")
        raw_iterations = fields.get("iterations", str(_DEFAULT_ITERATIONS)).strip()
        if not raw_iterations.isdigit():
            raise CommandError(
                f"Invalid {mechanism} credential: iterations must be a number, not "
                f"{raw_iterations!r}"
            )
        out[mechanism] = (int(raw_iterations), password)
    return out


def execute(args: argparse.Namespace, admin: ConfigAdmin, out: TextIO, err: TextIO) -> int:
    try:
        if args.entity_type == "clients" or len(entities(args)) > 1:
            if args.alter:
                _alter_quotas(admin, args, _quota_keys(args), out)
            else:
                _describe_quotas(admin, args, out)
        elif args.entity_type == "users":
            if args.alter:
                quota_add, quota_delete = _quota_keys(args)
                scram = _has_scram_keys(args)
                if quota_add or quota_delete:
                    # one "Completed" line, as kafka-configs.sh, after both parts
                    _alter_quotas(admin, args, (quota_add, quota_delete), None if scram else out)
                if scram:
                    _alter_user(admin, args, out)
            else:
                _describe_quotas(admin, args, out)
                _describe_users(admin, args, out)
        elif args.alter:
            _alter(admin, args, out)
        else:
            _describe(admin, args, out)
    except (KafkaError, CommandError) as exc:
        print(f"Error while executing config command : {_message(exc)}", file=err)
        return 1
    return 0


def _describe(admin: ConfigAdmin, args: argparse.Namespace, out: TextIO) -> None:
    if args.entity_type == "topics":
        names: Sequence[str] = (
            [args.entity_name] if args.entity_name is not None else admin.list_topics()
        )
        for topic in names:
            entries = admin.describe_topic_configs(topic)
            shown = _filter(entries.values(), args.all, wanted_source=1)
            _print_entity(out, f"topic {topic}", args.all, shown)
        return
    if args.entity_default:
        entries = admin.describe_broker_configs(None)
        print("Default configs for brokers in the cluster are:", file=out)
        _print_entries(out, _filter(entries.values(), True, wanted_source=3))
        return
    brokers = (
        [int(args.entity_name)]
        if args.entity_name is not None
        else sorted(node.id for node in admin.describe_cluster().brokers)
    )
    for broker_id in brokers:
        entries = admin.describe_broker_configs(broker_id)
        shown = _filter(entries.values(), args.all, wanted_source=2)
        _print_entity(out, f"broker {broker_id}", args.all, shown)


def _filter(
    entries: Iterable[ConfigEntry], show_all: bool, wanted_source: int
) -> list[ConfigEntry]:
    return [e for e in entries if show_all or e.source == wanted_source]


def _print_entity(out: TextIO, what: str, show_all: bool, entries: list[ConfigEntry]) -> None:
    print(f"{'All' if show_all else 'Dynamic'} configs for {what} are:", file=out)
    _print_entries(out, entries)


def _print_entries(out: TextIO, entries: list[ConfigEntry]) -> None:
    for entry in sorted(entries, key=lambda e: e.name):
        synonyms = ", ".join(
            f"{_SOURCE_NAMES.get(s.source, str(s.source))}:{s.name}={_text(s.value)}"
            for s in entry.synonyms
        )
        print(
            f"  {entry.name}={_text(entry.value)} "
            f"sensitive={'true' if entry.is_sensitive else 'false'} synonyms={{{synonyms}}}",
            file=out,
        )


def _text(value: str | None) -> str:
    return "null" if value is None else value


def _alter(admin: ConfigAdmin, args: argparse.Namespace, out: TextIO) -> None:
    to_add = parse_add_config(args.add_config or "")
    to_delete = _delete_keys(args.delete_config)
    both = sorted(set(to_add) & set(to_delete))
    if both:
        raise CommandError(f"Invalid alter config: {', '.join(both)} both added and deleted")
    operations: dict[str, str | None] = {**to_add, **dict.fromkeys(to_delete)}
    if args.entity_type == "topics":
        topic = args.entity_name
        if to_delete:
            current = admin.describe_topic_configs(topic)
            missing = [k for k in to_delete if k not in current or current[k].source != 1]
            if missing:
                raise CommandError(f"Invalid config(s): {','.join(missing)}")
        admin.incremental_alter_configs(topic, operations)
        print(f"Completed updating config for topic {topic}.", file=out)
        return
    broker_id = None if args.entity_default else int(args.entity_name)
    if to_delete:
        source = 3 if broker_id is None else 2
        current = admin.describe_broker_configs(broker_id)
        missing = [k for k in to_delete if k not in current or current[k].source != source]
        if missing:
            raise CommandError(f"Invalid config(s): {','.join(missing)}")
    admin.alter_broker_configs(broker_id, operations)
    if broker_id is None:
        print("Completed updating default config for brokers in the cluster.", file=out)
    else:
        print(f"Completed updating config for broker {broker_id}.", file=out)


def _describe_users(admin: ConfigAdmin, args: argparse.Namespace, out: TextIO) -> None:
    named = [args.entity_name] if args.entity_name is not None else None
    for user, description in admin.describe_user_scram_credentials(named).items():
        if isinstance(description, KafkaError):
            print(
                f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                f"{type(description).__name__}: {description.message}",
                file=out,
            )
            continue
        infos = ", ".join(
            f"{info.mechanism}=iterations={info.iterations}"
            for info in description.credential_infos
        )
        print(f"SCRAM credential configs for user-principal '{user}' are {infos}", file=out)


def _alter_user(admin: ConfigAdmin, args: argparse.Namespace, out: TextIO) -> None:
    # here, not at the top: client.admin loads grpc, only when the command runs
    from minikafka.client.admin import (
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    user = args.entity_name
    to_add = parse_scram_credentials(
        {k: v for k, v in parse_add_config(args.add_config or "").items() if k not in _QUOTA_KEYS}
    )
    to_delete = [k for k in _delete_keys(args.delete_config) if k not in _QUOTA_KEYS]
    both = sorted(set(to_add) & set(to_delete))
    if both:
        raise CommandError(f"Invalid alter config: {', '.join(both)} both added and deleted")
    unknown = [m for m in to_delete if m not in _SCRAM_MECHANISMS]
    if unknown:
        raise CommandError(
            f"Invalid config {unknown[0]} for users: only "
            f"{', '.join(_SCRAM_MECHANISMS)} credentials and the quotas "
            f"{', '.join(_QUOTA_KEYS)} are supported"
        )
    alterations: list[UserScramCredentialUpsertion | UserScramCredentialDeletion] = [
        UserScramCredentialUpsertion(user, mechanism, password, iterations=iterations)
        for mechanism, (iterations, password) in to_add.items()
    ]
    alterations += [UserScramCredentialDeletion(user, m) for m in to_delete]
    for error in admin.alter_user_scram_credentials(alterations).values():
        if error is not None:
            raise error
    print(f"Completed updating config for user {user}.", file=out)


def _has_scram_keys(args: argparse.Namespace) -> bool:
    added = parse_add_config(args.add_config or "")
    deleted = _delete_keys(args.delete_config)
    return any(k not in _QUOTA_KEYS for k in [*added, *deleted])


def _quota_keys(args: argparse.Namespace) -> tuple[dict[str, float], list[str]]:
    """--add-config / --delete-config's quota keys: ``({key: value}, [key])``; for clients
    (or a user's client-id) every key must be one. CommandError for a value that is no
    number, as kafka-configs.sh refuses it before sending."""
    added = parse_add_config(args.add_config or "")
    deleted = _delete_keys(args.delete_config)
    only_quotas = args.entity_type == "clients" or len(entities(args)) > 1
    for key in [*added, *deleted]:
        if key not in _QUOTA_KEYS and only_quotas:
            raise CommandError(
                f"Invalid config {key} for {args.entity_type}: the quotas "
                f"{', '.join(_QUOTA_KEYS)} are supported"
            )
    values: dict[str, float] = {}
    for key, text in added.items():
        if key not in _QUOTA_KEYS:
            continue
        try:
            values[key] = float(text)
        except ValueError:
            raise CommandError(f"Invalid value {text!r} for {key}: a number is expected") from None
    both = sorted(set(values) & set(deleted))
    if both:
        raise CommandError(f"Invalid alter config: {', '.join(both)} both added and deleted")
    return values, [k for k in deleted if k in _QUOTA_KEYS]


def _quota_entity_parts(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    pairs = entities(args)
    if not pairs:  # --entity-type without a name (describe every entity of the type)
        return []
    return [(_QUOTA_ENTITY_TYPES[t], name) for t, name in pairs]


def _describe_entity(entity: ClientQuotaEntity) -> str:
    """Kafka's words: ``user-principal 'alice', client-id 'app'``, ``the default client-id``."""
    words = {"user": "user-principal", "client-id": "client-id"}
    parts = []
    for entity_type, name in entity.parts:
        word = words.get(entity_type, entity_type)
        parts.append(f"the default {word}" if name is None else f"{word} '{name}'")
    return ", ".join(parts)


def _describe_quotas(admin: ConfigAdmin, args: argparse.Namespace, out: TextIO) -> None:
    from minikafka.client.admin import ClientQuotaFilterComponent

    parts = _quota_entity_parts(args)
    if parts:
        components = [
            ClientQuotaFilterComponent.default(t)
            if name is None
            else ClientQuotaFilterComponent.exact(t, name)
            for t, name in parts
        ]
        strict = True
    else:
        components = [ClientQuotaFilterComponent.any(_QUOTA_ENTITY_TYPES[args.entity_type])]
        strict = True
    for entity, values in admin.describe_client_quotas(components, strict=strict).items():
        quotas = ", ".join(f"{k}={v!r}" for k, v in sorted(values.items()))
        print(f"Quota configs for {_describe_entity(entity)} are {quotas}", file=out)


def _alter_quotas(
    admin: ConfigAdmin,
    args: argparse.Namespace,
    keys: tuple[dict[str, float], list[str]],
    out: TextIO | None,
) -> None:
    """``out`` None: nothing printed (the SCRAM part of the same command prints)."""
    from minikafka.client.admin import ClientQuotaAlteration, ClientQuotaEntity

    values, deleted = keys
    parts = _quota_entity_parts(args)
    ops: dict[str, float | None] = {**values, **dict.fromkeys(deleted)}
    entity = ClientQuotaEntity(tuple(parts))
    for error in admin.alter_client_quotas([ClientQuotaAlteration(entity, ops)]).values():
        if error is not None:
            raise error
    if out is None:
        return
    (entity_type, name), *rest = entities(args)
    if rest or name is not None:
        names = ", ".join(
            f"{t.removesuffix('s')} {'<default>' if n is None else n}" for t, n in entities(args)
        )
        print(f"Completed updating config for {names}.", file=out)
    else:
        print(f"Completed updating default config for {entity_type} in the cluster.", file=out)


def _message(error: Exception) -> str:
    if isinstance(error, KafkaError):
        if error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and not error.message:
            return "The topic does not exist."
        return kafka_error_message(error)
    return str(error)


def run(args: argparse.Namespace) -> int:
    return run_admin_tool(
        args,
        execute,
        check_args=check_args,
        error_line=lambda exc: f"Error while executing config command : {_message(exc)}",
    )
