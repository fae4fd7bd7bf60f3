#!/usr/bin/env bash
# The full tier whole at one frozen commit, in shards that survive interruptions.
#
#   benchmarks/full_tier.sh --dir /work/fulltier                 # start, or resume, at HEAD
#   benchmarks/full_tier.sh --dir DIR --commit REV --shards 12   # a given commit
#   options: --tier full|quick (full), --seed S (0), --claims PATH (claims), --nice N (0),
#            --shards N (12), --python PY (the python running this checkout's pytest)
#
# DIR gets a git worktree of the commit (DIR/tree; the commit and settings in DIR/COMMIT: a
# later call with another commit or other settings is refused, so no run mixes code), one cache of shared runs (DIR/cache) and a
# run folder per shard (DIR/runs/shard-I). Shards run one after the other, one process each
# (the claims use one thread); a shard that finished (pytest exit 0 or 1, results written) is
# marked DONE and skipped by the next call, so a cut run resumes where it stopped: the shared
# runs a cut shard computed are in the cache. When every shard is done, the shards are merged
# into DIR/runs/full (`theorycheck merge`) and its cost table and schedules are written to
# DIR/runs/full/costs.md (`theorycheck schedule --markdown`). Exit 0 when complete, 3 while
# shards remain (after an interruption), 2 on bad arguments.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

DIR="" COMMIT="" SHARDS=12 TIER=full SEED=0 CLAIMS=claims NICE=0
PY=${PYTHON:-$(command -v python3)}
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR="$2"; shift ;;
    --commit) COMMIT="$2"; shift ;;
    --shards) SHARDS="$2"; shift ;;
    --tier) TIER="$2"; shift ;;
    --seed) SEED="$2"; shift ;;
    --claims) CLAIMS="$2"; shift ;;
    --nice) NICE="$2"; shift ;;
    --python) PY="$2"; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "full_tier.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$DIR" ] || { echo "full_tier.sh: --dir DIR is required" >&2; exit 2; }
case "$PY" in /*) ;; */*) PY="$PWD/$PY" ;; *) PY=$(command -v "$PY") ;; esac
[ -x "$PY" ] || { echo "full_tier.sh: no python at '$PY' (--python)" >&2; exit 2; }
[[ "$SHARDS" =~ ^[1-9][0-9]*$ ]] || { echo "full_tier.sh: --shards must be a positive integer, got '$SHARDS'" >&2; exit 2; }
REV=$(git -C "$ROOT" rev-parse --verify "${COMMIT:-HEAD}^{commit}" 2>/dev/null) \
  || { echo "full_tier.sh: unknown commit '${COMMIT:-HEAD}'" >&2; exit 2; }

mkdir -p "$DIR/runs"
DIR=$(cd "$DIR" && pwd)
SETTINGS="$REV tier=$TIER seed=$SEED shards=$SHARDS claims=$CLAIMS"
if [ -f "$DIR/COMMIT" ]; then
  [ "$(cat "$DIR/COMMIT")" = "$SETTINGS" ] || {
    echo "full_tier.sh: $DIR holds a run of '$(cat "$DIR/COMMIT")', not '$SETTINGS': use another --dir" >&2; exit 2; }
else
  git -C "$ROOT" worktree add --detach "$DIR/tree" "$REV" >/dev/null 2>&1 || {
    echo "full_tier.sh: cannot make a worktree of $REV at $DIR/tree" >&2; exit 2; }
  echo "$SETTINGS" > "$DIR/COMMIT"
fi

log() { echo "$(date -u +%FT%TZ) $*" >> "$DIR/runs/log.txt"; }
cd "$DIR/tree"
export PYTHONPATH="$DIR/tree${PYTHONPATH:+:$PYTHONPATH}"
for I in $(seq 1 "$SHARDS"); do
  OUTDIR="$DIR/runs/shard-$I"
  [ -f "$OUTDIR/DONE" ] && continue
  log "shard $I/$SHARDS start"
  nice -n "$NICE" "$PY" -m pytest "$CLAIMS" --tc-tier "$TIER" --tc-seed "$SEED" --tc-shard "$I/$SHARDS" \
      --tc-cache-dir "$DIR/cache" --tc-report-dir "$OUTDIR" -p no:cacheprovider -q \
      > "$DIR/runs/shard-$I.out" 2>&1
  rc=$?
  log "shard $I/$SHARDS end rc=$rc"
  if [ "$rc" -le 1 ] && [ -f "$OUTDIR/results.json" ]; then
    touch "$OUTDIR/DONE"
  else
    echo "full_tier.sh: shard $I stopped (rc=$rc, see $DIR/runs/shard-$I.out); rerun to resume" >&2
    exit 3
  fi
done
"$PY" -m theorycheck merge "$DIR"/runs/shard-*/results.json --out "$DIR/runs/full" || exit 3
"$PY" -m theorycheck schedule "$DIR/runs/full" --workers 16 --markdown > "$DIR/runs/full/costs.md" || exit 3
log "complete: $DIR/runs/full"
echo "full_tier.sh: complete at $REV: $DIR/runs/full (costs.md: cost table and schedules)"
