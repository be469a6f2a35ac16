# Reductions over the lanes of a vectorized loop (mlc_sched_vectorize of a
# reduce loop): every lane updates one element, the lanes combined as a
# tree of shuffles (a sum over 16 with its init under the loop, a max over
# an odd 7 with the init decomposed out of it, an int32 min over 64, an
# int64 product over 3).
# expect-ir: shufflevector
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def sum16(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4,), "float32")):
        T.func_attr({"global_symbol": "sum16", "tir.noalias": True})
        for i in range(4):
            for k in T.vectorized(16):
                with T.block("B"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk] * T.float32(2)

    @T.prim_func
    def max7(A: T.Buffer((5, 7), "float32"), B: T.Buffer((5,), "float32")):
        T.func_attr({"global_symbol": "max7", "tir.noalias": True})
        for i in range(5):
            with T.block("B_init"):
                vi = T.axis.spatial(5, i)
                B[vi] = T.float32(-3.4028234663852886e+38)
            for k in T.vectorized(7):
                with T.block("B_update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    B[vi] = T.max(B[vi], A[vi, vk])

    @T.prim_func
    def min64(A: T.Buffer((3, 64), "int32"), B: T.Buffer((3,), "int32")):
        T.func_attr({"global_symbol": "min64", "tir.noalias": True})
        for i in range(3):
            for k in T.vectorized(64):
                with T.block("B"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        B[vi] = 2147483647
                    B[vi] = T.min(A[vi, vk], B[vi])

    @T.prim_func
    def prod3(A: T.Buffer((6, 3), "int64"), B: T.Buffer((6,), "int64")):
        T.func_attr({"global_symbol": "prod3", "tir.noalias": True})
        for i in range(6):
            for k in T.vectorized(3):
                with T.block("B"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        B[vi] = T.int64(1)
                    B[vi] = B[vi] * A[vi, vk]
