# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "bool"), F: T.Buffer((16,), "float32"), H: T.Buffer((16,), "float16"), Q: T.Buffer((16,), "int8")):
    # with T.block("root"):
    for i in range(16):
        with T.block("A"):
            vi = T.axis.remap("S", [i])
            T.reads()
            T.writes(A[vi], B[vi], F[vi], H[vi], Q[vi])
            A[vi] = vi - (vi - 1) - -1 + vi % 4 // 2 * (vi // 2) + T.min(vi, 3) * T.max(vi + 1, 2)
            B[vi] = not vi < 3 and (vi < 2 or vi > 5) or (vi < 4) == (vi > 8)
            F[vi] = T.Select(not (vi < 2 and vi > 1), T.float32(1e-05), T.pow(T.float32(2), T.float32(-0.5))) / T.float32(3.4028235e+38)
            H[vi] = T.float16(0.3333) + T.Cast("float16", T.sqrt(T.float32(2)))
            Q[vi] = T.int8(2) * T.Cast("int8", vi)
