# The notes' GPU local blocking (section 6.3.1): cache_write to local,
# 3-level tiling, reverse_compute_at of the write-back under the threadIdx.x
# loop j_1 (an 8x8 tile per thread: no thread relaxation for a consumer),
# thread binds, decompose_reduction.
# The expected output is the notes' printed result
# (tests/golden/matmul_local_blocking.py). no-run: too big to interpret.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["CacheWrite",["b0"],{"write_buffer_index":0,"storage_scope":"local"},["b1"]],["GetLoops",["b0"],{},["l2","l3","l4"]],["Split",["l2",null,8,8],{"preserve_unit_iters":true},["l5","l6","l7"]],["Split",["l3",null,8,8],{"preserve_unit_iters":true},["l8","l9","l10"]],["Split",["l4",null,4],{"preserve_unit_iters":true},["l11","l12"]],["Unroll",["l12"],{},[]],["Reorder",["l5","l8","l6","l9","l11","l12","l7","l10"],{},[]],["ReverseComputeAt",["b1","l9"],{"preserve_unit_loops":false,"index":-1},[]],["Bind",["l5"],{"thread_axis":"blockIdx.y"},[]],["Bind",["l8"],{"thread_axis":"blockIdx.x"},[]],["Bind",["l6"],{"thread_axis":"threadIdx.y"},[]],["Bind",["l9"],{"thread_axis":"threadIdx.x"},[]],["DecomposeReduction",["b0","l11"],{},["b13"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(1024, 1024, 1024):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
