# The notes' blockization (6.6.4): split i, j, k by 16, reorder, blockize(ii).
# trace: {"insts":[["GetBlock",[],{"name":"matmul","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3"]],["Split",["l1",null,16],{"preserve_unit_iters":true},["l4","l5"]],["Split",["l2",null,16],{"preserve_unit_iters":true},["l6","l7"]],["Split",["l3",null,16],{"preserve_unit_iters":true},["l8","l9"]],["Reorder",["l4","l6","l8","l5","l7","l9"],{},[]],["Blockize",["l5"],{"preserve_unit_iters":true},["b10"]]],"decisions":{}}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(1024, 1024, 1024):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]
