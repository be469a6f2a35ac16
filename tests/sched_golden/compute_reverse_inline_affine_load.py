# TVM's test_reverse_compute_inline_affine_load: C reads B at the row-major
# split of F = ((vi * 32 + vj) * 8 + vk) * 8 + vl, which the simplifier
# shares between the indices (B[vi * 16 + (vj * 64 + vk * 8 + vl) // 128,
# (vj * 64 + vk * 8 + vl) % 128]): F is recombined from both, inverted
# against the producer's vi * 128 + vj, and B's block writes C at
# (F // 2048, F // 64 % 32, F // 8 % 8, F % 8), simplified. TVM's expected
# indices, ((vj + vi * 128) // 2048, ...), are the same map written out;
# test_sched_compute compares that function with this result numerically.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["ReverseComputeInline",["b0"],{},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((128, 128), "float32"), C: T.Buffer((8, 32, 8, 8), "float32")):
    B = T.alloc_buffer((128, 128))
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j, k, l in T.grid(8, 32, 8, 8):
        with T.block("C"):
            vi, vj, vk, vl = T.axis.remap("SSSS", [i, j, k, l])
            C[vi, vj, vk, vl] = B[(((vi * 32 + vj) * 8 + vk) * 8 + vl) // 128, (((vi * 32 + vj) * 8 + vk) * 8 + vl) % 128]
