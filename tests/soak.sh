#!/bin/bash
# Crash-consistency soak of the tuner's database (`make soak`; not in CI).
#
# SOAK_RUNS times: start mlc-tune on one database, kill it with SIGKILL
# after a random delay (startup, search, measurement, commit, model save),
# then check what a crash must leave behind:
#   - `PRAGMA integrity_check` (and foreign_key_check) is ok;
#   - no trace is stored twice for a workload and target (by trace hash and
#     by trace text), and no workload twice;
#   - nothing the killed run reported is missing: a round is committed in one
#     transaction before its progress line, so the records after the kill
#     are at least the reported count, and the run added whole batches only
#     (a torn batch would show as a partial one); so a kill loses at most
#     the one batch in flight;
#   - the killed run's workers exit within ORPHAN_WAIT seconds;
#   - a resume run (one more batch) starts from the committed count, exits 0
#     and adds its batch.
# Prints one line per run and a summary; exits 1 if any check failed.
#
# Settings (environment): SOAK_RUNS (50), SOAK_BATCH trials per round (4),
# SOAK_MAX_DELAY seconds (5; delays are uniform in [0.05, SOAK_MAX_DELAY]),
# SOAK_COMMIT_EVERY (5: every 5th run is killed at the 1st to 4th write
# of the write-ahead log instead, to land in commits; 0: never), SOAK_SEED
# (1), BIN (build/bin), SOAK_DIR (a fresh temporary directory,
# kept when a check fails), SOAK_SHAPE (128,128,128).

RUNS=${SOAK_RUNS:-50}
BATCH=${SOAK_BATCH:-4}
MAX_DELAY=${SOAK_MAX_DELAY:-5}
SEED=${SOAK_SEED:-1}
COMMIT_EVERY=${SOAK_COMMIT_EVERY:-5}
BIN=${BIN:-build/bin}
SHAPE=${SOAK_SHAPE:-128,128,128}
DIR=${SOAK_DIR:-$(mktemp -d /tmp/mlc-soak.XXXXXX)}
DB=$DIR/soak.db
ORPHAN_WAIT=5

for t in mlc-tune mlc-worker; do
  [ -x "$BIN/$t" ] || { echo "soak: $BIN/$t not built (make first)" >&2; exit 2; }
done
command -v sqlite3 >/dev/null || { echo "soak: needs the sqlite3 shell" >&2; exit 2; }
mkdir -p "$DIR"
rm -f "$DB" "$DB-wal" "$DB-shm"

TUNE=("$BIN/mlc-tune" --task matmul --shape "$SHAPE" --db "$DB" --cost-model random -j 1
      --trials-per-round "$BATCH" -v)

q() { sqlite3 -batch "$DB" "$1" 2>&1; }
# a kill before the schema's transaction committed leaves no tables (or no file)
has_records() { [ -f "$DB" ] && [ "$(q "SELECT count(*) FROM sqlite_master WHERE name = 'records'")" = 1 ]; }
count() { if has_records; then q "SELECT count(*) FROM records"; else echo 0; fi; }
# records stored more than once: same workload, target and trace hash, or
# same trace text; workloads with the same hash
dups() {
  has_records || { echo 0; return; }
  q "SELECT (SELECT count(*) FROM (SELECT 1 FROM records GROUP BY workload_id, target, trace_hash
                                    HAVING count(*) > 1))
          + (SELECT count(*) FROM (SELECT 1 FROM records GROUP BY workload_id, target, trace
                                    HAVING count(*) > 1))
          + (SELECT count(*) FROM (SELECT 1 FROM workloads GROUP BY hash HAVING count(*) > 1))"
}
# a delay uniform in [0.05, MAX_DELAY] from r, uniform in [0, 2^30)
delay() { awk -v r="$1" -v m="$MAX_DELAY" 'BEGIN { printf "%.2f", 0.05 + r / 1073741824 * (m - 0.05) }'; }
RANDOM=$SEED
# Sleeps until the database's write-ahead log has been written n ($2) times
# (polled every 0.2 ms, so the kill that follows lands inside or just after
# a commit), at most 4 * MAX_DELAY seconds; prints when.
kill_at_wal_write() {
  perl -MTime::HiRes=stat,time,sleep -e '
    my ($wal, $n, $limit) = @ARGV; my ($t0, $seen, $last) = (time, 0, "");
    while (time - $t0 < $limit) {
      my @s = stat($wal); my $now = @s ? "$s[7] $s[9]" : "";
      if ($now ne $last) { $seen++ if $last ne "" || @s; $last = $now; last if $seen >= $n; }
      sleep(0.0002);
    }
    printf "at WAL write %d, %.2f s", $seen, time - $t0;' "$DB-wal" "$2" $((4 * ${MAX_DELAY%.*} + 1))
}
# the trials count of the last progress line in file $1 (empty if none)
reported() { sed -n 's/^round [0-9]*: \([0-9]*\)\/.*/\1/p' "$1" | tail -n 1; }

