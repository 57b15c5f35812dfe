#!/usr/bin/env bash
# Runbook (c): after an outage, prove that a consumer processed every event of a range.
# Page: docs/runbooks/prove-range.md
#
#   prove-range.sh   exit 0 when every event of the range has a marker for CONSUMER; exit 3 and
#                    list the missing ones (all of them in $WORKDIR/missing.jsonl) when not, or
#                    exit 3 naming the most common reason when the range could not be read
#
# Environment: TOPIC, CONSUMER (required); the range: SINCE and UNTIL (RFC 3339 or a duration
# ago), or PARTITION with START and END offsets (inclusive); WORKDIR (default ./prove-$TOPIC);
# connection: FIELDWORK_BROKERS, FIELDWORK_DSN (or FIELDWORK_CONTEXT).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need TOPIC CONSUMER
WORKDIR=${WORKDIR:-./prove-$TOPIC}
mkdir -p "$WORKDIR"

range=()
[ -n "${SINCE:-}" ] && range+=(--since "$SINCE")
[ -n "${UNTIL:-}" ] && range+=(--until "$UNTIL")
[ -n "${PARTITION:-}" ] && range+=(--partition "$PARTITION")
[ -n "${START:-}" ] && range+=(--start-offset "$START")
[ -n "${END:-}" ] && range+=(--end-offset "$END")

step "1. Which events of $TOPIC ${range[*]:-(whole topic)} have no marker for $CONSUMER"
rc=0
expect 0,3 "$fw" processed check --topic "$TOPIC" --consumer "$CONSUMER" "${range[@]}" -o json \
  >"$WORKDIR/check.json" || rc=$?
jq -r '"records \(.records_read)  events \(.events)  with marker \(.with_marker)  missing \(.missing)  malformed \(.malformed)"' \
  "$WORKDIR/check.json"
if [ "$rc" -eq 0 ]; then
  echo "proven: every event of the range has a marker for $CONSUMER"
  exit 0
fi
if [ "$(jq -r .unreadable "$WORKDIR/check.json")" = true ]; then
  jq -r '"not proven: the range could not be read: \(.malformed) of \(.records_read) records are no event; most common reason (\(.dominant_malformed.records) records): \(.dominant_malformed.problem)"' \
    "$WORKDIR/check.json" >&2
  echo "Read them first (a schema registry to pass, a producer writing another format): fieldwork inspect validate $TOPIC" >&2
  exit 3
fi

step "2. The missing events, every one of them"
expect 3 "$fw" processed check --topic "$TOPIC" --consumer "$CONSUMER" "${range[@]}" -o jsonl \
  >"$WORKDIR/missing.jsonl" || true
n=$(grep -c . "$WORKDIR/missing.jsonl" || true)
head -20 "$WORKDIR/missing.jsonl"
cat >&2 <<MSG
not proven: $n event(s) have no marker; all of them are in $WORKDIR/missing.jsonl.
Replay them into a topic the consumer reads, for example one at a time:
  jq -r '"\(.topic)/\(.partition)/\(.offset)"' $WORKDIR/missing.jsonl | while read -r rec; do
    $fw replay "\$rec" --to $TOPIC.replay --execute --yes --reason "…"; done
MSG
exit 3
