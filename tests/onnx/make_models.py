#!/usr/bin/python3
"""Writes the small ONNX models tests/cli/mlc_compile.sh reads, with inputs
and expected outputs computed here in numpy (an independent reference).
Needs Debian's python3-onnx and python3-numpy (run with /usr/bin/python3);
the outputs are committed so the tests need no python:

    /usr/bin/python3 tests/onnx/make_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def save(model, name, opset=13):
    model.opset_import[0].version = opset
    model.ir_version = 7
    onnx.save(model, os.path.join(HERE, name))


def npy(name, a):
    np.save(os.path.join(HERE, name), a.astype(np.float32))


def conv2d(x, w, b, pad):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - r + 1, wd + 2 * pad - s + 1
    y = np.zeros((n, k, oh, ow), np.float64)
    for i in range(r):
        for j in range(s):
            y += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y + b[None, :, None, None]


def tiny_cnn():
    """Conv + BatchNorm + Relu + MaxPool, a shape chain (Shape, Gather,
    Unsqueeze, Concat) into Reshape, Gemm (transB) and Softmax."""
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(4).astype(np.float32) * 0.1
    gamma = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    beta = rng.standard_normal(4).astype(np.float32) * 0.1
    mean = rng.standard_normal(4).astype(np.float32) * 0.1
    var = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    fw = rng.standard_normal((5, 64)).astype(np.float32) * 0.2
    fb = rng.standard_normal(5).astype(np.float32) * 0.1
    inits = [numpy_helper.from_array(a, n) for a, n in [
        (w, "conv.weight"), (b, "conv.bias"), (gamma, "bn.weight"), (beta, "bn.bias"),
        (mean, "bn.running_mean"), (var, "bn.running_var"), (fw, "fc.weight"), (fb, "fc.bias"),
        (np.array([0], np.int64), "zero"), (np.array([-1], np.int64), "minus_one")]]
    nodes = [
        helper.make_node("Conv", ["input.1", "conv.weight", "conv.bias"], ["/conv/Conv_output_0"],
                         name="/conv/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["/conv/Conv_output_0", "bn.weight", "bn.bias",
                                                "bn.running_mean", "bn.running_var"],
                         ["/bn/Bn_output_0"], name="/bn/BatchNormalization", epsilon=1e-5),
        helper.make_node("Relu", ["/bn/Bn_output_0"], ["/relu/Relu_output_0"], name="/relu/Relu"),
        helper.make_node("MaxPool", ["/relu/Relu_output_0"], ["/pool/MaxPool_output_0"],
                         name="/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["/pool/MaxPool_output_0"], ["/Shape_output_0"], name="/Shape"),
        helper.make_node("Gather", ["/Shape_output_0", "zero"], ["/Gather_output_0"],
                         name="/Gather", axis=0),
        helper.make_node("Concat", ["/Gather_output_0", "minus_one"], ["/Concat_output_0"],
                         name="/Concat", axis=0),
        helper.make_node("Reshape", ["/pool/MaxPool_output_0", "/Concat_output_0"],
                         ["/Reshape_output_0"], name="/Reshape"),
        helper.make_node("Gemm", ["/Reshape_output_0", "fc.weight", "fc.bias"], ["/fc/Gemm_output_0"],
                         name="/fc/Gemm", alpha=1.0, beta=1.0, transB=1),
        helper.make_node("Softmax", ["/fc/Gemm_output_0"], ["output"], name="/Softmax", axis=-1),
    ]
    g = helper.make_graph(nodes, "torch_jit",
                          [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 5])], inits)
    save(helper.make_model(g, producer_name="make_models.py"), "tiny_cnn.onnx")
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    y = conv2d(x.astype(np.float64), w, b, 1)
    y = (y - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    y = y * gamma[None, :, None, None] + beta[None, :, None, None]
    y = np.maximum(y, 0)
    y = y.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    y = y.reshape(1, -1) @ fw.T.astype(np.float64) + fb
    y = np.exp(y - y.max(-1, keepdims=True))
    y /= y.sum(-1, keepdims=True)
    npy("tiny_cnn_input.npy", x)
    npy("tiny_cnn_output.npy", y)


def mlp_sym():
    """A batch dimension "N" (symbolic): MatMul + Add + Relu."""
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "b"], ["hb"], name="add"),
             helper.make_node("Relu", ["hb"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    save(helper.make_model(g), "mlp_sym.onnx")
    x = rng.standard_normal((2, 4)).astype(np.float32)
    npy("mlp_sym_input.npy", x)
    npy("mlp_sym_output.npy", np.maximum(x.astype(np.float64) @ w + b, 0))


def bad_models():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])

    def one(nodes, name, inputs=None, inits=()):
        g = helper.make_graph(nodes, "bad", inputs or [x], [y], list(inits))
        save(helper.make_model(g), name)

    one([helper.make_node("Relu", ["x"], ["h"], name="/layer1/Relu"),
         helper.make_node("Foo", ["h"], ["y"], name="/layer1/Foo")], "bad_unknown_op.onnx")
    one([helper.make_node("LeakyRelu", ["x"], ["y"], name="/act/LeakyRelu", alpha=0.1, gamma=2.0)],
        "bad_attribute.onnx")
    one([helper.make_node("Add", ["x", "bias"], ["y"], name="/add/Add")], "bad_missing_init.onnx")
    one([helper.make_node("Relu", ["x"], ["y"], name="relu")], "bad_dtype.onnx",
        inputs=[helper.make_tensor_value_info("x", TensorProto.DOUBLE, [1, 4])])
    one([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
         helper.make_node("Relu", ["a"], ["b"], name="second"),
         helper.make_node("Relu", ["b"], ["y"], name="third")], "bad_cycle.onnx")
    one([helper.make_node("Relu", ["x"], ["y"], name="relu")], "bad_symbolic.onnx",
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])])
    w = numpy_helper.from_array(np.ones((4, 4), np.float16), "w")
    one([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "bad_init_dtype.onnx",
        inits=[w])
    # quantization: a scale per element of the wrong count, blocks, a float input
    s3 = numpy_helper.from_array(np.full(3, 0.1, np.float32), "s3")
    s1 = numpy_helper.from_array(np.array(0.1, np.float32), "s1")
    dq = helper.make_node("DequantizeLinear", ["q", "s1"], ["y"], name="dq")
    one([helper.make_node("QuantizeLinear", ["x", "s3"], ["q"], name="q"), dq], "bad_quant_scale.onnx",
        inits=[s3, s1])
    one([helper.make_node("QuantizeLinear", ["x", "s1"], ["q"], name="q", block_size=2), dq],
        "bad_quant_block.onnx", inits=[s1])
    one([helper.make_node("DequantizeLinear", ["x", "s1"], ["y"], name="dq")], "bad_quant_float.onnx",
        inits=[s1])


def activations_wide():
    """Softplus, Elu and Softsign over inputs far past exp's range (|x| up
    to 200): each must stay finite where its value is; the reference is
    numpy's stable forms."""
    x = np.concatenate([np.linspace(-200, 200, 41), [-88.7, 88.7, 89, 100, -1e-3, 1e-3, 0]])
    x = x.astype(np.float32).reshape(1, -1)
    n = x.shape[1]
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, n])
    nodes = [helper.make_node("Softplus", ["x"], ["sp"], name="softplus"),
             helper.make_node("Elu", ["x"], ["el"], name="elu", alpha=0.5),
             helper.make_node("Softsign", ["x"], ["ss"], name="softsign"),
             helper.make_node("Concat", ["sp", "el", "ss"], ["y"], name="cat", axis=0)]
    g = helper.make_graph(nodes, "activations_wide", [xi], [y])
    save(helper.make_model(g), "activations_wide.onnx")
    xd = x.astype(np.float64)
    sp = np.maximum(xd, 0) + np.log1p(np.exp(-np.abs(xd)))
    el = np.where(xd >= 0, xd, 0.5 * np.expm1(np.minimum(xd, 0)))
    ss = xd / (1 + np.abs(xd))
    npy("activations_wide_input.npy", x)
    npy("activations_wide_output.npy", np.concatenate([sp, el, ss], axis=0))


