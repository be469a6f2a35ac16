# The notes' local-blocking matmul (GPU chapter 6.3.1, blocking(sch, 8, 8,
# 8, 8, 4)): each of the 8 x 8 threads of a block computes an 8 x 8 tile of
# C in a local accumulator (cache_write "local", compacted to [8, 8]),
# reading A and B from global memory.
# expect-ptx: .entry mm_local(
# expect-ptx: .maxntid 8, 8, 1
# expect-ptx: grid=16,16,1 block=8,8,1 shared=0
# expect-ptx: %tid.y
# from tvm.script import tir as T

@T.prim_func
def mm_local(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
    T.func_attr({"global_symbol": "mm_local", "tir.noalias": True})
    C_local = T.alloc_buffer((1024, 1024), scope="local")
    for i_0 in T.thread_binding(16, thread="blockIdx.y"):
        for j_0 in T.thread_binding(16, thread="blockIdx.x"):
            for i_1 in T.thread_binding(8, thread="threadIdx.y"):
                for j_1 in T.thread_binding(8, thread="threadIdx.x"):
                    for i_2_init, j_2_init in T.grid(8, 8):
                        with T.block("C_init"):
                            vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2_init)
                            vj = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + j_2_init)
                            T.reads()
                            T.writes(C_local[vi, vj])
                            C_local[vi, vj] = T.float32(0)
                    for k_0 in range(256):
                        for k_1 in T.unroll(4):
                            for i_2, j_2 in T.grid(8, 8):
                                with T.block("C_update"):
                                    vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2)
                                    vj = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + j_2)
                                    vk = T.axis.reduce(1024, k_0 * 4 + k_1)
                                    T.reads(C_local[vi, vj], A[vi, vk], B[vk, vj])
                                    T.writes(C_local[vi, vj])
                                    C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
                    for ax0, ax1 in T.grid(8, 8):
                        with T.block("C_local"):
                            v0 = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + ax0)
                            v1 = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + ax1)
                            T.reads(C_local[v0, v1])
                            T.writes(C[v0, v1])
                            C[v0, v1] = C_local[v0, v1]
