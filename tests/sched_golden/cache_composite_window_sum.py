# The notes' window sum on the GPU: bind, cache_read shared, compute_at
# under threadIdx (the stage covers what the whole thread block needs: 130
# elements, not 3), then cooperative fetching: split the copy loop and
# bind its inner part to threadIdx.x. Expected: the notes' printout, except
# that the notes print the copy's binding as i_0 * 128 + (ax0_0 * 128 +
# ax0_1) where split here keeps bindings in the flat affine form
# i_0 * 128 + ax0_0 * 128 + ax0_1 (the same value; structural equality
# compares the trees).
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1"]],["Split",["l1",null,128],{"preserve_unit_iters":true},["l2","l3"]],["Bind",["l2"],{"thread_axis":"blockIdx.x"},[]],["Bind",["l3"],{"thread_axis":"threadIdx.x"},[]],["CacheRead",["b0"],{"read_buffer_index":0,"storage_scope":"shared"},["b4"]],["ComputeAt",["b4","l3"],{"preserve_unit_loops":false,"index":-1},[]],["GetLoops",["b4"],{},["l5","l6","l7"]],["Split",["l7",null,128],{"preserve_unit_iters":true},["l8","l9"]],["Bind",["l9"],{"thread_axis":"threadIdx.x"},[]]],"decisions":{},"version":1}
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
