#!/bin/bash
# Start one Cassandra node in the foreground. Settings come from environment variables:
#   CASSANDRA_CLUSTER_NAME        labs
#   CASSANDRA_SEEDS               this node's address (a one-node cluster); comma-separated
#   CASSANDRA_LISTEN_ADDRESS      this container's address on its network
#   CASSANDRA_RPC_ADDRESS         0.0.0.0 (CQL on every interface)
#   CASSANDRA_BROADCAST_RPC_ADDRESS  the listen address (what drivers are told to connect to)
#   CASSANDRA_HEAP                512M (-Xms and -Xmx)
#   CASSANDRA_NUM_TOKENS          16; CASSANDRA_INITIAL_TOKEN (one token, with num_tokens 1)
#   CASSANDRA_ALLOCATE_TOKENS_RF  3 with more than one token (token allocation for that RF)
#   CASSANDRA_DATA_DIR            /var/lib/cassandra (data, commitlog, hints, saved_caches)
#   CASSANDRA_DISK_ACCESS_MODE    mmap_index_only | standard
#   CASSANDRA_COMMITLOG_SYNC      periodic | batch | group
#   CASSANDRA_COMMITLOG_SYNC_PERIOD  10000ms (periodic);  CASSANDRA_COMMITLOG_SYNC_GROUP_WINDOW 15ms
#   CASSANDRA_HINTED_HANDOFF_ENABLED  true
#   CASSANDRA_KEY_CACHE_SIZE, CASSANDRA_ROW_CACHE_SIZE, CASSANDRA_FILE_CACHE_SIZE  like 64MiB;
#     empty key and file cache sizes mean Cassandra's automatic size; the row cache is 0MiB
#   CASSANDRA_FILE_CACHE_ENABLED  false (the chunk cache)
#   CASSANDRA_RING_DELAY_MS       unset (Cassandra's 30000 ms); small values speed up joins
#   CASSANDRA_SKIP_GOSSIP_SETTLE  unset; set to 1 to skip the wait for gossip to settle
#   CASSANDRA_JVM_EXTRA           more JVM flags, space-separated
set -euo pipefail

own_address() {
  # The first address /etc/hosts gives this container's host name (docker writes it).
  awk -v h="$(cat /etc/hostname)" '$2 == h { print $1; exit }' /etc/hosts
}

: "${CASSANDRA_DATA_DIR:=/var/lib/cassandra}"
if [ "$(id -u)" = 0 ]; then
  # A bind-mounted data folder belongs to the host's user: hand it to cassandra (uid 999).
  mkdir -p "$CASSANDRA_DATA_DIR" /var/log/cassandra
  chown cassandra:cassandra "$CASSANDRA_DATA_DIR" /var/log/cassandra
  exec gosu cassandra "$0" "$@"
fi

if [ "${1:-cassandra}" != cassandra ]; then
  exec "$@"
fi

export CASSANDRA_DATA_DIR
export CASSANDRA_CLUSTER_NAME="${CASSANDRA_CLUSTER_NAME:-labs}"
export CASSANDRA_LISTEN_ADDRESS="${CASSANDRA_LISTEN_ADDRESS:-$(own_address)}"
export CASSANDRA_SEEDS="${CASSANDRA_SEEDS:-$CASSANDRA_LISTEN_ADDRESS}"
export CASSANDRA_RPC_ADDRESS="${CASSANDRA_RPC_ADDRESS:-0.0.0.0}"
export CASSANDRA_BROADCAST_RPC_ADDRESS="${CASSANDRA_BROADCAST_RPC_ADDRESS:-$CASSANDRA_LISTEN_ADDRESS}"
export CASSANDRA_NUM_TOKENS="${CASSANDRA_NUM_TOKENS:-16}"
export CASSANDRA_DISK_ACCESS_MODE="${CASSANDRA_DISK_ACCESS_MODE:-mmap_index_only}"
export CASSANDRA_HINTED_HANDOFF_ENABLED="${CASSANDRA_HINTED_HANDOFF_ENABLED:-true}"
export CASSANDRA_KEY_CACHE_SIZE="${CASSANDRA_KEY_CACHE_SIZE:-}"
export CASSANDRA_ROW_CACHE_SIZE="${CASSANDRA_ROW_CACHE_SIZE:-0MiB}"
export CASSANDRA_FILE_CACHE_ENABLED="${CASSANDRA_FILE_CACHE_ENABLED:-false}"
export CASSANDRA_FILE_CACHE_SIZE="${CASSANDRA_FILE_CACHE_SIZE:-}"
heap="${CASSANDRA_HEAP:-512M}"

