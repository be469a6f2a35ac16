# CAP: capsule 2-D convolution (TVM te_workload's conv2d_capsule_nhwijc,
# scaled down): data[N, H, W, 4, 4, CI] with 4x4 capsules, weight[3, 3,
# 4, 4, CI, CO], pad 1: out[n, y, x, i, j, co] = sum over ry, rx, k, rc of
# data[n, y + ry - 1, x + rx - 1, i, k, rc] * weight[ry, rx, k, j, rc, co].
# from tvm.script import tir as T

@T.prim_func
def main(data: T.Buffer((1, 8, 8, 4, 4, 16), "float32"), weight: T.Buffer((3, 3, 4, 4, 16, 16), "float32"), conv2d_capsule: T.Buffer((1, 8, 8, 4, 4, 16), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    pad_temp = T.alloc_buffer((1, 10, 10, 4, 4, 16))
    for i0, i1, i2, i3, i4, i5 in T.grid(1, 10, 10, 4, 4, 16):
        with T.block("pad_temp"):
            v0, v1, v2, v3, v4, v5 = T.axis.remap("SSSSSS", [i0, i1, i2, i3, i4, i5])
            T.reads(data[v0, v1 - 1, v2 - 1, v3, v4, v5])
            T.writes(pad_temp[v0, v1, v2, v3, v4, v5])
            pad_temp[v0, v1, v2, v3, v4, v5] = T.if_then_else(1 <= v1 and v1 < 9 and 1 <= v2 and v2 < 9, data[v0, v1 - 1, v2 - 1, v3, v4, v5], T.float32(0))
    for n, y, x, ci, cj, co, ry, rx, ck, rc in T.grid(1, 8, 8, 4, 4, 16, 3, 3, 4, 16):
        with T.block("conv2d_capsule"):
            vn, vy, vx, v_ci, v_cj, v_co, v_ry, v_rx, v_ck, v_rc = T.axis.remap("SSSSSSRRRR", [n, y, x, ci, cj, co, ry, rx, ck, rc])
            T.reads(pad_temp[vn, vy + v_ry, vx + v_rx, v_ci, v_ck, v_rc], weight[v_ry, v_rx, v_ck, v_cj, v_rc, v_co])
            T.writes(conv2d_capsule[vn, vy, vx, v_ci, v_cj, v_co])
            with T.init():
                conv2d_capsule[vn, vy, vx, v_ci, v_cj, v_co] = T.float32(0)
            conv2d_capsule[vn, vy, vx, v_ci, v_cj, v_co] = conv2d_capsule[vn, vy, vx, v_ci, v_cj, v_co] + pad_temp[vn, vy + v_ry, vx + v_rx, v_ci, v_ck, v_rc] * weight[v_ry, v_rx, v_ck, v_cj, v_rc, v_co]
