# A 1024^3 float32 matmul scheduled by hand for a 2-core AVX2/FMA CPU.
# B is first packed into 16-column panels (Bp[j0, k, j1] = B[k, j0 * 16 + j1])
# so the inner loop reads 16 consecutive floats per k. Each iteration of
# the parallel loop computes a 64-row block of C; inside it, a 4 x 16 tile
# of C is accumulated in a local buffer (8 AVX registers) over all of k:
# per k, two vector loads of Bp, four broadcasts of A and eight FMAs.
# from tvm.script import tir as T

@T.prim_func
def matmul(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
    T.func_attr({"global_symbol": "matmul", "tir.noalias": True})
    Bp = T.alloc_buffer((64, 1024, 16))
    C_local = T.alloc_buffer((1024, 1024), scope="local")
    for p0 in T.parallel(64):
        for pk in range(1024):
            for p1 in T.vectorized(16):
                with T.block("B_pack"):
                    vj0 = T.axis.spatial(64, p0)
                    vk = T.axis.spatial(1024, pk)
                    vj1 = T.axis.spatial(16, p1)
                    T.reads(B[vk, vj0 * 16 + vj1])
                    T.writes(Bp[vj0, vk, vj1])
                    Bp[vj0, vk, vj1] = B[vk, vj0 * 16 + vj1]
    for i0 in T.parallel(16):
        for j0 in range(64):
            for i1 in range(16):
                for i2 in T.unroll(4):
                    for j1 in T.vectorized(16):
                        with T.block("C_init"):
                            vi = T.axis.spatial(1024, i0 * 64 + i1 * 4 + i2)
                            vj = T.axis.spatial(1024, j0 * 16 + j1)
                            T.reads()
                            T.writes(C_local[vi, vj])
                            C_local[vi, vj] = T.float32(0)
                for k in range(1024):
                    for i2 in T.unroll(4):
                        for j1 in T.vectorized(16):
                            with T.block("C_update"):
                                vi = T.axis.spatial(1024, i0 * 64 + i1 * 4 + i2)
                                vj = T.axis.spatial(1024, j0 * 16 + j1)
                                vk = T.axis.reduce(1024, k)
                                T.reads(C_local[vi, vj], A[vi, vk], Bp[vj // 16, vk, vj % 16])
                                T.writes(C_local[vi, vj])
                                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * Bp[vj // 16, vk, vj % 16]
                for i2 in T.unroll(4):
                    for j1 in T.vectorized(16):
                        with T.block("C_store"):
                            vi = T.axis.spatial(1024, i0 * 64 + i1 * 4 + i2)
                            vj = T.axis.spatial(1024, j0 * 16 + j1)
                            T.reads(C_local[vi, vj])
                            T.writes(C[vi, vj])
                            C[vi, vj] = C_local[vi, vj]
