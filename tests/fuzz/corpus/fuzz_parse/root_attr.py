# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    with T.block("root"):
        T.reads()
        T.writes()
        T.block_attr({"meta_schedule.unroll_explicit": 16})
        S = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("S"):
                vi = T.axis.remap("S", [i])
                T.reads()
                T.writes(S[vi])
                S[vi] = T.float32(0)
        for i in range(8):
            with T.block("A"):
                vi = T.axis.remap("S", [i])
                T.reads(S[vi])
                T.writes(A[vi])
                A[vi] = S[vi]
