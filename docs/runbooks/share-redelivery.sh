#!/usr/bin/env bash
# Runbook (g): a share group is redelivering the same record.
# Page: docs/runbooks/share-redelivery.md
#
#   share-redelivery.sh diagnose   the group's members, start offsets and lag per partition
#   share-redelivery.sh check      where a record goes when it is rejected or exhausts its
#                                  deliveries: a dead-letter topic, or archived and lost (exit 3)
#   share-redelivery.sh confirm    exit 0 once the record at TOPIC/PARTITION/OFFSET has its dead
#                                  letter in the group's DLQ topic and the group has no lag;
#                                  3 while not
#
# Environment: GROUP (required); TOPIC, PARTITION, OFFSET (the record, for confirm); WAIT
# (seconds confirm waits, default 0); and the connection: FIELDWORK_BROKERS (or
# FIELDWORK_CONTEXT).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
diagnose)
  need GROUP
  step "1. Members, start offsets, lag, and the dead-letter path"
  expect 0 "$fw" groups describe "$GROUP" --interval 0 -o table
  ;;
check)
  need GROUP
  step "Where does a rejected or exhausted record go?"
  # 3: the broker would archive it with no dead letter. Fix the path before it reaches the limit.
  expect 0,3 "$fw" groups check "$GROUP" -o table || exit $?
  ;;
confirm)
  need GROUP TOPIC PARTITION OFFSET
  dlq=$("$fw" groups check "$GROUP" -o json | jq -r '.[0].dlq_topic')
  step "Has $TOPIC/$PARTITION/$OFFSET reached $dlq, and the group caught up? (waiting up to ${WAIT:-0}s)"
  settled() {
    local n lag
    n=$("$fw" dlq list --topic "$dlq" --no-status --limit 0 -o json | jq --arg t "$TOPIC" --arg p "$PARTITION" --arg o "$OFFSET" \
      '[.[] | select(any(.headers[]; .key == "__dlq.errors.topic" and .value == $t)
                and any(.headers[]; .key == "__dlq.errors.partition" and .value == $p)
                and any(.headers[]; .key == "__dlq.errors.offset" and .value == $o))] | length')
    lag=$("$fw" groups describe "$GROUP" --interval 0 -o json | jq .total_lag)
    printf 'dead letters of %s/%s/%s in %s: %s; group %s lag %s\n' "$TOPIC" "$PARTITION" "$OFFSET" "$dlq" "$n" "$GROUP" "$lag" >&2
    [ "$n" -gt 0 ] && [ "$lag" -eq 0 ]
  }
  if poll "${WAIT:-0}" settled; then
    echo "settled: $TOPIC/$PARTITION/$OFFSET is in $dlq and group $GROUP has no lag"
    exit 0
  fi
  echo "not settled: the record is still redelivered, or was archived without a dead letter (share-redelivery.sh check)" >&2
  exit 3
  ;;
*)
  echo "usage: $0 diagnose|check|confirm" >&2
  exit 2
  ;;
esac
