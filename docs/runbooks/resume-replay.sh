#!/usr/bin/env bash
# Runbook (d): a replay was interrupted (killed, a lost connection, Ctrl-C) and must be
# finished without sending again what was already acknowledged.
# Page: docs/runbooks/resume-replay.md
#
#   resume-replay.sh   find the run (RUN, or the newest that did not complete), show it,
#                      resume it, and exit 0 once the journal says completed
#
# Environment: RUN (optional), FORCE=1 to take over a run whose owner may still be alive;
# connection: FIELDWORK_BROKERS, FIELDWORK_DSN (or FIELDWORK_CONTEXT). Needs jq.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

step "1. The journal's recent runs"
expect 0 "$fw" replay runs --limit 10 -o table
if [ -z "${RUN:-}" ]; then
  RUN=$("$fw" replay runs -o jsonl | jq -r 'select(.status != "completed") | .run_id' | head -1)
  if [ -z "$RUN" ]; then
    echo "every journaled run is completed: nothing to resume"
    exit 0
  fi
fi

step "2. What run $RUN had done: its checkpoints per partition"
expect 0 "$fw" replay show "$RUN" -o table

step "3. Resume it from its checkpoints (the end offsets are the ones it planned)"
resume=(replay resume "$RUN" --execute --yes)
[ "${FORCE:-}" = 1 ] && resume+=(--force)
# 3: some records hit the loop guard and were quarantined; they are listed, not sent.
rc=0
expect 0,3 "$fw" "${resume[@]}" -o table || rc=$?

step "4. Confirm"
status=$("$fw" replay show "$RUN" -o json | jq -r .status)
if [ "$status" != completed ]; then
  echo "run $RUN is $status, not completed" >&2
  exit 1
fi
echo "completed: run $RUN"
exit "$rc"
