# The notes' GPU local blocking (section 6.3.1) on a 64x64x32 matmul with
# 4x4 local tiles, 8x8 threads and k split by 4: cache_write local, split,
# unroll, reorder, reverse_compute_at of the write-back under the
# threadIdx.x loop, binds, decompose_reduction. Expected: the notes'
# printout with the smaller extents.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["CacheWrite",["b0"],{"write_buffer_index":0,"storage_scope":"local"},["b1"]],["GetLoops",["b0"],{},["l2","l3","l4"]],["Split",["l2",null,8,4],{"preserve_unit_iters":true},["l5","l6","l7"]],["Split",["l3",null,8,4],{"preserve_unit_iters":true},["l8","l9","l10"]],["Split",["l4",null,4],{"preserve_unit_iters":true},["l11","l12"]],["Unroll",["l12"],{},[]],["Reorder",["l5","l8","l6","l9","l11","l12","l7","l10"],{},[]],["ReverseComputeAt",["b1","l9"],{"preserve_unit_loops":false,"index":-1},[]],["Bind",["l5"],{"thread_axis":"blockIdx.y"},[]],["Bind",["l8"],{"thread_axis":"blockIdx.x"},[]],["Bind",["l6"],{"thread_axis":"threadIdx.y"},[]],["Bind",["l9"],{"thread_axis":"threadIdx.x"},[]],["DecomposeReduction",["b0","l11"],{},["b13"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((64, 32), "float32"), B: T.Buffer((32, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(64, 64, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
