# Shared by tests/cli/lm_models.sh and lm_dynamic.sh (sourced): the tools,
# a scratch directory removed on exit, check(), and the inputs and outputs
# of the small language models of tests/onnx/lm/.
B=${MLC_BUILD:-build}
MC=$B/bin/mlc-compile
D=tests/onnx/lm
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name, condition command...
  name=$1; shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name: $*"; fails=$((fails + 1)); fi
}
# The shape of a .npy file as C initializer text: "1, 5, 64".
npy_shape() {
  head -c 256 "$1" | LC_ALL=C tr -d '\0' | LC_ALL=C sed -n "s/.*'shape': (\([0-9, ]*\)).*/\1/p" | sed 's/, *$//'
}
inputs_of() { # model
  case $1 in
  bert) echo "input_ids token_type_ids attention_mask" ;;
  *) echo "input_ids" ;;
  esac
}
outputs_of() {
  case $1 in
  bert) echo "last_hidden_state pooler_output" ;;
  *) echo "logits" ;;
  esac
}
# check NAME: GOT.npy within 1e-4 relative of PyTorch's REF.npy
# (examples/run_model.c --compare, built for REF's shape), LABEL printed first.
matches_pytorch() { # name label got ref
  "$CC" -std=gnu11 -O1 -DOUT_SHAPE="$(npy_shape "$4")" examples/run_model.c -lm \
    -o "$tmp/cmp" 2>"$tmp/cc_err" || head -5 "$tmp/cc_err"
  printf '  %s vs PyTorch: ' "$2"
  "$tmp/cmp" --compare "$3" "$4"
  check "$1" test $? -eq 0
}
