#!/bin/sh
# mlc-ir end to end: print a task, check reprints it byte for byte, eval is
# deterministic, errors exit 1 with a located message, bad usage exits 2.
B=${MLC_BUILD:-build}
IR=$B/bin/mlc-ir
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

"$IR" print --task matmul --shape 128,128,128 >"$tmp/mm.py" 2>"$tmp/err"
check cli_print_matmul_exit test $? -eq 0
check cli_print_matmul_form grep -q 'T.axis.remap("SSR", \[i, j, k\])' "$tmp/mm.py"
check cli_print_has_init grep -q 'with T.init():' "$tmp/mm.py"
check cli_print_has_grid grep -q 'for i, j, k in T.grid(128, 128, 128):' "$tmp/mm.py"
check cli_print_has_reads grep -q 'T.reads(A\[' "$tmp/mm.py"

"$IR" check "$tmp/mm.py" >"$tmp/mm2.py" 2>"$tmp/err"
check cli_check_roundtrip cmp -s "$tmp/mm.py" "$tmp/mm2.py"

for t in $("$IR" --list-tasks | awk '{print $1}'); do
  "$IR" print --task "$t" >"$tmp/$t.py" 2>"$tmp/err" &&
    "$IR" check "$tmp/$t.py" >"$tmp/$t.2.py" 2>>"$tmp/err" &&
    cmp -s "$tmp/$t.py" "$tmp/$t.2.py"
  check "cli_roundtrip_$t" test $? -eq 0
done

"$IR" eval --task softmax --shape 4,16 >"$tmp/e1" 2>&1
r1=$?
"$IR" eval --task softmax --shape 4,16 >"$tmp/e2" 2>&1
check cli_eval_ok test $r1 -eq 0
check cli_eval_deterministic cmp -s "$tmp/e1" "$tmp/e2"
check cli_eval_prints_checksum grep -q 'hash=' "$tmp/e1"

printf '@T.prim_func\ndef main(A: T.Buffer((4,), "float32")):\n    for i in range(4):\n        A[i] = T.bogus(1)\n' >"$tmp/bad.py"
"$IR" check "$tmp/bad.py" >/dev/null 2>"$tmp/err"
check cli_bad_file_exit1 test $? -eq 1
check cli_bad_file_located grep -q "bad.py:4:[0-9]*:" "$tmp/err"
check cli_bad_file_prefix grep -q "^mlc-ir: error: " "$tmp/err"

: >"$tmp/empty.py"
"$IR" check "$tmp/empty.py" >/dev/null 2>"$tmp/err"
check cli_empty_file_exit1 test $? -eq 1
check cli_empty_file_message grep -q "empty.py:1:1: expected" "$tmp/err"

"$IR" check /nonexistent/file.py >/dev/null 2>"$tmp/err"
check cli_missing_file test $? -eq 1

"$IR" print --task nosuch >/dev/null 2>"$tmp/err"
check cli_unknown_task_exit1 test $? -eq 1
check cli_unknown_task_lists grep -q "matmul" "$tmp/err"

"$IR" print --task matmul --shape 1,2 >/dev/null 2>"$tmp/err"
check cli_bad_shape_exit1 test $? -eq 1

"$IR" frobnicate >/dev/null 2>&1
check cli_unknown_command_exit2 test $? -eq 2
"$IR" >/dev/null 2>&1
check cli_no_command_exit2 test $? -eq 2
"$IR" print --bogus-flag >/dev/null 2>&1
check cli_bad_flag_exit2 test $? -eq 2
"$IR" --help >"$tmp/help" 2>&1
check cli_help grep -q "usage: mlc-ir" "$tmp/help"

for f in tests/golden/*.py; do
  [ -f "$f" ] || continue
  "$IR" check "$f" >/dev/null 2>"$tmp/err"
  check "cli_check_$(basename "$f" .py)" test $? -eq 0
done
