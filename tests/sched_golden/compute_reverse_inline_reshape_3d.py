# reverse_compute_inline of a 3-d reshape (8, 8, 8) <- (4, 8, 16): the
# middle index simplifies to (vi * 4 + (vj * 8 + vk) // 16) % 8 and the
# indices no longer sum back to F; F is the first index's floordiv operand.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["ReverseComputeInline",["b0"],{},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((4, 8, 16), "float32"), C: T.Buffer((8, 8, 8), "float32")):
    B = T.alloc_buffer((4, 8, 16))
    for i, j, k in T.grid(4, 8, 16):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(0.5)
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = B[(vi * 64 + vj * 8 + vk) // 128, (vi * 64 + vj * 8 + vk) // 16 % 8, (vi * 64 + vj * 8 + vk) % 16] - T.float32(1)
