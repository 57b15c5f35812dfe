#!/usr/bin/env bash
# Runbook (e): a consumer group is stuck on a poison record.
# Page: docs/runbooks/group-stuck.md
#
#   group-stuck.sh diagnose   is the group stuck, where, on which record
#   group-stuck.sh plan       what the skip would park and commit; changes nothing
#   group-stuck.sh skip       park the record in the dead-letter topic, commit past it (needs REASON)
#   group-stuck.sh undo       restore the offsets of the skip RUN (needs RUN and REASON)
#   group-stuck.sh confirm    exit 0 once the group has caught up, 3 while it is still behind
#
# Environment: GROUP, TOPIC, PARTITION (required); COUNT (records to park, default 1); REASON
# (why you skip: required for skip and undo); RUN (the skip to undo); INTERVAL (seconds between
# the two reads of diagnose, default 5); WAIT (seconds confirm waits, default 0); and the
# connection: FIELDWORK_BROKERS, FIELDWORK_DSN (or FIELDWORK_CONTEXT).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
diagnose)
  need GROUP
  step "1. Members, commits, lag, and which commits did not move over ${INTERVAL:-5}s"
  expect 0 "$fw" groups describe "$GROUP" --interval "${INTERVAL:-5}s" -o table
  ;;
plan)
  need GROUP TOPIC PARTITION
  step "The record the group is stuck on, and what the skip would do (nothing changes)"
  # 1 means the group still has members: stop them first (the output names them).
  expect 0 "$fw" groups skip "$GROUP" --topic "$TOPIC" --partition "$PARTITION" --count "${COUNT:-1}" -o table
  ;;
skip)
  need GROUP TOPIC PARTITION REASON
  step "Park the record in the dead-letter topic, then commit the group past it (journaled)"
  expect 0 "$fw" groups skip "$GROUP" --topic "$TOPIC" --partition "$PARTITION" --count "${COUNT:-1}" \
    --execute --yes --reason "$REASON" -o table
  ;;
undo)
  need RUN REASON
  step "Restore the offsets skip $RUN moved"
  expect 0 "$fw" groups skip --undo "$RUN" --execute --yes --reason "$REASON" -o table
  ;;
confirm)
  need GROUP
  step "Has the group caught up? (waiting up to ${WAIT:-0}s)"
  behind() {
    local out rc=0 lag
    out=$("$fw" groups describe "$GROUP" --interval 0 -o json) || rc=$?
    if [ "$rc" -ne 0 ]; then
      printf 'runbook: stopped: groups describe exited %d\n' "$rc" >&2
      exit "$rc"
    fi
    lag=$(printf '%s' "$out" | jq .total_lag)
    printf 'group %s: lag %s\n' "$GROUP" "$lag" >&2
    [ "$lag" -eq 0 ]
  }
  if poll "${WAIT:-0}" behind; then
    echo "caught up: group $GROUP has no lag"
    exit 0
  fi
  expect 0 "$fw" groups describe "$GROUP" --interval 0 -o table
  echo "still behind: see the partitions above" >&2
  exit 3
  ;;
*)
  echo "usage: $0 diagnose|plan|skip|undo|confirm" >&2
  exit 2
  ;;
esac
