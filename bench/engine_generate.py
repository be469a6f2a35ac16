"""ONNX Runtime's and OpenVINO's side of bench/bench_generate.c: greedy
generation with a KV cache from the same prefill and decode-step models
ours runs (examples/lm_models.py export_generation), driven line by line
over stdin/stdout so that its timings interleave with ours. Runs in the
venv of `make bench-deps`:

    build/bench-venv/bin/python bench/engine_generate.py --prefill P.onnx
        --step S.onnx --data PREFIX [--tokens N] [--threads N]

Each engine is set up as bench/engine_baseline.py sets it up (ORT:
ORT_ENABLE_ALL, intra_op N, sequential; OpenVINO: CPU, N threads, one
stream, latency hint, f32). A generation runs prefill on PREFIX prompt.npy,
then N - 1 decode steps, each feeding the presents of the one before as
its pasts (the engines hand back new arrays: each step copies the cache).
Its tokens are checked against PREFIX tokens.npy. Prints one JSON line
(ready: versions, whether each engine's tokens matched, or why it failed),
then answers:
  run ENGINE   one generation (ENGINE ort or ov): {"prefill_ms": ..., "decode_ms": ...}
  quit
"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_baseline import ort_session, ov_compile  # noqa: E402  (the engines' settings)


def ort_runner(path, threads):
    sess, _ = ort_session(path, threads)
    names = [i.name for i in sess.get_inputs()]
    return lambda xs: sess.run(None, dict(zip(names, xs)))


def ov_runner(path, threads):
    compiled = ov_compile(path, threads)
    req = compiled.create_infer_request()
    outs = compiled.outputs

    def run(xs):
        res = req.infer(list(xs))
        return [np.array(res[o]) for o in outs]

    return run


def generate(prefill, step, prompt, n_tokens):
    """The tokens, prefill ms and the decode steps' ms together."""
    t0 = time.perf_counter()
    out = prefill([prompt])
    token = int(out[0][0, -1].argmax())
    t1 = time.perf_counter()
    tokens, cache, pos = [token], out[1:], prompt.shape[1]
    for _ in range(n_tokens - 1):
        out = step([np.array([[token]], dtype=np.int64), np.array([[pos]], dtype=np.int64)] + cache)
        token = int(out[0][0, -1].argmax())
        tokens.append(token)
        cache = out[1:]
        pos += 1
    t2 = time.perf_counter()
    return tokens, (t1 - t0) * 1e3, (t2 - t1) * 1e3


def main(argv):
    prefill, step, data, n_tokens, threads = None, None, None, 64, 2
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--prefill":
            prefill = args.pop(0)
        elif a == "--step":
            step = args.pop(0)
        elif a == "--data":
            data = args.pop(0)
        elif a == "--tokens":
            n_tokens = int(args.pop(0))
        elif a == "--threads":
            threads = int(args.pop(0))
        else:
            sys.exit("engine_generate.py: unknown argument %s" % a)
    prompt = np.load(data + "prompt.npy").astype(np.int64)
    want = np.load(data + "tokens.npy").tolist()[:n_tokens]
    engines, info = {}, {}
    for name, make, module in (("ort", ort_runner, "onnxruntime"), ("ov", ov_runner, "openvino")):
        try:
            mod = __import__(module)
            info[name + "_version"] = mod.__version__ if name == "ort" else mod.get_version()
            pair = (make(prefill, threads), make(step, threads))
            tokens, _, _ = generate(pair[0], pair[1], prompt, n_tokens)  # warm-up and check
            info[name + "_tokens_match"] = tokens == want
            engines[name] = pair
        except Exception as e:  # noqa: BLE001  (a missing or failing engine is reported)
            info[name + "_error"] = ("%s: %s" % (type(e).__name__, e))[:200]
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if len(cmd) == 2 and cmd[0] == "run" and cmd[1] in engines:
            _, prefill_ms, decode_ms = generate(*engines[cmd[1]], prompt, n_tokens)
            print(json.dumps({"prefill_ms": prefill_ms, "decode_ms": decode_ms}), flush=True)
        elif cmd == ["quit"]:
            break
        else:
            print(json.dumps({"error": "bad command"}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
