#!/usr/bin/env bash
# Runbook (e): one event is bad (a wrong field, a typo in its type): fix it by hand and replay
# the fixed copy, for the consumer group that failed on it only.
# Page: docs/runbooks/fix-event.md
#
#   fix-event.sh show      the dead letter in full: error, headers, the decoded event, the value
#   fix-event.sh plan      the edit's diff and the replay plan; sends nothing
#   fix-event.sh replay    send the edited copy (journaled; needs REASON)
#   fix-event.sh confirm   exit 0 once the dead letter is resolved, 3 otherwise
#
# Environment: RECORD (the dead letter, topic/partition/offset) and CONSUMER (required);
# VALUE_FILE (the fixed value; without it `plan` and `replay` open the value in $EDITOR);
# HEADERS (optional, KEY=VALUE pairs separated by spaces, set on the copy); REASON (why:
# required for `replay`); WAIT (seconds `confirm` waits for the consumer, default 0); and the
# connection: FIELDWORK_BROKERS, FIELDWORK_DSN (or FIELDWORK_CONTEXT).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need RECORD CONSUMER

edit=()
if [ -n "${VALUE_FILE:-}" ]; then
  edit+=(--value-file "$VALUE_FILE")
else
  edit+=(--edit)
fi
for h in ${HEADERS:-}; do
  edit+=(--set-header "$h")
done

status() {
  "$fw" dlq show "$RECORD" --consumer "$CONSUMER" -o json | jq -r '.status // "unknown"'
}

case "${1:-}" in
show)
  step "1. The dead letter: why it failed, its headers, the decoded event and its value"
  expect 0 "$fw" dlq show "$RECORD" --consumer "$CONSUMER" -o table
  ;;
plan)
  step "2. The fixed copy: its diff, and where it goes (nothing is sent)"
  expect 0 "$fw" replay "$RECORD" "${edit[@]}" --for-group "$CONSUMER" -o table
  ;;
replay)
  need REASON
  step "3. Send the fixed copy, for $CONSUMER only (the other groups skip it)"
  expect 0 "$fw" replay "$RECORD" "${edit[@]}" --for-group "$CONSUMER" --execute --yes --reason "$REASON" -o table
  ;;
confirm)
  step "4. Is the dead letter resolved? (waiting up to ${WAIT:-0}s for the consumer)"
  resolved() {
    local st
    st=$(status)
    printf '%s is %s for %s\n' "$RECORD" "$st" "$CONSUMER" >&2
    [ "$st" = resolved ]
  }
  if poll "${WAIT:-0}" resolved; then
    echo "resolved: $CONSUMER processed the fixed copy of $RECORD"
    exit 0
  fi
  expect 0 "$fw" dlq show "$RECORD" --consumer "$CONSUMER" -o table
  echo "not resolved: see above (a copy that failed again is a new dead letter: dlq list --consumer $CONSUMER)" >&2
  exit 3
  ;;
*)
  echo "usage: $0 show|plan|replay|confirm" >&2
  exit 2
  ;;
esac
