#!/usr/bin/python3
"""PyTorch's side of bench/bench_generate.c: greedy generation with its KV
cache, driven line by line over stdin/stdout so that its timings
interleave with ours.

    /usr/bin/python3 bench/torch_generate.py --data PREFIX [--config real|tiny]
        [--tokens N] [--threads N]

Rebuilds GPT-2 (examples/lm_models.py, seed 0: the weights of the exported
prefill and step models) in eager mode under torch.no_grad() at
torch.set_num_threads(N) (default 2), reads the prompt PREFIX + "prompt.npy"
and checks its greedy tokens against PREFIX + "tokens.npy". Prints one JSON
line (ready: torch version, threads, whether the tokens matched), then
answers commands:
  run     one generation: {"prefill_ms": ..., "decode_ms": ...} (decode:
          the N - 1 steps together)
  quit
"""
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import lm_models  # noqa: E402


def generate(model, prompt, n_tokens):
    """Prefill, then n_tokens - 1 decode steps; the tokens and both times."""
    with torch.no_grad():
        t0 = time.perf_counter()
        logits, cache = model(prompt, use_cache=True)
        token = int(logits[0, -1].argmax())
        t1 = time.perf_counter()
        tokens = [token]
        pos = prompt.size(1)
        for _ in range(n_tokens - 1):
            logits, cache = model(torch.tensor([[token]]), torch.tensor([[pos]]), cache,
                                  use_cache=True)
            token = int(logits[0, -1].argmax())
            tokens.append(token)
            pos += 1
        t2 = time.perf_counter()
    return tokens, (t1 - t0) * 1e3, (t2 - t1) * 1e3


def main(argv):
    data, config, n_tokens, threads = None, "real", 64, 2
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--data":
            data = args.pop(0)
        elif a == "--config":
            config = args.pop(0)
        elif a == "--tokens":
            n_tokens = int(args.pop(0))
        elif a == "--threads":
            threads = int(args.pop(0))
        else:
            sys.exit("torch_generate.py: unknown argument %s" % a)
    torch.set_num_threads(threads)
    cfg = lm_models.real_config("gpt2") if config == "real" else lm_models.tiny_config("gpt2")
    model = lm_models.build("gpt2", cfg)
    prompt = torch.from_numpy(np.load(data + "prompt.npy"))
    want = np.load(data + "tokens.npy").tolist()
    tokens, _, _ = generate(model, prompt, n_tokens)  # warm-up
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "tokens_match": tokens == want[:n_tokens]}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd == ["run"]:
            _, prefill_ms, decode_ms = generate(model, prompt, n_tokens)
            print(json.dumps({"prefill_ms": prefill_ms, "decode_ms": decode_ms}), flush=True)
        elif cmd == ["quit"]:
            break


if __name__ == "__main__":
    main(sys.argv[1:])
