# The notes' cooperative fetching (section 6.2) after compute_at: the
# 130-element copy's loop is split by 128 and its inner loop bound to
# threadIdx.x inside the threadIdx.x loop (same extent: the same hardware
# index), with the split's T.where. The expected output is the notes'
# printed result (tests/golden/window_sum_coop_fetch.py) except for one
# binding: the notes print v0 = i_0 * 128 + (ax0_0 * 128 + ax0_1) (split
# substitutes into the compute_at binding as it stands); our split
# re-simplifies bindings into the flat sum i_0 * 128 + ax0_0 * 128 + ax0_1,
# the same value, which structural equality tells apart.
# trace: {"insts":[["GetBlock",[],{"name":"A_shared","func_name":"main"},["b0"]],["GetBlock",[],{"name":"C","func_name":"main"},["b1"]],["GetLoops",["b1"],{},["l2","l3"]],["ComputeAt",["b0","l3"],{"preserve_unit_loops":false,"index":-1},[]],["GetLoops",["b0"],{},["l4","l5","l6"]],["Split",["l6",null,128],{"preserve_unit_iters":true},["l7","l8"]],["Bind",["l8"],{"thread_axis":"threadIdx.x"},[]]],"decisions":{},"version":1}
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        A_shared = T.alloc_buffer((1027,), scope="shared")
        for ax0 in range(1027):
            with T.block("A_shared"):
                v0 = T.axis.spatial(1027, ax0)
                T.reads(A[v0])
                T.writes(A_shared[v0])
                A_shared[v0] = A[v0]
        for i_0 in T.thread_binding(8, thread="blockIdx.x"):
            for i_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.block("C"):
                    vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                    T.reads(A_shared[vi:vi + 3])
                    T.writes(B[vi])
                    B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]
