# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    # with T.block("root"):
    for i in range(8):
        X = T.decl_buffer((4,), "float32", scope="local")
        X[0] = A[i]
        A[i] = X[0] + T.float32(1)
    for i in range(2):
        X = T.decl_buffer((2, 2), "float16")
        T.evaluate(0)
