# A KV-cache append: the present cache is one token longer than the past.
@T.prim_func
def main(p: T.handle, new: T.Buffer((2, 1, 8), "float32"), r: T.handle):
    n = T.int32(min=0, max=64)
    past = T.match_buffer(p, (2, n, 8))
    present = T.match_buffer(r, (2, n + 1, 8))
    for h, t, d in T.grid(2, n + 1, 8):
        with T.block("present"):
            vh, vt, vd = T.axis.remap("SSS", [h, t, d])
            present[vh, vt, vd] = T.if_then_else(vt < n, past[vh, vt, vd], new[vh, 0, vd])
