# cache_read of a function input: the notes' window sum, before compute_at.
# A is written by no block, so the copy covers all of A and goes first in
# the root block; A_shared is allocated there.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["CacheRead",["b0"],{"read_buffer_index":0,"storage_scope":"shared"},["b1"]]],"decisions":{},"version":1}
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in range(1024):
            with T.block("C"):
                vi = T.axis.spatial(1024, i)
                T.reads(A[vi:vi + 3])
                T.writes(B[vi])
                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]
