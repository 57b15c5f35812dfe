#!/usr/bin/env bash
# Starts the real services that fieldwork's integration tests and benchmarks run against, on
# loopback, idempotently:
#   - Apache Kafka, a single-node KRaft broker from the org.apache.kafka:kafka_2.13 jars
#     (fetched with Maven, run with the machine's Java 17);
#   - PostgreSQL from Debian's packages;
#   - kcat from Debian's packages (an independent client for interop tests);
#   - a Python virtualenv ($FW_SERVICES_DIR/python) with the pinned packages of
#     scripts/python/requirements.txt (confluent-kafka with its Protobuf, Avro and JSON Schema
#     serializers and schema registry client: the interop tests write their records with them);
#   - Apicurio Registry, a Confluent-compatible schema registry (io.apicurio:apicurio-registry-app,
#     the runnable distribution fetched with Maven, run with the machine's Java 17), schemas in
#     memory, its API under /apis/ccompat/v7 on 127.0.0.1:$FW_REGISTRY_PORT (default 18081; its
#     management port is the next one), behind HTTP basic auth (user fieldwork).
# Installs whatever is missing. Prints the variables the tests read.
#
# Security, for the authentication and least-privilege tests: the script makes a CA with
# openssl ($FW_SERVICES_DIR/tls) and signs a server certificate for 127.0.0.1/localhost. The
# broker then also listens with
#   - SASL_SSL (port +3): SCRAM-SHA-512, PLAIN and OAUTHBEARER (Kafka's unsecured-JWS validator: the
#     token's "sub" claim is the principal), governed by ACLs;
#   - SSL (port +4): mutual TLS, the client certificate's subject is the principal.
# The StandardAuthorizer runs with allow.everyone.if.no.acl.found=false. Super users are
# User:ANONYMOUS (the PLAINTEXT and controller listeners, so the rest of the suite runs
# unchanged) and User:$SASL_USER (the SASL admin); every other principal has exactly the ACLs a
# test gives it. PostgreSQL serves TLS with the same CA (verify-full for 127.0.0.1).
#
#   scripts/services.sh start    install what is missing, start them, wait until they answer
#   scripts/services.sh stop     stop them
#   scripts/services.sh registry start|stop
#                                the schema registry alone (start is idempotent)
#   scripts/services.sh durable-postgres start|stop
#                                a second PostgreSQL with fsync and synchronous_commit on, for
#                                the benchmarks' durability rows (prints FIELDWORK_BENCH_DURABLE_DSN)
#   scripts/services.sh status   say what runs
#   scripts/services.sh env      print the export lines only
#   scripts/services.sh perf-classpath
#                                fetch Kafka's own benchmark tools (kafka-tools jar) if missing
#                                and print the Java classpath of ProducerPerformance
#   scripts/services.sh python  make the Python virtualenv if missing or its pins changed, and
#                                print its python's path
#   scripts/services.sh spring-classpath
#                                fetch Spring Kafka's jars (scripts/spring/pom.xml) if missing and
#                                print their classpath (start fetches them too: the dead-letter
#                                convention tests write Spring's dead letters with Spring itself)
#
# For the fault tests, a cluster of its own beside them (it never touches the node above):
# three combined broker+controller KRaft nodes on loopback, replication factor 3,
# min.insync.replicas 2, small heaps, data under $FW_SERVICES_DIR/cluster:
#   scripts/services.sh cluster start [N]    start every node (or node N) that is not running
#                                            and wait until it answers and sees the others
#   scripts/services.sh cluster stop [N]     stop every node (or node N): SIGTERM, a clean shutdown
#   scripts/services.sh cluster kill [N]     SIGKILL every node (or node N)
#   scripts/services.sh cluster restart N    stop node N if it runs, then start it
#   scripts/services.sh cluster status       say which nodes run
#   scripts/services.sh cluster env          print FIELDWORK_TEST_CLUSTER_BROKERS
# FW_CLUSTER_DIR puts a cluster elsewhere (a test's private one), FW_CLUSTER_NODES sizes a new
# one (default 3), FW_CLUSTER_PORTS gives its ports ("broker:controller,…", a pair a node;
# default 19201:19211, 19202:19212, …). A cluster's directory remembers its ports and size.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${FW_SERVICES_DIR:-/tmp/fieldwork-services}
KAFKA_PORT=${FW_KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=$((KAFKA_PORT + 1))
KAFKA_SASL_PORT=$((KAFKA_PORT + 2))
KAFKA_SASL_SSL_PORT=$((KAFKA_PORT + 3))
KAFKA_MTLS_PORT=$((KAFKA_PORT + 4))
PG_PORT=${FW_PG_PORT:-15432}
PG_USER=fieldwork
PG_PASSWORD=fieldwork
PG_DB=fieldwork
# SASL users on the broker's SASL_PLAINTEXT listener, for authentication tests.
SASL_USER=fieldwork
SASL_PASSWORD=fieldwork-secret
REGISTRY_VERSION=3.0.9
REGISTRY_PORT=${FW_REGISTRY_PORT:-18081}
REGISTRY_MANAGEMENT_PORT=$((REGISTRY_PORT + 1))
REGISTRY_USER=fieldwork
REGISTRY_PASSWORD=fieldwork-registry-secret

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
  command -v curl >/dev/null 2>&1 || pkgs+=(curl) # the schema registry's readiness check
  [ -n "$(pg_bin)" ] || pkgs+=(postgresql)
  command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
  # javac compiles scripts/spring/SpringDeadLetters.java for the dead-letter convention tests.
  command -v javac >/dev/null 2>&1 || pkgs+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
  command -v runuser >/dev/null 2>&1 || pkgs+=(util-linux)
  command -v openssl >/dev/null 2>&1 || pkgs+=(openssl)
  [ -x /usr/bin/time ] || pkgs+=(time) # GNU time: the benchmarks' peak RSS of a child
  command -v zsh >/dev/null 2>&1 || pkgs+=(zsh)   # the completion tests type into zsh and fish
  command -v fish >/dev/null 2>&1 || pkgs+=(fish)
  # The Python interop tests' virtualenv (python_env): python3 with its venv module.
  command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then pkgs+=(python3-venv); fi
  if [ ${#pkgs[@]} -gt 0 ]; then apt_install "${pkgs[@]}"; fi
}

# --- TLS material ------------------------------------------------------------------------
# A CA of the test services' own, and one server certificate (127.0.0.1, localhost) that the
# broker and PostgreSQL both serve. Made once; tests sign client certificates with the CA key.

tls_dir=$STATE/tls
make_tls() {
  if [ -s "$tls_dir/server.pem" ] && [ -s "$tls_dir/ca.pem" ]; then return; fi
  log "making a test CA and server certificate in $tls_dir"
  mkdir -p "$tls_dir"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=fieldwork test CA" \
    -keyout "$tls_dir/ca.key" -out "$tls_dir/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$tls_dir/server.key" -out "$tls_dir/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$tls_dir/server.ext"
  openssl x509 -req -in "$tls_dir/server.csr" -CA "$tls_dir/ca.pem" -CAkey "$tls_dir/ca.key" \
    -CAcreateserial -days 3650 -extfile "$tls_dir/server.ext" -out "$tls_dir/server.crt" 2>/dev/null
  # Kafka's PEM key store: an unencrypted PKCS#8 key and the certificate, in one file.
  openssl pkcs8 -topk8 -nocrypt -in "$tls_dir/server.key" -out "$tls_dir/server.p8"
  cat "$tls_dir/server.p8" "$tls_dir/server.crt" >"$tls_dir/server.pem"
  chmod 0644 "$tls_dir/ca.pem" "$tls_dir/server.crt"
  chmod 0600 "$tls_dir/ca.key" "$tls_dir/server.key" "$tls_dir/server.p8" "$tls_dir/server.pem"
}

# --- PostgreSQL --------------------------------------------------------------------------

pg_dir=$STATE/postgres
pg_as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_ready() {
  PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -Atqc 'select 1' >/dev/null 2>&1
}

pg_tls_ready() {
  PGPASSWORD=$PG_PASSWORD psql "host=127.0.0.1 port=$PG_PORT user=$PG_USER dbname=$PG_DB sslmode=verify-full sslrootcert=$tls_dir/ca.pem" \
    -Atqc 'select 1' >/dev/null 2>&1
}

start_postgres() {
  local bin; bin=$(pg_bin)
  if pg_ready && pg_tls_ready; then log "PostgreSQL already answers on 127.0.0.1:$PG_PORT (plain and TLS)"; return; fi
  if pg_ready; then log "PostgreSQL answers without TLS: restarting it with TLS"; stop_postgres; fi
  mkdir -p "$pg_dir"
  if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$pg_dir"; chmod 0755 "$STATE"; fi
  if [ ! -f "$pg_dir/data/PG_VERSION" ]; then
    log "initdb $pg_dir/data"
    local pw; pw=$(mktemp); echo "$PG_PASSWORD" >"$pw"; chmod 0644 "$pw"
    pg_as "$bin/initdb" -D "$pg_dir/data" -U "$PG_USER" --pwfile="$pw" \
      --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pw"
  fi
  # The server key, readable by the server's user alone (PostgreSQL refuses it otherwise).
  cp "$tls_dir/server.crt" "$pg_dir/server.crt"; cp "$tls_dir/server.key" "$pg_dir/server.key"
  chmod 0600 "$pg_dir/server.key"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$pg_dir/server.crt" "$pg_dir/server.key"; fi
  log "starting PostgreSQL on 127.0.0.1:$PG_PORT (plain and TLS)"
  pg_as "$bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $pg_dir -c max_connections=200 -c fsync=off -c ssl=on -c ssl_cert_file=$pg_dir/server.crt -c ssl_key_file=$pg_dir/server.key" start >/dev/null
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
  pg_tls_ready || { log "PostgreSQL did not answer over TLS; see $pg_dir/server.log"; tail -20 "$pg_dir/server.log" >&2; exit 1; }
  log "PostgreSQL $(PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -Atqc 'show server_version') ready"
}

stop_postgres() {
  local bin; bin=$(pg_bin)
  if [ -n "$bin" ] && [ -f "$pg_dir/data/postmaster.pid" ]; then
    pg_as "$bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
    log "PostgreSQL stopped"
  fi
}

# A second PostgreSQL for the benchmarks' durability rows: fsync and synchronous_commit on, as a
# production database runs (the one above runs with fsync off, which flatters per-event
# commits). Plain TCP only, on $PG_DURABLE_PORT; not started by `start`, only by
# `durable-postgres start` (make bench).
PG_DURABLE_PORT=${FW_PG_DURABLE_PORT:-$((PG_PORT + 1))}
pg_durable_dir=$STATE/postgres-durable

pg_durable_ready() {
  PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_DURABLE_PORT" -U "$PG_USER" -d "$PG_DB" -Atqc 'select 1' >/dev/null 2>&1
}

start_durable_postgres() {
  local bin; bin=$(pg_bin)
  if pg_durable_ready; then log "durable PostgreSQL already answers on 127.0.0.1:$PG_DURABLE_PORT"; return; fi
  mkdir -p "$pg_durable_dir"
  if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$pg_durable_dir"; chmod 0755 "$STATE"; fi
  if [ ! -f "$pg_durable_dir/data/PG_VERSION" ]; then
    log "initdb $pg_durable_dir/data"
    local pw; pw=$(mktemp); echo "$PG_PASSWORD" >"$pw"; chmod 0644 "$pw"
    pg_as "$bin/initdb" -D "$pg_durable_dir/data" -U "$PG_USER" --pwfile="$pw" \
      --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pw"
  fi
  log "starting the durable PostgreSQL (fsync=on, synchronous_commit=on) on 127.0.0.1:$PG_DURABLE_PORT"
  pg_as "$bin/pg_ctl" -D "$pg_durable_dir/data" -l "$pg_durable_dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_DURABLE_PORT -k $pg_durable_dir -c max_connections=100 -c fsync=on -c synchronous_commit=on -c full_page_writes=on" start >/dev/null
  if ! PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_DURABLE_PORT" -U "$PG_USER" -d postgres -Atqc \
      "select 1 from pg_database where datname='$PG_DB'" | grep -q 1; then
    PGPASSWORD=$PG_PASSWORD psql -h 127.0.0.1 -p "$PG_DURABLE_PORT" -U "$PG_USER" -d postgres -qc "create database $PG_DB" >/dev/null
  fi
  pg_durable_ready || { log "the durable PostgreSQL did not answer; see $pg_durable_dir/server.log"; exit 1; }
}

stop_durable_postgres() {
  local bin; bin=$(pg_bin)
  if [ -n "$bin" ] && [ -f "$pg_durable_dir/data/postmaster.pid" ]; then
    pg_as "$bin/pg_ctl" -D "$pg_durable_dir/data" -m fast -w stop >/dev/null 2>&1 || true
    log "durable PostgreSQL stopped"
  fi
}

# fetch_jars WHAT POM_DIR DEST JAR copies the runtime dependencies of POM_DIR/pom.xml into DEST
# with Maven, unless DEST already holds JAR (the version the pom names).
fetch_jars() {
  local what=$1 pom=$2 dest=$3 jar=$4
  if [ -f "$dest/$jar" ]; then return; fi
  log "fetching $what with Maven"
  rm -rf "$dest"; mkdir -p "$dest"
  (cd "$pom" && mvn -q -B dependency:copy-dependencies -DoutputDirectory="$dest" -DincludeScope=runtime >&2)
}

# --- Spring Kafka (the dead-letter convention tests) ----------------------------------------

spring_dir=$STATE/spring
spring_version() { sed -n 's:.*<spring-kafka.version>\(.*\)</spring-kafka.version>.*:\1:p' "$ROOT/scripts/spring/pom.xml"; }

fetch_spring() {
  local v; v=$(spring_version)
  fetch_jars "org.springframework.kafka:spring-kafka:$v" "$ROOT/scripts/spring" "$spring_dir/libs" "spring-kafka-$v.jar"
}

# --- Python (the Protobuf interop test) -----------------------------------------------------
# A virtualenv of its own with the packages scripts/python/requirements.txt pins, installed by
# name with pip; made again only when the pins change (a copy of the file marks what it holds).

python_dir=$STATE/python
python_env() {
  local req=$ROOT/scripts/python/requirements.txt
  if [ -x "$python_dir/bin/python" ] && cmp -s "$req" "$python_dir/requirements.txt"; then return; fi
  log "making a Python virtualenv in $python_dir (scripts/python/requirements.txt)"
  rm -rf "$python_dir"
  python3 -m venv "$python_dir"
  "$python_dir/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
  cp "$req" "$python_dir/requirements.txt"
  log "Python packages ready: $("$python_dir/bin/pip" freeze | grep -i '^confluent-kafka==')"
}

# --- Apache Kafka ------------------------------------------------------------------------

kafka_dir=$STATE/kafka
kafka_version() { sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$ROOT/scripts/kafka/pom.xml"; }

fetch_kafka() {
  local v; v=$(kafka_version)
  fetch_jars "org.apache.kafka:kafka_2.13:$v" "$ROOT/scripts/kafka" "$kafka_dir/libs" "kafka_2.13-$v.jar"
}

# Apache Kafka's own benchmark tools (kafka-producer-perf-test's ProducerPerformance) from the
# org.apache.kafka:kafka-tools jar of the broker's version, fetched with Maven beside the
# broker's jars; its dependencies are the broker's (argparse4j, jackson, kafka-clients).
fetch_kafka_tools() {
  local v; v=$(kafka_version)
  if [ -f "$kafka_dir/tools/kafka-tools-$v.jar" ]; then return; fi
  log "fetching org.apache.kafka:kafka-tools:$v with Maven"
  rm -rf "$kafka_dir/tools"; mkdir -p "$kafka_dir/tools"
  (cd "$ROOT/scripts/kafka" && mvn -q -B dependency:copy -Dartifact="org.apache.kafka:kafka-tools:$v" \
    -DoutputDirectory="$kafka_dir/tools" >&2)
}

kafka_ready() {
  # A metadata request through kcat, an independent client.
  kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 3 >/dev/null 2>&1
}

kafka_secure_ready() {
  # The SASL_SSL listener: TLS verified against the test CA, PLAIN as the admin (Debian's kcat
  # does not complete SCRAM with this broker; franz-go, which fieldwork uses, does).
  kcat -b "127.0.0.1:$KAFKA_SASL_SSL_PORT" -X security.protocol=SASL_SSL -X sasl.mechanisms=PLAIN \
    -X sasl.username="$SASL_USER" -X sasl.password="$SASL_PASSWORD" -X ssl.ca.location="$tls_dir/ca.pem" \
    -L -m 5 >/dev/null 2>&1
}

write_kafka_config() {
  mkdir -p "$kafka_dir/data"
  cat >"$kafka_dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_SSL_PORT,SSL://127.0.0.1:$KAFKA_MTLS_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_SSL_PORT,SSL://127.0.0.1:$KAFKA_MTLS_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER="$SASL_PASSWORD";
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,OAUTHBEARER,PLAIN
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER="$SASL_PASSWORD";
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="$SASL_USER";
listener.name.ssl.ssl.client.auth=required
ssl.keystore.type=PEM
ssl.keystore.location=$tls_dir/server.pem
ssl.truststore.type=PEM
ssl.truststore.location=$tls_dir/ca.pem
ssl.principal.mapping.rules=RULE:^CN=([^,]+).*$/\$1/,DEFAULT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:ANONYMOUS;User:$SASL_USER
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

# kafka_config_command SECONDS ARGS… runs Kafka's own ConfigCommand (kafka-configs) with ARGS
# against the PLAINTEXT listener, whose principal is a super user, for at most SECONDS.
kafka_config_command() {
  local limit=$1; shift
  timeout "$limit" java -cp "$kafka_dir/libs/*:$kafka_dir/tools/*" org.apache.kafka.tools.ConfigCommand \
    --bootstrap-server "127.0.0.1:$KAFKA_PORT" "$@"
}

# kafka_scram_missing prints which of the SASL admin's SCRAM mechanisms the broker lacks, as
# ConfigCommand describes the user. It fails, printing the tool's error, when the broker cannot
# be asked.
kafka_scram_missing() {
  local have m
  have=$(kafka_config_command 20 --describe --entity-type users --entity-name "$SASL_USER" 2>&1) || {
    printf '%s\n' "$have" | grep -m1 -E 'Error|Exception' || echo "no answer within 20s"; return 1; }
  for m in SCRAM-SHA-256 SCRAM-SHA-512; do
    case "$have" in *"$m="*) ;; *) echo "$m" ;; esac
  done
}

# kafka_scram_missing_now is kafka_scram_missing, asked up to five times while the broker
# cannot answer (one that has just started may not yet).
kafka_scram_missing_now() {
  local out i
  for i in $(seq 1 5); do
    if out=$(kafka_scram_missing); then printf '%s' "$out"; return 0; fi
    sleep 1
  done
  log "cannot ask Kafka for the SCRAM credentials of $SASL_USER: $out"
  return 1
}

# ensure_kafka_scram makes sure the broker holds the SASL admin's SCRAM-SHA-256 and -512
# credentials, and sets those it lacks. The storage format writes both, but a broker started
# again from its data directory comes up without the SCRAM-SHA-512 one once tests have made and
# deleted SCRAM-SHA-512 users of their own, and every SASL test then fails to authenticate.
# No record of the metadata log removes it: Kafka 4.4.0's ScramDelta.apply drops a mechanism
# from the image as soon as a removal leaves its users empty, inside its loop over the
# changes, so a restart, which replays the whole log onto an empty image, loses any user of
# that mechanism it puts after such a removal.
ensure_kafka_scram() {
  fetch_kafka_tools
  local missing m i
  missing=$(kafka_scram_missing_now) || exit 1
  [ -z "$missing" ] && return
  log "Kafka lacks the SCRAM credentials of $SASL_USER: $(echo $missing); setting them"
  # One request a mechanism: Kafka refuses a request that changes one user's credentials twice
  # ("A user credential cannot be altered twice in the same request").
  for m in $missing; do
    kafka_config_command 60 --alter --entity-type users --entity-name "$SASL_USER" \
      --add-config "$m=[iterations=4096,password=$SASL_PASSWORD]" >/dev/null
  done
  for i in $(seq 1 60); do
    missing=$(kafka_scram_missing_now) || exit 1
    if [ -z "$missing" ]; then log "Kafka holds the SCRAM credentials of $SASL_USER again"; return; fi
    sleep 0.5
  done
  log "Kafka still lacks the SCRAM credentials of $SASL_USER: $(echo $missing)"
  exit 1
}

start_kafka() {
  if kafka_ready && kafka_secure_ready; then
    log "Kafka already answers on 127.0.0.1:$KAFKA_PORT (and SASL_SSL on $KAFKA_SASL_SSL_PORT)"
    ensure_kafka_scram
    return
  fi
  if kafka_ready; then log "Kafka answers without its secure listeners: restarting it"; stop_kafka; fi
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
    if kafka_ready && kafka_secure_ready; then
      log "Apache Kafka $(kafka_version) ready (pid $(cat "$kafka_dir/pid"))"
      ensure_kafka_scram
      return
    fi
    if ! kill -0 "$(cat "$kafka_dir/pid")" 2>/dev/null; then break; fi
    sleep 0.5
  done
  log "Kafka did not answer; last lines of its logs:"
  tail -30 "$kafka_dir/stdout.log" "$kafka_dir/server.log" >&2 2>/dev/null || true
  exit 1
}

# stop_pidfile FILE NAME stops the process FILE names: SIGTERM, up to 30s, then SIGKILL.
stop_pidfile() {
  if [ -f "$1" ]; then
    local pid; pid=$(cat "$1")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      local i
      for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -9 "$pid" 2>/dev/null || true
      log "$2 stopped"
    fi
    rm -f "$1"
  fi
}

stop_kafka() { stop_pidfile "$kafka_dir/pid" Kafka; }

# --- Apicurio Registry --------------------------------------------------------------------
# The runnable distribution (a Quarkus -runner.jar and its lib/), fetched once with Maven and
# unpacked under $registry_dir. Its schemas live in memory: a restart forgets them, and the
# tests register what they read.

registry_dir=$STATE/registry
registry_jar() { echo "$registry_dir/app/apicurio-registry-app-$REGISTRY_VERSION-runner.jar"; }
registry_url() { echo "http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7"; }

fetch_registry() {
  if [ -f "$(registry_jar)" ]; then return; fi
  local tgz=$HOME/.m2/repository/io/apicurio/apicurio-registry-app/$REGISTRY_VERSION/apicurio-registry-app-$REGISTRY_VERSION-all.tar.gz
  if [ ! -f "$tgz" ]; then
    log "fetching io.apicurio:apicurio-registry-app:$REGISTRY_VERSION with Maven"
    mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:2.8:get -Dtransitive=false \
      -Dartifact="io.apicurio:apicurio-registry-app:$REGISTRY_VERSION:tar.gz:all" >&2
  fi
  rm -rf "$registry_dir/app"; mkdir -p "$registry_dir/app"
  tar -xzf "$tgz" -C "$registry_dir/app"
}

registry_ready() {
  curl -fsS -m 3 -u "$REGISTRY_USER:$REGISTRY_PASSWORD" "$(registry_url)/subjects" >/dev/null 2>&1
}

start_registry() {
  if registry_ready; then log "schema registry already answers on 127.0.0.1:$REGISTRY_PORT"; return; fi
  fetch_registry
  log "starting Apicurio Registry $REGISTRY_VERSION on 127.0.0.1:$REGISTRY_PORT"
  # Small heap and one JIT tier: it starts in seconds and shares the machine with the tests.
  # Quarkus's embedded users give it HTTP basic auth on the API (the wrong-password tests).
  nohup java -Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$REGISTRY_PORT" \
    -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port="$REGISTRY_MANAGEMENT_PORT" \
    -Dquarkus.security.users.embedded.enabled=true -Dquarkus.security.users.embedded.plain-text=true \
    "-Dquarkus.security.users.embedded.users.$REGISTRY_USER=$REGISTRY_PASSWORD" \
    -Dquarkus.http.auth.basic=true \
    "-Dquarkus.http.auth.permission.api.paths=/apis/*" -Dquarkus.http.auth.permission.api.policy=authenticated \
    -jar "$(registry_jar)" >"$registry_dir/stdout.log" 2>&1 </dev/null &
  echo $! >"$registry_dir/pid"
  local i
  for i in $(seq 1 240); do
    if registry_ready; then
      log "Apicurio Registry $REGISTRY_VERSION ready (pid $(cat "$registry_dir/pid"))"
      warm_registry
      return
    fi
    if ! kill -0 "$(cat "$registry_dir/pid")" 2>/dev/null; then break; fi
    sleep 0.25
  done
  log "the schema registry did not answer; last lines of its log:"
  tail -30 "$registry_dir/stdout.log" >&2 2>/dev/null || true
  exit 1
}

stop_registry() { stop_pidfile "$registry_dir/pid" "schema registry"; }

# warm_registry registers one schema of each type (Avro, Protobuf, JSON Schema) under subjects
# of its own and reads one back, so that the registry's first use of each parser (class loading,
# the JIT) is paid here rather than inside a test's bounded request. Its failure is reported,
# not fatal: the tests still see the registry as it is.
warm_registry() {
  local type schema
  for type in AVRO PROTOBUF JSON; do
    case $type in
      AVRO) schema='{\"type\":\"record\",\"name\":\"Warm\",\"fields\":[{\"name\":\"id\",\"type\":\"string\"}]}' ;;
      PROTOBUF) schema='syntax = \"proto3\"; message Warm { string id = 1; }' ;;
      JSON) schema='{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}' ;;
    esac
    if ! curl -fsS -m 120 -u "$REGISTRY_USER:$REGISTRY_PASSWORD" -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
      -d "{\"schemaType\":\"$type\",\"schema\":\"$schema\"}" \
      "$(registry_url)/subjects/fieldwork-services-warmup-${type,,}/versions" >/dev/null; then
      log "warning: the schema registry did not take the $type warm-up schema"
    fi
  done
  curl -fsS -m 120 -u "$REGISTRY_USER:$REGISTRY_PASSWORD" "$(registry_url)/subjects/fieldwork-services-warmup-avro/versions/latest" >/dev/null ||
    log "warning: the schema registry did not give back its warm-up schema"
  log "schema registry warmed up (one schema of each type)"
}

# --- A Kafka cluster for the fault tests --------------------------------------------------
# Combined broker+controller nodes (node N is broker N and voter N), each with its own
# directory under $cluster_dir: server.properties, data, logs, pid.

cluster_dir=${FW_CLUSTER_DIR:-$STATE/cluster}
cluster_ports=() # "broker:controller", index 0 is node 1

cluster_load() {
  local spec
  if [ -f "$cluster_dir/ports" ]; then
    spec=$(cat "$cluster_dir/ports")
  elif [ -n "${FW_CLUSTER_PORTS:-}" ]; then
    spec=$FW_CLUSTER_PORTS
  else
    local i parts=()
    for i in $(seq 1 "${FW_CLUSTER_NODES:-3}"); do parts+=("$((19200 + i)):$((19210 + i))"); done
    spec=$(IFS=,; echo "${parts[*]}")
  fi
  IFS=, read -r -a cluster_ports <<<"$spec"
  local p
  for p in "${cluster_ports[@]}"; do
    [[ $p =~ ^[0-9]+:[0-9]+$ ]] || { log "cluster: bad ports \"$spec\" (want broker:controller,…)"; exit 2; }
  done
  if [ -n "${FW_CLUSTER_NODES:-}" ] && [ "$FW_CLUSTER_NODES" != "${#cluster_ports[@]}" ]; then
    log "cluster: $cluster_dir has ${#cluster_ports[@]} nodes, not FW_CLUSTER_NODES=$FW_CLUSTER_NODES"; exit 2
  fi
}

cluster_size() { echo "${#cluster_ports[@]}"; }
node_broker_port() { local p=${cluster_ports[$(($1 - 1))]}; echo "${p%%:*}"; }
node_controller_port() { local p=${cluster_ports[$(($1 - 1))]}; echo "${p##*:}"; }
node_dir() { echo "$cluster_dir/node$1"; }

check_node() {
  if ! [[ ${1:-} =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ] || [ "$1" -gt "$(cluster_size)" ]; then
    log "cluster: no node \"${1:-}\" (nodes 1..$(cluster_size))"; exit 2
  fi
}

# node_pid N prints node N's pid when it runs: the pid file's process must still be this
# node's JVM (a pid can be reused; a reaped or zombie process has no command line).
node_pid() {
  local f pid
  f="$(node_dir "$1")/pid"
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  local cmdline
  cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  [[ $cmdline == *"$(node_dir "$1")/server.properties"* ]] || return 1
  echo "$pid"
}

# brokers_seen N prints how many brokers node N's metadata lists (nothing when it does not answer).
brokers_seen() {
  local md
  md=$(kcat -b "127.0.0.1:$(node_broker_port "$1")" -L -m 3 2>/dev/null) || return 0
  sed -n 's/^ *\([0-9][0-9]*\) brokers:.*/\1/p' <<<"$md"
}

cluster_id() {
  if [ ! -s "$cluster_dir/cluster-id" ]; then
    java -cp "$kafka_dir/libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1 >"$cluster_dir/cluster-id"
  fi
  cat "$cluster_dir/cluster-id"
}

node_jopts() {
  # Small heaps and one JIT tier: three of these share a small machine with the tests.
  echo "-Xms64m -Xmx320m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Djava.awt.headless=true -Dlog4j2.configurationFile=$(node_dir "$1")/log4j2.properties"
}

write_node_config() {
  local n=$1 d size rf isr voters="" i
  d=$(node_dir "$n")
  size=$(cluster_size)
  rf=$((size < 3 ? size : 3))
  isr=$((rf >= 3 ? 2 : 1))
  for i in $(seq 1 "$size"); do voters+="${voters:+,}$i@127.0.0.1:$(node_controller_port "$i")"; done
  mkdir -p "$d/data"
  cat >"$d/server.properties" <<EOF
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(node_broker_port "$n"),CONTROLLER://127.0.0.1:$(node_controller_port "$n")
advertised.listeners=PLAINTEXT://127.0.0.1:$(node_broker_port "$n")
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$d/data
num.partitions=3
default.replication.factor=$rf
min.insync.replicas=$isr
unclean.leader.election.enable=false
auto.create.topics.enable=false
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=6
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
log.flush.interval.messages=9223372036854775807
num.network.threads=2
num.io.threads=2
background.threads=2
num.replica.fetchers=1
log.cleaner.threads=1
# A killed broker is fenced, and its partitions led elsewhere, within seconds, not the
# default nine.
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=3000
EOF
  cat >"$d/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $d/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
EOF
}

# launch_node N starts node N's JVM in the background unless it runs.
launch_node() {
  local n=$1 d cp
  d=$(node_dir "$n")
  if node_pid "$n" >/dev/null; then log "cluster node $n already runs (pid $(node_pid "$n"))"; return; fi
  write_node_config "$n"
  cp="$kafka_dir/libs/*"
  # shellcheck disable=SC2046 # the options are words
  if [ ! -f "$d/data/meta.properties" ]; then
    java $(node_jopts "$n") -cp "$cp" kafka.tools.StorageTool format -t "$(cluster_id)" -c "$d/server.properties" >"$d/format.log" 2>&1 ||
      { log "cluster node $n: formatting failed:"; cat "$d/format.log" >&2; exit 1; }
  fi
  log "starting cluster node $n on 127.0.0.1:$(node_broker_port "$n") (controller :$(node_controller_port "$n"))"
  # shellcheck disable=SC2046
  nohup java $(node_jopts "$n") -cp "$cp" kafka.Kafka "$d/server.properties" >"$d/stdout.log" 2>&1 </dev/null &
  echo $! >"$d/pid"
  # $! is the forked shell until it has become the JVM.
  local i
  for i in $(seq 1 100); do node_pid "$n" >/dev/null && return; sleep 0.1; done
  log "cluster node $n did not start; see $d/stdout.log"; exit 1
}

# wait_node N waits until node N answers and lists every running node as a broker.
wait_node() {
  local n=$1 i running seen
  for i in $(seq 1 240); do
    if ! node_pid "$n" >/dev/null; then
      log "cluster node $n exited; last lines of its logs:"
      tail -30 "$(node_dir "$n")/stdout.log" "$(node_dir "$n")/server.log" >&2 2>/dev/null || true
      exit 1
    fi
    running=0
    for j in $(seq 1 "$(cluster_size)"); do if node_pid "$j" >/dev/null; then running=$((running + 1)); fi; done
    seen=$(brokers_seen "$n")
    if [ -n "$seen" ] && [ "$seen" -ge "$running" ]; then log "cluster node $n ready ($seen brokers)"; return; fi
    sleep 0.5
  done
  log "cluster node $n did not answer within 120s; last lines of its logs:"
  tail -30 "$(node_dir "$n")/stdout.log" "$(node_dir "$n")/server.log" >&2 2>/dev/null || true
  exit 1
}

# signal_nodes SIGNAL N... signals the nodes that run, waits up to 60s for them to exit, then
# kills what is left.
signal_nodes() {
  local sig=$1 n pid i left
  shift
  declare -A pids=()
  for n in "$@"; do
    if pid=$(node_pid "$n"); then kill "-$sig" "$pid" 2>/dev/null || true; pids[$n]=$pid; fi
  done
  for i in $(seq 1 120); do
    left=0
    for n in "${!pids[@]}"; do if node_pid "$n" >/dev/null; then left=1; fi; done
    [ "$left" = 0 ] && break
    sleep 0.5
  done
  for n in "${!pids[@]}"; do
    if pid=$(node_pid "$n"); then log "cluster node $n ignored SIG$sig for 60s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
    while node_pid "$n" >/dev/null; do sleep 0.1; done
    rm -f "$(node_dir "$n")/pid"
    log "cluster node $n stopped (SIG$sig)"
  done
}

cluster_env() {
  local n addrs=""
  for n in $(seq 1 "$(cluster_size)"); do addrs+="${addrs:+,}127.0.0.1:$(node_broker_port "$n")"; done
  echo "export FIELDWORK_TEST_CLUSTER_BROKERS=$addrs"
}

cluster_cmd() {
  local cmd=${1:-status} n
  shift || true
  cluster_load
  local all; all=$(seq 1 "$(cluster_size)")
  if [ -n "${1:-}" ]; then check_node "$1"; fi
  case "$cmd" in
    start)
      mkdir -p "$STATE" "$cluster_dir"
      install_missing
      fetch_kafka
      [ -f "$cluster_dir/ports" ] || (IFS=,; echo "${cluster_ports[*]}") >"$cluster_dir/ports"
      # Every node first: a node answers only once a majority of the voters runs.
      for n in ${1:-$all}; do launch_node "$n"; done
      for n in ${1:-$all}; do wait_node "$n"; done
      cluster_env
      ;;
    stop) signal_nodes TERM ${1:-$all} ;;
    kill) signal_nodes KILL ${1:-$all} ;;
    restart)
      [ -n "${1:-}" ] || { log "usage: $0 cluster restart N"; exit 2; }
      signal_nodes TERM "$1"
      launch_node "$1"
      wait_node "$1"
      ;;
    status)
      for n in $all; do
        if pid=$(node_pid "$n"); then echo "cluster node $n: up on 127.0.0.1:$(node_broker_port "$n") (pid $pid)"
        else echo "cluster node $n: down"; fi
      done
      ;;
    env) cluster_env ;;
    *) echo "usage: $0 cluster start|stop|kill [N] | restart N | status | env" >&2; exit 2 ;;
  esac
}

