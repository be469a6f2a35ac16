# The course's shared-memory matmul (GPU chapter 6.3.2, blocking_with_shared
# with tiles 8, 8, 8, 8, 8): C cached per thread in local memory
# (cache_write "local", 8 x 8 per thread), the block's 64 x 8 strip of A
# and 8 x 64 strip of B cached in shared memory at each k_0 iteration
# (cache_read "shared" + compute_at k_0), fetched cooperatively by the 64
# threads of threadIdx.x, 4 consecutive elements each (vectorized).
# Lowering compacts A_shared to [64, 8] and B_shared to [8, 64].
# expect-ptx: .entry mm_shared(
# expect-ptx: .maxntid 64, 1, 1
# expect-ptx: grid=16,16,1 block=64,1,1 shared=4096
# expect-ptx: mm_shared_$_A_shared_$_0[2048]
# expect-ptx: mm_shared_$_B_shared_$_1[2048]
# expect-ptx: st.shared.v4.f32
# expect-ptx: ld.global.nc.v4.f32
# expect-ptx: ld.shared.f32
# expect-ptx: bar.sync
# from tvm.script import tir as T

@T.prim_func
def mm_shared(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
    T.func_attr({"global_symbol": "mm_shared", "tir.noalias": True})
    C_local = T.alloc_buffer((1024, 1024), scope="local")
    A_shared = T.alloc_buffer((1024, 1024), scope="shared")
    B_shared = T.alloc_buffer((1024, 1024), scope="shared")
    for i_0 in T.thread_binding(16, thread="blockIdx.y"):
        for j_0 in T.thread_binding(16, thread="blockIdx.x"):
            for i_1_j_1_fused in T.thread_binding(64, thread="threadIdx.x"):
                for i_2_init, j_2_init in T.grid(8, 8):
                    with T.block("C_init"):
                        vi = T.axis.spatial(1024, i_0 * 64 + i_1_j_1_fused // 8 * 8 + i_2_init)
                        vj = T.axis.spatial(1024, j_0 * 64 + i_1_j_1_fused % 8 * 8 + j_2_init)
                        T.reads()
                        T.writes(C_local[vi, vj])
                        C_local[vi, vj] = T.float32(0)
                for k_0 in range(128):
                    for ax0_ax1_fused_0 in range(2):
                        for ax0_ax1_fused_1 in T.thread_binding(64, thread="threadIdx.x"):
                            for ax0_ax1_fused_2 in T.vectorized(4):
                                with T.block("A_shared"):
                                    v0 = T.axis.spatial(1024, i_0 * 64 + (ax0_ax1_fused_0 * 256 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) // 8)
                                    v1 = T.axis.spatial(1024, k_0 * 8 + (ax0_ax1_fused_0 * 256 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) % 8)
                                    T.reads(A[v0, v1])
                                    T.writes(A_shared[v0, v1])
                                    A_shared[v0, v1] = A[v0, v1]
                    for ax0_ax1_fused_0 in range(2):
                        for ax0_ax1_fused_1 in T.thread_binding(64, thread="threadIdx.x"):
                            for ax0_ax1_fused_2 in T.vectorized(4):
                                with T.block("B_shared"):
                                    v0 = T.axis.spatial(1024, k_0 * 8 + (ax0_ax1_fused_0 * 256 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) // 64)
                                    v1 = T.axis.spatial(1024, j_0 * 64 + (ax0_ax1_fused_0 * 256 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) % 64)
                                    T.reads(B[v0, v1])
                                    T.writes(B_shared[v0, v1])
                                    B_shared[v0, v1] = B[v0, v1]
                    for k_1, i_2, j_2 in T.grid(8, 8, 8):
                        with T.block("C_update"):
                            vi = T.axis.spatial(1024, i_0 * 64 + i_1_j_1_fused // 8 * 8 + i_2)
                            vj = T.axis.spatial(1024, j_0 * 64 + i_1_j_1_fused % 8 * 8 + j_2)
                            vk = T.axis.reduce(1024, k_0 * 8 + k_1)
                            T.reads(C_local[vi, vj], A_shared[vi, vk], B_shared[vk, vj])
                            T.writes(C_local[vi, vj])
                            C_local[vi, vj] = C_local[vi, vj] + A_shared[vi, vk] * B_shared[vk, vj]
                for ax0, ax1 in T.grid(8, 8):
                    with T.block("C_local"):
                        v0 = T.axis.spatial(1024, i_0 * 64 + i_1_j_1_fused // 8 * 8 + ax0)
                        v1 = T.axis.spatial(1024, j_0 * 64 + i_1_j_1_fused % 8 * 8 + ax1)
                        T.reads(C_local[v0, v1])
                        T.writes(C[v0, v1])
                        C[v0, v1] = C_local[v0, v1]
