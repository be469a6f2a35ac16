# The notes' preparation for tensorization (sections 6.6.4-6.6.5) at a
# 32x32x32 size: 16x16x16 tiles blockized, A and B tiles cached in
# "global.A_reg"/"global.B_reg" and computed at k (each copies the 16x16
# tile the tensorized block reads there), the accumulator written back
# under j (reverse_compute_at: the 16x16 tile the block writes there).
# The notes print no result for this step: checked numerically.
# trace: {"insts":[["GetBlock",[],{"name":"matmul","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3"]],["Split",["l1",null,16],{"preserve_unit_iters":true},["l4","l5"]],["Split",["l2",null,16],{"preserve_unit_iters":true},["l6","l7"]],["Split",["l3",null,16],{"preserve_unit_iters":true},["l8","l9"]],["Reorder",["l4","l6","l8","l5","l7","l9"],{},[]],["Blockize",["l5"],{"preserve_unit_iters":true},["b10"]],["CacheRead",["b10"],{"read_buffer_index":0,"storage_scope":"global.A_reg"},["b11"]],["CacheRead",["b10"],{"read_buffer_index":1,"storage_scope":"global.B_reg"},["b12"]],["ComputeAt",["b11","l8"],{"preserve_unit_loops":false,"index":-1},[]],["ComputeAt",["b12","l8"],{"preserve_unit_loops":false,"index":-1},[]],["CacheWrite",["b10"],{"write_buffer_index":0,"storage_scope":"global.accumulator"},["b13"]],["ReverseComputeAt",["b13","l6"],{"preserve_unit_loops":false,"index":-1},[]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(32, 32, 32):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]