print_env() {
  cat <<EOF
export FIELDWORK_TEST_BROKERS=127.0.0.1:$KAFKA_PORT
export FIELDWORK_TEST_SASL_BROKERS=127.0.0.1:$KAFKA_SASL_PORT
export FIELDWORK_TEST_SASL_USER=$SASL_USER
export FIELDWORK_TEST_SASL_PASSWORD=$SASL_PASSWORD
export FIELDWORK_TEST_DSN='postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB?sslmode=disable'
export FIELDWORK_TEST_SECURE_BROKERS=127.0.0.1:$KAFKA_SASL_SSL_PORT
export FIELDWORK_TEST_MTLS_BROKERS=127.0.0.1:$KAFKA_MTLS_PORT
export FIELDWORK_TEST_CA_FILE=$tls_dir/ca.pem
export FIELDWORK_TEST_CA_KEY_FILE=$tls_dir/ca.key
export FIELDWORK_TEST_TLS_DSN='postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB?sslmode=verify-full&sslrootcert=$tls_dir/ca.pem'
export FIELDWORK_TEST_SCHEMA_REGISTRY=$(registry_url)
export FIELDWORK_TEST_SCHEMA_REGISTRY_USER=$REGISTRY_USER
export FIELDWORK_TEST_SCHEMA_REGISTRY_PASSWORD=$REGISTRY_PASSWORD
export FIELDWORK_TEST_SPRING_CLASSPATH='$spring_dir/libs/*'
export FIELDWORK_TEST_PYTHON=$python_dir/bin/python
EOF
}

