# TVM's test_reverse_compute_at_factorized: the final reduction "B" of an
# rfactor'd sum goes under loop i_o of "B_rf" (preserve_unit_loops=False).
# Its reduce iter vk = i_o * 4 + k is then split across iterations of i_o:
# the init runs at i_o = 0, k = 0 (vk at its minimum, the first of B[j]'s
# updates), and each iteration of i_o adds the 4 partial sums it produced.
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["GetBlock",[],{"name":"B_rf","func_name":"main"},["b1"]],["GetLoops",["b1"],{},["l2","l3","l4","l5"]],["ReverseComputeAt",["b0","l3"],{"preserve_unit_loops":false,"index":-1},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16, 16, 16), "float32"), B: T.Buffer((16,), "float32")):
    B_rf_local = T.alloc_buffer((16, 16), scope="local")
    for j in T.thread_binding(16, thread="blockIdx.x"):
        for i_o in T.thread_binding(4, thread="threadIdx.x"):
            for i_i, k in T.grid(4, 16):
                with T.block("B_rf"):
                    vi = T.axis.spatial(16, i_o * 4 + i_i)
                    vj, vk = T.axis.remap("SR", [j, k])
                    with T.init():
                        B_rf_local[vi, vj] = T.float32(0)
                    B_rf_local[vi, vj] = B_rf_local[vi, vj] + A[vj, vi, vk]
    for i, k in T.grid(16, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + B_rf_local[vk, vi]
