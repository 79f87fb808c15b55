#!/bin/bash
# Entrypoint of the offline stand-in for the official `zookeeper:3.8` image (see
# scripts/offline-images.sh). It honours the official image's variables that matter for a
# standalone server: ZOO_CONF_DIR, ZOO_DATA_DIR, ZOO_DATA_LOG_DIR, ZOO_LOG_DIR, ZOO_TICK_TIME,
# ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT, ZOO_MAX_CLIENT_CNXNS, ZOO_AUTOPURGE_*, ZOO_4LW_COMMANDS_WHITELIST,
# ZOO_ADMINSERVER_ENABLED, ZOO_SERVERS, ZOO_MY_ID and ZOO_CFG_EXTRA, and drops root like it does.
set -euo pipefail

if [[ "${1:-}" == zkServer.sh && "$(id -u)" == 0 ]]; then
    chown -R zookeeper:zookeeper "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR" "$ZOO_LOG_DIR"
    exec setpriv --reuid=zookeeper --regid=zookeeper --init-groups "$0" "$@"
fi

config="$ZOO_CONF_DIR/zoo.cfg"
if [[ ! -f "$config" ]]; then
    {
        echo "dataDir=$ZOO_DATA_DIR"
        echo "dataLogDir=$ZOO_DATA_LOG_DIR"
        echo "tickTime=${ZOO_TICK_TIME:-2000}"
        echo "initLimit=${ZOO_INIT_LIMIT:-5}"
        echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
        echo "autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}"
        echo "autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}"
        echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
        echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
        # Debian's jars lack the admin server's Jetty wiring: off unless asked for.
        echo "admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-false}"
        echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}"
        if [[ -z "${ZOO_SERVERS:-}" ]]; then
            echo "clientPort=2181"
        else
            for server in $ZOO_SERVERS; do echo "$server"; done
        fi
        for entry in ${ZOO_CFG_EXTRA:-}; do echo "$entry"; done
    } >"$config"
fi
[[ -f "$ZOO_DATA_DIR/myid" ]] || echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"

exec "$@"
