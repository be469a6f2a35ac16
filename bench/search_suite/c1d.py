# C1D: 1-D convolution, data[N, C, W] * weight[K, C, R], stride 1, pad 1
# (TVM te_workload's conv1d_nlc, in NCW, scaled down).
# from tvm.script import tir as T

@T.prim_func
def main(data: T.Buffer((1, 64, 256), "float32"), weight: T.Buffer((64, 64, 3), "float32"), conv1d: T.Buffer((1, 64, 256), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    pad_temp = T.alloc_buffer((1, 64, 258))
    for i0, i1, i2 in T.grid(1, 64, 258):
        with T.block("pad_temp"):
            v0, v1, v2 = T.axis.remap("SSS", [i0, i1, i2])
            T.reads(data[v0, v1, v2 - 1])
            T.writes(pad_temp[v0, v1, v2])
            pad_temp[v0, v1, v2] = T.if_then_else(1 <= v2 and v2 < 257, data[v0, v1, v2 - 1], T.float32(0))
    for n, f, x, rc, rx in T.grid(1, 64, 256, 64, 3):
        with T.block("conv1d"):
            vn, vf, vx, v_rc, v_rx = T.axis.remap("SSSRR", [n, f, x, rc, rx])
            T.reads(pad_temp[vn, v_rc, vx + v_rx], weight[vf, v_rc, v_rx])
            T.writes(conv1d[vn, vf, vx])
            with T.init():
                conv1d[vn, vf, vx] = T.float32(0)
            conv1d[vn, vf, vx] = conv1d[vn, vf, vx] + pad_temp[vn, v_rc, vx + v_rx] * weight[vf, v_rc, v_rx]
