# TVM's test_reduction_rfactor_matmul (spatial extents cut to 16): k split
# in three (4, 8, 4), rfactor on the innermost part at axis 0.
# trace: {"insts":[["GetBlock",[],{"name":"update","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2","l3","l4","l5"]],["RFactor",["l5"],{"factor_axis":0},["b6"]]],"decisions":{}}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16, 128), "float32"), B: T.Buffer((16, 128), "float32"), C: T.Buffer((16, 16), "float32")):
    for i0, i1, i2_outer, i2_inner_outer, i2_inner_inner in T.grid(16, 16, 4, 8, 4):
        with T.block("update"):
            vi = T.axis.S(16, i0)
            vj = T.axis.S(16, i1)
            vk = T.axis.R(128, i2_outer * 32 + i2_inner_outer * 4 + i2_inner_inner)
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]
