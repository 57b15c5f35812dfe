#!/usr/bin/env bash
# Runbook (b): a consumer bug was fixed; what it processed in a time window must be processed
# again. Page: docs/runbooks/reprocess-window.md
#
#   reprocess-window.sh forget    list the markers CONSUMER wrote in [SINCE, UNTIL) for TOPIC,
#                                 save their offsets, and delete the markers
#   reprocess-window.sh replay    replay exactly those offsets from TOPIC into REPLAY_TO
#   reprocess-window.sh confirm   exit 0 when every replayed offset has a marker again, 3 if not
#
# Environment: TOPIC, CONSUMER, SINCE, UNTIL (RFC 3339, or a duration ago like 3h: when the
# buggy release ran), REPLAY_TO (a topic the consumer group also reads; fieldwork never
# writes into the topic it reads), REASON (for replay), WORKDIR (where the list of offsets is
# kept between steps, default ./reprocess-$TOPIC), WAIT (seconds confirm waits, default 0);
# connection: FIELDWORK_BROKERS, FIELDWORK_DSN (or FIELDWORK_CONTEXT). Needs jq.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need TOPIC CONSUMER
WORKDIR=${WORKDIR:-./reprocess-$TOPIC}
ranges=$WORKDIR/ranges.tsv # partition, first offset, last offset

case "${1:-}" in
forget)
  need SINCE UNTIL
  mkdir -p "$WORKDIR"
  step "1. The markers $CONSUMER wrote between $SINCE and $UNTIL"
  : >"$WORKDIR/markers.jsonl"
  cursor=""
  while :; do
    args=(processed list --consumer "$CONSUMER" --since "$SINCE" --until "$UNTIL" --limit 100000 -o jsonl)
    [ -n "$cursor" ] && args+=(--cursor "$cursor")
    expect 0 "$fw" "${args[@]}" >>"$WORKDIR/markers.jsonl" 2>"$WORKDIR/list.err"
    cursor=$(sed -n 's/^next cursor: \([^ ]*\).*/\1/p' "$WORKDIR/list.err")
    [ -n "$cursor" ] || break
  done
  jq -r --arg t "$TOPIC" 'select(.topic == $t) | .event_id' "$WORKDIR/markers.jsonl" >"$WORKDIR/ids.txt"
  jq -rs --arg t "$TOPIC" 'map(select(.topic == $t)) | group_by(.partition)[]
    | [.[0].partition, (map(.offset) | min), (map(.offset) | max)] | @tsv' "$WORKDIR/markers.jsonl" >"$ranges"
  n=$(grep -c . "$WORKDIR/ids.txt" || true)
  echo "$n marker(s) of $TOPIC in the window; offsets per partition in $ranges:" >&2
  cat "$ranges" >&2
  if [ "$n" -eq 0 ]; then
    echo "nothing to reprocess"
    exit 0
  fi
  step "2. Forget them, so that the consumer applies those events again"
  expect 0 "$fw" processed forget --execute --from-file "$WORKDIR/ids.txt" --consumer "$CONSUMER" --yes -o table
  ;;
replay)
  need REPLAY_TO REASON
  [ -s "$ranges" ] || { echo "runbook: run the forget step first (no $ranges)" >&2; exit 2; }
  step "Replay the forgotten offsets of $TOPIC into $REPLAY_TO"
  # --skip-processed leaves out the events in those ranges that were not forgotten.
  while IFS=$'\t' read -r p first last; do
    expect 0 "$fw" replay --topic "$TOPIC" --partition "$p" --start-offset "$first" --end-offset "$last" \
      --to "$REPLAY_TO" --skip-processed --consumer "$CONSUMER" --execute --yes --reason "$REASON" -o table
  done <"$ranges"
  ;;
confirm)
  [ -s "$ranges" ] || { echo "runbook: run the forget step first (no $ranges)" >&2; exit 2; }
  step "Every reprocessed event has a marker again? (waiting up to ${WAIT:-0}s)"
  checked() {
    local p first last rc all=0
    while IFS=$'\t' read -r p first last; do
      rc=0
      "$fw" processed check --topic "$TOPIC" --consumer "$CONSUMER" --partition "$p" \
        --start-offset "$first" --end-offset "$last" -o table >"$WORKDIR/check-$p.txt" || rc=$?
      case $rc in
        0) ;;
        3) all=3 ;;
        *) echo "runbook: stopped: processed check exited $rc" >&2; cat "$WORKDIR/check-$p.txt" >&2; exit "$rc" ;;
      esac
    done <"$ranges"
    return $all
  }
  if poll "${WAIT:-0}" checked; then
    echo "reprocessed: every event of the window has a marker for $CONSUMER again"
    exit 0
  fi
  cat "$WORKDIR"/check-*.txt
  echo "not reprocessed yet: see the missing events above" >&2
  exit 3
  ;;
*)
  echo "usage: $0 forget|replay|confirm" >&2
  exit 2
  ;;
esac
