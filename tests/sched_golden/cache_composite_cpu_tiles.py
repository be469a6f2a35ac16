# A CPU tiling with both caches, compiled and run with the LLVM backend:
# cache_write local, split i and j by 4, reorder to i_0, j_0, k, i_1, j_1,
# cache_read of A into local moved under k (the 4 x 1 column the tile
# reads per k), the write-back moved under j_0 (the 4 x 4 tile), and the
# outer loop parallel (each thread's caches are its own after lowering).
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["CacheWrite",["b0"],{"write_buffer_index":0,"storage_scope":"local"},["b1"]],["GetLoops",["b0"],{},["l2","l3","l4"]],["Split",["l2",null,4],{"preserve_unit_iters":true},["l5","l6"]],["Split",["l3",null,4],{"preserve_unit_iters":true},["l7","l8"]],["Reorder",["l5","l7","l4","l6","l8"],{},[]],["CacheRead",["b0"],{"read_buffer_index":0,"storage_scope":"local"},["b9"]],["ComputeAt",["b9","l4"],{"preserve_unit_loops":false,"index":-1},[]],["ReverseComputeAt",["b1","l7"],{"preserve_unit_loops":false,"index":-1},[]],["Parallel",["l5"],{},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j, k in T.grid(16, 16, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
