#!/bin/sh
# mlc-tune under mpirun: 3 ranks on this machine (rank 0 tunes,
# ranks 1 and 2 measure). The records of an MPI run equal in kind those of
# a single-process run (same count, every one verified and with its
# sched_hash, one target); a measurement rank killed mid-run ends the job
# with the rank and host named, after rank 0 stored what it received, and
# a rerun resumes to the full count without measuring a trace twice; a
# rank whose target differs is refused. SKIPs without mpirun or sqlite3.
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
  # built without MPI: under mpirun with several ranks it says so
  OMPI_COMM_WORLD_SIZE=3 OMPI_COMM_WORLD_RANK=0 "$TUNE" --task vecadd --shape 64 --trials 2 \
    --db "$tmp/x.db" >"$tmp/out" 2>"$tmp/err"
  check mpi_not_built_exit test $? -eq 1
  check mpi_not_built_msg grep -q 'built without MPI support' "$tmp/err"
  echo "SKIP mpi: $TUNE was built without MPI (install libopenmpi-dev and rebuild)"
  exit 0
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP mpi: mpirun is missing (apt-get install openmpi-bin)"
  exit 0
fi
if ! command -v sqlite3 >/dev/null 2>&1; then
  echo "SKIP mpi: the sqlite3 shell is missing (apt-get install sqlite3)"
  exit 0
fi
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI's own allocations are not ours to check under ASan
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
MPIRUN="mpirun --oversubscribe -n 3"
W="--task matmul --shape 64,64,64 --trials-per-round 8"
q() { sqlite3 "$1" "$2"; }
# records: count|with sched_hash|distinct traces|targets|errors other than "too slow"
summary() {
  q "$1" "select count(*), count(sched_hash), count(distinct trace_hash), count(distinct target),
            sum(error is not null and error not like 'timeout: too slow%') from records"
}

# one process: the reference
"$TUNE" $W --trials 32 --db "$tmp/one.db" --no-baseline >"$tmp/out" 2>"$tmp/err"
check mpi_single_exit test $? -eq 0
one=$(summary "$tmp/one.db")
check mpi_single_records test "$one" = "32|32|32|1|0"

# three ranks
$MPIRUN "$TUNE" $W --trials 32 --db "$tmp/mpi.db" --json -v >"$tmp/out" 2>"$tmp/err"
check mpi_run_exit test $? -eq 0
check mpi_run_json grep -q '"trials_before":0,"measured":32,' "$tmp/out"
check mpi_run_best grep -Eq '"best_sec":[0-9.e-]*[1-9]' "$tmp/out"
check mpi_run_check grep -Eq '"check_base_sec":[0-9.e-]*[1-9]' "$tmp/out"
check mpi_run_ranks test "$(grep -c '^measurement rank [12] (host .*, pid [0-9]*): llvm' "$tmp/err")" -eq 2
check mpi_run_records test "$(summary "$tmp/mpi.db")" = "32|32|32|1|0"
check mpi_run_same_target test "$(q "$tmp/mpi.db" 'select distinct target from records')" = \
  "$(q "$tmp/one.db" 'select distinct target from records')"

# the search between batches, as one process does
$MPIRUN "$TUNE" $W --trials 24 --no-overlap --db "$tmp/serial.db" --json >"$tmp/out" 2>"$tmp/err"
check mpi_no_overlap_exit test $? -eq 0
check mpi_no_overlap_records test "$(summary "$tmp/serial.db")" = "24|24|24|1|0"

# a measurement rank killed with SIGKILL in the second round (of eight:
# on a quiet fast machine the four rounds of 32 trials took 1.6 s after the
# first, about the time the kill waited)
$MPIRUN "$TUNE" $W --trials 64 --db "$tmp/kill.db" -v --no-baseline >"$tmp/kout" 2>"$tmp/kerr" &
job=$!
i=0
while [ $i -lt 300 ] && ! grep -q '^round 1:' "$tmp/kerr" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
pid=$(sed -n 's/^measurement rank 1 (host [^,]*, pid \([0-9]*\)).*/\1/p' "$tmp/kerr")
sleep 0.5
[ -n "$pid" ] && kill -9 "$pid"
wait $job
rc=$?
check mpi_kill_exit test $rc -ne 0
check mpi_kill_named grep -q "mlc-tune: error: measurement rank 1 (host $(hostname), pid $pid) died" "$tmp/kerr"
n=$(q "$tmp/kill.db" 'select count(*) from records')
check mpi_kill_kept test "$n" -ge 8 -a "$n" -lt 64
check mpi_kill_records test "$(summary "$tmp/kill.db")" = "$n|$n|$n|1|0"
# the rerun resumes to the full count
$MPIRUN "$TUNE" $W --trials $((n + 8)) --db "$tmp/kill.db" --json --no-baseline >"$tmp/out" 2>"$tmp/err"
check mpi_resume_exit test $? -eq 0
check mpi_resume_json grep -q "\"trials_before\":$n,\"measured\":8," "$tmp/out"
check mpi_resume_records test "$(summary "$tmp/kill.db")" = "$((n + 8))|$((n + 8))|$((n + 8))|1|0"