def quantize(x, scale, zp, lo, hi):
    """ONNX QuantizeLinear: the division in float32, ties to even."""
    q = np.rint((x.astype(np.float32) / np.float32(scale)).astype(np.float32)) + zp
    return np.clip(q, lo, hi)


def tiny_qdq():
    """A model as ONNX Runtime's quantize_static writes one (QDQ format):
    the input quantized to uint8; a Conv over DequantizeLinear of int8
    weights quantized per output channel and an int32 bias (scale: input
    scale x weight scale), Relu, uint8 again; Flatten, MatMul by int8
    weights quantized per tensor, to int8 with a zero point of -3, and
    dequantized as the output. The reference (the same ops in numpy, the
    convolution and matmul over the dequantized values in float64) is one
    way to sum: the test allows one output step."""
    x = rng.uniform(-1, 1, (1, 4, 6, 6)).astype(np.float32)
    sx, zx = np.float32(2 / 255), 128
    wq = rng.integers(-127, 128, (8, 4, 3, 3)).astype(np.int8)
    sw = rng.uniform(0.002, 0.01, 8).astype(np.float32)
    bq = rng.integers(-2000, 2000, 8).astype(np.int32)
    sb = (sx * sw).astype(np.float32)
    sy, zy = np.float32(0.05), 0
    mq = rng.integers(-127, 128, (288, 5)).astype(np.int8)
    sm = np.float32(0.004)
    so, zo = np.float32(0.1), -3
    f = numpy_helper.from_array
    inits = [f(np.array(sx), "x_scale"), f(np.array(zx, np.uint8), "x_zp"), f(wq, "w_q"), f(sw, "w_scale"),
             f(np.zeros(8, np.int8), "w_zp"), f(bq, "b_q"), f(sb, "b_scale"), f(np.zeros(8, np.int32), "b_zp"),
             f(np.array(sy), "y_scale"), f(np.array(zy, np.uint8), "y_zp"), f(mq, "m_q"), f(np.array(sm), "m_scale"),
             f(np.array(0, np.int8), "m_zp"), f(np.array(so), "o_scale"), f(np.array(zo, np.int8), "o_zp")]
    node = helper.make_node
    nodes = [
        node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"], name="q_x"),
        node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xd"], name="dq_x"),
        node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["wd"], name="dq_w", axis=0),
        node("DequantizeLinear", ["b_q", "b_scale", "b_zp"], ["bd"], name="dq_b", axis=0),
        node("Conv", ["xd", "wd", "bd"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("Relu", ["c"], ["r"], name="relu"),
        node("QuantizeLinear", ["r", "y_scale", "y_zp"], ["rq"], name="q_r"),
        node("DequantizeLinear", ["rq", "y_scale", "y_zp"], ["rd"], name="dq_r"),
        node("Flatten", ["rd"], ["fl"], name="flatten"),
        node("DequantizeLinear", ["m_q", "m_scale", "m_zp"], ["md"], name="dq_m"),
        node("MatMul", ["fl", "md"], ["mm"], name="matmul"),
        node("QuantizeLinear", ["mm", "o_scale", "o_zp"], ["oq"], name="q_o"),
        node("DequantizeLinear", ["oq", "o_scale", "o_zp"], ["y"], name="dq_o"),
    ]
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])
    yo = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])
    save(helper.make_model(helper.make_graph(nodes, "tiny_qdq", [xi], [yo], inits)), "tiny_qdq.onnx")
    xd = (quantize(x, sx, zx, 0, 255) - zx).astype(np.float32) * sx
    wd = wq.astype(np.float32) * sw[:, None, None, None]
    c = conv2d(xd.astype(np.float64), wd.astype(np.float64), (bq.astype(np.float32) * sb).astype(np.float64), 1)
    rd = (quantize(np.maximum(c, 0), sy, zy, 0, 255) - zy).astype(np.float32) * sy
    mm = rd.reshape(1, -1).astype(np.float64) @ (mq.astype(np.float32) * sm).astype(np.float64)
    npy("tiny_qdq_input.npy", x)
    npy("tiny_qdq_output.npy", ((quantize(mm, so, zo, -128, 127) - zo) * so).astype(np.float32))


