# compute_at of a reduction producer under its consumer's inner loop: Y is
# recomputed for each (i, j) of C; vi, vj become unit (dropped, bound to i
# and j) and the reduce iter gets a new loop ax0 over its whole domain.
# trace: {"insts":[["GetBlock",[],{"name":"Y","func_name":"main"},["b0"]],["GetBlock",[],{"name":"C","func_name":"main"},["b1"]],["GetLoops",["b1"],{},["l2","l3"]],["ComputeAt",["b0","l3"],{"preserve_unit_loops":false,"index":-1},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8, 6), "float32"), B: T.Buffer((6, 10), "float32"), C: T.Buffer((8, 10), "float32")):
    Y = T.alloc_buffer((8, 10))
    for i, j, k in T.grid(8, 10, 6):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(8, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
