# compute_at with an explicit index: the loop body holds C (no consumer of
# Y) and D (a consumer); the valid places are 0 and 1 (before the first
# consumer); index 0 puts Y first. Its unit loop is dropped (vi = i).
# trace: {"insts":[["GetBlock",[],{"name":"Y","func_name":"main"},["b0"]],["GetBlock",[],{"name":"D","func_name":"main"},["b1"]],["GetLoops",["b1"],{},["l2"]],["ComputeAt",["b0","l2"],{"preserve_unit_loops":false,"index":0},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")):
    Y = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("Y"):
            vi = T.axis.spatial(8, i)
            Y[vi] = A[vi] + T.float32(1)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] * T.float32(2)
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            D[vi] = Y[vi] * T.float32(3)
