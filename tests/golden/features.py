# from tvm.script import tir as T

@T.prim_func
def features(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float16"), C: T.Buffer((16,), "int32"), D: T.Buffer((4, 4), "int64"), M: T.Buffer((16,), "bool")):
    T.func_attr({"global_symbol": "features", "tir.noalias": True, "n": 3, "f": 0.5})
    # with T.block("root"):
    S = T.alloc_buffer((16,), scope="shared")
    L = T.alloc_buffer((16,), "int32", scope="local")
    for i in T.parallel(16):
        for j in T.serial(2, 18, annotations={"pragma_unroll": 4, "note": "a\"b"}):
            with T.block("S"):
                vi = T.axis.spatial(16, i)
                vj = T.axis.spatial((2, 18), j)
                T.where(i * 16 + j < 250 and not i == 3)
                T.reads(A[vi, vj - 2])
                T.writes(S[vi])
                T.block_attr({"k": 1})
                S[vi] = T.max(A[vi, vj - 2], T.float32(-1.5)) * T.float32(1e-05) + T.exp(A[vi, vj - 2]) / T.float32(3)
    for i in T.vectorized(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads(S[vi])
            T.writes(B[vi])
            B[vi] = T.Cast("float16", S[vi]) + T.float16(0.1)
    for i_0 in T.thread_binding(4, thread="blockIdx.x"):
        for i_1 in T.unroll(4):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 4 + i_1)
                T.reads(S[vi], L[vi])
                T.writes(C[vi], L[vi])
                X = T.alloc_buffer((2,), "int32", scope="local")
                if vi % 2 == 0:
                    L[vi] = vi // 2 - (vi - 1) % 3
                else:
                    L[vi] = T.Select(S[vi] > T.float32(0), 1, -1)
                C[vi] = T.if_then_else(vi < 15, L[vi], T.min(L[vi], 7))
    for i, j in T.grid(T.int64(4), T.int64(4)):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads()
            T.writes(D[vi, vj])
            D[vi, vj] = vi * T.int64(4) + vj
    for i in range(16):
        with T.block("M"):
            vi = T.axis.remap("S", [i])
            T.reads(C[vi])
            T.writes(M[vi])
            M[vi] = C[vi] > 0 or T.bool(False)
    for k in range(4):
        T.evaluate(0)