def tiny_qdq_dense(name="tiny_qdq_dense", signed=False):
    """A QDQ dense layer as ONNX Runtime's quantizer writes a transformer's:
    uint8 activations (zero point 100) reshaped [8, 1, 32] -> [8, 32] and
    quantized again with the same scale around the reshape, a MatMul by
    int8 weights quantized per column, a bias, uint8 out. The quantize
    pass computes it on the integers (qdense); the reference is ONNX
    Runtime's arithmetic in numpy: the int32 sum, the zero point's share,
    times the two scales, plus the bias, quantized. signed: int8
    activations with zero point -28 (ONNX Runtime's default type), which
    the pass computes on their uint8 twin."""
    x = rng.uniform(-1, 1, (8, 1, 32)).astype(np.float32)
    sx, zx = np.float32(2 / 255), (-28 if signed else 100)
    adt, lo, hi = (np.int8, -128, 127) if signed else (np.uint8, 0, 255)
    wq = rng.integers(-127, 128, (32, 48)).astype(np.int8)
    sw = rng.uniform(0.002, 0.01, 48).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, 48).astype(np.float32)
    sy, zy = np.float32(0.02), 128
    f = numpy_helper.from_array
    inits = [f(np.array(sx), "x_scale"), f(np.array(zx, adt), "x_zp"), f(wq, "w_q"), f(sw, "w_scale"),
             f(np.zeros(48, np.int8), "w_zp"), f(b, "bias"), f(np.array([8, 32], np.int64), "shape2d"),
             f(np.array(sy), "y_scale"), f(np.array(zy, np.uint8), "y_zp")]
    node = helper.make_node
    nodes = [
        node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"], name="q_x"),
        node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xd"], name="dq_x"),
        node("Reshape", ["xd", "shape2d"], ["x2"], name="reshape"),
        node("QuantizeLinear", ["x2", "x_scale", "x_zp"], ["x2q"], name="q_x2"),
        node("DequantizeLinear", ["x2q", "x_scale", "x_zp"], ["x2d"], name="dq_x2"),
        node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["wd"], name="dq_w", axis=1),
        node("MatMul", ["x2d", "wd"], ["mm"], name="matmul"),
        node("Add", ["mm", "bias"], ["a"], name="add"),
        node("QuantizeLinear", ["a", "y_scale", "y_zp"], ["aq"], name="q_a"),
        node("DequantizeLinear", ["aq", "y_scale", "y_zp"], ["y"], name="dq_a"),
    ]
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 1, 32])
    yo = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 48])
    save(helper.make_model(helper.make_graph(nodes, name, [xi], [yo], inits)), name + ".onnx")
    xq = quantize(x, sx, zx, lo, hi).reshape(8, 32).astype(np.int64)
    acc = xq @ wq.astype(np.int64) - zx * wq.astype(np.int64).sum(axis=0)
    a = (acc.astype(np.float32) * (sx * sw).astype(np.float32)).astype(np.float32) + b
    npy(name + "_input.npy", x)
    npy(name + "_output.npy", ((quantize(a, sy, zy, 0, 255) - zy) * sy).astype(np.float32))


