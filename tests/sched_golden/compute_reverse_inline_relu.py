# reverse_compute_inline of a relu into its elementwise producer: the
# producer block "Y" now writes C; Y disappears.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["ReverseComputeInline",["b0"],{},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((4, 6), "float32"), bias: T.Buffer((6,), "float32"), C: T.Buffer((4, 6), "float32")):
    Y = T.alloc_buffer((4, 6))
    for i, j in T.grid(4, 6):
        with T.block("Y"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = A[vi, vj] * T.float32(3)
    for i, j in T.grid(4, 6):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj] + bias[vj], T.float32(0))
