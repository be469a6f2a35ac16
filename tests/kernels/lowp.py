# uint8 and bfloat16 in the CPU backend, scalar and in a vectorized loop:
# uint8 arithmetic past 127 (products of the [0, 16) inputs), division,
# comparisons, saturating casts from float and wrapping ones from int;
# bfloat16 rounding after each operation, casts through float16 and int.
# Only correctly rounded operations reach a bfloat16 result, so the backend
# must match the interpreter bit for bit.
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def lowp_scalar(A: T.Buffer((64,), "int32"), X: T.Buffer((64,), "float32"), U: T.Buffer((64,), "uint8"), Z: T.Buffer((64,), "bfloat16"), O: T.Buffer((64, 10), "int32"), F: T.Buffer((64, 8), "float32"), V: T.Buffer((64,), "uint8"), W: T.Buffer((64,), "bfloat16")):
        T.func_attr({"global_symbol": "lowp_scalar", "tir.noalias": True})
        for i in range(64):
            with T.block("e"):
                vi = T.axis.spatial(64, i)
                O[vi, 0] = T.Cast("int32", U[vi] * U[vi])
                O[vi, 1] = T.Cast("int32", U[vi] * U[vi] // (U[vi] + T.uint8(1)))
                O[vi, 2] = T.Cast("int32", T.floormod(U[vi] * T.uint8(17), T.uint8(7)))
                O[vi, 3] = T.Cast("int32", U[vi] * T.uint8(16) > T.uint8(130)) + T.Cast("int32", T.max(U[vi] * T.uint8(20), T.uint8(100)))
                O[vi, 4] = T.Cast("int32", U[vi] - T.uint8(8))
                O[vi, 5] = T.Cast("int32", T.Cast("uint8", X[vi] * T.float32(300)))
                O[vi, 6] = T.Cast("int32", T.Cast("uint8", A[vi] * 37))
                O[vi, 7] = T.Cast("int32", T.Cast("int8", U[vi] * T.uint8(15)))
                O[vi, 8] = T.Cast("int32", T.Cast("bfloat16", A[vi] * 1001))
                O[vi, 9] = T.Cast("int32", Z[vi] * T.bfloat16(100))
                V[vi] = U[vi] * T.uint8(16) + T.Cast("uint8", A[vi])
                F[vi, 0] = T.Cast("float32", U[vi] * T.uint8(15))
                F[vi, 1] = T.Cast("float32", Z[vi] * Z[vi] + Z[vi])
                F[vi, 2] = T.Cast("float32", T.Cast("bfloat16", X[vi] * T.float32(3.3)))
                F[vi, 3] = T.Cast("float32", T.sqrt(T.abs(Z[vi])) + T.bfloat16(0.1))
                F[vi, 4] = T.Cast("float32", T.max(Z[vi], T.bfloat16(0)) - T.min(Z[vi], T.bfloat16(-0.25)) / T.bfloat16(3))
                F[vi, 5] = T.Cast("float32", T.floordiv(Z[vi], T.bfloat16(0.3)) + T.floormod(Z[vi], T.bfloat16(0.3)))
                F[vi, 6] = T.Cast("float32", T.Cast("bfloat16", T.Cast("float16", Z[vi] * T.bfloat16(7))))
                F[vi, 7] = T.Cast("float32", T.Cast("bfloat16", U[vi])) + T.Cast("float32", Z[vi] < T.bfloat16(0.5))
                W[vi] = Z[vi] * T.bfloat16(3) + T.Cast("bfloat16", X[vi]) + T.Cast("bfloat16", U[vi])

    @T.prim_func
    def lowp_vector(A: T.Buffer((64,), "int32"), X: T.Buffer((64,), "float32"), U: T.Buffer((64,), "uint8"), Z: T.Buffer((64,), "bfloat16"), O: T.Buffer((64, 10), "int32"), F: T.Buffer((64, 8), "float32"), V: T.Buffer((64,), "uint8"), W: T.Buffer((64,), "bfloat16")):
        T.func_attr({"global_symbol": "lowp_vector", "tir.noalias": True})
        for i0 in range(4):
            for i1 in T.vectorized(16):
                with T.block("e"):
                    vi = T.axis.spatial(64, i0 * 16 + i1)
                    O[vi, 0] = T.Cast("int32", U[vi] * U[vi])
                    O[vi, 1] = T.Cast("int32", U[vi] * U[vi] // (U[vi] + T.uint8(1)))
                    O[vi, 2] = T.Cast("int32", T.floormod(U[vi] * T.uint8(17), T.uint8(7)))
                    O[vi, 3] = T.Cast("int32", U[vi] * T.uint8(16) > T.uint8(130)) + T.Cast("int32", T.max(U[vi] * T.uint8(20), T.uint8(100)))
                    O[vi, 4] = T.Cast("int32", U[vi] - T.uint8(8))
                    O[vi, 5] = T.Cast("int32", T.Cast("uint8", X[vi] * T.float32(300)))
                    O[vi, 6] = T.Cast("int32", T.Cast("uint8", A[vi] * 37))
                    O[vi, 7] = T.Cast("int32", T.Cast("int8", U[vi] * T.uint8(15)))
                    O[vi, 8] = T.Cast("int32", T.Cast("bfloat16", A[vi] * 1001))
                    O[vi, 9] = T.Cast("int32", Z[vi] * T.bfloat16(100))
                    V[vi] = U[vi] * T.uint8(16) + T.Cast("uint8", A[vi])
                    F[vi, 0] = T.Cast("float32", U[vi] * T.uint8(15))
                    F[vi, 1] = T.Cast("float32", Z[vi] * Z[vi] + Z[vi])
                    F[vi, 2] = T.Cast("float32", T.Cast("bfloat16", X[vi] * T.float32(3.3)))
                    F[vi, 3] = T.Cast("float32", T.sqrt(T.abs(Z[vi])) + T.bfloat16(0.1))
                    F[vi, 4] = T.Cast("float32", T.max(Z[vi], T.bfloat16(0)) - T.min(Z[vi], T.bfloat16(-0.25)) / T.bfloat16(3))
                    F[vi, 5] = T.Cast("float32", T.floordiv(Z[vi], T.bfloat16(0.3)) + T.floormod(Z[vi], T.bfloat16(0.3)))
                    F[vi, 6] = T.Cast("float32", T.Cast("bfloat16", T.Cast("float16", Z[vi] * T.bfloat16(7))))
                    F[vi, 7] = T.Cast("float32", T.Cast("bfloat16", U[vi])) + T.Cast("float32", Z[vi] < T.bfloat16(0.5))
                    W[vi] = Z[vi] * T.bfloat16(3) + T.Cast("bfloat16", X[vi]) + T.Cast("bfloat16", U[vi])

