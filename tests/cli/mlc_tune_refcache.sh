#!/bin/sh
# mlc-tune --ref-cache: a workload's reference outputs are computed once
# and read by the next run; a damaged entry is refused and computed again
# (the run's candidates still check out); another workload has its own
# entry; 'off' keeps nothing; the default directory is under
# $XDG_CACHE_HOME.
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
Q="--cost-model random --no-baseline -j 1 --trials-per-round 4 --trials 4"
refs=$tmp/cache/refs
entries() { ls "$1" 2>/dev/null | grep -c '\.ref$'; }

"$TUNE" --task matmul --shape 16,16,16 $Q --db "$tmp/a.db" --ref-cache "$refs" >"$tmp/out" 2>"$tmp/err"
check refcache_first_exit test $? -eq 0
check refcache_first_computed grep -q "^reference outputs: 1 computed, 0 read from $refs\$" "$tmp/out"
check refcache_first_entry test "$(entries "$refs")" -eq 1

"$TUNE" --task matmul --shape 16,16,16 $Q --db "$tmp/b.db" --ref-cache "$refs" --json >"$tmp/out" 2>"$tmp/err"
check refcache_second_exit test $? -eq 0
check refcache_second_read grep -q '"refs_computed":0,"refs_cached":1,"refs_refused":0' "$tmp/out"

# one byte of the stored values changed: refused, computed again, rewritten
entry=$(ls "$refs"/*.ref)
size=$(wc -c <"$entry")
printf '\177' | dd of="$entry" bs=1 seek=$((size - 20)) conv=notrunc 2>/dev/null
"$TUNE" --task matmul --shape 16,16,16 $Q --db "$tmp/c.db" --ref-cache "$refs" >"$tmp/out" 2>"$tmp/err"
check refcache_damaged_exit test $? -eq 0
check refcache_damaged_said grep -q "was refused (its checksum does not match its contents)" "$tmp/err"
check refcache_damaged_recomputed grep -q "^reference outputs: 1 computed, 0 read from .*(stale or damaged entries were refused" "$tmp/out"
check refcache_damaged_no_errors grep -q "4 measured now (0 errors)" "$tmp/out"
"$TUNE" --task matmul --shape 16,16,16 $Q --db "$tmp/d.db" --ref-cache "$refs" >"$tmp/out" 2>"$tmp/err"
check refcache_rewritten grep -q "^reference outputs: 0 computed, 1 read" "$tmp/out"

# another workload, its own entry; an entry cut short is refused
"$TUNE" --task matmul --shape 16,16,8 $Q --db "$tmp/a.db" --ref-cache "$refs" >"$tmp/out" 2>"$tmp/err"
check refcache_other_computed grep -q "^reference outputs: 1 computed, 0 read" "$tmp/out"
check refcache_other_entry test "$(entries "$refs")" -eq 2
: >"$entry"
"$TUNE" --task matmul --shape 16,16,16 $Q --db "$tmp/e.db" --ref-cache "$refs" >"$tmp/out" 2>"$tmp/err"
check refcache_empty_refused grep -q "was refused (it is cut short (0 bytes))" "$tmp/err"
check refcache_empty_no_errors grep -q "4 measured now (0 errors)" "$tmp/out"

# off: nothing kept, nothing said
"$TUNE" --task matmul --shape 8,8,8 $Q --db "$tmp/a.db" --ref-cache off >"$tmp/out" 2>"$tmp/err"
check refcache_off_exit test $? -eq 0
check refcache_off_quiet sh -c "! grep -q '^reference outputs' '$tmp/out'"
check refcache_off_nothing_kept test "$(entries "$refs")" -eq 2

# the default directory
XDG_CACHE_HOME=$tmp/xdg "$TUNE" --task matmul --shape 8,8,8 $Q --db "$tmp/f.db" >"$tmp/out" 2>"$tmp/err"
check refcache_default_dir test "$(entries "$tmp/xdg/mlc-tune/refs")" -eq 1
"$TUNE" --task matmul --shape 8,8,8 $Q --db "$tmp/g.db" --ref-cache "" >"$tmp/out" 2>"$tmp/err"
check refcache_empty_arg_exit test $? -eq 2
check refcache_empty_arg_msg grep -q "ref-cache wants a directory or 'off'" "$tmp/err"

# A reference's matrix products go to OpenBLAS where the builder finds it:
# without it (MLC_BLAS_LIBRARY naming no file) the reference is the
# unscheduled kernel, another object, so another entry, and the
# candidates check out against either.
lib=$tmp/lib/refs
"$TUNE" --task matmul --shape 16,16,16 $Q --db "$tmp/h.db" --ref-cache "$lib" >"$tmp/out" 2>"$tmp/err"
check refcache_blas_no_errors grep -q "4 measured now (0 errors)" "$tmp/out"
MLC_BLAS_LIBRARY=$tmp/no-such-libopenblas.so "$TUNE" --task matmul --shape 16,16,16 $Q --db "$tmp/i.db" \
  --ref-cache "$lib" >"$tmp/out" 2>"$tmp/err"
check refcache_noblas_computed grep -q "^reference outputs: 1 computed, 0 read" "$tmp/out"
check refcache_noblas_no_errors grep -q "4 measured now (0 errors)" "$tmp/out"
check refcache_noblas_own_entry test "$(entries "$lib")" -eq 2
