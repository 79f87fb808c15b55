"""What every part of TopicAdmin shares: the broker's config, the controller, ZooKeeper, and the
checks on names that each request repeats (a topic or key named twice).

    AdminBase(config: BrokerConfig, controller: KafkaController, zk: ZkStore,
              replica_manager: ReplicaManager | None = None, *,
              metadata_cache: MetadataCache | None = None, auth: AuthHelper | None = None)

Every part asks ``auth`` (core/authorization.py) before it acts; ``NO_SESSION`` is the session
of a call made without one (tests, tools): ANONYMOUS from nowhere.

Lives on the broker's event loop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.security.principal import ANONYMOUS, Session
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.controller.controller import KafkaController
from minikafka.zk.zk_store import ZkStore

__all__ = ["NO_SESSION", "AdminBase", "duplicate_names"]

NO_SESSION = Session(ANONYMOUS, "")


class AdminBase:
    """The state the parts share. Lives on the broker's event loop."""

    def __init__(
        self,
        config: BrokerConfig,
        controller: KafkaController,
        zk: ZkStore,
        replica_manager: ReplicaManager | None = None,
        *,
        metadata_cache: MetadataCache | None = None,
        auth: AuthHelper | None = None,
    ) -> None:
        """Without ``metadata_cache``, ``create_topics`` answers without waiting for it."""
        self._config = config
        self._controller = controller
        self._zk = zk
        self._replica_manager = replica_manager
        self._metadata_cache = metadata_cache
        self._auth = auth or AuthHelper()

    def reconfigure(self, config: BrokerConfig) -> None:
        """The broker's config after a dynamic broker config change."""
        self._config = config


def duplicate_names(names: Iterable[str]) -> set[str]:
    """The names given more than once."""
    return {name for name, n in Counter(names).items() if n > 1}
