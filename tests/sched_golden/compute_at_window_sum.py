# compute_at of a shared-scope copy under a threadIdx loop (the notes'
# window sum, section 6.2): the copy covers what the whole thread block
# reads, 130 elements of A, not the 3 one thread reads. The expected output
# is the notes' printed result (tests/golden/window_sum_cache_read.py).
# trace: {"insts":[["GetBlock",[],{"name":"A_shared","func_name":"main"},["b0"]],["GetBlock",[],{"name":"C","func_name":"main"},["b1"]],["GetLoops",["b1"],{},["l2","l3"]],["ComputeAt",["b0","l3"],{"preserve_unit_loops":false,"index":-1},[]]],"decisions":{},"version":1}
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
