#!/bin/sh
# mlc-db end to end on a database filled by import: list, top, show (--ir),
# stats, export | import round trip (same top-k), the sqlite3 shell reading
# it, and bad input: exit 1 with a clear message, bad usage exit 2, a failed
# import changes nothing, a foreign file is never overwritten.
B=${MLC_BUILD:-build}
DB=$B/bin/mlc-db
IR=$B/bin/mlc-ir
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

# A workload as a JSON string (TVMScript with newlines and quotes escaped).
json_text() { awk 'BEGIN { ORS = "" } { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); print $0 "\\n" }' "$1"; }
trace() { # split matmul's j loop by $1
  printf '{"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3"]],["Split",["l2",null,%s],{"preserve_unit_iters":true},["l4","l5"]]],"decisions":{},"version":1}' "$1"
}
"$IR" print --task matmul --shape 16,16,16 >"$tmp/mm.py"
W=$(json_text "$tmp/mm.py")
{
  printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm","trace":%s,"run_secs":[2e-06,2.2e-06],"error":null}\n' "$W" "$(trace 4)"
  printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm","trace":%s,"run_secs":[1e-06,1e-06],"error":null}\n' "$W" "$(trace 8)"
  printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm","trace":%s,"run_secs":[],"error":"crash: worker killed by signal 11"}\n' "$W" "$(trace 2)"
  printf '\n'
  printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm -mcpu=generic -num-cores=1","trace":%s,"run_secs":[5e-06],"error":null}\n' "$W" "$(trace 4)"
} >"$tmp/in.jsonl"

"$DB" --db "$tmp/a.db" import "$tmp/in.jsonl" >"$tmp/out" 2>"$tmp/err"
check db_import_exit test $? -eq 0
check db_import_count grep -q 'imported 4 records (0 duplicates' "$tmp/out"
"$DB" --db "$tmp/a.db" import "$tmp/in.jsonl" >"$tmp/out" 2>&1
check db_import_dedup grep -q 'imported 0 records (4 duplicates' "$tmp/out"

"$DB" --db "$tmp/a.db" list >"$tmp/list" 2>&1
check db_list_exit test $? -eq 0
check db_list_row grep -q 'matmul  *16,16,16  *4  *1  *8.19 GFLOP/s (1 us)' "$tmp/list"
check db_list_targets test "$(grep -c matmul "$tmp/list")" -eq 2
MLC_DB="$tmp/a.db" "$DB" list --json >"$tmp/list.json" 2>&1
check db_list_json grep -q '"best_gflops":8.192' "$tmp/list.json"

"$DB" --db "$tmp/a.db" top --task matmul -k 5 --target llvm >"$tmp/top" 2>&1
check db_top_exit test $? -eq 0
check db_top_rows test "$(grep -c ' us ' "$tmp/top")" -eq 2
check db_top_order sh -c "sed -n 2p '$tmp/top' | grep -q '^   1  2  *1 us  *8.19 GFLOP/s'"
"$DB" --db "$tmp/a.db" top --task matmul --shape 16,16,16 -k 1 --json >"$tmp/top.json" 2>&1
check db_top_json_k grep -q '"rank":1,"id":2,' "$tmp/top.json"
check db_top_json_both_targets grep -q 'generic' "$tmp/top.json"

"$DB" --db "$tmp/a.db" show 2 >"$tmp/show" 2>&1
check db_show_exit test $? -eq 0
check db_show_trace grep -q 'l4, l5 = sch.split(loop=l2, factors=\[None, 8\]' "$tmp/show"
check db_show_times grep -q 'run times: 1 us, 1 us' "$tmp/show"
"$DB" --db "$tmp/a.db" show 2 --ir >"$tmp/showir" 2>&1
check db_show_ir grep -q 'for i, j_0, j_1, k in T.grid(16, 2, 8, 16):' "$tmp/showir"
"$DB" --db "$tmp/a.db" show 3 >"$tmp/show3" 2>&1
check db_show_error grep -q 'error:     crash: worker killed by signal 11' "$tmp/show3"
"$DB" --db "$tmp/a.db" show 2 --json >"$tmp/show.json" 2>&1
check db_show_json grep -q '"mean_sec":1e-06' "$tmp/show.json"

