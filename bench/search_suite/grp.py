# GRP: grouped 2-D convolution, 4 groups of 16 channels:
# data[1, 64, 28, 28] * weight[64, 16, 3, 3], stride 1, pad 1
# (TVM te_workload's group_conv2d, in NCHW, scaled down).
# from tvm.script import tir as T

@T.prim_func
def main(data: T.Buffer((1, 64, 28, 28), "float32"), weight: T.Buffer((64, 16, 3, 3), "float32"), group_conv2d: T.Buffer((1, 64, 28, 28), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    pad_temp = T.alloc_buffer((1, 64, 30, 30))
    for i0, i1, i2, i3 in T.grid(1, 64, 30, 30):
        with T.block("pad_temp"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(data[v0, v1, v2 - 1, v3 - 1])
            T.writes(pad_temp[v0, v1, v2, v3])
            pad_temp[v0, v1, v2, v3] = T.if_then_else(1 <= v2 and v2 < 29 and 1 <= v3 and v3 < 29, data[v0, v1, v2 - 1, v3 - 1], T.float32(0))
    for n, f, y, x, rc, ry, rx in T.grid(1, 64, 28, 28, 16, 3, 3):
        with T.block("group_conv2d"):
            vn, vf, vy, vx, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [n, f, y, x, rc, ry, rx])
            T.reads(pad_temp[vn, vf // 16 * 16 + v_rc, vy + v_ry, vx + v_rx], weight[vf, v_rc, v_ry, v_rx])
            T.writes(group_conv2d[vn, vf, vy, vx])
            with T.init():
                group_conv2d[vn, vf, vy, vx] = T.float32(0)
            group_conv2d[vn, vf, vy, vx] = group_conv2d[vn, vf, vy, vx] + pad_temp[vn, vf // 16 * 16 + v_rc, vy + v_ry, vx + v_rx] * weight[vf, v_rc, v_ry, v_rx]
