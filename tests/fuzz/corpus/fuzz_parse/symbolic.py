# Size vars as TVM writes them: handles matched once the sizes are declared.
# Bounds are ours (min=, max=); a size without them ranges over its dtype.
from tvm.script import tir as T

@T.prim_func
def main(var_x: T.handle, w: T.Buffer((16, 8), "float32"), var_y: T.handle, var_z: T.handle):
    T.func_attr({"tir.noalias": True})
    seq = T.int64(min=1, max=2048)
    batch = T.int32()
    X = T.match_buffer(var_x, (batch, seq, 16))
    Y = T.match_buffer(var_y, (batch, seq, 8))
    Z = T.match_buffer(var_z, (batch, seq * 2 + 1), "int32", scope="global")
    for b, s, j, k in T.grid(batch, seq, 8, 16):
        with T.block("Y"):
            vb, vs, vj, vk = T.axis.remap("SSSR", [b, s, j, k])
            with T.init():
                Y[vb, vs, vj] = T.float32(0)
            Y[vb, vs, vj] = Y[vb, vs, vj] + X[vb, vs, vk] * w[vk, vj]
    for b, s in T.grid(batch, seq * 2 + 1):
        with T.block("Z"):
            vb = T.axis.spatial(batch, b)
            vs = T.axis.spatial(seq * 2 + 1, s)
            Z[vb, vs] = T.Cast("int32", vs)
