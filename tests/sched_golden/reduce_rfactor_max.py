# A row max over k (split by 8), rfactor on the outer part k_0 with
# factor_axis=-1: B_rf is (4, 6), the rf block reduces over k_1.
# trace: {"insts":[["GetBlock",[],{"name":"M","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2"]],["Split",["l2",null,8],{"preserve_unit_iters":true},["l3","l4"]],["RFactor",["l3"],{"factor_axis":-1},["b5"]]],"decisions":{}}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((4, 48), "float32"), M: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 48):
        with T.block("M"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                M[vi] = T.float32(-3.4028234663852886e+38)
            M[vi] = T.max(M[vi], A[vi, vk])
