#!/bin/sh
# Measurement ranks killed while an MPI tuning job goes on: 20 runs of
# `mpirun --enable-recovery -n 3 mlc-tune` (rank 0 tunes, ranks 1 and 2
# measure), each with one measurement rank SIGKILLed. Fourteen runs kill
# at a chosen point through MLC_MPI_FAULT (right after a rank asked for
# work and before the answer, after it took candidates, after it returned
# a result); six kill from outside at a random moment (the seed is
# printed). Every run must end with exit status 0, every trial measured
# and stored exactly once (none lost with the dead rank, none twice), the
# dead rank named, and the database intact. SKIPs without mpirun or
# sqlite3.
B=${MLC_BUILD:-build}
TUNE=$B/bin/mlc-tune
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

if ! ldd "$TUNE" 2>/dev/null | grep -q libmpi; then
  echo "SKIP mpi faults: $TUNE was built without MPI (install libopenmpi-dev and rebuild)"
  exit 0
fi
for tool in mpirun sqlite3; do
  if ! command -v $tool >/dev/null 2>&1; then
    echo "SKIP mpi faults: $tool is missing"
    exit 0
  fi
done
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
TRIALS=16
W="--task matmul --shape 64,64,64 --trials $TRIALS --trials-per-round 8 --no-baseline --remeasure 0 -j 1 --json -v"
host=$(hostname)

# records: count|with sched_hash|distinct traces|errors other than "too slow"|integrity
summary() {
  sqlite3 "$1" "select count(*), count(sched_hash), count(distinct trace_hash),
                       sum(error is not null and error not like 'timeout: too slow%') from records;
                pragma integrity_check" | tr '\n' '|'
}

rank_pid() { # rank, stderr file
  sed -n "s/^measurement rank $1 (host [^,]*, pid \([0-9]*\)).*/\1/p" "$2"
}

# One run; $1 names it, $2 the rank to kill, $3 the fault ("" with $4 the
# outside kill's delay in ms).
run() {
  t=$1 rank=$2 fault=$3 delay=$4 d=$tmp/$1
  mkdir -p "$d"
  MLC_MPI_FAULT=$fault mpirun -x MLC_MPI_FAULT --enable-recovery --oversubscribe -n 3 \
    "$TUNE" $W --db "$d/db" >"$d/out" 2>"$d/err" &
  job=$!
  if [ -z "$fault" ]; then
    i=0
    while [ $i -lt 200 ] && [ -z "$(rank_pid 2 "$d/err")" ]; do sleep 0.05; i=$((i + 1)); done
    sleep "$(awk "BEGIN { print $delay / 1000 }")"
    kill -9 "$(rank_pid "$rank" "$d/err")" 2>/dev/null
  fi
  wait $job
  rc=$?
  pid=$(rank_pid "$rank" "$d/err")
  check "${t}_exit" test $rc -eq 0
  check "${t}_all_stored_once" test "$(summary "$d/db")" = "$TRIALS|$TRIALS|$TRIALS|0|ok|"
  check "${t}_measured" grep -q "\"measured\":$TRIALS," "$d/out"
  check "${t}_named" grep -q "^mlc-tune: measurement rank $rank (host $host, pid $pid) died" "$d/err"
  check "${t}_gone" sh -c "! kill -0 $pid 2>/dev/null"
}

# Two jobs at a time (each in its own subshell: run's variables are
# global), so that the 20 runs take well under a minute.
n=0
for f in 1:want:1 2:want:2 1:want:3 2:want:4 1:work:1 2:work:1 1:work:2 2:work:2 1:work:3 \
         1:result:1 2:result:2 1:result:3 2:result:4 2:result:1; do
  n=$((n + 1))
  (run "fault_$(echo "$f" | tr : _)" "${f%%:*}" "$f" 0) &
  [ $((n % 2)) -eq 0 ] && wait
done
wait
seed=${MLC_FAULT_SEED:-$(date +%s)}
echo "outside kills: MLC_FAULT_SEED=$seed"
for k in $(awk "BEGIN { srand($seed); for (i = 0; i < 6; i++) print 1 + int(2 * rand()) \":\" 200 + int(900 * rand()) }"); do
  n=$((n + 1))
  (run "kill_${n}_rank${k%%:*}_at${k#*:}ms" "${k%%:*}" "" "${k#*:}") &
  [ $((n % 2)) -eq 0 ] && wait
done
wait
