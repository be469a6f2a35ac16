# TVM's test_blockize_outer: blockize(i) takes the whole nest; both iters
# are wholly inside, so the outer block binds two unit iters to 0.
# trace: {"insts":[["GetBlock",[],{"name":"B","func_name":"main"},["b0"]],["GetLoops",["b0"],{},["l1","l2"]],["Blockize",["l1"],{"preserve_unit_iters":true},["b3"]]],"decisions":{}}
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16, 24), "float32"), B: T.Buffer((16, 24), "float32")):
    for i, j in T.grid(16, 24):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
