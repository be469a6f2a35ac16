# Softmax over the rows of A[256, 1024], one row per thread block of 128
# threads: the max and the sum are cross-thread reductions (their reduce
# loop split 8 x 128, the inner part bound to threadIdx.x), each thread
# reducing 8 elements in a register, then the block's 128 partials in
# shared memory, tree-wise; the row's max and sum live in shared memory.
# expect-ptx: .entry softmax_xthread(
# expect-ptx: .maxntid 128, 1, 1
# expect-ptx: bar.sync
# expect-ptx: .shared
# expect-ptx-not: call
# Thread 0 stores the row's max before any thread loads it:
# expect-ptx-before: [softmax_xthread_$_T_softmax_maxelem_$_0], %f || , [softmax_xthread_$_T_softmax_maxelem_$_0]
# from tvm.script import tir as T

@T.prim_func
def softmax_xthread(A: T.Buffer((256, 1024), "float32"), T_softmax_norm: T.Buffer((256, 1024), "float32")):
    T.func_attr({"global_symbol": "softmax_xthread", "tir.noalias": True})
    T_softmax_maxelem = T.alloc_buffer((256,), scope="shared")
    T_softmax_expsum = T.alloc_buffer((256,), scope="shared")
    for i in T.thread_binding(256, thread="blockIdx.x"):
        for k_0 in range(8):
            for k_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.block("T_softmax_maxelem"):
                    vi = T.axis.spatial(256, i)
                    vk = T.axis.reduce(1024, k_0 * 128 + k_1)
                    T.reads(A[vi, vk])
                    T.writes(T_softmax_maxelem[vi])
                    with T.init():
                        T_softmax_maxelem[vi] = T.float32(-3.4028235e+38)
                    T_softmax_maxelem[vi] = T.max(T_softmax_maxelem[vi], A[vi, vk])
        for k_0 in range(8):
            for k_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.block("T_softmax_expsum"):
                    vi = T.axis.spatial(256, i)
                    vk = T.axis.reduce(1024, k_0 * 128 + k_1)
                    T.reads(A[vi, vk], T_softmax_maxelem[vi])
                    T.writes(T_softmax_expsum[vi])
                    with T.init():
                        T_softmax_expsum[vi] = T.float32(0)
                    T_softmax_expsum[vi] = T_softmax_expsum[vi] + T.exp(A[vi, vk] - T_softmax_maxelem[vi])
        for j_0 in range(8):
            for j_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.block("T_softmax_norm"):
                    vi = T.axis.spatial(256, i)
                    vj = T.axis.spatial(1024, j_0 * 128 + j_1)
                    T.reads(A[vi, vj], T_softmax_maxelem[vi], T_softmax_expsum[vi])
                    T.writes(T_softmax_norm[vi, vj])
                    T_softmax_norm[vi, vj] = T.exp(A[vi, vj] - T_softmax_maxelem[vi]) / T_softmax_expsum[vi]
