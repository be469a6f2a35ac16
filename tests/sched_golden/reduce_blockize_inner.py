# TVM's test_blockize_inner: blockize(j) of an elementwise nest. vi depends
# only on the loop above and moves to the outer block as it is; vj is
# wholly inside: vj_o of extent 1 (preserve_unit_iters) and vj_i.
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2"]],["Blockize",["l2"],{"preserve_unit_iters":true},["b3"]]],"decisions":{}}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16, 24), "float32"), B: T.Buffer((16, 24), "float32")):
    for i, j in T.grid(16, 24):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
