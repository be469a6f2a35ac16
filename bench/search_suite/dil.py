# DIL: dilated 2-D convolution, dilation 2, pad 2:
# data[1, 32, 28, 28] * weight[32, 32, 3, 3] (TVM te_workload's
# conv2d with dilation, in NCHW, scaled down).
# from tvm.script import tir as T

@T.prim_func
def main(data: T.Buffer((1, 32, 28, 28), "float32"), weight: T.Buffer((32, 32, 3, 3), "float32"), dilated_conv2d: T.Buffer((1, 32, 28, 28), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    pad_temp = T.alloc_buffer((1, 32, 32, 32))
    for i0, i1, i2, i3 in T.grid(1, 32, 32, 32):
        with T.block("pad_temp"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(data[v0, v1, v2 - 2, v3 - 2])
            T.writes(pad_temp[v0, v1, v2, v3])
            pad_temp[v0, v1, v2, v3] = T.if_then_else(2 <= v2 and v2 < 30 and 2 <= v3 and v3 < 30, data[v0, v1, v2 - 2, v3 - 2], T.float32(0))
    for n, f, y, x, rc, ry, rx in T.grid(1, 32, 28, 28, 32, 3, 3):
        with T.block("dilated_conv2d"):
            vn, vf, vy, vx, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [n, f, y, x, rc, ry, rx])
            T.reads(pad_temp[vn, v_rc, vy + v_ry * 2, vx + v_rx * 2], weight[vf, v_rc, v_ry, v_rx])
            T.writes(dilated_conv2d[vn, vf, vy, vx])
            with T.init():
                dilated_conv2d[vn, vf, vy, vx] = T.float32(0)
            dilated_conv2d[vn, vf, vy, vx] = dilated_conv2d[vn, vf, vy, vx] + pad_temp[vn, v_rc, vy + v_ry * 2, vx + v_rx * 2] * weight[vf, v_rc, v_ry, v_rx]
