# compute_at where the needed range may leave the producer's domain: C
# reads B[vi:vi + 2] under i_0 (5 elements of B per iteration), but for
# i_0 = 2 that would be B[8:13] of a 10-element domain: T.where keeps the
# copy in range. The split's own predicate stays on C.
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["GetBlock",[],{"name":"C","func_name":"main"},["b1"]],["GetLoops",["b1"],{},["l2"]],["Split",["l2",null,4],{"preserve_unit_iters":true},["l3","l4"]],["ComputeAt",["b0","l3"],{"preserve_unit_loops":false,"index":-1},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((10,), "float32"), C: T.Buffer((9,), "float32")):
    B = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(9):
        with T.block("C"):
            vi = T.axis.spatial(9, i)
            C[vi] = B[vi] + B[vi + 1]
