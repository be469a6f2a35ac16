#!/bin/sh
# mlc-db report and plot on a small real tuning run: one page with a curve
# per workload holding a dot or cross per record, the best schedule, the
# model section of examples/mlp.json tuned with mlc-tune --model; bad
# input gives a page that says so (an empty database, an unknown task, a
# model the database does not hold, a model file that does not load),
# bad usage exit 2; the bench page of a results.json (report --bench).
B=${MLC_BUILD:-build}
DB=$B/bin/mlc-db
TUNE=$B/bin/mlc-tune
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}
count() { grep -o "$1" "$2" | wc -l; }
Q="--cost-model random --no-baseline -j 1 --trials-per-round 4"

"$TUNE" --task matmul --shape 16,16,16 --trials 12 --db "$tmp/a.db" $Q >"$tmp/out" 2>&1
"$TUNE" --task softmax --shape 8,32 --trials 8 --db "$tmp/a.db" $Q >>"$tmp/out" 2>&1
check report_tune_run test "$("$DB" --db "$tmp/a.db" stats --json | grep -o '"records":[0-9]*')" = '"records":20'

"$DB" --db "$tmp/a.db" report -o "$tmp/r.html" >"$tmp/out" 2>&1
check report_exit test $? -eq 0
check report_summary grep -q "wrote $tmp/r.html: 2 curves, 20 records, 20 dots" "$tmp/out"
check report_headings sh -c "grep -q '<h2>matmul 16,16,16 <small>' '$tmp/r.html' && grep -q '<h2>softmax 8,32 <small>' '$tmp/r.html' && grep -q '<h2>Workloads</h2>' '$tmp/r.html'"
check report_curves test "$(count 'class="curve trials"' "$tmp/r.html")" -eq 2
check report_matmul_points grep -q 'class="curve trials" data-records="12" data-dots="12"' "$tmp/r.html"
# every record a dot or a cross, once in each of the two curves
n=$(( $(count '<circle class="pt"' "$tmp/r.html") + $(count '<polyline class="err"' "$tmp/r.html") ))
check report_dots_per_record test "$n" -eq 40
check report_best_trace grep -q 'sch.get_block(name=&quot;C&quot;, func_name=&quot;main&quot;)' "$tmp/r.html"
check report_tvmscript grep -q '@T.prim_func' "$tmp/r.html"
check report_peak grep -q 'share of peak: ' "$tmp/r.html"
check report_no_network sh -c "! grep -Eq '(src|href)=\"(https?:)?//' '$tmp/r.html'"

"$DB" --db "$tmp/a.db" report --task matmul --max-dots 5 -o "$tmp/d.html" >"$tmp/out" 2>&1
check report_downsampled sh -c "grep -q '1 curves downsampled' '$tmp/out' && grep -q 'Downsampled: ' '$tmp/d.html'"

# an output that cannot be written: exit 1 naming it
"$DB" --db "$tmp/a.db" report -o "$tmp/no/such/dir/r.html" >"$tmp/out" 2>&1
check report_unwritable sh -c "test $? -eq 1 && grep -q 'mlc-db: error: cannot write $tmp/no/such/dir/r.html: No such file' '$tmp/out'"

# bad input: a page that says so
"$DB" --db "$tmp/e.db" import /dev/null >/dev/null 2>&1
"$DB" --db "$tmp/e.db" report -o "$tmp/e.html" >"$tmp/out" 2>&1
check report_empty_db sh -c "test $? -eq 0 && grep -q 'holds no workloads and no records' '$tmp/e.html'"
"$DB" --db "$tmp/a.db" report --task nosuch -o "$tmp/u.html" >"$tmp/out" 2>&1
check report_unknown_task sh -c "test $? -eq 0 && grep -q 'No workload of this task' '$tmp/u.html' && grep -q 'note: No workload' '$tmp/out'"
"$DB" --db "$tmp/a.db" report --model examples/mlp.json -o "$tmp/m.html" >"$tmp/out" 2>&1
check report_model_mismatch sh -c "test $? -eq 0 && grep -q 'does not match' '$tmp/m.html'"
printf 'not a model' >"$tmp/bad.json"
"$DB" --db "$tmp/a.db" report --model "$tmp/bad.json" -o "$tmp/b.html" >"$tmp/out" 2>&1
check report_model_unreadable sh -c "test $? -eq 0 && grep -q 'could not be read' '$tmp/b.html'"

