# reverse_compute_at of the notes (section 2.4.2): C under Y's j_0 loop.
# The expected output is the notes' printed result,
# tests/golden/mm_relu_reverse_compute_at.py.
# trace: {"insts":[["GetBlock",[],{"name":"Y","func_name":"mm_relu"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3","l4"]],["GetBlock",[],{"name":"C","func_name":"mm_relu"},["b5"]],["ReverseComputeAt",["b5","l2"],{"preserve_unit_loops":false,"index":-1},[]]],"decisions":{},"version":1}

@I.ir_module
class Module:
    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        # with T.block("root"):
        Y = T.alloc_buffer((128, 128))
        for i, j_0, k, j_1 in T.grid(128, 32, 128, 4):
            with T.block("Y"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j_0 * 4 + j_1)
                vk = T.axis.reduce(128, k)
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(Y[vi, vj])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(Y[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
