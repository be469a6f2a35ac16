"""Per-call time of a compiled model called from Python (mlc_tune), for
bench_python: prints the median microseconds of m(x) over 21 rounds of
2000 calls, after 1000 warm-up calls. argv: MODEL [ROUNDS]."""
import sys
import time

import numpy as np

import mlc_tune

m = mlc_tune.load(sys.argv[1]).compile()
x = np.random.default_rng(0).random(m.inputs[0].shape, np.float32)
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 21
for _ in range(1000):
    m(x)
per = []
for _ in range(rounds):
    t = time.perf_counter()
    for _ in range(2000):
        m(x)
    per.append((time.perf_counter() - t) / 2000)
print("%.4f" % (sorted(per)[len(per) // 2] * 1e6))
