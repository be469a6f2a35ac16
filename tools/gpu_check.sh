#!/bin/bash
# The GPU path end to end on a machine with an NVIDIA GPU, figures written
# to one folder: the GPU tests (every kernel of tests/kernels/gpu and the
# notes' schedules run against the CPU reference), PyTorch's cuBLAS /
# cuDNN baselines, and mlc-tune on the GPU (matmul 1024^3 after each
# budget of --trials, softmax 256x1024, conv2d 1,64,56,56,64,3,3), each
# candidate checked against the unscheduled kernel on the CPU; then
# mlc-compile --target cuda's host objects (vecadd untuned, matmul from
# its best record) linked into tests/gpu_compile_check.c and run.
#
#   tools/gpu_check.sh [--out DIR] [--trials "64 512"] [--small-trials N]
#                      [--time SECONDS] [--bundle FILE.tar.xz]
#
# --time caps each tuning run's wall time (mlc-tune --time; default 600).
# Uses build/ (made with make when missing), or the tarball of
# tools/gpu_bundle.sh where the machine lacks our build dependencies.
# Writes DIR/summary.md (the figures), DIR/tests.log, DIR/tune.log,
# DIR/baseline.jsonl and DIR/gpu.db (every measured candidate).
set -u
OUTDIR=gpu-results
TRIALS="64 512"
SMALL=64
CAP=600
BUNDLE=
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUTDIR=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --small-trials) SMALL=$2; shift 2 ;;
    --time) CAP=$2; shift 2 ;;
    --bundle) BUNDLE=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUTDIR"
SUM=$OUTDIR/summary.md
: > "$SUM"
say() { echo "$@" | tee -a "$SUM"; }

