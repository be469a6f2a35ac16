# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    # with T.block("root"):
    for i in range(8):
        for i in range(8):
            with T.block("A"):
                i = T.axis.spatial(8, i)
                T.reads()
                T.writes(A[i, 0])
                A[i, 0] = T.float32(1)
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi, 0])
            T.writes(B[vi])
            B[vi] = A[vi, 0]