def tiny_qdq_conv():
    """A QDQ convolution (stride 2, padding 1, 16 output channels quantized
    per channel, an int32 bias) over uint8 activations with zero point 3,
    then Relu, uint8 out. The quantize pass computes it on the integers:
    the input padded with its zero point, im2col, qdense. The reference is
    that arithmetic in numpy (int32 sums, the two scales, the bias)."""
    x = rng.uniform(-0.2, 1, (1, 8, 7, 7)).astype(np.float32)
    sx, zx = np.float32(1.2 / 255), 3
    wq = rng.integers(-127, 128, (16, 8, 3, 3)).astype(np.int8)
    sw = rng.uniform(0.002, 0.01, 16).astype(np.float32)
    bq = rng.integers(-3000, 3000, 16).astype(np.int32)
    sb = (sx * sw).astype(np.float32)
    sy, zy = np.float32(0.03), 0
    f = numpy_helper.from_array
    inits = [f(np.array(sx), "x_scale"), f(np.array(zx, np.uint8), "x_zp"), f(wq, "w_q"), f(sw, "w_scale"),
             f(np.zeros(16, np.int8), "w_zp"), f(bq, "b_q"), f(sb, "b_scale"), f(np.zeros(16, np.int32), "b_zp"),
             f(np.array(sy), "y_scale"), f(np.array(zy, np.uint8), "y_zp")]
    node = helper.make_node
    nodes = [
        node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"], name="q_x"),
        node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xd"], name="dq_x"),
        node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["wd"], name="dq_w", axis=0),
        node("DequantizeLinear", ["b_q", "b_scale", "b_zp"], ["bd"], name="dq_b", axis=0),
        node("Conv", ["xd", "wd", "bd"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        node("Relu", ["c"], ["r"], name="relu"),
        node("QuantizeLinear", ["r", "y_scale", "y_zp"], ["rq"], name="q_r"),
        node("DequantizeLinear", ["rq", "y_scale", "y_zp"], ["y"], name="dq_r"),
    ]
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 7, 7])
    yo = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4])
    save(helper.make_model(helper.make_graph(nodes, "tiny_qdq_conv", [xi], [yo], inits)), "tiny_qdq_conv.onnx")
    xq = np.pad(quantize(x, sx, zx, 0, 255).astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=zx)
    acc = np.zeros((16, 4, 4), np.int64)
    for r in range(3):
        for t in range(3):
            acc += np.einsum("chw,kc->khw", xq[0, :, r:r + 7:2, t:t + 7:2] - zx, wq[:, :, r, t].astype(np.int64))
    c = acc.astype(np.float32) * (sx * sw).astype(np.float32)[:, None, None] + (bq.astype(np.float32) * sb)[:, None, None]
    npy("tiny_qdq_conv_input.npy", x)
    npy("tiny_qdq_conv_output.npy", ((quantize(np.maximum(c, 0), sy, zy, 0, 255) - zy) * sy)[None].astype(np.float32))


tiny_cnn()
mlp_sym()
bad_models()
activations_wide()
tiny_qdq()
tiny_qdq_dense()
tiny_qdq_conv()
tiny_qdq_dense("tiny_qdq_dense_s8", signed=True)
