# C3D: 3-D convolution, data[N, C, D, H, W] * weight[K, C, 3, 3, 3],
# stride 1, pad 1 (TVM te_workload's conv3d, in NCDHW, scaled down).
# from tvm.script import tir as T

@T.prim_func
def main(data: T.Buffer((1, 16, 8, 14, 14), "float32"), weight: T.Buffer((32, 16, 3, 3, 3), "float32"), conv3d: T.Buffer((1, 32, 8, 14, 14), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    pad_temp = T.alloc_buffer((1, 16, 10, 16, 16))
    for i0, i1, i2, i3, i4 in T.grid(1, 16, 10, 16, 16):
        with T.block("pad_temp"):
            v0, v1, v2, v3, v4 = T.axis.remap("SSSSS", [i0, i1, i2, i3, i4])
            T.reads(data[v0, v1, v2 - 1, v3 - 1, v4 - 1])
            T.writes(pad_temp[v0, v1, v2, v3, v4])
            pad_temp[v0, v1, v2, v3, v4] = T.if_then_else(1 <= v2 and v2 < 9 and 1 <= v3 and v3 < 15 and 1 <= v4 and v4 < 15, data[v0, v1, v2 - 1, v3 - 1, v4 - 1], T.float32(0))
    for n, f, z, y, x, rc, rz, ry, rx in T.grid(1, 32, 8, 14, 14, 16, 3, 3, 3):
        with T.block("conv3d"):
            vn, vf, vz, vy, vx, v_rc, v_rz, v_ry, v_rx = T.axis.remap("SSSSSRRRR", [n, f, z, y, x, rc, rz, ry, rx])
            T.reads(pad_temp[vn, v_rc, vz + v_rz, vy + v_ry, vx + v_rx], weight[vf, v_rc, v_rz, v_ry, v_rx])
            T.writes(conv3d[vn, vf, vz, vy, vx])
            with T.init():
                conv3d[vn, vf, vz, vy, vx] = T.float32(0)
            conv3d[vn, vf, vz, vy, vx] = conv3d[vn, vf, vz, vy, vx] + pad_temp[vn, v_rc, vz + v_rz, vy + v_ry, vx + v_rx] * weight[vf, v_rc, v_rz, v_ry, v_rx]
