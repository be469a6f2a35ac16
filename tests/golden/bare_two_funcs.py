# from tvm.script import tir as T

@T.prim_func
def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    # with T.block("root"):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi]

@T.prim_func
def fill(A: T.Buffer((2, 3), "int64")):
    # with T.block("root"):
    for i, j in T.grid(2, 3):
        with T.block("A"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads()
            T.writes(A[vi, vj])
            A[vi, vj] = T.int64(7)
