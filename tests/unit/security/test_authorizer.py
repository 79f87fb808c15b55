"""AclAuthorizer: Kafka's matching rules, one mechanism per test (Kafka's AclAuthorizerTest)."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from minikafka.broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from minikafka.broker.security.authorizer import AclAuthorizer, parse_super_users
from minikafka.broker.security.principal import KafkaPrincipal, Session
from minikafka.proto.acl import (
    ANY_ENTRY,
    AccessControlEntryFilter,
    AclBindingFilter,
    ResourcePatternFilter,
)

Op = AclOperation
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY
TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP

ALICE = Session(KafkaPrincipal("User", "alice"), "10.0.0.1")
BOB = Session(KafkaPrincipal("User", "bob"), "10.0.0.2")


def literal(name: str, rtype: ResourceType = TOPIC) -> ResourcePattern:
    return ResourcePattern(rtype, name, PatternType.LITERAL)


def prefixed(name: str, rtype: ResourceType = TOPIC) -> ResourcePattern:
    return ResourcePattern(rtype, name, PatternType.PREFIXED)


def ace(
    principal: str = "User:alice",
    op: AclOperation = Op.READ,
    perm: AclPermissionType = ALLOW,
    host: str = "*",
) -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, perm)


def allowed(
    authorizer: AclAuthorizer,
    session: Session,
    op: AclOperation,
    name: str,
    rtype: ResourceType = TOPIC,
) -> bool:
    return authorizer.authorize(session, [Action(op, rtype, name)])[0]


def test_no_acls_denies_by_default_and_allows_with_allow_everyone() -> None:
    assert not allowed(AclAuthorizer(), ALICE, Op.READ, "orders")
    assert allowed(AclAuthorizer(allow_everyone_if_no_acl_found=True), ALICE, Op.READ, "orders")


def test_allow_everyone_does_not_apply_once_a_resource_has_acls() -> None:
    authorizer = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    authorizer.set_acls(literal("orders"), [ace("User:bob")])
    assert not allowed(authorizer, ALICE, Op.READ, "orders")
    assert allowed(authorizer, ALICE, Op.READ, "other")


def test_literal_allow_matches_only_its_name_principal_and_operation() -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("orders"), [ace()])
    assert allowed(authorizer, ALICE, Op.READ, "orders")
    assert not allowed(authorizer, ALICE, Op.WRITE, "orders")
    assert not allowed(authorizer, BOB, Op.READ, "orders")
    assert not allowed(authorizer, ALICE, Op.READ, "orders2")
    assert not allowed(authorizer, ALICE, Op.READ, "orders", GROUP)


def test_wildcard_resource_principal_and_host() -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("*"), [ace("User:*", Op.WRITE)])
    assert allowed(authorizer, ALICE, Op.WRITE, "anything")
    assert allowed(authorizer, BOB, Op.WRITE, "orders")
    assert not allowed(authorizer, BOB, Op.READ, "orders")


def test_host_must_match_unless_wildcard() -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("orders"), [ace(host="10.0.0.1")])
    assert allowed(authorizer, ALICE, Op.READ, "orders")
    assert not allowed(authorizer, Session(ALICE.principal, "10.0.0.9"), Op.READ, "orders")


def test_prefixed_patterns_apply_to_names_they_start() -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(prefixed("sales-"), [ace()])
    authorizer.set_acls(prefixed("x"), [ace(op=Op.WRITE)])
    assert allowed(authorizer, ALICE, Op.READ, "sales-eu")
    assert allowed(authorizer, ALICE, Op.READ, "sales-")
    assert not allowed(authorizer, ALICE, Op.READ, "sales")
    assert not allowed(authorizer, ALICE, Op.READ, "presales-eu")
    assert allowed(authorizer, ALICE, Op.WRITE, "xyz")
    # Removing the last pattern of a length forgets the length.
    authorizer.set_acls(prefixed("sales-"), [])
    assert not allowed(authorizer, ALICE, Op.READ, "sales-eu")
    assert allowed(authorizer, ALICE, Op.WRITE, "xyz")


@pytest.mark.parametrize(
    "deny",
    [
        (literal("orders"), ace(perm=DENY)),
        (literal("*"), ace(perm=DENY)),
        (prefixed("ord"), ace(perm=DENY)),
        (literal("orders"), ace("User:*", perm=DENY)),
        (literal("orders"), ace(op=Op.ALL, perm=DENY)),
        (literal("orders"), ace(perm=DENY, host="10.0.0.1")),
    ],
    ids=["literal", "wildcard-resource", "prefixed", "wildcard-principal", "all-ops", "host"],
)
def test_a_matching_deny_beats_every_allow(
    deny: tuple[ResourcePattern, AccessControlEntry],
) -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("orders"), [ace(), ace(op=Op.ALL)])
    authorizer.set_acls(literal("*"), [ace("User:*")])
    assert allowed(authorizer, ALICE, Op.READ, "orders")
    pattern, entry = deny
    authorizer.set_acls(pattern, authorizer.acls_of(pattern) | {entry})
    assert not allowed(authorizer, ALICE, Op.READ, "orders")


def test_a_deny_for_another_host_principal_or_operation_does_not_deny() -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(
        literal("orders"),
        [
            ace(),
            ace(perm=DENY, host="10.9.9.9"),
            ace("User:bob", perm=DENY),
            ace(op=Op.WRITE, perm=DENY),
        ],
    )
    assert allowed(authorizer, ALICE, Op.READ, "orders")


@pytest.mark.parametrize("granting", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.ALL])
def test_describe_is_implied_by_read_write_delete_alter(granting: AclOperation) -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("orders"), [ace(op=granting)])
    assert allowed(authorizer, ALICE, Op.DESCRIBE, "orders")


@pytest.mark.parametrize("granting", [Op.CREATE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS])
def test_describe_is_not_implied_by_others(granting: AclOperation) -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("orders"), [ace(op=granting)])
    assert not allowed(authorizer, ALICE, Op.DESCRIBE, "orders")


def test_describe_configs_implied_by_alter_configs_only() -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("orders"), [ace(op=Op.ALTER_CONFIGS)])
    assert allowed(authorizer, ALICE, Op.DESCRIBE_CONFIGS, "orders")
    authorizer.set_acls(literal("orders"), [ace(op=Op.ALTER)])
    assert not allowed(authorizer, ALICE, Op.DESCRIBE_CONFIGS, "orders")


def test_implied_operations_do_not_extend_to_denials() -> None:
    # A DENY of Read does not deny Describe (Kafka checks DENY for the operation asked only).
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("orders"), [ace(op=Op.DESCRIBE), ace(op=Op.READ, perm=DENY)])
    assert allowed(authorizer, ALICE, Op.DESCRIBE, "orders")
    assert not allowed(authorizer, ALICE, Op.READ, "orders")


def test_all_implies_every_operation() -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("orders"), [ace(op=Op.ALL)])
    for op in (Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.ALTER_CONFIGS):
        assert allowed(authorizer, ALICE, op, "orders")


def test_super_users_are_allowed_whatever_the_acls() -> None:
    authorizer = AclAuthorizer(parse_super_users("User:admin; User:alice"))
    authorizer.set_acls(literal("orders"), [ace(perm=DENY, op=Op.ALL)])
    assert allowed(authorizer, ALICE, Op.WRITE, "orders")
    assert not allowed(authorizer, BOB, Op.WRITE, "orders")
    assert authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)


def test_parse_super_users_rejects_a_bad_principal() -> None:
    assert parse_super_users("") == frozenset()
    with pytest.raises(ValueError, match="alice"):
        parse_super_users("User:admin;alice")


def test_one_answer_per_action_in_order() -> None:
    authorizer = AclAuthorizer()
    authorizer.set_acls(literal("a"), [ace()])
    actions = [
        Action(Op.READ, TOPIC, "a"),
        Action(Op.READ, TOPIC, "b"),
        Action(Op.READ, TOPIC, "a"),
    ]
    assert authorizer.authorize(ALICE, actions) == [True, False, True]


def test_denials_are_audited_as_the_action_says() -> None:
    authorizer = AclAuthorizer()
    with capture_logs() as logs:
        authorizer.authorize(ALICE, [Action(Op.READ, TOPIC, "orders")])
        authorizer.authorize(ALICE, [Action(Op.READ, TOPIC, "quiet", log_if_denied=False)])
    assert logs == [
        {
            "event": "authorization_denied",
            "log_level": "info",
            "principal": "User:alice",
            "operation": "Read",
            "host": "10.0.0.1",
            "resource": "Topic:LITERAL:orders",
        }
    ]


def test_allowed_is_audited_at_debug_when_asked() -> None:
    authorizer = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    with capture_logs() as logs:
        authorizer.authorize(
            ALICE, [Action(Op.WRITE, ResourceType.TRANSACTIONAL_ID, "tx", log_if_allowed=True)]
        )
        authorizer.authorize(ALICE, [Action(Op.WRITE, TOPIC, "t")])
    assert [(e["log_level"], e["resource"]) for e in logs] == [
        ("debug", "TransactionalId:LITERAL:tx")
    ]


class TestAuthorizeByResourceType:
    """KIP-679: is the operation allowed on at least one resource of the type?"""

    def test_no_acls(self) -> None:
        assert not AclAuthorizer().authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)
        everyone = AclAuthorizer(allow_everyone_if_no_acl_found=True)
        assert everyone.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)

    def test_one_literal_or_prefixed_allow_is_enough(self) -> None:
        authorizer = AclAuthorizer()
        authorizer.set_acls(literal("orders"), [ace(op=Op.WRITE)])
        assert authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)
        assert not authorizer.authorize_by_resource_type(BOB, Op.WRITE, TOPIC)
        assert not authorizer.authorize_by_resource_type(ALICE, Op.READ, TOPIC)
        assert not authorizer.authorize_by_resource_type(ALICE, Op.WRITE, GROUP)
        authorizer.set_acls(literal("orders"), [])
        authorizer.set_acls(prefixed("o"), [ace("User:*", op=Op.ALL, host="10.0.0.2")])
        assert authorizer.authorize_by_resource_type(BOB, Op.WRITE, TOPIC)
        assert not authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)

    def test_implied_operations_do_not_count(self) -> None:
        authorizer = AclAuthorizer()
        authorizer.set_acls(literal("orders"), [ace(op=Op.WRITE)])
        assert not authorizer.authorize_by_resource_type(ALICE, Op.DESCRIBE, TOPIC)

    def test_literal_deny_of_the_same_name_cancels_the_allow(self) -> None:
        authorizer = AclAuthorizer()
        authorizer.set_acls(literal("orders"), [ace(op=Op.WRITE), ace(op=Op.WRITE, perm=DENY)])
        assert not authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)
        authorizer.set_acls(literal("other"), [ace(op=Op.WRITE)])
        assert authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)

    def test_prefixed_deny_covers_allows_it_starts(self) -> None:
        authorizer = AclAuthorizer()
        authorizer.set_acls(literal("orders"), [ace(op=Op.WRITE)])
        authorizer.set_acls(prefixed("sales"), [ace(op=Op.WRITE)])
        authorizer.set_acls(prefixed("o"), [ace("User:*", op=Op.WRITE, perm=DENY)])
        assert authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)
        authorizer.set_acls(prefixed("s"), [ace(op=Op.ALL, perm=DENY)])
        assert not authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)

    def test_wildcard_deny_refuses_even_allow_everyone(self) -> None:
        authorizer = AclAuthorizer(allow_everyone_if_no_acl_found=True)
        authorizer.set_acls(literal("*"), [ace(op=Op.WRITE, perm=DENY)])
        authorizer.set_acls(literal("orders"), [ace(op=Op.WRITE)])
        assert not authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)

    def test_wildcard_allow_survives_named_denies(self) -> None:
        authorizer = AclAuthorizer()
        authorizer.set_acls(literal("*"), [ace(op=Op.WRITE)])
        authorizer.set_acls(literal("orders"), [ace(op=Op.WRITE, perm=DENY)])
        assert authorizer.authorize_by_resource_type(ALICE, Op.WRITE, TOPIC)

    def test_rejects_filter_values(self) -> None:
        with pytest.raises(ValueError):
            AclAuthorizer().authorize_by_resource_type(ALICE, Op.ANY, TOPIC)
        with pytest.raises(ValueError):
            AclAuthorizer().authorize_by_resource_type(ALICE, Op.READ, ResourceType.ANY)


class TestAclsFilter:
    def setup_method(self) -> None:
        self.authorizer = AclAuthorizer()
        self.authorizer.set_acls(literal("orders"), [ace(), ace("User:bob", Op.WRITE, DENY)])
        self.authorizer.set_acls(literal("*"), [ace("User:*", Op.DESCRIBE)])
        self.authorizer.set_acls(prefixed("ord"), [ace(op=Op.CREATE)])
        self.authorizer.set_acls(literal("orders", GROUP), [ace()])

    def names(self, binding_filter: AclBindingFilter) -> list[tuple[str, str, str]]:
        return [
            (b.pattern.name, b.pattern.pattern_type.name, b.entry.principal)
            for b in self.authorizer.acls(binding_filter)
        ]

    def test_any(self) -> None:
        found = self.authorizer.acls(
            AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY))
        )
        assert len(found) == 5
        assert AclBinding(literal("orders", GROUP), ace()) in found

    def test_literal_name(self) -> None:
        pf = ResourcePatternFilter(TOPIC, "orders", PatternType.LITERAL)
        assert self.names(AclBindingFilter(pf)) == [
            ("orders", "LITERAL", "User:alice"),
            ("orders", "LITERAL", "User:bob"),
        ]

    def test_any_pattern_type_is_exact_name(self) -> None:
        pf = ResourcePatternFilter(TOPIC, "ord", PatternType.ANY)
        assert self.names(AclBindingFilter(pf)) == [("ord", "PREFIXED", "User:alice")]

    def test_match_gathers_what_would_apply(self) -> None:
        pf = ResourcePatternFilter(TOPIC, "orders", PatternType.MATCH)
        assert sorted(self.names(AclBindingFilter(pf))) == [
            ("*", "LITERAL", "User:*"),
            ("ord", "PREFIXED", "User:alice"),
            ("orders", "LITERAL", "User:alice"),
            ("orders", "LITERAL", "User:bob"),
        ]

    def test_entry_filter(self) -> None:
        pf = ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY)
        ef = AccessControlEntryFilter("User:bob", None, Op.ANY, AclPermissionType.ANY)
        assert self.names(AclBindingFilter(pf, ef)) == [("orders", "LITERAL", "User:bob")]
        ef = AccessControlEntryFilter(None, None, Op.DESCRIBE, ALLOW)
        assert self.names(AclBindingFilter(pf, ef)) == [("*", "LITERAL", "User:*")]
        # A filter's User:* is the text, not every principal.
        ef = AccessControlEntryFilter("User:*", None, Op.ANY, AclPermissionType.ANY)
        assert self.names(AclBindingFilter(pf, ef)) == [("*", "LITERAL", "User:*")]

    def test_indefinite_fields(self) -> None:
        assert ResourcePatternFilter(TOPIC, "a", PatternType.LITERAL).indefinite_field() is None
        assert ResourcePatternFilter(TOPIC, None, PatternType.LITERAL).indefinite_field()
        assert ResourcePatternFilter(TOPIC, "a", PatternType.MATCH).indefinite_field()
        assert ResourcePatternFilter(ResourceType.ANY, "a", PatternType.ANY).indefinite_field()
        assert AclBindingFilter(ResourcePatternFilter(TOPIC, "a", PatternType.UNKNOWN)).is_unknown()
        assert not AclBindingFilter(
            ResourcePatternFilter(TOPIC, "a", PatternType.ANY), ANY_ENTRY
        ).is_unknown()


def test_set_acls_rejects_filter_pattern_types() -> None:
    with pytest.raises(ValueError):
        AclAuthorizer().set_acls(ResourcePattern(TOPIC, "a", PatternType.MATCH), [ace()])


def test_load_replaces_everything_and_answers_as_set_acls() -> None:
    loaded, incremental = AclAuthorizer(), AclAuthorizer()
    acls = {
        literal("orders"): frozenset({ace(), ace("User:bob", Op.WRITE, DENY)}),
        literal("*", GROUP): frozenset({ace("User:*", Op.READ)}),
        prefixed("sales-"): frozenset({ace(op=Op.WRITE)}),
        prefixed("s"): frozenset({ace(op=Op.DESCRIBE, perm=DENY)}),
    }
    loaded.set_acls(literal("stale"), [ace()])
    loaded.load(acls)
    for pattern, entries in acls.items():
        incremental.set_acls(pattern, entries)
    any_filter = AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY))
    assert loaded.acls(any_filter) == incremental.acls(any_filter)
    sessions = (ALICE, BOB)
    for session in sessions:
        for op in (Op.READ, Op.WRITE, Op.DESCRIBE):
            for name in ("orders", "sales-eu", "stale", "s"):
                actions = [Action(op, rtype, name) for rtype in (TOPIC, GROUP)]
                assert loaded.authorize(session, actions) == incremental.authorize(session, actions)
            for rtype in (TOPIC, GROUP):
                assert loaded.authorize_by_resource_type(
                    session, op, rtype
                ) == incremental.authorize_by_resource_type(session, op, rtype)


def test_super_users_are_audited_at_debug_when_asked() -> None:
    authorizer = AclAuthorizer([KafkaPrincipal("User", "alice")])
    with capture_logs() as logs:
        authorizer.authorize(ALICE, [Action(Op.ALTER, TOPIC, "t", log_if_allowed=True)])
        authorizer.authorize(ALICE, [Action(Op.ALTER, TOPIC, "quiet")])
    assert [(e["log_level"], e["super_user"], e["resource"]) for e in logs] == [
        ("debug", True, "Topic:LITERAL:t")
    ]