"$DB" --db "$tmp/a.db" stats >"$tmp/stats" 2>&1
check db_stats_exit test $? -eq 0
check db_stats_classes grep -q '^  crash  *1$' "$tmp/stats"
check db_stats_ok grep -q '^  ok  *3$' "$tmp/stats"
"$DB" --db "$tmp/a.db" stats --json >"$tmp/stats.json" 2>&1
check db_stats_json grep -q '"records":4,"by_class":{"crash":1,"ok":3}' "$tmp/stats.json"

# Round trip: export | import gives the same records and the same top-k.
"$DB" --db "$tmp/a.db" export | "$DB" --db "$tmp/b.db" import - >"$tmp/out" 2>&1
check db_roundtrip_import grep -q 'imported 4 records' "$tmp/out"
"$DB" --db "$tmp/a.db" top --task matmul -k 10 >"$tmp/top_a" 2>&1
"$DB" --db "$tmp/b.db" top --task matmul -k 10 >"$tmp/top_b" 2>&1
check db_roundtrip_top cmp -s "$tmp/top_a" "$tmp/top_b"
"$DB" --db "$tmp/a.db" export >"$tmp/ea"; "$DB" --db "$tmp/b.db" export >"$tmp/eb"
check db_roundtrip_export cmp -s "$tmp/ea" "$tmp/eb"
check db_export_lines test "$(wc -l <"$tmp/ea")" -eq 4
"$DB" --db "$tmp/a.db" export --task nothing >"$tmp/en"
check db_export_task_filter test ! -s "$tmp/en"

if command -v sqlite3 >/dev/null 2>&1; then
  check db_sqlite3_shell test "$(sqlite3 "$tmp/a.db" 'SELECT count(*) FROM records WHERE error IS NULL')" = 3
  check db_sqlite3_wal test "$(sqlite3 "$tmp/a.db" 'PRAGMA journal_mode')" = wal
else
  echo "SKIP db_sqlite3_shell: no sqlite3 shell on PATH"
fi

