#!/usr/bin/python3
"""PyTorch's side of bench/bench_models.c: one model, two modes, driven
line by line over stdin/stdout so that its timings interleave with ours.

    /usr/bin/python3 bench/torch_baseline.py NAME [--models DIR] [--threads N]
    /usr/bin/python3 bench/torch_baseline.py NAME --lm KIND [--config real|tiny]
        --data PREFIX [--threads N]

Rebuilds NAME (resnet18, mobilenet_v2, encoder) exactly as
examples/export_models.py exported it (same constructor, seed 0, eval
mode), so its weights are those of models/NAME.onnx, and prepares
  eager        model(x) under torch.no_grad()
  torchscript  torch.jit.freeze(torch.jit.trace(model, x)) then
               torch.jit.optimize_for_inference (the oneDNN-fused path)
at torch.set_num_threads(N) (default 2). Each mode's output is checked
against models/NAME_out.npy (PyTorch's output when exported).
With --lm, the language model of examples/lm_models.py of that kind
(bert, gpt2, llama) is rebuilt the way export_models.py (real config) or
tests/onnx/make_lm.py (tiny) built it: lm_models.build, seed 0. Its int64
inputs are PREFIX<input name>.npy, its outputs are checked against
PREFIX<output name>.npy (the largest error over the outputs); TorchScript
traces all inputs. A mode that fails to prepare is left out, its error in
the ready line (<mode>_error). Then it prints one JSON line (ready) and
answers commands:
  time MODE K   K timed runs: one line of K latencies in ms
  quit
Peak memory of a mode is the growth of the process's peak RSS over one run
from its resident size before it (VmHWM reset through
/proc/self/clear_refs): what the run allocated, including allocator caches.
"""
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import export_models  # noqa: E402  (the models' constructors)
import lm_models  # noqa: E402  (the language models)


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def peak_bytes(fn):
    """Growth of peak RSS over one call of fn, in bytes (-1: unknown)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return -1
    before = status_kb("VmRSS")
    fn()
    return max(0, status_kb("VmHWM") - before) * 1024


def rel_error(y, want):
    y = y.detach().numpy().astype(np.float64)
    scale = max(float(np.abs(want).max()), 1e-30)
    return float(np.abs(y - want).max()) / scale


def rel_error_all(ys, wants):
    """The largest rel_error over the outputs (ys: a tensor or a tuple)."""
    ys = ys if isinstance(ys, tuple) else (ys,)
    return max(rel_error(y, w) for y, w in zip(ys, wants))


def load_model(name, models, lm, config, data):
    """The module, its inputs (a tuple of tensors) and reference outputs."""
    if lm is None:
        if name not in export_models.MODELS:
            sys.exit("torch_baseline: unknown model %r" % name)
        torch.manual_seed(0)
        model, _ = export_models.MODELS[name]()
        model.eval()
        xs = (torch.from_numpy(np.load(os.path.join(models, name + "_in.npy"))),)
        wants = [np.load(os.path.join(models, name + "_out.npy")).astype(np.float64)]
        return model, xs, wants
    if lm not in lm_models.KINDS:
        sys.exit("torch_baseline: unknown language model kind %r" % lm)
    cfg = lm_models.real_config(lm) if config == "real" else lm_models.tiny_config(lm)
    model = lm_models.build(lm, cfg)
    xs = tuple(torch.from_numpy(np.load(data + n + ".npy")) for n in lm_models.INPUT_NAMES[lm])
    wants = [np.load(data + n + ".npy").astype(np.float64) for n in lm_models.OUTPUT_NAMES[lm]]
    return model, xs, wants


def main(argv):
    name, models, threads, lm, config, data = None, "models", 2, None, "real", None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--models":
            models = args.pop(0)
        elif a == "--threads":
            threads = int(args.pop(0))
        elif a == "--lm":
            lm = args.pop(0)
        elif a == "--config":
            config = args.pop(0)
        elif a == "--data":
            data = args.pop(0)
        else:
            name = a
    torch.set_num_threads(threads)
    model, xs, wants = load_model(name, models, lm, config, data)

    def eager():
        with torch.no_grad():
            return model(*xs)

    modes = {"eager": eager}
    info = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    try:
        with torch.no_grad():
            script = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, xs).eval()))

        def scripted():
            with torch.no_grad():
                return script(*xs)

        modes["torchscript"] = scripted
    except Exception as e:  # noqa: BLE001  (a model TorchScript cannot take: its column says so)
        info["torchscript_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    for m, fn in list(modes.items()):
        try:
            for _ in range(3):  # warm-up (TorchScript's profiling runs included)
                y = fn()
            info[m + "_rel_error"] = rel_error_all(y, wants)
            info[m + "_peak_bytes"] = peak_bytes(fn)
        except Exception as e:  # noqa: BLE001
            if m == "eager":
                raise
            del modes[m]
            info[m + "_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
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
