# Addresses on a CPU: an int32 index is computed in int64 over its
# sign-extended vars (a linear form LLVM's alias analysis reads without
# re-deriving known bits of an i32 chain), and a serial loop of extent 1
# is no loop at all: its body once, the var bound to the loop's min.
# expect-ir: mul nsw i64
# expect-no-ir: mul nsw i32
# expect-ir: %i = phi
# expect-no-ir: %k = phi
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def unit_loops(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
        T.func_attr({"global_symbol": "unit_loops", "tir.noalias": True})
        for i in range(4):
            for k in range(1):
                for j in T.unroll(8):
                    with T.block("B"):
                        vi = T.axis.spatial(4, i)
                        vj = T.axis.spatial(8, j + k)
                        T.reads(A[vi, vj])
                        T.writes(B[vi, vj])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
