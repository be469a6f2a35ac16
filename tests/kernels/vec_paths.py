# Vectorized loops through every path of the vector code generator: a
# transpose (unit-stride loads, strided stores done lane by lane), a
# non-divisible split with T.where inside the vectorized loop (the guard
# depends on the lane: a serial loop over the lanes), a padded copy with a
# lazy T.if_then_else whose untaken side would read out of bounds, and a
# reduction with T.init over a serial loop inside a vectorized one.
# expect-ir: <8 x float>
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def transpose_vec(A: T.Buffer((16, 24), "float32"), B: T.Buffer((24, 16), "float32")):
        T.func_attr({"global_symbol": "transpose_vec", "tir.noalias": True})
        for i in T.parallel(16):
            for j0 in range(3):
                for j1 in T.vectorized(8):
                    with T.block("B"):
                        vi = T.axis.spatial(16, i)
                        vj = T.axis.spatial(24, j0 * 8 + j1)
                        B[vj, vi] = A[vi, vj] * T.float32(2)

    @T.prim_func
    def add_tail(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32"), C: T.Buffer((100,), "float32")):
        T.func_attr({"global_symbol": "add_tail", "tir.noalias": True})
        for i0 in range(13):
            for i1 in T.vectorized(8):
                with T.block("C"):
                    vi = T.axis.spatial(100, i0 * 8 + i1)
                    T.where(i0 * 8 + i1 < 100)
                    C[vi] = A[vi] + B[vi]

    @T.prim_func
    def pad_vec(A: T.Buffer((30,), "float32"), B: T.Buffer((32,), "float32")):
        T.func_attr({"global_symbol": "pad_vec", "tir.noalias": True})
        for i0 in range(4):
            for i1 in T.vectorized(8):
                with T.block("B"):
                    vi = T.axis.spatial(32, i0 * 8 + i1)
                    B[vi] = T.if_then_else(1 <= vi and vi < 31, A[vi - 1], T.float32(-1))

    @T.prim_func
    def colsum_vec(A: T.Buffer((12, 16), "float32"), S: T.Buffer((16,), "float32")):
        T.func_attr({"global_symbol": "colsum_vec", "tir.noalias": True})
        for j0 in range(2):
            for j1 in T.vectorized(8):
                for k in range(12):
                    with T.block("S"):
                        vj = T.axis.spatial(16, j0 * 8 + j1)
                        vk = T.axis.reduce(12, k)
                        with T.init():
                            S[vj] = T.float32(0)
                        S[vj] = S[vj] + A[vk, vj]
