#!/usr/bin/env bash
# The full tier whole at one frozen commit, in shards that survive interruptions.
#
#   benchmarks/full_tier.sh --dir /work/fulltier                 # start, or resume, at HEAD
#   benchmarks/full_tier.sh --dir DIR --commit REV --shards 12   # a given commit
#   options: --tier full|quick (full), --seed S (0), --claims PATH (claims), --nice N (0),
#            --shards N (12), --python PY (the python running this checkout's pytest),
#            --keep FOLDER (finished shards kept there, and restored from there: see below),
#            --keep-run-mib M (8), --keep-run-cpu S (60), --save-runs
#
# DIR gets a git worktree of the commit (DIR/tree; the commit and settings in DIR/COMMIT: a
# later call with another commit or other settings is refused, so no run mixes code), one cache of shared runs (DIR/cache) and a
# run folder per shard (DIR/runs/shard-I). Shards run one after the other, one process each
# (the claims use one thread); a shard that finished (pytest exit 0 or 1, results written) is
# marked DONE and skipped by the next call, so a cut run resumes where it stopped: the shared
# runs a cut shard computed are in the cache. Several instances on one DIR share the work (one
# per core): each shard is taken by an atomic lock (DIR/runs/shard-I.lock, taken over when its
# process is gone). When every shard is done, the last instance merges them into
# DIR/runs/full (`theorycheck merge`) and writes its cost table and schedules to
# DIR/runs/full/costs.md (`theorycheck schedule --markdown`). Exit 0 when complete, 3 while
# shards remain (an interruption, or shards another instance still runs), 2 on bad arguments.
# A shard whose process is killed (SIGKILL, rc 137: most often the out-of-memory killer when two
# instances' largest claims meet) is retried after the other shards, at most 3 tries a call.
# --keep FOLDER carries a run across machines or sessions whose DIR is lost: each finished shard's
# results.json is copied there gzipped (FOLDER/shard-I-of-N.json.gz, e.g. a folder of the
# repository, to commit), and a call restores the kept shards of its commit, tier, seed and shard
# count into DIR as finished (a kept shard of other settings is refused, exit 2); only the shards
# not kept run. It keeps the cache's shared runs too, so that a unit longer than a machine's life
# is built over several: every entry of DIR/cache of at most --keep-run-mib MiB (8) that took at
# least --keep-run-cpu CPU seconds (60) and that no finished shard used (a unit still to run that
# shares a finished shard's runs recomputes them: hold such shards back together) is copied there
# gzipped (FOLDER/runs/KEY.pkl.gz, with its cost sidecar) after each shard and on
# --save-runs (keep them now and exit: before a machine goes, or after shared runs computed
# beside the shards, e.g. by `theorycheck run ... --cache-dir DIR/cache`), and each call restores
# the kept entries DIR/cache lacks (checksummed, keyed by the code: one of other code is never
# read). Larger shared runs are recomputed where the cache is gone.
# The whole script is six functions (main, take, kept_settings, keepable_runs, save_runs,
# restore_runs), read before it runs, so editing the checkout while a run goes on cannot change
# the running instances.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

