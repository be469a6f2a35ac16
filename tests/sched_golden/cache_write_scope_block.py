# TVM's test_cache_write_under_scope: cache_write of A (local) and B
# (global) inside block "scope", then of "scope" itself for A (global).
# The scope reads A only where it wrote it first in the same iteration
# (B reads what A's write-back stored), so the cache holds all it reads:
# every access to A inside the scope goes to A_global, and a write-back
# block after the scope copies A_global to A for C.
# trace: {"insts":[["GetBlock",[],{"name":"A","func_name":"main"},["b0"]],["GetBlock",[],{"name":"B","func_name":"main"},["b1"]],["GetBlock",[],{"name":"scope","func_name":"main"},["b2"]],["CacheWrite",["b0"],{"write_buffer_index":0,"storage_scope":"local"},["b3"]],["CacheWrite",["b1"],{"write_buffer_index":0,"storage_scope":"global"},["b4"]],["CacheWrite",["b2"],{"write_buffer_index":0,"storage_scope":"global"},["b5"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    A = T.alloc_buffer((128, 128))
    for i0, j0 in T.grid(8, 8):
        with T.block("scope"):
            i, j = T.axis.remap("SS", [i0, j0])
            for x, y in T.grid(16, 16):
                with T.block("A"):
                    vi = T.axis.spatial(128, i * 16 + x)
                    vj = T.axis.spatial(128, j * 16 + y)
                    A[vi, vj] = T.float32(1)
            for x, y in T.grid(16, 16):
                with T.block("B"):
                    vi = T.axis.spatial(128, i * 16 + x)
                    vj = T.axis.spatial(128, j * 16 + y)
                    B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)
