#!/bin/sh
# PostgreSQL as the shared record store, end to end, on a server of our own
# (tests/pg_server.sh: Unix socket only, removed however this script ends):
# two mlc-tune jobs tuning the same workload into one database at once (no
# duplicate traces, every record whole and replayable, the budget reached,
# a rerun finds nothing to do); an mlc-tune killed with SIGKILL mid-run
# loses no committed batch and a rerun resumes; mlc-db export from
# PostgreSQL, import into SQLite and back gives the same records; mlc-db,
# mlc-compile and mlc-db report read the server. SKIP without the server binaries.
B=${MLC_BUILD:-build}
TUNE=$B/bin/mlc-tune
DB=$B/bin/mlc-db
COMPILE=$B/bin/mlc-compile
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
tmp=$(mktemp -d)
pg=
trap 'rm -rf "$tmp"; [ -n "$pg" ] && sh tests/pg_server.sh stop "$pg"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

if ! "$DB" --db postgresql:///x list 2>&1 | grep -qv 'built without PostgreSQL'; then
  echo "SKIP mlc_db_pg: mlc-tune was built without libpq"; exit 0
fi
out=$(sh tests/pg_server.sh start $$ shared killed back)
case $out in
/*) pg=$out ;;
SKIP*) echo "$out"; exit 0 ;;
*) echo "FAIL pg_server: $out"; exit 1 ;;
esac
url() { echo "postgresql:///$1?host=$pg&user=postgres"; }
sql() { # database, query: one value per line
  "$PGBIN/psql" -X -q -A -t -h "$pg" -U postgres -d "$1" -c "$2"
}
TUNE_ARGS="--task matmul --shape 32,32,32 --trials-per-round 8 --cost-model random --no-baseline -j 1 --json"

# ---- two jobs, one database ------------------------------------------------------
"$TUNE" $TUNE_ARGS --trials 8 --seed 1 --db "$(url shared)" >"$tmp/a.json" 2>"$tmp/a.err" &
pa=$!
MLC_DB=$(url shared) "$TUNE" $TUNE_ARGS --trials 8 --seed 1 >"$tmp/b.json" 2>"$tmp/b.err" &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
check pg_two_jobs_exit test "$ra$rb" = 00
[ "$ra$rb" = 00 ] || { cat "$tmp/a.err" "$tmp/b.err" | sed 's/^/    /' | head -n 20; }
n=$(sql shared "SELECT count(*) FROM records")
dups=$(sql shared "SELECT count(*) - count(DISTINCT (workload_id, target, trace_hash)) FROM records")
ma=$(sed -n 's/.*"measured":\([0-9]*\).*/\1/p' "$tmp/a.json")
mb=$(sed -n 's/.*"measured":\([0-9]*\).*/\1/p' "$tmp/b.json")
echo "# two jobs: a measured $ma, b measured $mb, the database holds $n"
check pg_two_jobs_no_duplicates test "$dups" = 0
# Each job stops once the database holds its budget; what both measured is
# stored once, what either measured is there: max(a, b) <= n <= a + b.
check pg_two_jobs_budget test "$n" -ge 8 -a "$n" -ge "${ma:-99}" -a "$n" -ge "${mb:-99}" \
  -a "$n" -le $(( ${ma:-0} + ${mb:-0} ))
check pg_two_jobs_one_workload test "$(sql shared "SELECT count(*) FROM workloads")" = 1
check pg_two_jobs_hashes test "$(sql shared "SELECT count(*) FROM records WHERE sched_hash IS NULL")" = 0
"$TUNE" $TUNE_ARGS --trials 8 --db "$(url shared)" >"$tmp/c.json" 2>&1
check pg_two_jobs_rerun_nothing_to_do grep -q '"nothing_to_do":true' "$tmp/c.json"

# ---- mlc-db and mlc-compile read the server -------------------------------------------
"$DB" --db "$(url shared)" stats >"$tmp/stats" 2>&1
check pg_db_stats grep -q "^records: $n\$" "$tmp/stats"
"$DB" --db "$(url shared)" top --task matmul -k 3 >"$tmp/top" 2>&1
check pg_db_top test "$(grep -c ' ok' "$tmp/top")" -eq 3
"$DB" --db "$(url shared)" report -o "$tmp/r.html" >"$tmp/report" 2>&1
check pg_db_report grep -q "1 curves, $n records, $n dots" "$tmp/report"
"$COMPILE" --task matmul --shape 32,32,32 --db "$(url shared)" -o "$tmp/mm.o" >"$tmp/compile" 2>&1
check pg_compile_uses_record grep -q 'record [0-9]' "$tmp/compile"
"$DB" --db "postgresql://postgres:hunter2@/nosuchdb?host=$pg" list >"$tmp/nodb" 2>&1
check pg_bad_db_exit test $? -eq 1
check pg_bad_db_message sh -c "grep -q 'nosuchdb.*cannot connect.*does not exist' '$tmp/nodb' && ! grep -q hunter2 '$tmp/nodb'"

# ---- export / import across engines ----------------------------------------------------
"$DB" --db "$(url shared)" export >"$tmp/pg.jsonl" 2>"$tmp/exp.err"
check pg_export_all test "$(wc -l <"$tmp/pg.jsonl")" -eq "$n"
"$DB" --db "$tmp/copy.db" import "$tmp/pg.jsonl" >"$tmp/imp1" 2>&1
check pg_import_sqlite grep -q "imported $n records (0 duplicates" "$tmp/imp1"
"$DB" --db "$tmp/copy.db" export >"$tmp/sqlite.jsonl"
"$DB" --db "$(url back)" import "$tmp/sqlite.jsonl" >"$tmp/imp2" 2>&1
check pg_import_back grep -q "imported $n records (0 duplicates" "$tmp/imp2"
"$DB" --db "$(url back)" export >"$tmp/back.jsonl"
check pg_round_trip_same cmp -s "$tmp/pg.jsonl" "$tmp/back.jsonl"
check pg_round_trip_sqlite_same cmp -s "$tmp/pg.jsonl" "$tmp/sqlite.jsonl"

# ---- SIGKILL mid-run -------------------------------------------------------------------
"$TUNE" $TUNE_ARGS --trials 400 --db "$(url killed)" >/dev/null 2>&1 &
pk=$!
i=0
while [ "$(sql killed "SELECT count(*) FROM records" 2>/dev/null || echo 0)" -lt 8 ] && [ $i -lt 300 ]; do
  sleep 0.1; i=$((i + 1))
done
kill -9 $pk 2>/dev/null
{ wait $pk; rk=$?; } 2>/dev/null
check pg_killed_by_sigkill test $rk -eq 137
nk=$(sql killed "SELECT count(*) FROM records")
# round 1 is the default schedule, measured alone; then whole batches of 8
check pg_killed_whole_batches test "$nk" -ge 9 -a $(( (nk - 1) % 8 )) -eq 0
check pg_killed_rounds_whole test "$(sql killed "SELECT count(*) FROM (SELECT round FROM records GROUP BY round HAVING count(*) != 8 AND round > 1) x")" = 0
"$TUNE" $TUNE_ARGS --trials $(( nk + 8 )) --db "$(url killed)" >"$tmp/k.json" 2>&1
check pg_killed_resumes sh -c "grep -q '\"trials_before\":$nk,\"measured\":8' '$tmp/k.json'"
check pg_killed_total test "$(sql killed "SELECT count(*) FROM records")" -eq $(( nk + 8 ))
