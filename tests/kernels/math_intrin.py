# The math intrinsics ONNX's elementwise ops lower to (T.sin .. T.atanh:
# libm calls, lane by lane in vectors; T.round: nearbyint, ties to even),
# once in scalar code and once in a vectorized loop. Inputs stay inside
# each function's domain; column 8 rounds only ties (k + 0.5), where
# ties-to-even and ties-away differ.
# expect-ir: llvm.nearbyint
# expect-ir: @sinf
# expect-ir: @acoshf
# expect-ir: @atanhf
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def math_scalar(X: T.Buffer((64,), "float32"), H: T.Buffer((64,), "float16"), F: T.Buffer((64, 9), "float32"), G: T.Buffer((64,), "float16")):
        T.func_attr({"global_symbol": "math_scalar", "tir.noalias": True})
        for i in range(64):
            with T.block("e"):
                vi = T.axis.spatial(64, i)
                F[vi, 0] = T.sin(X[vi] * T.float32(3)) + T.cos(X[vi] * T.float32(3)) * T.float32(10)
                F[vi, 1] = T.tan(X[vi])
                F[vi, 2] = T.asin(X[vi] * T.float32(0.99)) + T.acos(X[vi] * T.float32(0.99)) * T.float32(10)
                F[vi, 3] = T.atan(X[vi] * T.float32(5))
                F[vi, 4] = T.sinh(X[vi] * T.float32(2)) + T.cosh(X[vi] * T.float32(2)) * T.float32(10)
                F[vi, 5] = T.asinh(X[vi] * T.float32(5)) + T.acosh(T.abs(X[vi]) * T.float32(5) + T.float32(1)) * T.float32(10)
                F[vi, 6] = T.atanh(X[vi] * T.float32(0.99))
                F[vi, 7] = T.round(X[vi] * T.float32(7))
                F[vi, 8] = T.round(T.floor(X[vi] * T.float32(8)) + T.float32(0.5))
                G[vi] = T.sin(H[vi]) + T.round(H[vi] * T.float16(4))

    @T.prim_func
    def math_vector(X: T.Buffer((64,), "float32"), H: T.Buffer((64,), "float16"), F: T.Buffer((64, 9), "float32"), G: T.Buffer((64,), "float16")):
        T.func_attr({"global_symbol": "math_vector", "tir.noalias": True})
        for i0 in range(8):
            for i1 in T.vectorized(8):
                with T.block("e"):
                    vi = T.axis.spatial(64, i0 * 8 + i1)
                    F[vi, 0] = T.sin(X[vi] * T.float32(3)) + T.cos(X[vi] * T.float32(3)) * T.float32(10)
                    F[vi, 1] = T.tan(X[vi])
                    F[vi, 2] = T.asin(X[vi] * T.float32(0.99)) + T.acos(X[vi] * T.float32(0.99)) * T.float32(10)
                    F[vi, 3] = T.atan(X[vi] * T.float32(5))
                    F[vi, 4] = T.sinh(X[vi] * T.float32(2)) + T.cosh(X[vi] * T.float32(2)) * T.float32(10)
                    F[vi, 5] = T.asinh(X[vi] * T.float32(5)) + T.acosh(T.abs(X[vi]) * T.float32(5) + T.float32(1)) * T.float32(10)
                    F[vi, 6] = T.atanh(X[vi] * T.float32(0.99))
                    F[vi, 7] = T.round(X[vi] * T.float32(7))
                    F[vi, 8] = T.round(T.floor(X[vi] * T.float32(8)) + T.float32(0.5))
                    G[vi] = T.sin(H[vi]) + T.round(H[vi] * T.float16(4))
