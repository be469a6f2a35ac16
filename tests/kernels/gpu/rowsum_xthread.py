# Row sums B[i] = sum_k A[i, k] of A[64, 1000], one row per thread block of
# 96 threads (not a power of two): k split 11 x 96 with T.where(k < 1000),
# the 96 partials added tree-wise in shared memory; thread 0 writes the
# output (a parameter every thread of the block could otherwise race on).
# expect-ptx: .entry rowsum_xthread(
# expect-ptx: .maxntid 96, 1, 1
# expect-ptx: bar.sync
# expect-ptx-not: call
# from tvm.script import tir as T

@T.prim_func
def rowsum_xthread(A: T.Buffer((64, 1000), "float32"), B: T.Buffer((64,), "float32")):
    T.func_attr({"global_symbol": "rowsum_xthread", "tir.noalias": True})
    for i in T.thread_binding(64, thread="blockIdx.x"):
        for k_0 in range(11):
            for k_1 in T.thread_binding(96, thread="threadIdx.x"):
                with T.block("B"):
                    T.where(k_0 * 96 + k_1 < 1000)
                    vi = T.axis.spatial(64, i)
                    vk = T.axis.reduce(1000, k_0 * 96 + k_1)
                    T.reads(A[vi, vk])
                    T.writes(B[vi])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk]
