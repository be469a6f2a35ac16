# The rfactor'd sum of compute_reverse_at_factorized with serial loops (so
# that LLVM compiles it too), and "B" placed under loop i_m of two loops
# that split its reduce iter: vk = i_o * 8 + i_m * 4 + ax0 steps through
# 0 .. 15 once, in order, so B[j] is initialized at i_o = i_m = ax0 = 0
# and sums the partial sums as each pair of iterations produces them.
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["GetBlock",[],{"name":"B_rf","func_name":"main"},["b1"]],["GetLoops",["b1"],{},["l2","l3","l4","l5","l6"]],["ReverseComputeAt",["b0","l4"],{"preserve_unit_loops":false,"index":-1},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16, 16, 16), "float32"), B: T.Buffer((16,), "float32")):
    B_rf = T.alloc_buffer((16, 16))
    for j, i_o, i_m, i_i, k in T.grid(16, 2, 2, 4, 16):
        with T.block("B_rf"):
            vi = T.axis.spatial(16, i_o * 8 + i_m * 4 + i_i)
            vj, vk = T.axis.remap("SR", [j, k])
            with T.init():
                B_rf[vi, vj] = T.float32(0)
            B_rf[vi, vj] = B_rf[vi, vj] + A[vj, vi, vk]
    for i, k in T.grid(16, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + B_rf[vk, vi] * T.float32(0.5)