# a rank with another target (here: fewer cores) is refused before any tuning
mpirun --oversubscribe -n 2 "$TUNE" $W --trials 8 --db "$tmp/ref.db" : \
  -n 1 "$TUNE" $W --trials 8 --db "$tmp/ref.db" --target "llvm -num-cores=1" >"$tmp/out" 2>"$tmp/err"
check mpi_refuse_exit test $? -ne 0
check mpi_refuse_msg grep -q "mlc-tune: error: measurement rank 2 (host $(hostname), pid [0-9]*) is refused: its target is 'llvm .*-num-cores=1'" "$tmp/err"
check mpi_refuse_no_db test ! -e "$tmp/ref.db"

# Under --enable-recovery the job goes on without a rank that leaves, is
# silent or joins late; only rank 0's loss ends it.
R="mpirun --enable-recovery --oversubscribe -n 3"
W="--task matmul --shape 64,64,64 --trials-per-round 8 --no-baseline --remeasure 0 -j 1 -v"
rank_pid() { sed -n "s/^measurement rank $1 (host [^,]*, pid \([0-9]*\)).*/\1/p" "$2"; }
await() { # pattern, file: up to 30 s (ASan builds are slow)
  i=0
  while [ $i -lt 600 ] && ! grep -q "$1" "$2" 2>/dev/null; do sleep 0.05; i=$((i + 1)); done
}
# a rank sent SIGTERM alone says BYE and leaves
$R "$TUNE" $W --trials 24 --db "$tmp/term.db" >"$tmp/out" 2>"$tmp/err" &
job=$!
await '^measurement rank 2 ' "$tmp/err"
sleep 0.7
kill -TERM "$(rank_pid 2 "$tmp/err")"
wait $job
check mpi_leave_exit test $? -eq 0
check mpi_leave_named grep -q "^mlc-tune: measurement rank 2 (host .*) left the job: ended by signal 15" "$tmp/err"
check mpi_leave_records test "$(summary "$tmp/term.db")" = "24|24|24|1|0"
check mpi_leave_summary grep -q '^measurement ranks lost: 1 ' "$tmp/out"
# a stopped rank is silent: lost after MLC_MPI_SILENCE_S; continued, it
# finds the job over and ends
MLC_MPI_SILENCE_S=2 $R -x MLC_MPI_SILENCE_S "$TUNE" $W --trials 24 --db "$tmp/stop.db" \
  >"$tmp/out" 2>"$tmp/err" &
job=$!
await '^measurement rank 1 ' "$tmp/err"
sleep 0.7
p1=$(rank_pid 1 "$tmp/err")
kill -STOP "$p1"
await 'has sent nothing for 2 s: taken for dead' "$tmp/err"
await '^measurement ranks lost' "$tmp/out"
kill -CONT "$p1"
wait $job
check mpi_silent_exit test $? -eq 0
check mpi_silent_named grep -q "^mlc-tune: measurement rank 1 (host .*, pid $p1) has sent nothing for 2 s: taken for dead" "$tmp/err"
check mpi_silent_records test "$(summary "$tmp/stop.db")" = "24|24|24|1|0"
# a rank that says HELLO after the job started gets work from then on
MLC_MPI_FAULT=2:hello:3 $R -x MLC_MPI_FAULT "$TUNE" $W --trials 32 --db "$tmp/late.db" \
  >"$tmp/out" 2>"$tmp/err"
check mpi_late_exit test $? -eq 0
check mpi_late_waiting grep -q '^measurement rank 2: not started yet' "$tmp/err"
check mpi_late_joined grep -q "^mlc-tune: measurement rank 2 (host .*) joined late; 2 measurement ranks" "$tmp/err"
check mpi_late_records test "$(summary "$tmp/late.db")" = "32|32|32|1|0"
# rank 0 killed: the measurement ranks see it and end (mpirun would let them run)
$R "$TUNE" $W --trials 200 --db "$tmp/r0.db" >"$tmp/out" 2>"$tmp/err" &
job=$!
await '^measurement rank 2 ' "$tmp/err"
await '^round 1:' "$tmp/err"
p0=$(sed -n 's/^rank 0 (host [^,]*, pid \([0-9]*\)).*/\1/p' "$tmp/err")
p1=$(rank_pid 1 "$tmp/err")
p2=$(rank_pid 2 "$tmp/err")
check mpi_rank0_pid test -n "$p0" -a -n "$p1" -a -n "$p2"
[ -n "$p0" ] && kill -9 "$p0"
wait $job
check mpi_rank0_dies_ranks_end test "$(grep -c 'rank 0 died; the job ends' "$tmp/err")" -eq 2
check mpi_rank0_dies_gone sh -c "! kill -0 $p1 2>/dev/null && ! kill -0 $p2 2>/dev/null"
