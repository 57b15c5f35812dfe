#!/usr/bin/env bash
# Starts the real services that fieldwork's integration tests and benchmarks run against, on
# loopback, idempotently:
#   - Apache Kafka, a single-node KRaft broker from the org.apache.kafka:kafka_2.13 jars
#     (fetched with Maven, run with the machine's Java 17);
#   - PostgreSQL from Debian's packages;
#   - kcat from Debian's packages (an independent client for interop tests).
# Installs whatever is missing. Prints the variables the tests read.
#
#   scripts/services.sh start    install what is missing, start both, wait until they answer
#   scripts/services.sh stop     stop both
#   scripts/services.sh status   say what runs
#   scripts/services.sh env      print the export lines only
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${FW_SERVICES_DIR:-/tmp/fieldwork-services}
KAFKA_PORT=${FW_KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=$((KAFKA_PORT + 1))
KAFKA_SASL_PORT=$((KAFKA_PORT + 2))
PG_PORT=${FW_PG_PORT:-15432}
PG_USER=fieldwork
PG_PASSWORD=fieldwork
PG_DB=fieldwork
# SASL users on the broker's SASL_PLAINTEXT listener, for authentication tests.
SASL_USER=fieldwork
SASL_PASSWORD=fieldwork-secret

log() { printf 'services: %s\n' "$*" >&2; }

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    apt_updated=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/postgres" ]; then echo "$d"; return; fi
  done
}

