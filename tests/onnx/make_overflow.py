#!/usr/bin/python3
"""Writes the ONNX models tests/cli/onnx_overflow.sh feeds to mlc-compile
(tests/onnx/overflow/): each asks for shape arithmetic that wraps int64 (or
a tensor past the size limit) through an integer shape chain. Every one
must be refused with a message naming its node, never read or write out of
bounds. Also valid models with such chains as fuzzing seeds
(tests/fuzz/corpus/fuzz_onnx/shape_chain_*.onnx), so that mutations start
from int64 shape initializers. Needs Debian's python3-onnx (run with
/usr/bin/python3); the models are committed:

    /usr/bin/python3 tests/onnx/make_overflow.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "overflow")
SEEDS = os.path.join(HERE, "..", "fuzz", "corpus", "fuzz_onnx")


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def save(name, nodes, inits, shape=(4, 6), opset=13, folder=OUT):
    """nodes compute "r" (any dtype); the model returns x + Cast(r, float)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))
    tail = [helper.make_node("Cast", ["r"], ["rf"], name="cast", to=TensorProto.FLOAT),
            helper.make_node("Add", ["x", "rf"], ["y"], name="add")]
    g = helper.make_graph(nodes + tail, name, [x], [y], inits)
    m = helper.make_model(g)
    m.opset_import[0].version = opset
    m.ir_version = 7
    onnx.save(m, os.path.join(folder, name + ".onnx"))


def data24():
    return ints("data", np.arange(24).reshape(2, 3, 4))


def reshape_gather(name, index):
    """[2, 3, 4] reshaped to [2^61 + 1, 4, 6]: the product wraps to 24."""
    save(name, [helper.make_node("Reshape", ["data", "shape"], ["big"], name="reshape"),
                helper.make_node("Gather", ["big", "index"], ["r"], name="gather", axis=0)],
         [data24(), ints("shape", [2**61 + 1, 4, 6]), ints("index", index)])


