#!/bin/bash
# `zkServer.sh start-foreground` of the offline `zookeeper:3.8` stand-in: Debian's ZooKeeper
# jars (libzookeeper-java) run by Debian's JRE, logging to stdout as the official image does.
set -euo pipefail

if [[ "${1:-}" != start-foreground ]]; then
    echo "usage: zkServer.sh start-foreground (the only mode of this stand-in)" >&2
    exit 2
fi
jars=(zookeeper zookeeper-jute slf4j-api slf4j-log4j12 log4j-1.2 metrics-core commons-cli
    commons-io netty-buffer netty-codec netty-common netty-handler netty-resolver
    netty-transport netty-transport-native-epoll netty-transport-native-unix-common snappy-java)
classpath="$ZOO_CONF_DIR"
for jar in "${jars[@]}"; do classpath+=":/usr/share/java/$jar.jar"; done

# shellcheck disable=SC2086  # JVMFLAGS is a list of flags, as in the official image
exec java ${JVMFLAGS:-} -cp "$classpath" \
    -Dlog4j.configuration=file:/usr/local/share/zookeeper/log4j.properties \
    -Dzookeeper.log.dir="$ZOO_LOG_DIR" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZOO_CONF_DIR/zoo.cfg"
