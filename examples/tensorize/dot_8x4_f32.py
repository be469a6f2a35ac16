# A user's tensor intrinsic for `mlc-tune --intrin` (and mlc-ir apply,
# mlc-compile, mlc-db --intrin): eight float32 outputs of a matmul row
# accumulated over four reduction steps, C[0, i] += A[0, k] * B[k, i],
# the operands being tiles of matmul's A[M, K], B[K, N] and C[M, N].
# The implementation is plain TensorIR: the k loop outside, the eight
# lanes as one vector. Its description (one spatial loop over one reduce
# loop) is a dot-product tile, so the tuner's tiling-with-intrinsic rule
# cuts matmul's loops around it.

@T.prim_func
def dot_8x4_f32_desc(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (1, 4), "float32")
    B = T.match_buffer(b, (4, 8), "float32")
    C = T.match_buffer(c, (1, 8), "float32")
    with T.block("root"):
        T.reads(C[0, 0:8], A[0, 0:4], B[0:4, 0:8])
        T.writes(C[0, 0:8])
        for i, k in T.grid(8, 4):
            with T.block("update"):
                vi, vk = T.axis.remap("SR", [i, k])
                C[0, vi] = C[0, vi] + A[0, vk] * B[vk, vi]

@T.prim_func
def dot_8x4_f32_impl(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (1, 4), "float32")
    B = T.match_buffer(b, (4, 8), "float32")
    C = T.match_buffer(c, (1, 8), "float32")
    with T.block("root"):
        T.reads(C[0, 0:8], A[0, 0:4], B[0:4, 0:8])
        T.writes(C[0, 0:8])
        for k in range(4):
            for i in T.vectorized(8):
                with T.block("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[0, vi] = C[0, vi] + A[0, vk] * B[vk, vi]