# take(LOCK): the folder LOCK made with this process's pid in it, or the lock of a process no
# longer alive taken over. The whole decision is made under one flock (LOCK's folder's
# .locks.flock), so two instances never both take over one stale lock, nor read a lock whose
# pid is not written yet.
take() {
  local taken=1 owner
  exec 8>"$(dirname "$1")/.locks.flock"
  flock 8
  if mkdir "$1" 2>/dev/null; then
    echo $$ > "$1/pid"; taken=0
  else
    owner=$(cat "$1/pid" 2>/dev/null)
    if ! { [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; }; then
      rm -rf "$1" && mkdir "$1" && echo $$ > "$1/pid" && taken=0
    fi
  fi
  flock -u 8
  exec 8>&-
  return $taken
}

# kept_settings(FILE): "commit tier seed shard" of a kept shard's gzipped results.json.
kept_settings() {
  "$PY" -c 'import gzip, json, sys
r = json.load(gzip.open(sys.argv[1], "rt"))
print(r.get("commit"), r.get("tier"), r.get("seed"), r.get("shard"))' "$1"
}

# keepable_runs: the entries of DIR/cache worth carrying, one path a line: at most KEEP_MIB MiB,
# at least KEEP_CPU CPU seconds to compute (their cost sidecar; cheaper ones are recomputed), and
# read or computed by no finished shard (their results.json records).
keepable_runs() {
  local done results=()
  for done in "$DIR"/runs/shard-*/DONE; do [ -f "$done" ] && results+=("$(dirname "$done")/results.json"); done
  "$PY" -c 'import json, pathlib, sys
from theorycheck.cache import DiskCache
from theorycheck.results_layout import shared_runs_of
cache, mib, cpu = DiskCache(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
finished = {used["key"] for path in sys.argv[4:] for claim in json.load(open(path)).get("claims", [])
            for used in shared_runs_of(claim)}
for entry in sorted(pathlib.Path(sys.argv[1]).glob("??/*.pkl")):
    if entry.stem not in finished and entry.stat().st_size <= mib * 2**20 and (cache.cost(entry.stem) or 0) >= cpu:
        print(entry)' "$DIR/cache" "$KEEP_MIB" "$KEEP_CPU" "${results[@]}"
}

# save_runs: the entries `keepable_runs` names that KEEP/runs lacks, gzipped there with their cost
# sidecars (written under temporary names and renamed: a cut copy is never kept).
save_runs() {
  local entry key
  while IFS= read -r entry; do
    key=$(basename "$entry" .pkl)
    [ -f "$KEEP/runs/$key.pkl.gz" ] && continue
    mkdir -p "$KEEP/runs"
    [ ! -f "${entry%.pkl}.cost.json" ] || cp "${entry%.pkl}.cost.json" "$KEEP/runs/$key.cost.json"
    gzip -c "$entry" > "$KEEP/runs/.$key.$$.tmp" && mv "$KEEP/runs/.$key.$$.tmp" "$KEEP/runs/$key.pkl.gz" \
      && log "shared run $key kept"
  done < <(keepable_runs)
}

# restore_runs: the entries of KEEP/runs that DIR/cache lacks, unzipped into it (under the
# cache's own temporary name, <key>.pkl.<pid>.tmp, then renamed).
restore_runs() {
  local kept key dest
  for kept in "$KEEP"/runs/*.pkl.gz; do
    [ -f "$kept" ] || continue
    key=$(basename "$kept" .pkl.gz)
    dest="$DIR/cache/${key:0:2}/$key.pkl"
    [ -f "$dest" ] && continue
    mkdir -p "$(dirname "$dest")"
    [ ! -f "$KEEP/runs/$key.cost.json" ] || cp "$KEEP/runs/$key.cost.json" "${dest%.pkl}.cost.json"
    gzip -dc "$kept" > "$dest.$$.tmp" && mv "$dest.$$.tmp" "$dest" && log "shared run $key restored"
  done
}

main() {

DIR="" COMMIT="" SHARDS=12 TIER=full SEED=0 CLAIMS=claims NICE=0 KEEP="" KEEP_MIB=8 KEEP_CPU=60 SAVE_ONLY=0
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
    --keep) KEEP="$2"; shift ;;
    --keep-run-mib) KEEP_MIB="$2"; shift ;;
    --keep-run-cpu) KEEP_CPU="$2"; shift ;;
    --save-runs) SAVE_ONLY=1 ;;
    -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
    *) echo "full_tier.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$DIR" ] || { echo "full_tier.sh: --dir DIR is required" >&2; exit 2; }
case "$PY" in /*) ;; */*) PY="$PWD/$PY" ;; *) PY=$(command -v "$PY") ;; esac
[ -x "$PY" ] || { echo "full_tier.sh: no python at '$PY' (--python)" >&2; exit 2; }
[[ "$SHARDS" =~ ^[1-9][0-9]*$ ]] || { echo "full_tier.sh: --shards must be a positive integer, got '$SHARDS'" >&2; exit 2; }
[[ "$KEEP_MIB" =~ ^[0-9]+$ ]] || { echo "full_tier.sh: --keep-run-mib must be an integer >= 0, got '$KEEP_MIB'" >&2; exit 2; }
[[ "$KEEP_CPU" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "full_tier.sh: --keep-run-cpu must be a number >= 0, got '$KEEP_CPU'" >&2; exit 2; }
[ "$SAVE_ONLY" = 0 ] || [ -n "$KEEP" ] || { echo "full_tier.sh: --save-runs needs --keep FOLDER" >&2; exit 2; }
REV=$(git -C "$ROOT" rev-parse --verify "${COMMIT:-HEAD}^{commit}" 2>/dev/null) \
  || { echo "full_tier.sh: unknown commit '${COMMIT:-HEAD}'" >&2; exit 2; }

mkdir -p "$DIR/runs"
DIR=$(cd "$DIR" && pwd)
SETTINGS="$REV tier=$TIER seed=$SEED shards=$SHARDS claims=$CLAIMS"
exec 9>"$DIR/runs/.setup.flock"
flock 9                                    # instances started together make one worktree
if [ -f "$DIR/COMMIT" ]; then
  [ "$(cat "$DIR/COMMIT")" = "$SETTINGS" ] || {
    echo "full_tier.sh: $DIR holds a run of '$(cat "$DIR/COMMIT")', not '$SETTINGS': use another --dir" >&2; exit 2; }
else
  git -C "$ROOT" worktree add --detach "$DIR/tree" "$REV" >/dev/null 2>&1 || {
    echo "full_tier.sh: cannot make a worktree of $REV at $DIR/tree" >&2; exit 2; }
  echo "$SETTINGS" > "$DIR/COMMIT"
fi
flock -u 9

log() { echo "$(date -u +%FT%TZ) $*" >> "$DIR/runs/log.txt"; }
if [ -n "$KEEP" ]; then
  mkdir -p "$KEEP" && KEEP=$(cd "$KEEP" && pwd) || { echo "full_tier.sh: cannot make --keep '$KEEP'" >&2; exit 2; }
  for I in $(seq 1 "$SHARDS"); do
    KEPT="$KEEP/shard-$I-of-$SHARDS.json.gz"
    [ -f "$KEPT" ] && [ ! -f "$DIR/runs/shard-$I/DONE" ] || continue
    GOT=$(kept_settings "$KEPT") || { echo "full_tier.sh: cannot read the kept shard $KEPT" >&2; exit 2; }
    [ "$GOT" = "$REV $TIER $SEED $I/$SHARDS" ] || {
      echo "full_tier.sh: $KEPT is a shard of '$GOT', not '$REV $TIER $SEED $I/$SHARDS': keep each run's shards in a folder of its own" >&2; exit 2; }
    mkdir -p "$DIR/runs/shard-$I" && gzip -dc "$KEPT" > "$DIR/runs/shard-$I/results.json" \
      && touch "$DIR/runs/shard-$I/DONE" && log "shard $I/$SHARDS restored from $KEPT"
  done
  restore_runs
  if [ "$SAVE_ONLY" = 1 ]; then save_runs; exit 0; fi
fi
cd "$DIR/tree"
export PYTHONPATH="$DIR/tree${PYTHONPATH:+:$PYTHONPATH}"
KILLED=""                                  # shards whose process was killed (SIGKILL) in this call
for PASS in 1 2 3; do                      # a killed shard waits for a later pass (at most 3 tries)
  for I in $(seq 1 "$SHARDS"); do
    OUTDIR="$DIR/runs/shard-$I"
    [ -f "$OUTDIR/DONE" ] && continue
    [ "$PASS" -gt 1 ] && [[ " $KILLED " != *" $I "* ]] && continue
    take "$OUTDIR.lock" || continue        # another instance runs this shard
    # finished by another instance between the check above and its lock's release (DONE is
    # written before the lock goes): nothing to run
    if [ -f "$OUTDIR/DONE" ]; then rm -rf "$OUTDIR.lock"; continue; fi
    log "shard $I/$SHARDS start"
    nice -n "$NICE" "$PY" -m pytest "$CLAIMS" --tc-tier "$TIER" --tc-seed "$SEED" --tc-shard "$I/$SHARDS" \
        --tc-cache-dir "$DIR/cache" --tc-report-dir "$OUTDIR" -p no:cacheprovider -q \
        > "$DIR/runs/shard-$I.out" 2>&1
    rc=$?
    log "shard $I/$SHARDS end rc=$rc"
    [ "$rc" -le 1 ] && [ -f "$OUTDIR/results.json" ] && touch "$OUTDIR/DONE"
    rm -rf "$OUTDIR.lock"
    if [ -f "$OUTDIR/DONE" ]; then
      [ -z "$KEEP" ] || { gzip -c "$OUTDIR/results.json" > "$KEEP/.shard-$I.tmp" \
                          && mv "$KEEP/.shard-$I.tmp" "$KEEP/shard-$I-of-$SHARDS.json.gz"; }
    elif [ "$rc" -eq 137 ]; then           # SIGKILL, most often the out-of-memory killer: the
      KILLED="$KILLED $I"                  # shared runs it finished are cached; retry it later
      log "shard $I/$SHARDS killed (out of memory?); retried after the other shards"
      echo "full_tier.sh: shard $I killed (rc=137, out of memory?); retried after the other shards" >&2
    else
      [ -z "$KEEP" ] || save_runs
      echo "full_tier.sh: shard $I stopped (rc=$rc, see $DIR/runs/shard-$I.out); rerun to resume" >&2
      exit 3
    fi
    [ -z "$KEEP" ] || save_runs            # after DONE: a finished shard's runs are not kept
  done
  [ -n "$KILLED" ] || break
done
LEFT=0
for I in $(seq 1 "$SHARDS"); do [ -f "$DIR/runs/shard-$I/DONE" ] || LEFT=$((LEFT + 1)); done
if [ "$LEFT" -gt 0 ]; then
  echo "full_tier.sh: $LEFT shard(s) not done (running in another instance, which merges when the" \
       "last ends, or killed 3 times: rerun to resume)" >&2
  exit 3
fi
take "$DIR/runs/merge.lock" || { echo "full_tier.sh: another instance merges"; exit 0; }
if [ ! -f "$DIR/runs/full/costs.md" ]; then     # costs.md appears whole, and only once both worked
  "$PY" -m theorycheck merge "$DIR"/runs/shard-*/results.json --out "$DIR/runs/full" \
    || { rm -rf "$DIR/runs/merge.lock"; exit 3; }
  "$PY" -m theorycheck schedule "$DIR/runs/full" --workers 16 --markdown > "$DIR/runs/full/.costs.md.tmp" \
    && mv "$DIR/runs/full/.costs.md.tmp" "$DIR/runs/full/costs.md" \
    || { rm -f "$DIR/runs/full/.costs.md.tmp"; rm -rf "$DIR/runs/merge.lock"; exit 3; }
  log "complete: $DIR/runs/full"
fi
rm -rf "$DIR/runs/merge.lock"
echo "full_tier.sh: complete at $REV: $DIR/runs/full (costs.md: cost table and schedules)"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; exit; fi   # sourced (the tests): take() only