def main():
    os.makedirs(OUT, exist_ok=True)
    reshape_gather("reshape_gather_1000", 1000)
    reshape_gather("reshape_gather_2p40", 2**40)
    # the known extents' product overflows before any comparison
    save("reshape_wrap", [helper.make_node("Reshape", ["data", "shape"], ["r"], name="reshape")],
         [data24(), ints("shape", [72057594037927940, 72057594037927934, 65539])])
    # the same through an inferred extent (-1)
    save("reshape_infer_wrap",
         [helper.make_node("Reshape", ["data", "shape"], ["r"], name="reshape")],
         [data24(), ints("shape", [2**62, 2**3, -1])])
    # a float constant's shape wraps too
    save("reshape_float_wrap",
         [helper.make_node("Reshape", ["fdata", "shape"], ["r"], name="reshape")],
         [numpy_helper.from_array(np.arange(24, dtype=np.float32).reshape(2, 3, 4), "fdata"),
          ints("shape", [2**61 + 1, 4, 6])])
    # Expand and Tile to 2^64 elements (wraps to 0)
    save("expand_wrap", [helper.make_node("Expand", ["one", "shape"], ["r"], name="expand")],
         [numpy_helper.from_array(np.ones((1, 1), np.float32), "one"),
          ints("shape", [2**32, 2**32])])
    save("tile_wrap", [helper.make_node("Tile", ["one", "reps"], ["r"], name="tile")],
         [numpy_helper.from_array(np.ones((1, 1), np.float32), "one"), ints("reps", [2**32, 2**32])])
    # integer broadcasting past the size limit: [65536, 1] * [1, 65536]
    save("int_mul_broadcast",
         [helper.make_node("ConstantOfShape", ["s1"], ["a"], name="col",
                           value=numpy_helper.from_array(np.array([1], np.int64))),
          helper.make_node("ConstantOfShape", ["s2"], ["b"], name="row",
                           value=numpy_helper.from_array(np.array([1], np.int64))),
          helper.make_node("Mul", ["a", "b"], ["r"], name="mul")],
         [ints("s1", [65536, 1]), ints("s2", [1, 65536])])
    # valid: Slice of a shape with extreme starts, ends and steps (the last
    # element only); with x = 0.5, y = 4.5
    save("slice_extreme",
         [helper.make_node("Slice", ["v", "starts", "ends", "axes", "steps"], ["r"], name="slice")],
         [ints("v", [1, 2, 3, 4]), ints("starts", [2**63 - 1]), ints("ends", [-2**63]),
          ints("axes", [0]), ints("steps", [-2**63])], shape=(1,), folder=HERE)
    np.save(os.path.join(HERE, "slice_extreme_input.npy"), np.array([0.5], np.float32))
    # ConstantOfShape of [2^32, 2^32] (wraps to 0) and of [2^61 + 1, 8] (wraps to 8)
    for nm, s in [("constant_of_shape_wrap", [2**32, 2**32]),
                  ("constant_of_shape_wrap8", [2**61 + 1, 8])]:
        save(nm, [helper.make_node("ConstantOfShape", ["s"], ["r"], name="fill")], [ints("s", s)],
             shape=(8,))
    # Range of 2^64 - 1 values
    save("range_wrap", [helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range")],
         [ints("start", -2**63), ints("limit", 2**63 - 1), ints("delta", 1)], shape=(1,))
    # Range whose count, computed in double, is one too many: the last
    # element would wrap (found by fuzz_onnx)
    save("range_step_wrap", [helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range")],
         [ints("start", 2**63 - 3585), ints("limit", 2**63 - 1), ints("delta", 4000)], shape=(1,))
    # Concat of integer tensors whose total is past the limit
    save("concat_big",
         [helper.make_node("ConstantOfShape", ["s"], ["a"], name="fill",
                           value=numpy_helper.from_array(np.array([1], np.int64))),
          helper.make_node("Concat", ["a", "a", "a"], ["r"], name="concat", axis=0)],
         [ints("s", [2**30])], shape=(1,))


def seeds():
    """Valid models (input x of shape [1, 4], as fuzz_onnx gives it)."""
    node = helper.make_node
    one = numpy_helper.from_array(np.array([1], np.int64))
    save("shape_chain_reshape", [
        node("Shape", ["x"], ["s"], name="shape"),
        node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
        node("Concat", ["n1", "minus_one"], ["target"], name="concat", axis=0),
        node("Reshape", ["x", "target"], ["xr"], name="reshape"),
        node("Mul", ["four", "n"], ["k"], name="mul"),
        node("Equal", ["k", "four"], ["same"], name="equal"),
        node("Cast", ["same"], ["r"], name="cast_same", to=TensorProto.INT64)],
        [ints("zero", 0), ints("axes", [0]), ints("minus_one", [-1]), ints("four", 4)],
        shape=(1, 4), folder=SEEDS)
    save("shape_chain_gather", [
        node("Reshape", ["data", "shape"], ["d"], name="reshape"),
        node("Gather", ["d", "index"], ["g"], name="gather", axis=0),
        node("Slice", ["g", "starts", "ends", "axes", "steps"], ["r"], name="slice")],
        [data24(), ints("shape", [24]), ints("index", [1, 2, 5, 7, 9, 11, 13, 15]),
         ints("starts", [-1]), ints("ends", [-9]), ints("axes", [0]), ints("steps", [-2])],
        shape=(1, 4), folder=SEEDS)
    save("shape_chain_expand", [
        node("ConstantOfShape", ["s"], ["c"], name="fill", value=one),
        node("Concat", ["c", "c"], ["cc"], name="concat", axis=0),
        node("Sub", ["cc", "c1"], ["z"], name="sub"),
        node("Cast", ["z"], ["zf"], name="cast_z", to=TensorProto.FLOAT),
        node("Unsqueeze", ["zf", "axes"], ["zu"], name="unsqueeze"),
        node("Expand", ["zu", "target"], ["e"], name="expand"),
        node("Tile", ["e", "reps"], ["r"], name="tile")],
        [ints("s", [2]), ints("c1", [1]), ints("axes", [0]), ints("target", [2, 4]),
         ints("reps", [1, 2])], shape=(2, 8), folder=SEEDS)


if __name__ == "__main__":
    main()
    seeds()
