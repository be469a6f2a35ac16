# reduce_sum B[i] = sum_k A[i, k]: split k by 4, rfactor(k_1, factor_axis=0).
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2"]],["Split",["l2",null,4],{"preserve_unit_iters":true},["l3","l4"]],["RFactor",["l4"],{"factor_axis":0},["b5"]]],"decisions":{}}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8, 64), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 64):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
