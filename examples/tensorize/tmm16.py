# The notes' tensor intrinsic tmm16 (6.7): a 16x16x16 multiply-accumulate
# C += A @ B.T on the special memory scopes. tmm16_desc says what it
# computes, tmm16_impl how: a call to the C function tmm16 (tmm16.c).
# mlc-ir registers both with `--intrin FILE.py` (names <name>_desc and
# <name>_impl); the built-in table has the same pair.
@T.prim_func
def tmm16_desc(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (16, 16), "float32", scope="global.A_reg")
    B = T.match_buffer(b, (16, 16), "float32", scope="global.B_reg")
    C = T.match_buffer(c, (16, 16), "float32", scope="global.accumulator")
    with T.block("root"):
        T.reads(C[0:16, 0:16], A[0:16, 0:16], B[0:16, 0:16])
        T.writes(C[0:16, 0:16])
        for i, j, k in T.grid(16, 16, 16):
            with T.block("tmm16"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

@T.prim_func
def tmm16_impl(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (16, 16), "float32", scope="global.A_reg")
    B = T.match_buffer(b, (16, 16), "float32", scope="global.B_reg")
    C = T.match_buffer(c, (16, 16), "float32", scope="global.accumulator")
    with T.block("root"):
        T.reads(C[0:16, 0:16], A[0:16, 0:16], B[0:16, 0:16])
        T.writes(C[0:16, 0:16])
        T.evaluate(T.call_extern("int32", "tmm16", C.access_ptr("rw"), A.access_ptr("r"), B.access_ptr("r"), A.strides[0], B.strides[0], C.strides[0]))
