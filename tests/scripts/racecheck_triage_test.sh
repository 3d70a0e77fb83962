#!/usr/bin/env bash
# scripts/racecheck-triage on fixed logs: the known bulk-copy pattern passes (0), any other report
# fails (1) and names the report, a log without a summary is unusable (2).
set -u
triage=${1:?path to scripts/racecheck-triage}; data=${2:?fixture folder}
fail=0
expect() {  # expect RC LOG PATTERN
  local out rc
  out=$(python3 "$triage" "$data/$2" 2>&1); rc=$?
  if [[ $rc -ne $1 ]]; then echo "FAIL: $2: rc $rc, want $1"; echo "$out"; fail=1; return; fi
  if [[ -n ${3:-} ]] && ! grep -q -- "$3" <<<"$out"; then echo "FAIL: $2: output lacks '$3'"; echo "$out"; fail=1; return; fi
  echo "ok: $2 -> $rc"
}
expect 0 known.log "0 other report(s)"
expect 1 other.log "2 other report(s)"
expect 1 other.log "some_kernel"
expect 2 unfinished.log "did not finish"
expect 2 missing.log "cannot read"
exit $fail
