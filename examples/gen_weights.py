#!/usr/bin/env python3
"""Deterministic weights for the example models, as .npy files (float32, C order).

    python3 examples/gen_weights.py examples/mlp.json    # writes examples/mlp/*.npy

No numpy needed: a 64-bit LCG (Knuth's MMIX constants) seeded from the model
and weight name gives uniform values in [-1, 1), scaled by 1/sqrt(fan_in)
(fan_in: product of all but the first dimension; biases and scales use 0.1
and 1 +/- 0.1). The same script always writes the same bytes.
"""
import json, os, struct, sys, zlib

def lcg_floats(seed, n):
    s = seed & (2**64 - 1)
    out = []
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        out.append(((s >> 40) / float(1 << 24)) * 2.0 - 1.0)  # 24 random bits: exact in float32
    return out

def npy_bytes(shape, values):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % dims
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("ascii")
            + struct.pack("<%df" % len(values), *values))

def main():
    path = sys.argv[1]
    model = json.load(open(path))
    outdir = path[:-5] if path.endswith(".json") else path
    os.makedirs(outdir, exist_ok=True)
    for w in model.get("weights", []):
        shape = w["shape"]
        n = 1
        for d in shape:
            n *= d
        seed = zlib.crc32((model.get("name", "model") + "/" + w["name"]).encode())
        r = lcg_floats(seed, n)
        name = w["name"]
        if name.endswith("s") and len(shape) == 1:          # a scale
            vals = [1.0 + 0.1 * v for v in r]
        elif len(shape) == 1 or all(d == 1 for d in shape[1:]):  # a bias
            vals = [0.1 * v for v in r]
        else:
            fan_in = n // shape[0]
            vals = [v / fan_in ** 0.5 for v in r]
        with open(os.path.join(outdir, w.get("file", name + ".npy")), "wb") as f:
            f.write(npy_bytes(shape, vals))

if __name__ == "__main__":
    main()
