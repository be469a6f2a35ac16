# A matmul over a symbolic number of rows, scheduled as a CPU kernel would
# be: the rows split by 8 with a tail under T.where, the outer part
# parallel, the columns vectorized.
@T.prim_func
def main(a: T.handle, B: T.Buffer((64, 48), "float32"), c: T.handle):
    n = T.int32(min=1, max=512)
    A = T.match_buffer(a, (n, 64))
    C = T.match_buffer(c, (n, 48))
    for i0 in T.parallel((n + 7) // 8):
        for i1, k in T.grid(8, 64):
            for j in T.vectorized(48):
                with T.block("C"):
                    T.where(i0 * 8 + i1 < n)
                    vi = T.axis.spatial(n, i0 * 8 + i1)
                    vj, vk = T.axis.remap("SR", [j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
