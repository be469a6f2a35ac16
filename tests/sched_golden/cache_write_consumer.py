# cache_write with consumer_blocks=[C]: C reads the cache Y_local itself;
# no block reads Y afterwards, so the write-back goes at the end.
# trace: {"insts":[["GetBlock",[],{"name":"Y","func_name":"mm_relu"},["b0"]],["GetBlock",[],{"name":"C","func_name":"mm_relu"},["b1"]],["CacheWrite",["b0","b1"],{"write_buffer_index":0,"storage_scope":"local"},["b2"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def mm_relu(A: T.Buffer((8, 6), "float32"), B: T.Buffer((6, 10), "float32"), C: T.Buffer((8, 10), "float32")):
    T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
    Y = T.alloc_buffer((8, 10))
    for i, j, k in T.grid(8, 10, 6):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(Y[vi, vj])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(8, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(Y[vi, vj])
            T.writes(C[vi, vj])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
