# cache_read with consumer_blocks=[C2]: only C2 reads the cache; C1 keeps
# reading A. A is an input, so the copy goes first.
# trace: {"insts":[["GetBlock",[],{"name":"C2","func_name":"main"},["b0"]],["CacheRead",["b0","b0"],{"read_buffer_index":0,"storage_scope":"shared"},["b1"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((6, 5), "float32"), B: T.Buffer((6, 5), "float32"), C: T.Buffer((5, 6), "float32")):
    for i, j in T.grid(6, 5):
        with T.block("C1"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes(B[vi, vj])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(5, 6):
        with T.block("C2"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vj, vi])
            T.writes(C[vi, vj])
            C[vi, vj] = A[vj, vi] + T.float32(1)
