@T.prim_func
def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("row"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi, 0:8])
            T.writes(B[vi])
            B[vi] = T.call_extern("float32", "row_sum", T.access_ptr(A[vi, 0:8], "r"), 8, A.strides[0]) + T.float32(1)
    T.call_extern("int32", "touch", B.access_ptr("rw"), 4)
