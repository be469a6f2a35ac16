"""ResNet-18 from torchvision into mlc-tune through torch.fx, tuned for a
while, compiled, and compared with PyTorch: the same outputs, and the
time per image of each.

    PYTHONPATH=python python3 python/examples/resnet18_fx.py [--trials 256] [--db r18.db]

A rerun with the same --db continues the tuning where it stopped (the
budget is the total of records); Ctrl-C stops after the current round
and keeps what was measured.
"""
import argparse
import time

import numpy as np
import torch
import torchvision

import mlc_tune


def time_per_call(fn, x, rounds=15, calls=5):
    fn(x)  # warm-up
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn(x)
        per.append((time.perf_counter() - t) / calls)
    return float(np.median(per))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=256, help="tuning budget over all kernels")
    ap.add_argument("--db", default="resnet18_fx.db", help="tuning database")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    net = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 224, 224)

    model = mlc_tune.from_torch(net, x, name="resnet18")
    print(model, "-", model.num_kernels, "kernels")
    if args.trials > 0:
        r = model.tune(trials=args.trials, db=args.db)
        if r.est_sec > 0:
            print("tuning: %d candidates measured in %.0f s; estimated %.2f ms (untuned %.2f ms)"
                  % (r.measured, r.total_sec, r.est_sec * 1e3, r.est_default_sec * 1e3))
    model.compile(db=args.db)
    tuned = sum(k.schedule.startswith("record") for k in model.kernels)
    print("compiled: %d of %d kernels from tuning records" % (tuned, model.num_kernels))

    with torch.no_grad():
        want = net(x)
        got = model(x)
        err = float((got - want).abs().max() / want.abs().max())
        print("max relative difference from PyTorch: %.2g" % err)
        ours = time_per_call(model, x)
        theirs = time_per_call(net, x)
        scripted = torch.jit.freeze(torch.jit.script(net))
        jit = time_per_call(scripted, x)
    print("per image: mlc-tune %.2f ms, PyTorch eager %.2f ms (%.1fx), TorchScript %.2f ms (%.1fx)"
          % (ours * 1e3, theirs * 1e3, theirs / ours, jit * 1e3, jit / ours))


if __name__ == "__main__":
    main()
