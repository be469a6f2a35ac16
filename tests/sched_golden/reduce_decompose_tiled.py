# A 2-level tiled matmul: i, j, k split, reorder(i_0, j_0, k_0, i_1, k_1, j_1),
# decompose_reduction(C, k_0): the init needs i_1 and j_1, not k_1.
# trace: {"insts":[["GetBlock",[],{"name":"C","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3"]],["Split",["l1",null,4],{"preserve_unit_iters":true},["l4","l5"]],["Split",["l2",null,8],{"preserve_unit_iters":true},["l6","l7"]],["Split",["l3",null,2],{"preserve_unit_iters":true},["l8","l9"]],["Reorder",["l4","l6","l8","l5","l9","l7"],{},[]],["DecomposeReduction",["b0","l8"],{},["b10"]]],"decisions":{}}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((12, 6), "float32"), B: T.Buffer((6, 16), "float32"), C: T.Buffer((12, 16), "float32")):
    for i, j, k in T.grid(12, 16, 6):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
