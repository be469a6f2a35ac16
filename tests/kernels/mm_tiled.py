# A 64x64x64 matmul scheduled by hand as a tuner would: the output tiled
# 4 x 8 per iteration of a parallel loop, a local accumulator with its
# initialization decomposed into its own block, the reduction loop outside
# an unrolled i loop and a vectorized j loop, and a write-back block.
# expect-ir: <8 x float>
# expect-ir: call void @mlc_parallel_for_range(
# from tvm.script import tir as T

@T.prim_func
def mm_tiled(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"global_symbol": "mm_tiled", "tir.noalias": True})
    C_local = T.alloc_buffer((64, 64), scope="local")
    for i0 in T.parallel(16):
        for j0 in range(8):
            for i1 in T.unroll(4):
                for j1 in T.vectorized(8):
                    with T.block("C_init"):
                        vi = T.axis.spatial(64, i0 * 4 + i1)
                        vj = T.axis.spatial(64, j0 * 8 + j1)
                        T.reads()
                        T.writes(C_local[vi, vj])
                        C_local[vi, vj] = T.float32(0)
            for k in range(64):
                for i1 in T.unroll(4):
                    for j1 in T.vectorized(8):
                        with T.block("C_update"):
                            vi = T.axis.spatial(64, i0 * 4 + i1)
                            vj = T.axis.spatial(64, j0 * 8 + j1)
                            vk = T.axis.reduce(64, k)
                            T.reads(C_local[vi, vj], A[vi, vk], B[vk, vj])
                            T.writes(C_local[vi, vj])
                            C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
            for i1 in range(4):
                for j1 in T.vectorized(8):
                    with T.block("C_local"):
                        vi = T.axis.spatial(64, i0 * 4 + i1)
                        vj = T.axis.spatial(64, j0 * 8 + j1)
                        T.reads(C_local[vi, vj])
                        T.writes(C[vi, vj])
                        C[vi, vj] = C_local[vi, vj]
