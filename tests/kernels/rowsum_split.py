# Row sums of a 24 x 50 matrix: rows in parallel, the 50 columns split
# 7 x 8 with T.where guarding the 6 columns past the end, the inner split
# unrolled, partial sums in a local accumulator whose initialization was
# decomposed into its own block, then written back.
# expect-ir: call void @mlc_parallel_for_range(
# from tvm.script import tir as T

@T.prim_func
def rowsum_split(A: T.Buffer((24, 50), "float32"), S: T.Buffer((24,), "float32")):
    T.func_attr({"global_symbol": "rowsum_split", "tir.noalias": True})
    acc = T.alloc_buffer((24,), scope="local")
    for i in T.parallel(24):
        with T.block("init"):
            vi = T.axis.spatial(24, i)
            T.reads()
            T.writes(acc[vi])
            acc[vi] = T.float32(0)
        for k0 in range(7):
            for k1 in T.unroll(8):
                with T.block("update"):
                    vi = T.axis.spatial(24, i)
                    vk = T.axis.reduce(50, k0 * 8 + k1)
                    T.where(k0 * 8 + k1 < 50)
                    T.reads(acc[vi], A[vi, vk])
                    T.writes(acc[vi])
                    acc[vi] = acc[vi] + A[vi, vk]
        with T.block("store"):
            vi = T.axis.spatial(24, i)
            T.reads(acc[vi])
            T.writes(S[vi])
            S[vi] = acc[vi]
