# The notes' window sum (GPU chapter 6.2): A cached in shared memory per
# thread block (cache_read + compute_at at the threadIdx loop), fetched
# cooperatively (the fetch loop split by 128 and bound to threadIdx.x).
# Lowering compacts A_shared to the 130 elements a block uses.
# expect-ptx: .entry window_sum(
# expect-ptx: .maxntid 128, 1, 1
# expect-ptx: shared=520
# expect-ptx: .shared .align 16 .b8 window_sum_$_A_shared_$_0[520];
# expect-ptx: st.shared.f32
# expect-ptx: ld.shared.f32
# expect-ptx: bar.sync
# from tvm.script import tir as T

@T.prim_func
def window_sum(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
    T.func_attr({"global_symbol": "window_sum", "tir.noalias": True})
    A_shared = T.alloc_buffer((1027,), scope="shared")
    for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            for ax0_0 in range(2):
                for ax0_1 in T.thread_binding(128, thread="threadIdx.x"):
                    with T.block("A_shared"):
                        v0 = T.axis.spatial(1027, i_0 * 128 + (ax0_0 * 128 + ax0_1))
                        T.where(ax0_0 * 128 + ax0_1 < 130)
                        T.reads(A[v0])
                        T.writes(A_shared[v0])
                        A_shared[v0] = A[v0]
            with T.block("C"):
                vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                T.reads(A_shared[vi:vi + 3])
                T.writes(B[vi])
                B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]
