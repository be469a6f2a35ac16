# cache_write local of a reduction, the first step of the notes' local
# blocking: the block accumulates in C_local (init included) and a
# write-back block "C_local" copies it to C at the end of the root block
# (nothing reads C afterwards).
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["CacheWrite",["b0"],{"write_buffer_index":0,"storage_scope":"local"},["b1"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16, 12), "float32"), B: T.Buffer((12, 20), "float32"), C: T.Buffer((16, 20), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(16, 20, 12):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