# ---- the tools -------------------------------------------------------------
if [ -n "$BUNDLE" ]; then
  tar xJf "$BUNDLE" 2>/dev/null || python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall('.')" "$BUNDLE" || exit 1
  export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if [ -n "${GPU_CHECK_LOADER:-}" ] || ! build/bin/mlc-ir --list-tasks >/dev/null 2>&1; then
    # The machine's C library is older than the one the tools were built
    # against: run each through the bundled loader (which ignores
    # LD_LIBRARY_PATH, so its folders, the driver's too, are passed on).
    mkdir -p .gpu/real
    for f in build/bin/* build/tests/*; do
      mv "$f" ".gpu/real/$(basename "$f")"
      printf '#!/bin/sh\nexec %s/.gpu/glibc/ld-linux-x86-64.so.2 --library-path %s/.gpu/glibc:%s %s/.gpu/real/%s "$@"\n' \
        "$PWD" "$PWD" "$LD_LIBRARY_PATH" "$PWD" "$(basename "$f")" > "$f"
      chmod +x "$f"
    done
    echo "gpu_check: running the tools with the bundled C library" >&2
  fi
elif [ ! -x build/bin/mlc-tune ]; then
  make -j"$(nproc)" all build/tests/test_targets_cuda build/tests/test_tuner_gpu_space build/tests/test_measure || exit 1
fi
export MLC_WORKER=$PWD/build/bin/mlc-worker
build/bin/mlc-ir --list-tasks >/dev/null || { echo "gpu_check: build/bin/mlc-ir does not run" >&2; exit 1; }

# ---- the machine -----------------------------------------------------------
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
ARCH=sm_${CC:-80}
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
say "# GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
say ""
say "- GPU: ${GPU:-none found} (compute capability ${CC:-?}; target \"cuda -arch=$ARCH\")"
say "- host: $CPU, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
say ""

# ---- tests -----------------------------------------------------------------
say "## Tests"
for t in test_targets_cuda test_tuner_gpu_space test_measure; do
  timeout 300 "build/tests/$t" > "$OUTDIR/$t.out" 2>&1
  rc=$?
  cat "$OUTDIR/$t.out" >> "$OUTDIR/tests.log"
  rm -f "$OUTDIR/$t.out"
  say "- $t: exit $rc, $(grep -E '^# [0-9]+ passed' "$OUTDIR/tests.log" | tail -1)"
done
grep -E 'ms on the device|^FAIL|^SKIP|cuda candidate' "$OUTDIR/tests.log" | sed 's/^/    /' | tee -a "$SUM"
say ""

# ---- baselines -------------------------------------------------------------
say "## Baselines (PyTorch, TF32 off)"
timeout 180 python3 bench/gpu_baseline.py > "$OUTDIR/baseline.jsonl" 2>>"$OUTDIR/tune.log"
sed 's/^/    /' "$OUTDIR/baseline.jsonl" | tee -a "$SUM"
say ""

# ---- tuning ----------------------------------------------------------------
DB=$OUTDIR/gpu.db
tune() { # label trials task shape
  local start end
  start=$(date +%s.%N)
  echo "== $1: mlc-tune --task $3 --shape $4 --trials $2" >> "$OUTDIR/tune.log"
  timeout $((CAP + 120)) build/bin/mlc-tune --task "$3" --shape "$4" --target "cuda -arch=$ARCH" \
    --trials "$2" --time "$CAP" --db "$DB" --json -v > "$OUTDIR/last.json" 2>> "$OUTDIR/tune.log"
  local rc=$?
  end=$(date +%s.%N)
  cat "$OUTDIR/last.json" >> "$OUTDIR/tune.log"
  say "- $1 ($3 $4, --trials $2): exit $rc, $(python3 - "$OUTDIR/last.json" "$start" "$end" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("no summary (%s)" % e); sys.exit()
print("best %.4f ms, %.1f GFLOP/s, %s measured, this run %.0f s wall" % (
    r.get("best_sec", 0) * 1e3, r.get("best_gflops", 0), r.get("measured", r.get("trials", "?")),
    float(sys.argv[3]) - float(sys.argv[2])))
PY
)"
}
say "## Tuning on the GPU (each candidate checked against the CPU reference)"
for n in $TRIALS; do tune "matmul" "$n" matmul 1024,1024,1024; done
tune "softmax" "$SMALL" softmax 256,1024
tune "conv2d" "$SMALL" conv2d_nchw 1,64,56,56,64,3,3
rm -f "$OUTDIR/last.json"
say ""

# ---- mlc-compile --target cuda ------------------------------------------------
# The host object + launcher (libmlcrt's mlc_rt_cuda_launch), so far tested
# against a fake driver only: vecadd with the GPU default schedule, matmul
# 1024^3 with its best record from the tuning above, linked into
# tests/gpu_compile_check.c and checked against plain C.
say "## mlc-compile --target cuda (host object + launcher, linked into a C program)"
if command -v cc >/dev/null 2>&1; then
  build/bin/mlc-compile --task vecadd --shape 1048576 --target "cuda -arch=$ARCH" --db "$DB" \
      -o "$OUTDIR/va.o" --header "$OUTDIR/va.h" >>"$OUTDIR/tune.log" 2>&1 &&
    build/bin/mlc-compile --task matmul --shape 1024,1024,1024 --target "cuda -arch=$ARCH" \
      --db "$DB" -o "$OUTDIR/mm.o" --header "$OUTDIR/mm.h" --ptx "$OUTDIR/mm.ptx" \
      >>"$OUTDIR/tune.log" 2>&1 &&
    cc -std=gnu11 -O2 -I. -I"$OUTDIR" tests/gpu_compile_check.c "$OUTDIR/va.o" "$OUTDIR/mm.o" \
      targets/runtime/cuda_launch.c -ldl -lpthread -lm -o "$OUTDIR/compile_check" \
      >>"$OUTDIR/tune.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    timeout 300 "$OUTDIR/compile_check" 2>&1 | sed 's/^/    /' | tee -a "$SUM"
    say "- exit ${PIPESTATUS[0]}"
  else
    say "- mlc-compile or cc failed (exit $rc; see tune.log)"
  fi
else
  say "- SKIP: no C compiler on this machine"
fi
say ""
say "## Database"
build/bin/mlc-db --db "$DB" list 2>&1 | sed 's/^/    /' | tee -a "$SUM"
build/bin/mlc-db --db "$DB" stats 2>&1 | sed 's/^/    /' | tee -a "$SUM"
build/bin/mlc-db --db "$DB" top --task matmul 2>&1 | head -8 | sed 's/^/    /' | tee -a "$SUM"
