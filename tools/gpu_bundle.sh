#!/bin/sh
# Pack what tools/gpu_check.sh runs into one tarball, for a GPU machine
# that lacks our build dependencies (LLVM 14, SQLite, XGBoost, ...): the
# tools, the tests that use the GPU, and every shared library they load
# (XGBoost's, opened with dlopen, too). The C library goes in a folder of
# its own: gpu_check.sh runs the tools with it only where the machine's
# is older than the one they were built against.
#
#   tools/gpu_bundle.sh [OUT.tar.xz]       (default .gpu/bundle.tar.xz)
#
# Builds with make first (B=DIR for another build folder).
set -eu
B=${B:-build}
OUT=${1:-.gpu/bundle.tar.xz}
TESTS="test_targets_cuda test_tuner_gpu_space test_measure"
make -s B="$B" all $(for t in $TESTS; do printf '%s/tests/%s ' "$B" "$t"; done)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$B/bin" "$stage/$B/tests" "$stage/.gpu/lib" "$stage/.gpu/glibc"
cp "$B"/bin/* "$stage/$B/bin/"
for t in $TESTS; do cp "$B/tests/$t" "$stage/$B/tests/"; done

xgb=$(ldconfig -p | awk '/libxgboost\.so/ {print $NF; exit}')
libs=$( (for f in "$B"/bin/* $(for t in $TESTS; do echo "$B/tests/$t"; done) $xgb; do
           ldd "$f" | awk '/=> \// {print $3}'
         done; [ -n "$xgb" ] && echo "$xgb") | sort -u)
for l in $libs; do
  case $(basename "$l") in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libmvec.so.*) dir=glibc ;;
    *) dir=lib ;;
  esac
  cp -L "$l" "$stage/.gpu/$dir/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/.gpu/glibc/"
mkdir -p "$(dirname "$OUT")"
tar cf - -C "$stage" . | xz -6 -T2 > "$OUT"
echo "gpu_bundle: $OUT ($(du -h "$OUT" | cut -f1)), built from $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + changes')"