# a model tuned into its own database: kernels ranked by calls x time
"$TUNE" --model examples/mlp.json --trials 16 --db "$tmp/m.db" $Q >"$tmp/out" 2>&1
"$DB" --db "$tmp/m.db" report --model examples/mlp.json -o "$tmp/mm.html" >"$tmp/out" 2>&1
check report_model_exit test $? -eq 0
check report_model_table sh -c "grep -q 'class=\"sortable kernels\"' '$tmp/mm.html' && grep -q 'Estimated model latency' '$tmp/mm.html' && grep -q 'class=\"allocation\"' '$tmp/mm.html'"

# plot: one standalone SVG, or the same as a PNG
"$DB" --db "$tmp/a.db" plot --task matmul -o "$tmp/c.svg" >"$tmp/out" 2>&1
check plot_exit test $? -eq 0
check plot_svg sh -c "head -c 5 '$tmp/c.svg' | grep -q '<?xml' && test \$(grep -o '<circle class=\"pt\"' '$tmp/c.svg' | wc -l) -ge 1"
"$DB" --db "$tmp/a.db" plot --task matmul --figure histogram -o "$tmp/h.svg" >/dev/null 2>&1
check plot_histogram grep -q '<rect class="bar"' "$tmp/h.svg"
"$DB" --db "$tmp/a.db" plot --task matmul --figure pie -o "$tmp/p.svg" >/dev/null 2>"$tmp/err"
check plot_bad_figure sh -c "test $? -eq 2 && grep -q 'curve, wall or histogram' '$tmp/err'"
"$DB" --db "$tmp/a.db" plot --task matmul -o "$tmp/p.png" >/dev/null 2>"$tmp/err"
check plot_png sh -c "test $? -eq 0 && head -c 8 '$tmp/p.png' | od -c | grep -q 'P   N   G'"
"$DB" --db "$tmp/a.db" plot --task matmul -o "$tmp/p.jpg" >/dev/null 2>"$tmp/err"
check plot_not_svg_png sh -c "test $? -eq 2 && grep -q '.svg or .png' '$tmp/err'"
"$DB" --db "$tmp/a.db" plot --task nosuch -o "$tmp/n.svg" >/dev/null 2>"$tmp/err"
check plot_nothing sh -c "test $? -eq 1 && grep -q 'mlc-db: error: No workload' '$tmp/err'"
"$DB" --db "$tmp/a.db" top --task matmul -o x.html >/dev/null 2>&1
check report_option_misuse test $? -eq 2

# the bench page (make bench's last step): ours against each baseline
"$DB" report --bench tests/fuzz/corpus/fuzz_bench_report/results.json -o "$tmp/bench.html" >"$tmp/out" 2>&1
check bench_report_exit sh -c "test $? -eq 0 && grep -q 'wrote $tmp/bench.html: 4 benchmark cases' '$tmp/out'"
check bench_report_speedup sh -c "grep -q '0.82x' '$tmp/bench.html' && grep -q '1.71x' '$tmp/bench.html'"
check bench_report_skipped grep -q '1 cases skipped' "$tmp/bench.html"
check bench_report_escaped grep -q '&lt;script&gt;' "$tmp/bench.html"
"$DB" report --bench tests/fuzz/corpus/fuzz_bench_report/truncated.json -o "$tmp/t.html" >/dev/null 2>"$tmp/err"
check bench_report_bad_json sh -c "test $? -eq 1 && grep -q 'truncated.json: line 1, column 5' '$tmp/err'"
"$DB" report --bench x.json --task matmul >/dev/null 2>&1
check bench_report_usage test $? -eq 2
