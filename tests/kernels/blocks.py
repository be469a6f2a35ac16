# Block forms the lowering must handle: a block nested in another block
# (as blockize leaves it) with its own alloc_buffer, an intermediate too big
# for the stack (320 x 64 floats: on the heap) produced and consumed inside
# a parallel loop's iterations, and a loop unrolled past the full-unroll
# limit (LLVM unroll metadata instead).
# expect-ir: llvm.loop.unroll.enable
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def nested(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
        T.func_attr({"global_symbol": "nested", "tir.noalias": True})
        for i0 in range(4):
            with T.block("outer"):
                vo = T.axis.spatial(4, i0)
                T.reads(A[vo * 8:vo * 8 + 8])
                T.writes(B[vo * 8:vo * 8 + 8])
                tmp = T.alloc_buffer((8,))
                for i1 in range(8):
                    with T.block("square"):
                        vi = T.axis.spatial(8, i1)
                        tmp[vi] = A[vo * 8 + vi] * A[vo * 8 + vi]
                for i1 in range(8):
                    with T.block("inner"):
                        vi = T.axis.spatial(32, vo * 8 + i1)
                        vt = T.axis.spatial(8, 7 - i1)
                        B[vi] = tmp[vt] + T.float32(1)

    @T.prim_func
    def heap(A: T.Buffer((320, 64), "float32"), B: T.Buffer((320, 64), "float32")):
        T.func_attr({"global_symbol": "heap", "tir.noalias": True})
        T_big = T.alloc_buffer((320, 64))
        for i, j in T.grid(320, 64):
            with T.block("big"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_big[vi, vj] = A[vi, vj] + T.float32(1)
        for i in T.parallel(320):
            for j in range(64):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = T_big[319 - vi, vj] * T.float32(3)

    @T.prim_func
    def long_unroll(A: T.Buffer((2000,), "float32"), B: T.Buffer((2000,), "float32")):
        T.func_attr({"global_symbol": "long_unroll", "tir.noalias": True})
        for i in T.unroll(2000):
            with T.block("B"):
                vi = T.axis.spatial(2000, i)
                B[vi] = A[vi] * A[vi] + T.float32(1)
