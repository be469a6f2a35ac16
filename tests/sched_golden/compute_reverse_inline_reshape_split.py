# reverse_compute_inline of a reshape (16, 64) <- (32, 32) written as the
# row-major split of F = vi * 64 + vj, read twice: the simplifier turns the
# read into B[vi * 2 + vj // 32, vj % 32], so F comes back from the sum of
# the indices; B's block writes C at (F // 64, F % 64) of F = vi * 32 + vj.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["ReverseComputeInline",["b0"],{},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), C: T.Buffer((16, 64), "float32")):
    B = T.alloc_buffer((32, 32))
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(16, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[(vi * 64 + vj) // 32, (vi * 64 + vj) % 32] * B[(vi * 64 + vj) // 32, (vi * 64 + vj) % 32]
