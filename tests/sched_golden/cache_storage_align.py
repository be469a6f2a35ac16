# cache_read shared of a matmul input, then storage_align on the copy
# block (buffer 0 = A_shared, axis -2 = 0, factor 16, offset 1), twice on
# the same axis (the second replaces the first) and once on axis 1: the
# buffer_dim_align annotation TVM uses, [buffer_index, axis, factor, offset]
# tuples with the axis normalized.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["CacheRead",["b0"],{"read_buffer_index":0,"storage_scope":"shared"},["b1"]],["StorageAlign",["b1"],{"buffer_index":0,"axis":-2,"factor":32,"offset":8},[]],["StorageAlign",["b1"],{"buffer_index":0,"axis":1,"factor":4,"offset":0},[]],["StorageAlign",["b1"],{"buffer_index":0,"axis":0,"factor":16,"offset":1},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8, 4), "float32"), B: T.Buffer((4, 6), "float32"), C: T.Buffer((8, 6), "float32")):
    for i, j, k in T.grid(8, 6, 4):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
