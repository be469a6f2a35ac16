# Three size vars, int64: every extent of a matmul taken at run time.
@T.prim_func
def main(a: T.handle, b: T.handle, c: T.handle):
    m = T.int64(min=1, max=64)
    k = T.int64(min=1, max=64)
    n = T.int64(min=1, max=64)
    A = T.match_buffer(a, (m, k))
    B = T.match_buffer(b, (k, n))
    C = T.match_buffer(c, (m, n))
    for i, j, r in T.grid(m, n, k):
        with T.block("C"):
            vi, vj, vr = T.axis.remap("SSR", [i, j, r])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vr] * B[vr, vj]
