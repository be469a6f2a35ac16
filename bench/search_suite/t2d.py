# T2D: transposed 2-D convolution (ONNX ConvTranspose), stride 2, pad 1,
# kernel 4: data[1, 32, 14, 14], weight[32, 16, 4, 4] (in, out, kh, kw)
# -> [1, 16, 28, 28]; the input dilated by zeros and padded by 2, then a
# convolution with the flipped kernel (TVM te_workload's
# conv2d_transpose, in NCHW, scaled down).
# from tvm.script import tir as T

@T.prim_func
def main(data: T.Buffer((1, 32, 14, 14), "float32"), weight: T.Buffer((32, 16, 4, 4), "float32"), conv2d_transpose: T.Buffer((1, 16, 28, 28), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    data_dilate_pad = T.alloc_buffer((1, 32, 31, 31))
    for i0, i1, i2, i3 in T.grid(1, 32, 31, 31):
        with T.block("data_dilate_pad"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(data[v0, v1, (v2 - 2) // 2, (v3 - 2) // 2])
            T.writes(data_dilate_pad[v0, v1, v2, v3])
            data_dilate_pad[v0, v1, v2, v3] = T.if_then_else(2 <= v2 and v2 < 29 and 2 <= v3 and v3 < 29 and v2 % 2 == 0 and v3 % 2 == 0, data[v0, v1, (v2 - 2) // 2, (v3 - 2) // 2], T.float32(0))
    for n, f, y, x, rc, ry, rx in T.grid(1, 16, 28, 28, 32, 4, 4):
        with T.block("conv2d_transpose"):
            vn, vf, vy, vx, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [n, f, y, x, rc, ry, rx])
            T.reads(data_dilate_pad[vn, v_rc, vy + v_ry, vx + v_rx], weight[v_rc, vf, 3 - v_ry, 3 - v_rx])
            T.writes(conv2d_transpose[vn, vf, vy, vx])
            with T.init():
                conv2d_transpose[vn, vf, vy, vx] = T.float32(0)
            conv2d_transpose[vn, vf, vy, vx] = conv2d_transpose[vn, vf, vy, vx] + data_dilate_pad[vn, v_rc, vy + v_ry, vx + v_rx] * weight[v_rc, vf, 3 - v_ry, 3 - v_rx]
