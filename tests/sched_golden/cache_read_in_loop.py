# cache_read where the writer and its consumer share loop i (as after
# compute_at): the copy goes inside i, between them, and holds the row
# B[i, 0:6] that this iteration of i writes.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["CacheRead",["b0"],{"read_buffer_index":0,"storage_scope":"local"},["b1"]]],"decisions":{},"version":1}
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
