# NRM: the 2-norm of each matrix of a batch (TVM te_workload's norm_bmn,
# scaled down): out[b] = sqrt(sum over m, n of A[b, m, n]^2).
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((4, 256, 256), "float32"), D: T.Buffer((4,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    C = T.alloc_buffer((4,))
    for b, i, j in T.grid(4, 256, 256):
        with T.block("C"):
            vb, vi, vj = T.axis.remap("SRR", [b, i, j])
            T.reads(A[vb, vi, vj])
            T.writes(C[vb])
            with T.init():
                C[vb] = T.float32(0)
            C[vb] = C[vb] + A[vb, vi, vj] * A[vb, vi, vj]
    for b in range(4):
        with T.block("D"):
            vb = T.axis.spatial(4, b)
            T.reads(C[vb])
            T.writes(D[vb])
            D[vb] = T.sqrt(C[vb])
