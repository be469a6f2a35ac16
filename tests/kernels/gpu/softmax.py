# Softmax over the rows of A[256, 1024], one row per GPU thread (rows split
# 2 x 128 over blockIdx.x and threadIdx.x; max and sum in local scalars,
# exp inlined). exp comes from CUDA's libdevice (__nv_expf), linked into the
# module: no call may remain in the PTX.
# expect-ptx: .entry softmax(
# expect-ptx: .maxntid 128, 1, 1
# expect-ptx: ex2.approx
# expect-ptx-not: call
# expect-ptx-not: __nv_
# from tvm.script import tir as T

@T.prim_func
def softmax(A: T.Buffer((256, 1024), "float32"), T_softmax_norm: T.Buffer((256, 1024), "float32")):
    T.func_attr({"global_symbol": "softmax", "tir.noalias": True})
    T_softmax_maxelem = T.alloc_buffer((256,), scope="local")
    T_softmax_expsum = T.alloc_buffer((256,), scope="local")
    for i_0 in T.thread_binding(2, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            for k in range(1024):
                with T.block("T_softmax_maxelem"):
                    vi = T.axis.spatial(256, i_0 * 128 + i_1)
                    vk = T.axis.reduce(1024, k)
                    T.reads(A[vi, vk])
                    T.writes(T_softmax_maxelem[vi])
                    with T.init():
                        T_softmax_maxelem[vi] = T.float32(-3.4028235e+38)
                    T_softmax_maxelem[vi] = T.max(T_softmax_maxelem[vi], A[vi, vk])
            for k in range(1024):
                with T.block("T_softmax_expsum"):
                    vi = T.axis.spatial(256, i_0 * 128 + i_1)
                    vk = T.axis.reduce(1024, k)
                    T.reads(A[vi, vk], T_softmax_maxelem[vi])
                    T.writes(T_softmax_expsum[vi])
                    with T.init():
                        T_softmax_expsum[vi] = T.float32(0)
                    T_softmax_expsum[vi] = T_softmax_expsum[vi] + T.exp(A[vi, vk] - T_softmax_maxelem[vi])
            for j in range(1024):
                with T.block("T_softmax_norm"):
                    vi = T.axis.spatial(256, i_0 * 128 + i_1)
                    vj = T.axis.spatial(1024, j)
                    T.reads(A[vi, vj], T_softmax_maxelem[vi], T_softmax_expsum[vi])
                    T.writes(T_softmax_norm[vi, vj])
                    T_softmax_norm[vi, vj] = T.exp(A[vi, vj] - T_softmax_maxelem[vi]) / T_softmax_expsum[vi]
