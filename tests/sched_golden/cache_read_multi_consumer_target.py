# cache_read of A with consumer_blocks=[C] (TVM's
# cache_read_multi_consumer_target): only C reads the cache, so the copy
# goes at the root between loop i and C and holds all of A; B keeps
# reading A.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["CacheRead",["b0","b0"],{"read_buffer_index":0,"storage_scope":"global"},["b1"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(X: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    A = T.alloc_buffer((16,))
    for i in range(4):
        for j in range(4):
            with T.block("A"):
                vi = T.axis.spatial(16, i * 4 + j)
                T.reads(X[vi])
                T.writes(A[vi])
                A[vi] = X[vi] * T.float32(2)
        for j in range(4):
            with T.block("B"):
                vi = T.axis.spatial(16, i * 4 + j)
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] + T.float32(1)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            T.reads(A[15 - vi])
            T.writes(C[vi])
            C[vi] = A[15 - vi] * T.float32(3)
