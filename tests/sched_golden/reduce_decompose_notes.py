# The notes' stochastic_schedule_mm (4.3) with decision [32, 4]:
# split j, reorder(i, j_0, k, j_1), decompose_reduction(C, k).
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3"]],["SamplePerfectTile",["l2"],{"n":2,"max_innermost_factor":16},["v4","v5"]],["Split",["l2","v4","v5"],{"preserve_unit_iters":true},["l6","l7"]],["Reorder",["l1","l6","l3","l7"],{},[]],["DecomposeReduction",["b0","l3"],{},["b8"]]],"decisions":{"2":[32,4]}}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(128, 128, 128):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
