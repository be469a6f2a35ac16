#!/usr/bin/python3
"""The GPU baselines of tools/gpu_check.sh, through PyTorch: cuBLAS SGEMM,
softmax and cuDNN's conv2d, all float32 with TF32 off (so they do the
arithmetic our kernels do), timed as mlc-tune times on the GPU: CUDA
events around single launches, the median of many after warm-up.

    python3 bench/gpu_baseline.py

Prints one JSON line per kernel: name, shape, ms, gflops (matmul, conv2d),
device.
"""
import json
import sys

import torch
import torch.nn.functional as F


def median_ms(fn, runs=200, warmup=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def report(name, shape, ms, flops=None):
    line = {"name": name, "shape": shape, "ms": ms, "device": torch.cuda.get_device_name(0),
            "torch": torch.__version__}
    if flops:
        line["gflops"] = flops / ms * 1e-6
    print(json.dumps(line))
    sys.stdout.flush()


def main():
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch sees no CUDA device"}))
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = "cuda"
    n = 1024
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    c = torch.empty(n, n, device=dev)
    report("matmul cuBLAS SGEMM", "1024,1024,1024",
           median_ms(lambda: torch.matmul(a, b, out=c)), 2.0 * n * n * n)
    x = torch.randn(256, 1024, device=dev)
    report("softmax torch", "256,1024", median_ms(lambda: torch.softmax(x, dim=1)))
    data = torch.randn(1, 64, 56, 56, device=dev)
    weight = torch.randn(64, 64, 3, 3, device=dev)
    torch.backends.cudnn.benchmark = True
    report("conv2d cuDNN", "1,64,56,56,64,3,3", median_ms(lambda: F.conv2d(data, weight, padding=1)),
           2.0 * 64 * 56 * 56 * 64 * 9)
    return 0


if __name__ == "__main__":
    sys.exit(main())