# Bad input: exit 1 and a clear message.
"$DB" --db "$tmp/a.db" top --task nosuchtask >/dev/null 2>"$tmp/err"
check db_unknown_task_exit test $? -eq 1
check db_unknown_task_msg grep -q "^mlc-db: error: unknown task 'nosuchtask'" "$tmp/err"
"$DB" --db "$tmp/a.db" show 999 >/dev/null 2>"$tmp/err"
check db_missing_record_exit test $? -eq 1
check db_missing_record_msg grep -q 'no record 999' "$tmp/err"
"$DB" --db /nonexistent/dir/x.db list >/dev/null 2>"$tmp/err"
check db_unreadable_exit test $? -eq 1
check db_unreadable_msg grep -q '^mlc-db: error: /nonexistent/dir/x.db: no such database' "$tmp/err"
"$DB" --db "$tmp/a.db" import /nonexistent.jsonl >/dev/null 2>"$tmp/err"
check db_import_missing_file test $? -eq 1
# What the database holds, through mlc-db itself (no sqlite3 shell needed).
before=$("$DB" --db "$tmp/a.db" --json stats 2>&1)
{ printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm","trace":%s,"run_secs":[1e-06],"error":null}\n' "$W" "$(trace 16)"; echo '{"task": "matmul", oops'; } >"$tmp/bad.jsonl"
"$DB" --db "$tmp/a.db" import "$tmp/bad.jsonl" >/dev/null 2>"$tmp/err"
check db_bad_jsonl_exit test $? -eq 1
check db_bad_jsonl_line grep -q 'bad.jsonl: line 2: ' "$tmp/err"
check db_bad_jsonl_unchanged test "$("$DB" --db "$tmp/a.db" --json stats 2>&1)" = "$before"
printf '{"task":"matmul","shape":"16,16,16","workload":"def main(:","target":"llvm","trace":%s,"run_secs":[1e-06],"error":null}\n' "$(trace 16)" >"$tmp/bad2.jsonl"
"$DB" --db "$tmp/a.db" import "$tmp/bad2.jsonl" >/dev/null 2>"$tmp/err"
check db_bad_workload_exit test $? -eq 1
check db_bad_workload_msg grep -q 'line 1: workload: ' "$tmp/err"

printf 'just some text\n' >"$tmp/text.db"
"$DB" --db "$tmp/text.db" import "$tmp/in.jsonl" >/dev/null 2>"$tmp/err"
check db_foreign_exit test $? -eq 1
check db_foreign_msg grep -q 'not an SQLite database' "$tmp/err"
check db_foreign_untouched test "$(cat "$tmp/text.db")" = "just some text"

# Bad usage: exit 2.
"$DB" >/dev/null 2>&1; check db_usage_no_command test $? -eq 2
"$DB" frobnicate >/dev/null 2>&1; check db_usage_unknown_command test $? -eq 2
"$DB" --db "$tmp/a.db" top -k abc --task matmul >/dev/null 2>&1; check db_usage_bad_k test $? -eq 2
"$DB" --db "$tmp/a.db" top >/dev/null 2>&1; check db_usage_top_needs_task test $? -eq 2
"$DB" --db "$tmp/a.db" show >/dev/null 2>&1; check db_usage_show_needs_id test $? -eq 2
"$DB" --db "$tmp/a.db" show abc >/dev/null 2>&1; check db_usage_show_bad_id test $? -eq 2
"$DB" --bogus >/dev/null 2>&1; check db_usage_bad_option test $? -eq 2
"$DB" --help >"$tmp/help" 2>&1
check db_help test $? -eq 0
check db_help_text grep -q '^usage: mlc-db' "$tmp/help"
W2=$B/bin/mlc-worker
"$W2" >/dev/null 2>&1; check worker_usage test $? -eq 2
"$W2" --help >/dev/null 2>&1; check worker_help test $? -eq 0
printf 'garbage' | "$W2" build >/dev/null 2>&1; check worker_garbage_input test $? -eq 1
"$W2" run </dev/null >/dev/null 2>&1; check worker_clean_eof test $? -eq 0

# Records are untrusted input: import replays every trace on its workload
# and refuses (naming the line, changing nothing) a trace that does not
# replay, a stated sched_hash that is not the replay's, and run times that
# are not finite positive numbers. Export states each record's hash.
"$DB" --db "$tmp/a.db" export >"$tmp/eh"
check db_export_sched_hash test "$(grep -c '"sched_hash":"[0-9a-f]\{16\}"}$' "$tmp/eh")" -eq 4
"$DB" --db "$tmp/a.db" show 2 >"$tmp/showh" 2>&1
check db_show_sched_hash grep -q '^  scheduled: [0-9a-f]\{16\}$' "$tmp/showh"
before=$("$DB" --db "$tmp/a.db" --json stats 2>&1)
untrusted() { # name, line 2 of the file, expected message
  { printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm","trace":%s,"run_secs":[1e-06],"error":null}\n' "$W" "$(trace 16)"; printf '%s\n' "$2"; } >"$tmp/u.jsonl"
  "$DB" --db "$tmp/a.db" import "$tmp/u.jsonl" >/dev/null 2>"$tmp/err"
  check "db_untrusted_${1}_exit1" test $? -eq 1
  check "db_untrusted_${1}_line" grep -qF "u.jsonl: line 2: " "$tmp/err"
  check "db_untrusted_${1}_msg" grep -qF "$3" "$tmp/err"
  check "db_untrusted_${1}_unchanged" test "$("$DB" --db "$tmp/a.db" --json stats 2>&1)" = "$before"
}
line() { # trace, run_secs, extra fields
  printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm","trace":%s,"run_secs":%s,"error":null%s}' "$W" "$1" "$2" "$3"
}
untrusted negative_time "$(line "$(trace 2)" '[1e-06,-1e-06]')" 'record with run time -1e-06'
untrusted zero_time "$(line "$(trace 2)" '[0]')" 'record with run time 0'
untrusted infinite_time "$(line "$(trace 2)" '[1e999]')" 'record with run time inf'
untrusted nan_time "$(line "$(trace 2)" '[NaN]')" ''
nob='{"insts":[["GetBlock",[],{"name":"nosuch","func_name":"main"},["b0"]]],"decisions":{},"version":1}'
untrusted no_replay "$(line "$nob" '[1e-06]')" 'the trace does not replay'
untrusted wrong_hash "$(line "$(trace 2)" '[1e-06]' ',"sched_hash":"0123456789abcdef"')" 'the record says 0123456789abcdef'
# The hash a line states is checked against its own replay: another
# record's hash (a trace edited after export) is refused too.
h8=$(grep -o '"sched_hash":"[0-9a-f]*"' "$tmp/eh" | sed -n 2p)
untrusted edited_trace "$(line "$(trace 2)" '[1e-06]' ",$h8")" 'the trace replays to a function with hash'
# A trace is replayed on the workload as the database stores it (what
# mlc-compile replays it on): the same workload with its block renamed, and
# a trace naming that block, is refused.
WD=$(printf '%s' "$W" | sed 's/T.block(\\"C\\")/T.block(\\"D\\")/')
dtrace=$(trace 2 | sed 's/"name":"C"/"name":"D"/')
check db_untrusted_renamed_setup test "$WD" != "$W"
untrusted renamed_block "$(printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"llvm","trace":%s,"run_secs":[1e-06],"error":null}' "$WD" "$dtrace")" 'no block named "D"'
# The same line with its true hash (from a database that imported it) is fine.
line "$(trace 2)" '[3e-06]' >"$tmp/ok.jsonl"; echo >>"$tmp/ok.jsonl"
"$DB" --db "$tmp/c.db" import "$tmp/ok.jsonl" >/dev/null 2>&1
"$DB" --db "$tmp/c.db" export >"$tmp/ok2.jsonl"
"$DB" --db "$tmp/d.db" import "$tmp/ok2.jsonl" >"$tmp/out" 2>&1
check db_untrusted_true_hash_ok grep -q 'imported 1 records' "$tmp/out"

# A database of schema version 2 (no sched_hash nor disturbed column) opens, gets the
# columns, and keeps its rows with a NULL hash.
if command -v sqlite3 >/dev/null 2>&1; then
  cp "$tmp/c.db" "$tmp/v2.db"
  sqlite3 "$tmp/v2.db" "ALTER TABLE records DROP COLUMN sched_hash; ALTER TABLE records DROP COLUMN disturbed; UPDATE meta SET value = '2' WHERE key = 'schema_version';" 2>"$tmp/err"
  if [ $? -eq 0 ]; then
    "$DB" --db "$tmp/v2.db" show 1 >"$tmp/show_v2" 2>&1
    check db_migrate_v2_show grep -q '^  scheduled: - (not recorded)' "$tmp/show_v2"
    check db_migrate_v2_version test "$(sqlite3 "$tmp/v2.db" "SELECT value FROM meta WHERE key = 'schema_version'")" = 4
    check db_migrate_v2_null test "$(sqlite3 "$tmp/v2.db" 'SELECT count(*) FROM records WHERE sched_hash IS NULL')" = 1
  else
    echo "SKIP db_migrate_v2: this sqlite3 cannot drop a column"
  fi
  # top replays what it lists: a row whose trace was edited with SQL shows
  # DIFFERS (mlc-compile would skip it), the others ok.
  "$DB" --db "$tmp/a.db" top --task matmul --target llvm >"$tmp/out" 2>&1
  check db_top_replay_ok test "$(grep -c ' ok  ' "$tmp/out")" -eq 2
  sqlite3 "$tmp/c.db" "UPDATE records SET trace = replace(trace, ',2]', ',4]')"
  "$DB" --db "$tmp/c.db" top --task matmul >"$tmp/out" 2>&1
  check db_top_replay_differs grep -q '^   1  1  .* DIFFERS  ' "$tmp/out"
  "$DB" --db "$tmp/c.db" top --task matmul --json >"$tmp/out" 2>&1
  check db_top_replay_json grep -q '"replay":"DIFFERS"' "$tmp/out"
  # A row written around the API with a negative time never ranks.
  sqlite3 "$tmp/c.db" "UPDATE records SET mean_sec = -1"
  "$DB" --db "$tmp/c.db" top --task matmul >"$tmp/out" 2>&1
  check db_negative_mean_never_top grep -q 'no successful records' "$tmp/out"
fi
