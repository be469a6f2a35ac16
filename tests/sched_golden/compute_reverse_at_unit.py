# reverse_compute_at with preserve_unit_loops: the consumer's unit loop
# over i stays (ax0 of extent 1), its j range follows the producer's j
# tile; index -2 puts it right after the producer (here the same place).
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3"]],["GetBlock",[],{"name":"C","func_name":"main"},["b4"]],["ReverseComputeAt",["b4","l2"],{"preserve_unit_loops":true,"index":-2},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
    B = T.alloc_buffer((4, 8))
    for i, j_0, j_1 in T.grid(4, 2, 4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            vj = T.axis.spatial(8, j_0 * 4 + j_1)
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(4, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] * T.float32(2)
