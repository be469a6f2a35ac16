"""ONNX Runtime's and OpenVINO's side of bench/bench_models.c: one .onnx
model, two engines, driven line by line over stdin/stdout like
bench/torch_baseline.py, so that their timings
interleave with ours and PyTorch's.

    build/bench-venv/bin/python bench/engine_baseline.py NAME \
        [--models DIR] [--onnx PATH] [--data PREFIX] [--inputs TAG,...]
        [--outputs TAG,...] [--threads N] [--out DIR]

Runs in the venv `make bench-deps` makes (never Debian's python). Loads
models/NAME.onnx and prepares
  ort  onnxruntime.InferenceSession, CPUExecutionProvider,
       graph_optimization_level ORT_ENABLE_ALL, intra_op_num_threads N,
       inter_op_num_threads 1, execution_mode ORT_SEQUENTIAL
  ov   openvino Core().compile_model(..., "CPU", INFERENCE_NUM_THREADS N,
       NUM_STREAMS 1, PERFORMANCE_HINT LATENCY, INFERENCE_PRECISION_HINT f32:
       without it a CPU with AVX-512 BF16 runs in bf16)
on the inputs the C bench uses. The model is PATH (default
DIR/NAME.onnx); its inputs, in the order of the graph's inputs, are
PREFIX<tag>.npy for the --inputs tags, any dtype (a language model's int64
token ids), and PyTorch's outputs when exported, in the order of the
graph's outputs, PREFIX<tag>.npy for the --outputs tags (default: prefix
DIR/NAME_, tags "in" and "out": models/NAME_in.npy, models/NAME_out.npy).
An engine that fails to import or load is left out (its error is in the
ready line). Each output is checked against its reference (the rel error
reported is the largest over the outputs) and written to
DIR/NAME_<engine>_<output tag>.npy (default: no files) for bench_models
to compare with ours. Then it prints one JSON line (ready) and answers commands:
  time MODE K   K timed runs: one line of K latencies in ms
  quit
The ready line names each engine's version, error and the kernels it
chose where it tells: OpenVINO's executed graph gives each node's
primitiveType (oneDNN's implementation, e.g. brgconv_avx512), counted.
"""
import collections
import json
import os
import sys
import time

import numpy as np


def rel_error(y, want):
    y = np.asarray(y, dtype=np.float64).reshape(want.shape)
    scale = max(float(np.abs(want).max()), 1e-30)
    return float(np.abs(y - want).max()) / scale


def rel_error_all(ys, wants):
    return max(rel_error(y, w) for y, w in zip(ys, wants))


def ort_kernels(ort, path, so, feed):
    """The kernels of one profiled run in a second session (the timed one
    is not profiled): each node's op type after ORT's fusions (FusedConv,
    FusedGemm, ...), counted. ORT's CPU provider names no finer kernel."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "ort")
        try:
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            sess.run(None, feed)
            with open(sess.end_profiling()) as f:
                events = json.load(f)
        finally:
            so.enable_profiling = False
    kinds = collections.Counter()
    for ev in events:
        args = ev.get("args", {})
        if ev.get("cat") == "Node" and ev.get("name", "").endswith("_kernel_time") and "op_name" in args:
            kinds["%s:%s" % (args["op_name"], args.get("provider", "?").replace("ExecutionProvider", ""))] += 1
    return ", ".join("%s x%d" % kv for kv in sorted(kinds.items(), key=lambda kv: -kv[1]))


def ort_session(path, threads):
    """ONNX Runtime as the benches set it up: the session and its options."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]), so


def ov_compile(path, threads):
    """OpenVINO as the benches set it up: the compiled model."""
    import openvino as ov

    # f32: on a CPU with AVX-512 BF16 the plugin otherwise picks bf16 (rel error ~4e-3).
    cfg = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY",
           "INFERENCE_PRECISION_HINT": "f32"}
    core = ov.Core()
    return core.compile_model(core.read_model(path), "CPU", cfg)


