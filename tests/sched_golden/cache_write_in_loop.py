# cache_write of B whose reader C shares loop i: the write-back goes inside
# i, before C, and copies the row B_local[i, 0:6].
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["CacheWrite",["b0"],{"write_buffer_index":0,"storage_scope":"local"},["b1"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8, 6), "float32"), C: T.Buffer((8, 6), "float32")):
    B = T.alloc_buffer((8, 6))
    for i in range(8):
        for j in range(6):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(6):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(B[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = B[vi, vj] + T.float32(1)
