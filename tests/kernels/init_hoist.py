# Reductions whose T.init the lowering hoists out of the reduce loops (the
# block ends a chain of loops): k split 4 x 8 with T.where cutting the
# split at 30, spatial loops between the reduce loops, a vectorized
# innermost loop, an i split past the end (a predicate on spatial and
# reduce vars: the hoisted init keeps its spatial part), and a max
# reduction. Then a chain that is broken (a second block under the reduce
# loop), where the init must stay guarded inside the loops.
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def mm_split_k(A: T.Buffer((12, 30), "float32"), B: T.Buffer((30, 20), "float32"), C: T.Buffer((12, 20), "float32")):
        T.func_attr({"global_symbol": "mm_split_k", "tir.noalias": True})
        for i0, j0, k0, i1, k1 in T.grid(3, 5, 4, 4, 8):
            for j1 in T.vectorized(4):
                with T.block("C"):
                    vi = T.axis.spatial(12, i0 * 4 + i1)
                    vj = T.axis.spatial(20, j0 * 4 + j1)
                    vk = T.axis.reduce(30, k0 * 8 + k1)
                    T.where(k0 * 8 + k1 < 30)
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def mm_split_ik(A: T.Buffer((12, 30), "float32"), B: T.Buffer((30, 20), "float32"), C: T.Buffer((12, 20), "float32")):
        T.func_attr({"global_symbol": "mm_split_ik", "tir.noalias": True})
        for i0 in T.parallel(3):
            for k0, j, i1 in T.grid(4, 20, 5):
                for k1 in T.unroll(8):
                    with T.block("C"):
                        vi = T.axis.spatial(12, i0 * 5 + i1)
                        vj = T.axis.spatial(20, j)
                        vk = T.axis.reduce(30, k0 * 8 + k1)
                        T.where(i0 * 5 + i1 < 12 and k0 * 8 + k1 < 30)
                        T.reads(A[vi, vk], B[vk, vj])
                        T.writes(C[vi, vj])
                        with T.init():
                            C[vi, vj] = T.float32(0)
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def rowmax(A: T.Buffer((6, 40), "float32"), M: T.Buffer((6,), "float32")):
        T.func_attr({"global_symbol": "rowmax", "tir.noalias": True})
        for k0, i, k1 in T.grid(5, 6, 8):
            with T.block("M"):
                vi = T.axis.spatial(6, i)
                vk = T.axis.reduce(40, k0 * 8 + k1)
                T.reads(A[vi, vk])
                T.writes(M[vi])
                with T.init():
                    M[vi] = T.float32(-1e30)
                M[vi] = T.max(M[vi], A[vi, vk])

    @T.prim_func
    def broken_chain(A: T.Buffer((8, 16), "float32"), S: T.Buffer((8,), "float32"), D: T.Buffer((8, 16), "float32")):
        T.func_attr({"global_symbol": "broken_chain", "tir.noalias": True})
        for i, k in T.grid(8, 16):
            with T.block("S"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(S[vi])
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + A[vi, vk]
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, k])
                T.reads(A[vi, vj])
                T.writes(D[vi, vj])
                D[vi, vj] = A[vi, vj] * T.float32(2)
