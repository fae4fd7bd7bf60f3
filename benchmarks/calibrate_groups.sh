#!/usr/bin/env bash
# Calibration runs of several groups of claims inside one deadline, for a machine lent for a
# while (the device host's 16 CPU cores, say), whose runs are merged into the table elsewhere.
#
#   benchmarks/calibrate_groups.sh --groups FILE --seeds A-B --out DIR
#       [--tier quick|full (full)] [--workers N (seeds at a time, 10)] [--budget SECONDS (450)]
#
# Each line of FILE is one group: claim ids or paper keys, separated by blanks ('#' starts a
# comment line). The groups run in
# file order, one `theorycheck calibrate GROUP --seeds A-B --tier T -n N --runs DIR/gK` each (K
# the line number), the next one only while time is left. The seeds of a group run at the same
# time; at the deadline the group in progress is interrupted and each of its seeds writes a
# partial results.json with the claims it finished (pytest runs a group's claims in file order),
# so put the cheapest groups first and merge only claims that every seed finished.
# DIR/summary.txt gets "gK status seconds whole-seeds" the moment a group ends; at the end DIR is
# packed into DIR.tar.gz (each seed's results.json and log, no plots or pages). Merge group K
# into the table where the repository is:
#
#   theorycheck calibrate $(sed -n Kp FILE) --seeds A-B --tier T --from-runs DIR/gK
#
# One thread a process (the seeds are the parallelism). Exit 0 when every group ran whole, 3 when
# the deadline cut or skipped one, 2 on bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.."

TIER=full
WORKERS=10
BUDGET=450
GRACE=40      # seconds an interrupted seed has to write its report before it is killed
RESERVE=$((GRACE + 10))
DEFAULT_SIGINT='import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])'
PY=${PYTHON:-python3}
usage() { sed -n '2,22p' "$0"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --groups) GROUPS_FILE="$2"; shift ;;
    --seeds) SEEDS="$2"; shift ;;
    --out) DIR="$2"; shift ;;
    --tier) TIER="$2"; shift ;;
    --workers) WORKERS="$2"; shift ;;
    --budget) BUDGET="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "calibrate_groups.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for need in "groups:${GROUPS_FILE:-}" "seeds:${SEEDS:-}" "out:${DIR:-}"; do
  [ -n "${need#*:}" ] || { echo "calibrate_groups.sh: --${need%%:*} is required (see --help)" >&2; exit 2; }
done
[ -f "$GROUPS_FILE" ] || { echo "calibrate_groups.sh: no groups file '$GROUPS_FILE'" >&2; exit 2; }
case "$BUDGET$WORKERS" in *[!0-9]*) echo "calibrate_groups.sh: --budget and --workers take counts" >&2; exit 2 ;; esac

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1
mkdir -p "$DIR"
SUMMARY="$DIR/summary.txt"
: > "$SUMMARY"
DEADLINE=$(( $(date +%s) + BUDGET ))
status=0
k=0
while read -r group; do
  k=$((k + 1))
  case "$group" in ''|'#'*) continue ;; esac
  left=$(( DEADLINE - RESERVE - $(date +%s) ))
  if [ "$left" -le 5 ]; then
    echo "g$k skipped 0 0" >> "$SUMMARY"; status=3; continue
  fi
  t0=$(date +%s)
  # At the deadline timeout interrupts its whole process group (SIGINT): each seed's pytest
  # stops after its current test and writes the claims it finished (results.json, "partial").
  # A job started in the background inherits SIGINT ignored, so it is reset before Python starts.
  timeout -s INT --kill-after="$GRACE" "$left" $PY -c "$DEFAULT_SIGINT" \
    $PY -m theorycheck calibrate $group --seeds "$SEEDS" --tier "$TIER" -n "$WORKERS" \
    --runs "$DIR/g$k" --out "$DIR/g$k.json" --markdown "$DIR/g$k.md" > "$DIR/g$k.log" 2>&1
  rc=$?
  case $rc in 0) what=ok ;; 124|137) what=timeout; status=3 ;; *) what="failed(rc=$rc)"; status=3 ;; esac
  kept=$(grep -L '"partial_reason": "stopped early"' "$DIR/g$k"/seed*/results.json 2>/dev/null | wc -l)
  echo "g$k $what $(( $(date +%s) - t0 )) $kept" >> "$SUMMARY"
done < "$GROUPS_FILE"

(cd "$(dirname "$DIR")" && tar czf "$(basename "$DIR").tar.gz" --exclude=plots --exclude='*.html' \
  --exclude='*.png' "$(basename "$DIR")")
cat "$SUMMARY"
exit $status
