# One decode step of attention over a cache of symbolic length: the
# symbolic extent is an inner dimension, so strides depend on it.
@T.prim_func
def main(q: T.Buffer((4, 16), "float32"), k: T.handle, v: T.handle, o: T.Buffer((4, 16), "float32")):
    n = T.int32(min=1, max=128)
    K = T.match_buffer(k, (4, n, 16))
    V = T.match_buffer(v, (4, n, 16))
    S = T.alloc_buffer((4, n))
    for h, t, d in T.grid(4, n, 16):
        with T.block("S"):
            vh, vt, vd = T.axis.remap("SSR", [h, t, d])
            with T.init():
                S[vh, vt] = T.float32(0)
            S[vh, vt] = S[vh, vt] + q[vh, vd] * K[vh, vt, vd]
    for h, d, t in T.grid(4, 16, n):
        with T.block("O"):
            vh, vd, vt = T.axis.remap("SSR", [h, d, t])
            with T.init():
                o[vh, vd] = T.float32(0)
            o[vh, vd] = o[vh, vd] + S[vh, vt] * V[vh, vt, vd]