n_integrity=0 n_dups=0 n_resume=0 n_torn=0 n_orphans=0 n_finished=0 max_lost=0 failed=0
echo "soak: $RUNS runs, batch $BATCH, delays 0.05-$MAX_DELAY s, seed $SEED, db $DB"
for i in $(seq 1 "$RUNS"); do
  bad=""
  before=$(count)
  d=$(delay $((RANDOM * 32768 + RANDOM)))
  # its own process group, so that workers it leaves behind can be found
  setsid "${TUNE[@]}" --trials $((before + 25 * BATCH)) >"$DIR/run$i.out" 2>"$DIR/run$i.err" &
  pid=$!
  if [ "$COMMIT_EVERY" -gt 0 ] && [ $((i % COMMIT_EVERY)) -eq 0 ]; then
    how=$(kill_at_wal_write "$pid" $((RANDOM % 4 + 1)))
  else
    sleep "$d"
    how="after $d s"
  fi
  if kill -KILL "$pid" 2>/dev/null; then killed=yes; else killed=no; n_finished=$((n_finished + 1)); fi
  wait "$pid" 2>/dev/null
  # workers notice the tuner's death and exit; one still alive (not a
  # zombie) after ORPHAN_WAIT seconds is left behind
  orphans=0
  for _ in $(seq 1 $((ORPHAN_WAIT * 10))); do
    orphans=$(ps -o stat= -s "$pid" | grep -vc "^Z")
    [ "$orphans" -eq 0 ] && break
    sleep 0.1
  done
  if [ "$orphans" -gt 0 ]; then
    n_orphans=$((n_orphans + 1))
    kill -KILL -- "-$pid" 2>/dev/null
    bad="$bad workers-left"
  fi
  rep=$(reported "$DIR/run$i.err")
  after=$(count)
  integ=ok
  [ -f "$DB" ] && integ=$(q "PRAGMA integrity_check; PRAGMA foreign_key_check" | tr '\n' ' ' | sed 's/ $//')
  dup=$(dups)
  [ "$integ" = ok ] && n_integrity=$((n_integrity + 1)) || bad="$bad integrity"
  [ "$dup" = 0 ] || { n_dups=$((n_dups + 1)); bad="$bad duplicates"; }
  # reported progress that is not in the database was lost after the commit
  lost=0
  [ -n "$rep" ] && [ "$rep" -gt "$after" ] && lost=$((rep - after))
  [ "$lost" -gt 0 ] && bad="$bad reported-but-lost"
  [ "$lost" -gt "$max_lost" ] && max_lost=$lost
  if [ $(((after - before) % BATCH)) -ne 0 ]; then n_torn=$((n_torn + 1)); bad="$bad torn-batch"; fi
  # resume: one more batch on the same database
  "${TUNE[@]}" --no-baseline --trials $((after + BATCH)) >"$DIR/resume$i.out" 2>"$DIR/resume$i.err"
  rc=$?
  rb=$(sed -n 's/^trials: \([0-9]*\) before, \([0-9]*\) measured now.*/\1 \2/p' "$DIR/resume$i.out")
  final=$(count)
  if [ "$rc" -eq 0 ] && [ "${rb% *}" = "$after" ] && [ "$final" -eq $((after + ${rb#* })) ] &&
     [ "$final" -gt "$after" ]; then
    n_resume=$((n_resume + 1)); res=ok
  else
    res="FAIL(rc $rc, '$rb', $final records)"; bad="$bad resume"
  fi
  [ "$(dups)" = 0 ] || bad="$bad duplicates-after-resume"
  printf 'run %2d: kill %-24s (%s) records %4d -> %4d, reported %4s, integrity %s, dups %s, resume %s, workers left %s%s\n' \
    "$i" "$how" "$([ $killed = yes ] && echo killed || echo 'had finished')" "$before" "$after" \
    "${rep:--}" "$integ" "$dup" "$res" "$orphans" "${bad:+  FAILED:$bad}"
  [ -n "$bad" ] && failed=$((failed + 1))
done
echo "soak summary: runs $RUNS, killed $((RUNS - n_finished)), integrity ok $n_integrity/$RUNS," \
     "duplicates $n_dups, torn batches $n_torn, resumes ok $n_resume/$RUNS," \
     "reported trials lost per kill (max) $max_lost, so at most the batch in flight" \
     "($BATCH trials) is lost per kill, runs leaving workers alive after ${ORPHAN_WAIT} s $n_orphans," \
     "records $(count)"
if [ "$failed" -gt 0 ]; then
  echo "soak: $failed runs failed a check; logs and database kept in $DIR"
  exit 1
fi
[ -z "$SOAK_DIR" ] && rm -rf "$DIR"
exit 0
