#!/bin/sh
# The Python package (python/mlc_tune over $B/libmlc.so) through its
# unittest suite, tests/python: one PASS/FAIL/SKIP line per test. Skipped
# without python3 or NumPy; the torch.compile tests again with PyTorch 2
# where build/torch2-venv exists. Under ASan (build-asan) the library needs the
# ASan runtime first in the process: LD_PRELOAD, leak checks off (the
# interpreter itself never frees everything).
B=${MLC_BUILD:-build}
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c "import numpy" 2>/dev/null; then
  echo "SKIP python_package: python3 with NumPy is not installed (python3-numpy)"
  exit 0
fi
export PYTHONPATH="$PWD/python" MLC_LIB="$PWD/$B/libmlc.so" MLC_WORKER="$PWD/$B/bin/mlc-worker"
if nm -D "$MLC_LIB" 2>/dev/null | grep -q __asan_init; then
  # libstdc++ too: PyTorch throws C++ exceptions, whose interceptor needs it at start
  export LD_PRELOAD="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libstdc++.so)"
  export ASAN_OPTIONS="detect_leaks=0:$ASAN_OPTIONS"
fi
"$PY" tests/python/run.py
rc=$?

# The torch.compile backend (tests/python/test_dynamo.py) with PyTorch 2,
# which Debian's python3 lacks (1.13): the venv `make torch2-deps` makes,
# optional; its lines are py_torch2_*.
T2=${MLC_TORCH2_VENV:-build/torch2-venv}
if [ -x "$T2/bin/python" ]; then
  "$T2/bin/python" tests/python/run.py test_dynamo.py py_torch2_
  t2=$?
  if [ $t2 -gt 1 ]; then  # killed (a crash in C): the tests after it never ran
    echo "FAIL python_torch2: tests/python/run.py test_dynamo.py exited with status $t2 (crashed after the last line above)"
  fi
  [ $t2 -eq 0 ] || rc=1
else
  echo "SKIP python_torch2: $T2 does not exist (make torch2-deps: PyTorch 2 from PyPI)"
fi

# pip install ./python into a fresh venv (NumPy from the system), offline,
# with the library and the worker copied in; then used from outside the tree.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$PY" -m venv --system-site-packages "$tmp/venv" >/dev/null 2>&1; then
  echo "SKIP python_venv_install: python3 -m venv is not available (python3-venv)"
  exit $rc
fi
cp -r python "$tmp/pkg" && cp "$MLC_LIB" "$MLC_WORKER" "$tmp/pkg/mlc_tune/"
if ! "$tmp/venv/bin/pip" install --no-index --no-build-isolation "$tmp/pkg" >"$tmp/pip.log" 2>&1; then
  echo "FAIL python_venv_install: pip install failed:"; tail -5 "$tmp/pip.log"
  exit 1
fi
model="$PWD/tests/onnx/tiny_cnn.onnx"
out=$(cd "$tmp" && env -u PYTHONPATH -u MLC_LIB -u MLC_WORKER "$tmp/venv/bin/python" -c "
import mlc_tune, numpy as np
m = mlc_tune.load('$model').compile()
print(mlc_tune._lib.lib_path, m(np.zeros((1, 3, 8, 8), np.float32)).shape)" 2>&1)
case "$out" in
  "$tmp/venv/"*"/site-packages/mlc_tune/libmlc.so (1, 5)") echo "PASS python_venv_install" ;;
  *) echo "FAIL python_venv_install: $out"; rc=1 ;;
esac
exit $rc