install_missing() {
  local pkgs=()
  command -v kcat >/dev/null 2>&1 || pkgs+=(kcat)
  command -v jq >/dev/null 2>&1 || pkgs+=(jq)
  [ -n "$(pg_bin)" ] || pkgs+=(postgresql)
  command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
  command -v runuser >/dev/null 2>&1 || pkgs+=(util-linux)
  if [ ${#pkgs[@]} -gt 0 ]; then apt_install "${pkgs[@]}"; fi
}

# --- PostgreSQL --------------------------------------------------------------------------

pg_dir=$STATE/postgres
pg_as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_ready() {
  PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -Atqc 'select 1' >/dev/null 2>&1
}

start_postgres() {
  local bin; bin=$(pg_bin)
  if pg_ready; then log "PostgreSQL already answers on 127.0.0.1:$PG_PORT"; return; fi
  mkdir -p "$pg_dir"
  if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$pg_dir"; chmod 0755 "$STATE"; fi
  if [ ! -f "$pg_dir/data/PG_VERSION" ]; then
    log "initdb $pg_dir/data"
    local pw; pw=$(mktemp); echo "$PG_PASSWORD" >"$pw"; chmod 0644 "$pw"
    pg_as "$bin/initdb" -D "$pg_dir/data" -U "$PG_USER" --pwfile="$pw" \
      --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pw"
  fi
  log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
  pg_as "$bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $pg_dir -c max_connections=200 -c fsync=off" start >/dev/null
  local i
  for i in $(seq 1 60); do
    if PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d postgres -Atqc 'select 1' >/dev/null 2>&1; then break; fi
    sleep 0.5
  done
  if ! PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d postgres -Atqc \
      "select 1 from pg_database where datname='$PG_DB'" | grep -q 1; then
    PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d postgres -qc "create database $PG_DB" >/dev/null
  fi
  pg_ready || { log "PostgreSQL did not answer; see $pg_dir/server.log"; tail -20 "$pg_dir/server.log" >&2; exit 1; }
  log "PostgreSQL $(PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -Atqc 'show server_version') ready"
}

stop_postgres() {
  local bin; bin=$(pg_bin)
  if [ -n "$bin" ] && [ -f "$pg_dir/data/postmaster.pid" ]; then
    pg_as "$bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
    log "PostgreSQL stopped"
  fi
}

# --- Apache Kafka ------------------------------------------------------------------------

kafka_dir=$STATE/kafka
kafka_version() { sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$ROOT/scripts/kafka/pom.xml"; }

fetch_kafka() {
  local v; v=$(kafka_version)
  if [ -f "$kafka_dir/libs/kafka_2.13-$v.jar" ]; then return; fi
  log "fetching org.apache.kafka:kafka_2.13:$v with Maven"
  rm -rf "$kafka_dir/libs"; mkdir -p "$kafka_dir/libs"
  (cd "$ROOT/scripts/kafka" && mvn -q -B dependency:copy-dependencies \
    -DoutputDirectory="$kafka_dir/libs" -DincludeScope=runtime >&2)
}

kafka_ready() {
  # A metadata request through kcat, an independent client.
  kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 3 >/dev/null 2>&1
}

write_kafka_config() {
  mkdir -p "$kafka_dir/data"
  cat >"$kafka_dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER="$SASL_PASSWORD";
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
log.dirs=$kafka_dir/data
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.flush.interval.messages=9223372036854775807
EOF
  cat >"$kafka_dir/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $kafka_dir/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = warn
logger.org.name = org.apache.kafka
logger.org.level = warn
logger.controller.name = kafka.controller
logger.controller.level = warn
EOF
}

start_kafka() {
  if kafka_ready; then log "Kafka already answers on 127.0.0.1:$KAFKA_PORT"; return; fi
  fetch_kafka
  write_kafka_config
  local cp="$kafka_dir/libs/*"
  local jopts=(-Xms512m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true
    "-Dlog4j2.configurationFile=$kafka_dir/log4j2.properties")
  if [ ! -f "$kafka_dir/data/meta.properties" ]; then
    log "formatting KRaft storage in $kafka_dir/data"
    java "${jopts[@]}" -cp "$cp" kafka.tools.StorageTool format \
      -t "$(java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)" \
      -c "$kafka_dir/server.properties" \
      --add-scram "SCRAM-SHA-256=[name=\"$SASL_USER\",password=\"$SASL_PASSWORD\"]" \
      --add-scram "SCRAM-SHA-512=[name=\"$SASL_USER\",password=\"$SASL_PASSWORD\"]" >&2
  fi
  log "starting Apache Kafka $(kafka_version) (KRaft) on 127.0.0.1:$KAFKA_PORT"
  nohup java "${jopts[@]}" -cp "$cp" kafka.Kafka "$kafka_dir/server.properties" \
    >"$kafka_dir/stdout.log" 2>&1 &
  echo $! >"$kafka_dir/pid"
  local i
  for i in $(seq 1 120); do
    if kafka_ready; then log "Apache Kafka $(kafka_version) ready (pid $(cat "$kafka_dir/pid"))"; return; fi
    if ! kill -0 "$(cat "$kafka_dir/pid")" 2>/dev/null; then break; fi
    sleep 0.5
  done
  log "Kafka did not answer; last lines of its logs:"
  tail -30 "$kafka_dir/stdout.log" "$kafka_dir/server.log" >&2 2>/dev/null || true
  exit 1
}

stop_kafka() {
  if [ -f "$kafka_dir/pid" ]; then
    local pid; pid=$(cat "$kafka_dir/pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      local i
      for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -9 "$pid" 2>/dev/null || true
      log "Kafka stopped"
    fi
    rm -f "$kafka_dir/pid"
  fi
}

print_env() {
  cat <<EOF
export FIELDWORK_TEST_BROKERS=127.0.0.1:$KAFKA_PORT
export FIELDWORK_TEST_SASL_BROKERS=127.0.0.1:$KAFKA_SASL_PORT
export FIELDWORK_TEST_SASL_USER=$SASL_USER
export FIELDWORK_TEST_SASL_PASSWORD=$SASL_PASSWORD
export FIELDWORK_TEST_DSN='postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB?sslmode=disable'
EOF
}

case "${1:-start}" in
  start)
    mkdir -p "$STATE"
    install_missing
    start_postgres
    start_kafka
    print_env
    ;;
  stop)
    stop_kafka
    stop_postgres
    ;;
  status)
    if pg_ready; then echo "postgres: up on 127.0.0.1:$PG_PORT"; else echo "postgres: down"; fi
    if command -v kcat >/dev/null && kafka_ready; then echo "kafka: up on 127.0.0.1:$KAFKA_PORT"; else echo "kafka: down"; fi
    ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
