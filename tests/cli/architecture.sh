#!/bin/sh
# The layering docs/ARCHITECTURE.md states, checked against the code:
# each module's #includes of other modules are among the modules its row of
# the module table names, every one of them comes earlier in the dependency
# order, and no module or tool includes another module's private header
# (*_internal.h, *_impl.h). A new include that breaks the layering fails
# here until the code or the table (the one design record) changes.
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
doc=docs/ARCHITECTURE.md
ORDER="base ir tasks schedule targets measure db costmodel tuner graph frontend report model primfunc"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# rank: the position of a module in the order; tasks, schedule and targets
# share one, as measure, db and costmodel do.
rank() {
  case $1 in
  base) echo 0 ;; ir) echo 1 ;; tasks | schedule | targets) echo 2 ;;
  measure | db | costmodel) echo 3 ;; tuner) echo 4 ;; graph) echo 5 ;; frontend) echo 6 ;; report | model | primfunc) echo 7 ;;
  *) echo 9 ;;
  esac
}

# The modules named in the "includes" cell of module m's table row.
allowed() {
  awk -F'|' -v m="$1" '$2 ~ "^ *" m " *$" { print $5 }' "$doc" |
    tr -c 'a-z\n' ' ' | tr ' ' '\n' | grep -xE "$(echo "$ORDER" | tr ' ' '|')" | sort -u
}

# The other modules m's files include ("mod/x.h": mod).
included() {
  grep -ho '^#include "[a-z_]*/[a-z_/]*\.h"' "$1"/*.c "$1"/*.h 2>/dev/null |
    sed 's/^#include "//; s/\/.*//' | grep -vx "$1" | sort -u
}

for m in $ORDER; do
  [ -d "$m" ] || { fail "layer_$m" "no folder $m/ for a module of the table"; continue; }
  ok=true
  allow=$(allowed "$m")
  [ -n "$allow" ] || [ "$m" = base ] || { fail "layer_$m" "no row in $doc's module table"; continue; }
  for d in $(included "$m"); do
    if ! echo "$allow" | grep -qx "$d"; then
      fail "layer_${m}_$d" "$m includes $d/ ($(grep -l "#include \"$d/" "$m"/*.c "$m"/*.h 2>/dev/null | tr '\n' ' ')), which its row in $doc does not name"
      ok=false
    elif [ "$(rank "$d")" -ge "$(rank "$m")" ]; then
      fail "layer_${m}_$d" "$m includes $d/, which does not come before it in the order"
      ok=false
    fi
  done
  $ok && pass "layer_$m"
done

# Private headers stay in their module (tests may look inside).
bad=""
for f in $(ls */*.c */*.h */*/*.c */*/*.h 2>/dev/null | grep -v '^tests/\|^build\|^bench/'); do
  own=${f%%/*}
  for inc in $(grep -ho '^#include "[a-z_]*/[a-z_/]*_\(internal\|impl\)\.h"' "$f" | sed 's/^#include "//; s/"$//'); do
    [ "${inc%%/*}" = "$own" ] || bad="$bad $f:$inc"
  done
done
if [ -z "$bad" ]; then pass private_headers; else fail private_headers "included outside their module:$bad"; fi
