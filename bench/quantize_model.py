"""An int8 model as users make one: ONNX Runtime's quantize_static (QDQ,
per-channel weights, calibrated on random inputs) applied to an exported
model, with ONNX Runtime's output of the quantized file as its reference.

    build/bench-venv/bin/python bench/quantize_model.py NAME [--models DIR]
        [--calib N] [--seed S] [--activations uint8|int8]

Runs in the venv `make bench-deps` makes (onnxruntime, onnx). Reads
DIR/NAME.onnx and its input DIR/NAME_in.npy (default DIR: models), and
writes
  DIR/NAME_int8.onnx      QuantizeLinear/DequantizeLinear around every
                          Conv, MatMul and Gemm ONNX Runtime quantizes
                          (QuantFormat.QDQ, per_channel, weights int8,
                          activations int8 by default as ONNX Runtime's
                          own default (--activations uint8: uint8), MinMax calibration
                          over N inputs drawn from a normal distribution of
                          the input's mean and deviation, seed S)
  DIR/NAME_int8_in.npy    the input (a copy of NAME_in.npy)
  DIR/NAME_int8_out.npy   ONNX Runtime's output of NAME_int8.onnx on it
                          (one CPU thread, all graph optimizations)
and prints one line: the files, the quantized node count and the output's
largest difference from the float model's output in quantization steps
of the output. Float inputs only (the image models and the encoder).
"""
import argparse
import os
import shutil
import sys

import numpy as np


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("name")
    p.add_argument("--models", default="models")
    p.add_argument("--calib", type=int, default=8, help="calibration inputs (default 8)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--activations", choices=["uint8", "int8"], default="int8")
    return p.parse_args(argv)


class RandomReader:
    """quantize_static's CalibrationDataReader over n random inputs shaped
    and scaled like the example input."""

    def __init__(self, name, example, n, seed):
        rng = np.random.default_rng(seed)
        mu, sd = float(example.mean()), float(example.std()) or 1.0
        self.feeds = iter(
            [{name: rng.normal(mu, sd, example.shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.feeds, None)


def ort_run(path, x):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def main(argv):
    a = parse_args(argv)
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    src = os.path.join(a.models, a.name + ".onnx")
    x = np.load(os.path.join(a.models, a.name + "_in.npy"))
    if x.dtype != np.float32:
        sys.exit("%s: input is %s; float32 inputs only" % (src, x.dtype))
    model = onnx.load(src)
    if len(model.graph.input) != 1:
        sys.exit("%s: %d inputs; one only" % (src, len(model.graph.input)))
    in_name = model.graph.input[0].name
    base = os.path.join(a.models, a.name + "_int8")
    pre = base + "_pre.onnx"
    quant_pre_process(src, pre, skip_symbolic_shape=True)  # static shapes
    act = QuantType.QUInt8 if a.activations == "uint8" else QuantType.QInt8
    quantize_static(pre, base + ".onnx", RandomReader(in_name, x, a.calib, a.seed),
                    quant_format=QuantFormat.QDQ, per_channel=True, weight_type=QuantType.QInt8,
                    activation_type=act)
    os.remove(pre)
    shutil.copyfile(os.path.join(a.models, a.name + "_in.npy"), base + "_in.npy")
    y = ort_run(base + ".onnx", x)
    np.save(base + "_out.npy", y)
    y_float = ort_run(src, x)
    q = onnx.load(base + ".onnx")
    nq = sum(1 for n in q.graph.node if n.op_type == "QuantizeLinear")
    # the output's own step: the scale of the last QuantizeLinear before it
    steps = [n for n in q.graph.node if n.op_type == "QuantizeLinear"]
    inits = {t.name: t for t in q.graph.initializer}
    step = None
    if steps and steps[-1].input[1] in inits:
        step = float(onnx.numpy_helper.to_array(inits[steps[-1].input[1]]).max())
    diff = float(np.abs(y.astype(np.float64) - y_float).max())
    print("%s.onnx: %d QuantizeLinear nodes; %s_out.npy: ONNX Runtime's int8 output, %.4g from "
          "the float model's%s" % (base, nq, base, diff,
                                   " (%.1f output steps)" % (diff / step) if step else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
