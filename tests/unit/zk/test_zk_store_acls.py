"""Every znode the brokers create gets its ACLs from one rule (ZkStore._acl, zk_auth's
default_acls): a create in zk_store.py that passed none would get ZooKeeper's default, open to
anyone, with zookeeper.set.acl on. Read from the source, so a new create cannot slip by.
"""

from __future__ import annotations

import ast
from pathlib import Path

import minikafka.zk.zk_store as zk_store

_TREE = ast.parse(Path(zk_store.__file__).read_text())
_CREATES = ("create", "create_async")


def _is_create(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in _CREATES


def _creates() -> list[tuple[ast.Call, int]]:
    """Every kazoo create: ``x.create(...)`` (its ACLs third), or ``self._call(x.create, ...)``
    (retried; its ACLs fourth), with the index the ACLs would have among the arguments."""
    found: list[tuple[ast.Call, int]] = []
    for node in ast.walk(_TREE):
        if not isinstance(node, ast.Call):
            continue
        if _is_create(node.func):
            found.append((node, 2))
        elif ast.unparse(node.func) == "self._call" and node.args and _is_create(node.args[0]):
            found.append((node, 3))
    return found


def _passes_acl(call: ast.Call, position: int) -> bool:
    if any(keyword.arg == "acl" for keyword in call.keywords):
        return True
    return len(call.args) > position and "self._acl(" in ast.unparse(call.args[position])


def test_every_kazoo_create_passes_the_acls_of_its_path() -> None:
    creates = _creates()
    # the transactions' creates, the parents (sync and async), _create, _ensure_path
    assert len(creates) >= 9
    missing = [
        f"line {call.lineno}: {ast.unparse(call)}"
        for call, position in creates
        if not _passes_acl(call, position)
    ]
    assert missing == []


def test_a_create_whose_acls_are_left_out_is_caught() -> None:
    call = ast.parse("txn.create(path, data, ephemeral=True)").body[0].value  # type: ignore[attr-defined]
    assert not _passes_acl(call, 2)
    retried = ast.parse("self._call(self._client.create, path, data)").body[0].value  # type: ignore[attr-defined]
    assert not _passes_acl(retried, 3)


def test_nothing_uses_kazoos_own_parent_creation() -> None:
    # kazoo's ensure_path and makepath=True give each parent they create the child's ACLs (or
    # the open default): a sensitive child would hide its parent, an open one expose it.
    attributes = [n.attr for n in ast.walk(_TREE) if isinstance(n, ast.Attribute)]
    assert "ensure_path" not in attributes
    for call, _ in _creates():
        assert not any(k.arg == "makepath" for k in call.keywords), ast.unparse(call)
