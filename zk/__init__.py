"""ZooKeeper access for the broker and the controller alike, as Kafka keeps ``kafka.zk`` apart
from ``kafka.controller``:

    zk_store.ZkStore         typed reads, writes and watches of the cluster's znodes, one kazoo
                             client; fencing on /controller_epoch
    zk_data                  every znode path and JSON layout, pure encode/decode
    zk_multi_read            ZooKeeper's multiRead request, which kazoo lacks
    zk_auth                  the brokers' SASL login (the JAAS Client section in KAFKA_OPTS) and
                             the ACLs of the znodes they create (zookeeper.set.acl)
    errors                   ControllerMovedError and the ZkStoreError tree

Who writes what and when is the controller's and the broker's business: nothing here decides.
Imports only proto (and kazoo); the controller and the broker import this package.
"""
