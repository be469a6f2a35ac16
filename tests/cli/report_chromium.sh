#!/bin/sh
# mlc-db report opened in headless Chromium (Debian's chromium; SKIP when
# absent): a small real tuning run of two workloads with a failed record
# added, the page rendered with its script run: no console message (a
# page with an error is caught, to show the check works), the expected
# headings, one curve per workload against trials with as many points as
# records in the DOM Chromium built. A screenshot is kept for a person to
# look at: $B/test-output/report_chromium/report.png.
B=${MLC_BUILD:-build}
DB=$B/bin/mlc-db
TUNE=$B/bin/mlc-tune
IR=$B/bin/mlc-ir
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { # name, condition command...
  name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}
CHROMIUM=$(command -v chromium || command -v chromium-browser)
if [ -z "$CHROMIUM" ]; then
  echo "SKIP report_chromium: no chromium (Debian's chromium package; make deps installs it)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$B/test-output/report_chromium
mkdir -p "$out"
Q="--cost-model random --no-baseline -j 1 --trials-per-round 4"

# browser FILE.html DOM [extra flags]: the DOM after scripts ran; console
# messages in DOM.log
browser() {
  f=$1; dom=$2; shift 2
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 "$@" \
    --dump-dom "file://$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" >"$dom" 2>"$dom.log"
}

"$TUNE" --task matmul --shape 16,16,16 --trials 12 --db "$tmp/a.db" $Q >"$tmp/out" 2>&1
"$TUNE" --task softmax --shape 8,32 --trials 8 --db "$tmp/a.db" $Q >>"$tmp/out" 2>&1
# one failed candidate of matmul, as a crashed worker leaves it
json_text() { awk 'BEGIN { ORS = "" } { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); print $0 "\\n" }' "$1"; }
"$IR" print --task matmul --shape 16,16,16 >"$tmp/mm.py"
target=$("$DB" --db "$tmp/a.db" top --task matmul -k 1 --json | sed 's/.*"target":"\([^"]*\)".*/\1/')
printf '{"task":"matmul","shape":"16,16,16","workload":"%s","target":"%s","trace":{"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3"]],["Split",["l2",null,3],{"preserve_unit_iters":true},["l4","l5"]]],"decisions":{},"version":1},"run_secs":[],"error":"crash: worker killed by signal 11"}\n' \
  "$(json_text "$tmp/mm.py")" "$target" >"$tmp/fail.jsonl"
"$DB" --db "$tmp/a.db" import "$tmp/fail.jsonl" >>"$tmp/out" 2>&1
records=$("$DB" --db "$tmp/a.db" stats --json | sed 's/.*"records":\([0-9]*\).*/\1/')
check chromium_tuned test "$records" -eq 21

"$DB" --db "$tmp/a.db" report -o "$out/report.html" >"$tmp/out" 2>&1
check chromium_report_written test $? -eq 0
browser "$out/report.html" "$tmp/dom.html"
check chromium_dom test -s "$tmp/dom.html"
check chromium_no_console_errors sh -c "! grep -q ':CONSOLE' '$tmp/dom.html.log'"
grep ':CONSOLE' "$tmp/dom.html.log" | head -5
check chromium_heading_title grep -q '<h1>mlc-tune tuning report</h1>' "$tmp/dom.html"
check chromium_heading_workloads grep -q '<h2>Workloads</h2>' "$tmp/dom.html"
check chromium_heading_matmul grep -q '<h2>matmul 16,16,16 <small>' "$tmp/dom.html"
check chromium_heading_softmax grep -q '<h2>softmax 8,32 <small>' "$tmp/dom.html"

# Each workload's curve against trials, in the DOM Chromium built: its
# circles (successes) and crosses (failures) against its record count.
curves=$(grep -o 'class="curve trials"' "$tmp/dom.html" | wc -l)
check chromium_one_curve_per_workload test "$curves" -eq 2
awk '/<svg[^>]*class="curve trials"/ { inside = 1; n = 0; match($0, /data-records="[0-9]+"/);
       want = substr($0, RSTART + 14, RLENGTH - 15) }
     inside && /<circle class="pt"|<polyline class="err"/ { n++ }
     inside && /<\/svg>/ { print want, n; inside = 0 }' "$tmp/dom.html" >"$tmp/points"
check chromium_points_matmul grep -q '^13 13$' "$tmp/points"
check chromium_points_softmax grep -q '^8 8$' "$tmp/points"
check chromium_error_marked test "$(grep -o '<polyline class="err"' "$tmp/dom.html" | wc -l)" -eq 2

# The check catches a page whose script fails.
printf '<html><body><script>undefined_function();</script></body></html>' >"$tmp/bad.html"
browser "$tmp/bad.html" "$tmp/bad.dom"
check chromium_catches_console_error grep -q ':CONSOLE.*undefined_function' "$tmp/bad.dom.log"

timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
  --user-data-dir="$tmp/profile" --window-size=1280,2400 --screenshot="$out/report.png" \
  "file://$(cd "$out" && pwd)/report.html" >"$tmp/shot.log" 2>&1
check chromium_screenshot sh -c "head -c 8 '$out/report.png' | od -c | grep -q 'P   N   G'"
echo "# report_chromium: page $out/report.html, screenshot $out/report.png"
