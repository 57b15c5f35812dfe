# Shared by the runbook scripts: how a step is announced and how exit codes are checked.
# fieldwork's exit codes: 0 ok, 1 error, 2 usage, 3 a check found problems, 4 cannot connect
# or authenticate, 130 interrupted.

fw=${FIELDWORK:-fieldwork}

# step TITLE: announce a step on stderr.
step() { printf '\n== %s\n' "$*" >&2; }

# show CMD...: print a command the way the person on call would type it, then run it.
show() {
  printf '$ %s\n' "$*" >&2
  "$@"
}

# expect ALLOWED CMD...: run CMD; return its exit code if it is one of ALLOWED (comma-separated),
# otherwise stop the runbook with that code and say which step failed.
expect() {
  local allowed=$1 rc=0
  shift
  show "$@" || rc=$?
  case ",$allowed," in
    *",$rc,"*) return "$rc" ;;
  esac
  printf 'runbook: stopped: `%s` exited %d\n' "$*" "$rc" >&2
  exit "$rc"
}

# need VAR...: stop with a usage error unless every variable is set.
need() {
  local v
  for v in "$@"; do
    if [ -z "${!v:-}" ]; then
      printf 'runbook: set %s (see the runbook page)\n' "$v" >&2
      exit 2
    fi
  done
}

# poll SECONDS CMD...: run CMD every 2s until it exits 0 or SECONDS pass; return its last code.
poll() {
  local deadline=$((SECONDS + $1)) rc=0
  shift
  while :; do
    rc=0
    "$@" || rc=$?
    if [ "$rc" -eq 0 ] || [ "$SECONDS" -ge "$deadline" ]; then return "$rc"; fi
    sleep 2
  done
}
