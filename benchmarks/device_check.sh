#!/usr/bin/env bash
# The prepared GPU check: one command, a hard deadline, results under $OUT as each step ends.
#
#   benchmarks/device_check.sh --fetch-wheels   # here (CPU host): the cp312 wheels into .whl/
#   benchmarks/device_check.sh                  # on the GPU host, .whl carried (see below)
#   benchmarks/device_check.sh --dry-run        # the same steps on the CPU, one paper, quick
#   options: --budget SECONDS (300), --papers "jta24 vdt24" (quick step), --steps install,quick,
#   bench,full (which steps), --bench-only REGEX (bench.py --only: the workloads to measure),
#   --workers N (xdist workers of the quick and full steps; 8 on the device, 0 in a dry run)
#
# Steps (each appends to $OUT/device_check.log and records "<step> <status> <seconds>" in
# $OUT/summary.txt the moment it ends, so a run cut short still returns what it finished):
#   install  theorycheck from the working tree (no dependencies: the GPU image has torch, numpy,
#            scipy, sympy, pytest, hypothesis, matplotlib, jinja2) plus the carried wheels of
#            cvxpy-base, clarabel and their small dependencies (.whl/, made by --fetch-wheels:
#            a cache folder made on a CPU would miss on the GPU, whose key holds device and
#            library versions); versions and nvidia-smi into $OUT/env.txt
#   quick    the quick tier of each paper in PAPERS order with --tc-device cuda, one run folder
#            per paper (tarred into $OUT/quick.tar.gz), each compared with the committed CPU
#            baseline reports/baseline-quick.json by `theorycheck diff --rtol DEVICE_RTOL`
#            (every changed outcome and every value moved by more than that, into
#            $OUT/quick-diff.txt)
#   bench    the CUDA rows of benchmarks/bench.py ($OUT/bench-cuda.json; each row is also
#            printed to the log as it is measured)
#   full     the full tier of FULL_CLAIMS (pytest -k expressions, the claims the CPU can barely
#            reach first), as time allows ($OUT/full.tar.gz)
# The deadline (--budget, default 300 s) bounds the whole script: each step gets at most what
# is left, minus a reserve for packing results.  Call it through the device tool with
# timeout_s about 330 and carry [".whl"].
#
# --dry-run: no install, device cpu, PAPERS = DRY_PAPER only at quick sizes, the bench step on
# one small workload, the "full" step one quick claim, no per-step time limits (only --budget);
# OUT defaults to a new temporary folder.
# tests/test_device_check.py runs it in CI and checks the files it writes.
set -uo pipefail
cd "$(dirname "$0")/.."

PAPERS="jta24 vdt24 gsb26 glls24 anon20"
DRY_PAPER="jta24"
# dense algebra first (glls24's kernels at n = 2048): anon20's small networks gain little on a
# GPU (BENCHMARKS.md, the device check of 2026-11-29)
FULL_CLAIMS=("glls24 and score_estimation" "glls24 and linear_convergence"
             "anon20 and known_mask" "anon20 and sample_complexity_ordering")
DEVICE_RTOL=1e-6
BUDGET=300
RESERVE=15
MODE=device
WHEELS=.whl
PY=${PYTHON:-python3}

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) MODE=dry ;;
    --fetch-wheels) MODE=fetch ;;
    --budget) BUDGET="$2"; shift ;;
    --bench-only) BENCH_ONLY="$2"; shift ;;
    --papers) PAPERS="$2"; shift ;;
    --workers) WORKERS_ASKED="$2"; shift ;;
    --steps) STEPS="$2"; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "device_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
STEPS=${STEPS:-install,quick,bench,full}

if [ "$MODE" = fetch ]; then
  # The wheels the GPU image lacks, for CPython 3.12 on x86-64 (versions as in this project's
  # environment; keep one version of each).
  rm -rf "$WHEELS"
  for spec in cvxpy-base==1.9.3 clarabel==0.11.1 qdldl==0.1.9.post1 sparsediffpy==0.6.1 \
              cffi==2.1.1 pycparser==3.12 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
              referencing==0.37.0 rpds-py==2026.9.1; do
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform manylinux1_x86_64 -d "$WHEELS" "$spec" || exit 1
  done
  ls -la "$WHEELS"
  exit 0
fi

if [ "$MODE" = dry ]; then
  DEVICE=cpu; PAPERS="$DRY_PAPER"; WORKERS=0
  FULL_CLAIMS=("$DRY_PAPER and test_certificate")
  FULL_TIER=quick
  BENCH_ARGS=(--devices cpu --only '^token_selection canonical$' --repeats 1 --min-seconds 0.02)
  OUT=${OUT:-$(mktemp -d)}
else
  DEVICE=cuda; WORKERS=8; FULL_TIER=full
  BENCH_ARGS=(--devices cuda --repeats 2 --min-seconds 0.1)
  : "${OUT:?OUT must name the folder for the results (the device tool sets it)}"
