# compute_inline of an elementwise producer into a 2-D consumer that reads
# it twice at shifted indices; B disappears from the root's buffers and C's
# reads are inferred again (A, then D).
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["ComputeInline",["b0"],{},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((6, 8), "float32"), D: T.Buffer((6,), "float32"), C: T.Buffer((6, 7), "float32")):
    B = T.alloc_buffer((6, 8))
    for i, j in T.grid(6, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.exp(A[vi, vj]) + T.float32(1)
    for i, j in T.grid(6, 7):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] * D[vi] - B[vi, vj + 1]