def make_ort(path, xs, threads, info):
    import onnxruntime as ort

    sess, so = ort_session(path, threads)
    info["ort_version"] = ort.__version__
    info["ort_providers"] = ",".join(sess.get_providers())
    feed = {i.name: x for i, x in zip(sess.get_inputs(), xs)}
    info["ort_kernels"] = ort_kernels(ort, path, so, feed)
    return lambda: sess.run(None, feed)


def any_str(v):
    """An rt_info value (an OVAny) as text."""
    for get in (lambda: v.astype(str), lambda: v.value, lambda: v.get()):
        try:
            return str(get())
        except Exception:  # noqa: BLE001  (the OVAny API differs between versions)
            pass
    return str(v)


def make_ov(path, xs, threads, info):
    import openvino as ov

    compiled = ov_compile(path, threads)
    info["ov_version"] = ov.get_version()
    info["ov_config"] = ",".join(
        "%s=%s" % (k, compiled.get_property(k))
        for k in ("INFERENCE_NUM_THREADS", "NUM_STREAMS", "PERFORMANCE_HINT", "INFERENCE_PRECISION_HINT"))
    kinds = collections.Counter()
    for op in compiled.get_runtime_model().get_ops():
        rt = op.get_rt_info()
        if "primitiveType" in rt and "layerType" in rt:
            lt, pt = any_str(rt["layerType"]), any_str(rt["primitiveType"])
            if lt not in ("Input", "Output", "Parameter", "Result", "Const", "Constant"):
                kinds["%s:%s" % (lt, pt)] += 1
    info["ov_kernels"] = ", ".join("%s x%d" % kv for kv in sorted(kinds.items(), key=lambda kv: -kv[1]))
    req = compiled.create_infer_request()
    n_out = len(compiled.outputs)

    def run():
        res = req.infer(list(xs), share_inputs=True)
        return [res[compiled.outputs[i]] for i in range(n_out)]

    return run


def main(argv):
    name, models, threads, out = None, "models", 2, None
    path, data, in_tags, out_tags = None, None, ["in"], ["out"]
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--models":
            models = args.pop(0)
        elif a == "--threads":
            threads = int(args.pop(0))
        elif a == "--out":
            out = args.pop(0)
        elif a == "--onnx":
            path = args.pop(0)
        elif a == "--data":
            data = args.pop(0)
        elif a == "--inputs":
            in_tags = args.pop(0).split(",")
        elif a == "--outputs":
            out_tags = args.pop(0).split(",")
        else:
            name = a
    path = path or os.path.join(models, name + ".onnx")
    data = data or os.path.join(models, name + "_")
    xs = []
    for t in in_tags:
        x = np.load(data + t + ".npy")
        # float inputs as float32 (as before); token ids keep their int64
        xs.append(np.ascontiguousarray(x.astype(np.float32) if x.dtype.kind == "f" else x))
    wants = [np.load(data + t + ".npy").astype(np.float64) for t in out_tags]
    info = {"threads": threads, "numpy": np.__version__}
    modes = {}
    for mode, make in (("ort", make_ort), ("ov", make_ov)):
        try:
            fn = make(path, xs, threads, info)
            for _ in range(3):  # warm-up
                ys = fn()
            ys = [np.array(y, dtype=np.float32).reshape(w.shape) for y, w in zip(ys, wants)]
            info[mode + "_rel_error"] = rel_error_all(ys, wants)
            if out:
                for t, y in zip(out_tags, ys):
                    np.save(os.path.join(out, "%s_%s_%s.npy" % (name, mode, t)), y)
            modes[mode] = fn
        except Exception as e:  # noqa: BLE001  (an engine missing or failing: its column says so)
            info[mode + "_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "time" and len(words) == 3 and words[1] in modes:
            fn, ms = modes[words[1]], []
            for _ in range(int(words[2])):
                t = time.perf_counter()
                fn()
                ms.append((time.perf_counter() - t) * 1e3)
            print(" ".join("%.6f" % v for v in ms), flush=True)
        else:
            print("error: bad command %r" % line.strip(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
