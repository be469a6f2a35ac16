# The bench's hand-scheduled matmul (bench/kernels/matmul_1024.py) at
# 64^3: B packed into 16-column panels by its own parallel block, a 4 x 16
# local accumulator tile kept in registers over all of k. The generated IR
# must use vector FMAs on the packed panel and a parallel-for.
# expect-ir: call <16 x float> @llvm.fmuladd.v16f32(
# expect-ir: call void @mlc_parallel_for_range(
# from tvm.script import tir as T

@T.prim_func
def mm_packed(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"global_symbol": "mm_packed", "tir.noalias": True})
    Bp = T.alloc_buffer((4, 64, 16))
    C_local = T.alloc_buffer((64, 64), scope="local")
    for p0 in T.parallel(4):
        for pk in range(64):
            for p1 in T.vectorized(16):
                with T.block("B_pack"):
                    vj0 = T.axis.spatial(4, p0)
                    vk = T.axis.spatial(64, pk)
                    vj1 = T.axis.spatial(16, p1)
                    T.reads(B[vk, vj0 * 16 + vj1])
                    T.writes(Bp[vj0, vk, vj1])
                    Bp[vj0, vk, vj1] = B[vk, vj0 * 16 + vj1]
    for i0 in T.parallel(4):
        for j0 in range(4):
            for i1 in range(4):
                for i2 in T.unroll(4):
                    for j1 in T.vectorized(16):
                        with T.block("C_init"):
                            vi = T.axis.spatial(64, i0 * 16 + i1 * 4 + i2)
                            vj = T.axis.spatial(64, j0 * 16 + j1)
                            T.reads()
                            T.writes(C_local[vi, vj])
                            C_local[vi, vj] = T.float32(0)
                for k in range(64):
                    for i2 in T.unroll(4):
                        for j1 in T.vectorized(16):
                            with T.block("C_update"):
                                vi = T.axis.spatial(64, i0 * 16 + i1 * 4 + i2)
                                vj = T.axis.spatial(64, j0 * 16 + j1)
                                vk = T.axis.reduce(64, k)
                                T.reads(C_local[vi, vj], A[vi, vk], Bp[vj // 16, vk, vj % 16])
                                T.writes(C_local[vi, vj])
                                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * Bp[vj // 16, vk, vj % 16]
                for i2 in T.unroll(4):
                    for j1 in T.vectorized(16):
                        with T.block("C_store"):
                            vi = T.axis.spatial(64, i0 * 16 + i1 * 4 + i2)
                            vj = T.axis.spatial(64, j0 * 16 + j1)
                            T.reads(C_local[vi, vj])
                            T.writes(C[vi, vj])
                            C[vi, vj] = C_local[vi, vj]
