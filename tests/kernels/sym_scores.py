# Attention-like scores over a symbolic sequence: both output extents are
# the size var, so a register tile has tails in two dimensions.
@T.prim_func
def main(a: T.handle, b: T.handle, c: T.handle):
    n = T.int32(min=1, max=96)
    A = T.match_buffer(a, (n, 64))
    B = T.match_buffer(b, (64, n))
    C = T.match_buffer(c, (n, n))
    for i, j, k in T.grid(n, n, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
