#!/usr/bin/env bash
# Runbook (a): poison messages are piling up in a dead-letter topic.
# Page: docs/runbooks/dlq-poison.md
#
#   dlq-poison.sh triage     what is in the DLQ (by reason and error), what is still pending
#   dlq-poison.sh plan       the replay plan for the fixable dead letters; sends nothing
#   dlq-poison.sh replay     execute that replay (journaled; needs REASON)
#   dlq-poison.sh confirm    exit 0 when every fixable dead letter is resolved, 3 otherwise
#
# Environment: DLQ, CONSUMER (required); REASONS (fixable dead-letter reasons, default
# exhausted,rejected,unsupported); REASON (why you replay: required for `replay`); WAIT
# (seconds `confirm` waits for the consumer to catch up, default 0); and the connection:
# FIELDWORK_BROKERS, FIELDWORK_DSN (or FIELDWORK_CONTEXT).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need DLQ CONSUMER
REASONS=${REASONS:-exhausted,rejected,unsupported}

case "${1:-}" in
triage)
  step "1. How much, why, and how close the oldest is to deletion"
  expect 0 "$fw" dlq stats --topic "$DLQ" --group-by reason,error_class --consumer "$CONSUMER" -o table
  step "2. What still needs work"
  expect 0 "$fw" dlq list --topic "$DLQ" --consumer "$CONSUMER" --status pending --limit 20 -o table
  step "3. Malformed records: no replay can fix these; the producer must"
  expect 0 "$fw" dlq list --topic "$DLQ" --dlq-reason malformed --no-status --limit 20 -o table
  ;;
plan)
  step "Replay plan for the pending $REASONS dead letters (nothing is sent)"
  # 3 means some records hit the loop guard (--max-replays): look at them before replaying.
  expect 0 "$fw" replay --topic "$DLQ" --dlq-reason "$REASONS" --status pending --consumer "$CONSUMER" -o table
  ;;
replay)
  need REASON
  step "Replay the pending $REASONS dead letters to their original topics"
  expect 0 "$fw" replay --topic "$DLQ" --dlq-reason "$REASONS" --status pending --consumer "$CONSUMER" \
    --execute --yes --reason "$REASON" -o table
  ;;
confirm)
  step "Every fixable dead letter resolved? (waiting up to ${WAIT:-0}s for the consumer)"
  left() {
    local out rc=0 n
    out=$("$fw" dlq list --topic "$DLQ" --consumer "$CONSUMER" --dlq-reason "$REASONS" \
      --status pending,replayed --limit 0 -o jsonl) || rc=$?
    if [ "$rc" -ne 0 ]; then
      printf 'runbook: stopped: dlq list exited %d\n' "$rc" >&2
      exit "$rc"
    fi
    n=$(printf '%s' "$out" | grep -c . || true)
    printf '%s dead letter(s) of %s not resolved yet\n' "$n" "$REASONS" >&2
    [ "$n" -eq 0 ]
  }
  if poll "${WAIT:-0}" left; then
    echo "resolved: every $REASONS dead letter in $DLQ has a marker for $CONSUMER"
    exit 0
  fi
  expect 0 "$fw" dlq list --topic "$DLQ" --consumer "$CONSUMER" --dlq-reason "$REASONS" --status pending,replayed -o table
  echo "not resolved: see the list above" >&2
  exit 3
  ;;
*)
  echo "usage: $0 triage|plan|replay|confirm" >&2
  exit 2
  ;;
esac
