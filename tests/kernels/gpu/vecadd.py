# The notes' vector add (GPU chapter 6.1): i split by 128, the outer loop
# bound to blockIdx.x, the inner to threadIdx.x.
# expect-ptx: .entry vecadd(
# expect-ptx: .maxntid 128, 1, 1
# expect-ptx: // mlc.launch vecadd grid=8,1,1 block=128,1,1 shared=0
# expect-ptx: %ctaid.x
# expect-ptx: %tid.x
# from tvm.script import tir as T

@T.prim_func
def vecadd(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")):
    T.func_attr({"global_symbol": "vecadd", "tir.noalias": True})
    for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("C"):
                vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] + B[vi]