# Token settings: one fixed token, or allocation for the lab's replication factor.
if [ -n "${CASSANDRA_INITIAL_TOKEN:-}" ]; then
  export CASSANDRA_TOKEN_LINES="initial_token: ${CASSANDRA_INITIAL_TOKEN}"
elif [ "$CASSANDRA_NUM_TOKENS" -gt 1 ]; then
  export CASSANDRA_TOKEN_LINES="allocate_tokens_for_local_replication_factor: ${CASSANDRA_ALLOCATE_TOKENS_RF:-3}"
else
  export CASSANDRA_TOKEN_LINES=""
fi

# Each commit log mode takes its own companion setting and refuses the others'.
sync="${CASSANDRA_COMMITLOG_SYNC:-periodic}"
case "$sync" in
  periodic) extra="commitlog_sync_period: ${CASSANDRA_COMMITLOG_SYNC_PERIOD:-10000ms}" ;;
  group) extra="commitlog_sync_group_window: ${CASSANDRA_COMMITLOG_SYNC_GROUP_WINDOW:-15ms}" ;;
  batch) extra="" ;;
  *) echo "CASSANDRA_COMMITLOG_SYNC must be periodic, batch or group (got $sync)" >&2; exit 2 ;;
esac
export CASSANDRA_COMMITLOG_LINES="commitlog_sync: $sync
$extra"

mkdir -p "$CASSANDRA_DATA_DIR"/{data,commitlog,hints,saved_caches,cdc_raw}
envsubst < /etc/cassandra/cassandra.yaml.template > /etc/cassandra/cassandra.yaml

jvm=()
while read -r line; do
  # "--add-opens M/P=ALL-UNNAMED" is one argument to java once written with '='.
  case "$line" in --*) jvm+=("${line/ /=}") ;; -*) jvm+=("$line") ;; esac
done < /etc/cassandra/jvm-server.options
if [ -n "${CASSANDRA_RING_DELAY_MS:-}" ]; then
  jvm+=("-Dcassandra.ring_delay_ms=${CASSANDRA_RING_DELAY_MS}")
fi
if [ -n "${CASSANDRA_SKIP_GOSSIP_SETTLE:-}" ]; then
  jvm+=("-Dcassandra.skip_wait_for_gossip_to_settle=0")
fi
# shellcheck disable=SC2206 # a list of flags on purpose
jvm+=(${CASSANDRA_JVM_EXTRA:-})

echo "cassandra: cluster=$CASSANDRA_CLUSTER_NAME listen=$CASSANDRA_LISTEN_ADDRESS" \
     "seeds=$CASSANDRA_SEEDS heap=$heap disk_access_mode=$CASSANDRA_DISK_ACCESS_MODE" \
     "commitlog_sync=$sync hinted_handoff=$CASSANDRA_HINTED_HANDOFF_ENABLED" \
     "num_tokens=$CASSANDRA_NUM_TOKENS"
exec java "-Xms$heap" "-Xmx$heap" "${jvm[@]}" \
  -javaagent:/opt/cassandra/lib/jamm-0.4.0.jar \
  -Dcassandra.jmx.local.port=7199 \
  -Dcassandra.config=file:///etc/cassandra/cassandra.yaml \
  -Dcassandra-foreground=yes \
  -Dcassandra.logdir=/var/log/cassandra \
  -Dcassandra.storagedir="$CASSANDRA_DATA_DIR" \
  -Dlogback.configurationFile=/etc/cassandra/logback.xml \
  -cp '/opt/cassandra/lib/*' \
  org.apache.cassandra.service.CassandraDaemon
