# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func
    def linear0(X: T.Buffer((1, 784), "float32"), W: T.Buffer((128, 784), "float32"), B: T.Buffer((128,), "float32"), Z: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "linear0", "tir.noalias": True})
        # with T.block("root"):
        Y = T.alloc_buffer((1, 128))
        for i_0, j_0 in T.grid(1, 1):
            for i_1, j_1 in T.grid(1, 8):
                for i_2_init, j_2_init, i_3_init in T.grid(1, 2, 1):
                    for j_3_fused_init in T.vectorized(8):
                        with T.block("Y_init"):
                            vi = T.axis.spatial(1, i_0 + i_1 + i_2_init + i_3_init)
                            vj = T.axis.spatial(128, j_0 * 128 + j_1 * 16 + j_2_init * 8 + j_3_fused_init)
                            T.reads()
                            T.writes(Y[vi, vj])
                            T.block_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                            Y[vi, vj] = T.float32(0)
                for k_0, i_2, j_2, k_1, i_3 in T.grid(14, 1, 2, 56, 1):
                    for j_3_fused in T.vectorized(8):
                        with T.block("Y_update"):
                            vi = T.axis.spatial(1, i_0 + i_1 + i_2 + i_3)
                            vj = T.axis.spatial(128, j_0 * 128 + j_1 * 16 + j_2 * 8 + j_3_fused)
                            vk = T.axis.reduce(784, k_0 * 56 + k_1)
                            T.reads(Y[vi, vj], X[vi, vk], W[vj, vk])
                            T.writes(Y[vi, vj])
                            T.block_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                            Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
            for ax0, ax1 in T.grid(1, 128):
                with T.block("Z"):
                    vi, vj = T.axis.remap("SS", [ax0, ax1])
                    T.reads(Y[vi, vj], B[vj])
                    T.writes(Z[vi, vj])
                    Z[vi, vj] = Y[vi, vj] + B[vj]
