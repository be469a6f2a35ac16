# cache_write under a block scope inside loops (TVM's
# cache_write_under_scope): A's and B's caches live in block "scope",
# compacted to the 4 x 4 tile the scope writes; A's write-back goes before
# its reader B, B's at the end of the scope. The writers store to
# X_local[vi - i * 4, vj - j * 4]; the write-backs copy the tile back.
# trace: {"insts":[["GetBlock",[],{"name":"A","func_name":"main"},["b0"]],["GetBlock",[],{"name":"B","func_name":"main"},["b1"]],["CacheWrite",["b0"],{"write_buffer_index":0,"storage_scope":"local"},["b2"]],["CacheWrite",["b1"],{"write_buffer_index":0,"storage_scope":"local"},["b3"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(X: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    A = T.alloc_buffer((8, 8))
    for i0, j0 in T.grid(2, 2):
        with T.block("scope"):
            i, j = T.axis.remap("SS", [i0, j0])
            T.reads(X[i * 4:i * 4 + 4, j * 4:j * 4 + 4], A[i * 4:i * 4 + 4, j * 4:j * 4 + 4])
            T.writes(A[i * 4:i * 4 + 4, j * 4:j * 4 + 4], B[i * 4:i * 4 + 4, j * 4:j * 4 + 4])
            for x, y in T.grid(4, 4):
                with T.block("A"):
                    vi = T.axis.spatial(8, i * 4 + x)
                    vj = T.axis.spatial(8, j * 4 + y)
                    T.reads(X[vi, vj])
                    T.writes(A[vi, vj])
                    A[vi, vj] = X[vi, vj] * T.float32(2)
            for x, y in T.grid(4, 4):
                with T.block("B"):
                    vi = T.axis.spatial(8, i * 4 + x)
                    vj = T.axis.spatial(8, j * 4 + y)
                    T.reads(A[vi, vj])
                    T.writes(B[vi, vj])
                    B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes(C[vi, vj])
            C[vi, vj] = A[vi, vj] * T.float32(3)
