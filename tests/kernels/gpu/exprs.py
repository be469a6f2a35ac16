# Every expression kind and dtype of tests/kernels/exprs.py (scalar part),
# one element per GPU thread: int division and modulo, saturating casts,
# float16, bool, lazy and/or and if_then_else, and the math functions
# (exp, tanh, erf, log, pow from libdevice; sqrt, floor, ceil, abs native).
# expect-ptx: .entry gpu_exprs(
# expect-ptx: .maxntid 32, 1, 1
# expect-ptx-not: __nv_
# from tvm.script import tir as T

@T.prim_func
def gpu_exprs(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"), X: T.Buffer((64,), "float32"), H: T.Buffer((64,), "float16"), Q: T.Buffer((64,), "int8"), M: T.Buffer((64,), "bool"), O: T.Buffer((64, 12), "int32"), F: T.Buffer((64, 12), "float32"), G: T.Buffer((64,), "float16"), P: T.Buffer((64,), "int8"), N: T.Buffer((64,), "bool")):
    T.func_attr({"global_symbol": "gpu_exprs", "tir.noalias": True})
    for b in T.thread_binding(2, thread="blockIdx.x"):
        for t in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("e"):
                vi = T.axis.spatial(64, b * 32 + t)
                O[vi, 0] = T.floordiv(A[vi], B[vi] * 2 + 1)
                O[vi, 1] = T.floormod(A[vi], B[vi] * 2 + 1)
                O[vi, 2] = A[vi] // 4 + A[vi] % 4 * 100
                O[vi, 3] = A[vi] // 3 + A[vi] % 3 * 100
                O[vi, 4] = T.floordiv(A[vi], -3) + T.floormod(A[vi], -3) * 100
                O[vi, 5] = T.max(A[vi], B[vi]) * 100 + T.min(A[vi], B[vi])
                O[vi, 6] = T.Cast("int32", X[vi] * T.float32(10000000000))
                O[vi, 7] = T.Cast("int32", Q[vi] * T.int8(20))
                O[vi, 8] = T.Select(M[vi], A[vi], B[vi])
                O[vi, 9] = T.if_then_else(vi < 63, B[vi + 1], B[vi - 63]) + T.if_then_else(vi < 63 and A[vi] > 0, 1000, 0)
                O[vi, 10] = T.Cast("int32", A[vi] > B[vi] and M[vi]) + T.Cast("int32", A[vi] <= B[vi] or not M[vi]) * 10
                O[vi, 11] = T.Cast("int32", H[vi] * T.float16(10)) + A[vi] * B[vi] - A[vi] // (B[vi] * 2 + 1)
                F[vi, 0] = T.exp(X[vi]) + T.tanh(X[vi])
                F[vi, 1] = T.sigmoid(X[vi]) + T.erf(X[vi])
                F[vi, 2] = T.sqrt(T.abs(X[vi])) + T.log(T.abs(X[vi]) + T.float32(1))
                F[vi, 3] = T.floor(X[vi] * T.float32(4)) + T.ceil(X[vi] * T.float32(4)) * T.float32(10)
                F[vi, 4] = T.pow(T.abs(X[vi]), T.float32(1.5)) + T.rsqrt(T.abs(X[vi]) + T.float32(0.5))
                F[vi, 5] = T.floordiv(X[vi], T.float32(0.3)) + T.floormod(X[vi], T.float32(0.3))
                F[vi, 6] = T.max(X[vi], T.float32(0)) - T.min(X[vi], T.float32(-0.25)) / T.float32(3)
                F[vi, 7] = T.Cast("float32", A[vi]) * X[vi] + T.Cast("float32", M[vi])
                F[vi, 8] = T.Cast("float32", T.Cast("float16", X[vi] * T.float32(1000)))
                F[vi, 9] = T.if_then_else(X[vi] > T.float32(0), X[vi], T.float32(0) - X[vi])
                F[vi, 10] = T.Select(X[vi] != X[vi], T.float32(1), T.float32(2)) + T.Cast("float32", T.Cast("bool", X[vi]))
                F[vi, 11] = T.exp(T.Cast("float32", H[vi])) + T.Cast("float32", T.exp(H[vi]))
                G[vi] = H[vi] * H[vi] + T.Cast("float16", X[vi]) - T.floordiv(H[vi], T.float16(0.7))
                P[vi] = Q[vi] * Q[vi] * Q[vi] + T.Cast("int8", A[vi] * 17)
                N[vi] = not M[vi] or A[vi] < 0