case "${1:-start}" in
  start)
    mkdir -p "$STATE"
    install_missing
    make_tls
    start_postgres
    start_kafka
    fetch_spring
    python_env
    start_registry
    print_env
    ;;
  stop)
    stop_registry
    stop_kafka
    stop_postgres
    stop_durable_postgres
    # The fault tests' cluster too, where they started it (they start it again when needed).
    (cluster_cmd stop)
    ;;
  status)
    if pg_ready; then echo "postgres: up on 127.0.0.1:$PG_PORT"; else echo "postgres: down"; fi
    if command -v kcat >/dev/null && kafka_ready; then echo "kafka: up on 127.0.0.1:$KAFKA_PORT"; else echo "kafka: down"; fi
    if registry_ready; then echo "schema registry: up on 127.0.0.1:$REGISTRY_PORT"; else echo "schema registry: down"; fi
    if [ -d "$cluster_dir" ]; then (cluster_cmd status); fi
    ;;
  registry)
    case "${2:-start}" in
      start) mkdir -p "$STATE"; install_missing; start_registry; print_env ;;
      stop) stop_registry ;;
      *) echo "usage: $0 registry start|stop" >&2; exit 2 ;;
    esac
    ;;
  env) print_env ;;
  perf-classpath)
    fetch_kafka
    fetch_kafka_tools
    echo "$kafka_dir/tools/*:$kafka_dir/libs/*"
    ;;
  python)
    install_missing
    python_env
    echo "$python_dir/bin/python"
    ;;
  spring-classpath)
    fetch_spring
    echo "$spring_dir/libs/*"
    ;;
  durable-postgres)
    case "${2:-start}" in
      start)
        mkdir -p "$STATE"; install_missing; start_durable_postgres
        echo "export FIELDWORK_BENCH_DURABLE_DSN='postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_DURABLE_PORT/$PG_DB?sslmode=disable'"
        ;;
      stop) stop_durable_postgres ;;
      *) echo "usage: $0 durable-postgres start|stop" >&2; exit 2 ;;
    esac
    ;;
  cluster) shift; cluster_cmd "$@" ;;
  *) echo "usage: $0 start|stop|status|env|python|perf-classpath|spring-classpath | registry start|stop | durable-postgres start|stop | cluster start|stop|kill|restart|status|env" >&2; exit 2 ;;
esac