fi
WORKERS=${WORKERS_ASKED:-$WORKERS}
case "$WORKERS" in ''|*[!0-9]*) echo "device_check.sh: --workers takes a count, got '$WORKERS'" >&2; exit 2 ;; esac
mkdir -p "$OUT"
WORK=$(mktemp -d)
LOG="$OUT/device_check.log"
SUMMARY="$OUT/summary.txt"
START=$(date +%s)
DEADLINE=$((START + BUDGET))
: > "$SUMMARY"
echo "device_check.sh mode=$MODE device=$DEVICE budget=${BUDGET}s started $(date -u +%FT%TZ)" | tee "$LOG"

left() { echo $((DEADLINE - RESERVE - $(date +%s))); }

# run_step NAME SECONDS CMD...: run CMD with at most SECONDS (and never past the deadline),
# output appended to the log; its status (ok, failed rc, timeout, skipped) into the summary.
run_step() {
  local name="$1" want="$2"; shift 2
  local limit; limit=$(left)
  # a dry run is bounded by --budget alone: it checks the steps, not the speed of a loaded CPU
  [ "$MODE" != dry ] && [ "$want" -lt "$limit" ] && limit="$want"
  if [ "$limit" -le 5 ]; then
    echo "$name skipped 0 (deadline)" >> "$SUMMARY"; return 1
  fi
  echo "=== $name (limit ${limit}s): $*" >> "$LOG"
  local t0 rc status; t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" >> "$LOG" 2>&1; rc=$?
  case $rc in 0) status=ok ;; 124|137) status=timeout ;; *) status="failed(rc=$rc)" ;; esac
  echo "$name $status $(( $(date +%s) - t0 ))" | tee -a "$SUMMARY" >> "$LOG"
  return $rc
}

want() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

pack() {  # pack FOLDER-PREFIX TARBALL: the run folders' results and reports, no plots
  (cd "$WORK" && ls -d "$1"-* >/dev/null 2>&1 &&
   tar czf "$OUT/$2" --exclude=plots "$1"-*) || true
}

# ---------------------------------------------------------------- install
install() {
  if [ "$MODE" = device ]; then
    ls "$WHEELS"/*.whl >/dev/null 2>&1 || { echo "no wheels in $WHEELS: run --fetch-wheels here and carry .whl"; return 1; }
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site "$WHEELS"/*.whl || return 1
    $PY -m pip install -q --no-index --no-deps --no-build-isolation -e . || return 1
  fi
  $PY - <<'EOF'
import platform, torch, numpy, scipy, cvxpy, theorycheck
print("python", platform.python_version(), "torch", torch.__version__, "numpy", numpy.__version__,
      "scipy", scipy.__version__, "cvxpy", cvxpy.__version__, "theorycheck", theorycheck.__version__)
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else "-")
print("solvers", cvxpy.installed_solvers())
EOF
}
[ "$MODE" = device ] && export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 THEORYCHECK_CACHE_DIR="$WORK/cache"
if want install; then
  export -f install; export PY WHEELS MODE
  run_step install 90 bash -c install   # timeout runs programs: the function through bash
  { git rev-parse HEAD 2>/dev/null || echo "commit unknown"; nproc; free -g | head -2
    command -v nvidia-smi >/dev/null && nvidia-smi; sed -n '2,4p' "$LOG"; } > "$OUT/env.txt" 2>&1
fi

# ---------------------------------------------------------------- quick tier
if want quick; then
  : > "$OUT/quick-diff.txt"
  for paper in $PAPERS; do
    run_step "quick:$paper" 150 $PY -m pytest "claims/$paper" -q -p no:cacheprovider \
      -rfE --tb=short -n "$WORKERS" --tc-device "$DEVICE" --tc-report-dir "$WORK/quick-$paper" \
      --tc-baseline none
    if [ -f "$WORK/quick-$paper/results.json" ]; then
      $PY -m theorycheck.cli diff reports/baseline-quick.json "$WORK/quick-$paper" \
        --rtol "$DEVICE_RTOL" >> "$OUT/quick-diff.txt" 2>&1
    else
      echo "quick:$paper: no results.json" >> "$OUT/quick-diff.txt"
    fi
    pack quick quick.tar.gz
  done
fi

# ---------------------------------------------------------------- CUDA benchmark rows
if want bench; then
  [ -n "${BENCH_ONLY:-}" ] && BENCH_ARGS+=(--only "$BENCH_ONLY")
  run_step bench 60 $PY benchmarks/bench.py --no-svm --out "$OUT/bench-$DEVICE.json" "${BENCH_ARGS[@]}"
fi

# ---------------------------------------------------------------- full tier, as time allows
if want full; then
  i=0
  for expr in "${FULL_CLAIMS[@]}"; do
    i=$((i + 1))
    run_step "full:${expr// /_}" 100000 $PY -m pytest claims -q -p no:cacheprovider -k "$expr" \
      -n "$WORKERS" --tc-tier "$FULL_TIER" --tc-device "$DEVICE" \
      --tc-report-dir "$WORK/full-$i" --tc-baseline none
    pack full full.tar.gz
  done
fi

echo "device_check.sh done in $(( $(date +%s) - START ))s" | tee -a "$LOG"
cat "$SUMMARY"
