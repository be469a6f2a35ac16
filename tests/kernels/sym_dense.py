# A dense layer over a symbolic number of rows (int64, as ONNX exports
# write sizes); tests/kernels/sym_dense_trace.json is the best schedule a
# tuning of its 128-row specialization found, which replays on it.
@T.prim_func
def main(x: T.handle, W: T.Buffer((256, 256), "float32"), y: T.handle):
    n = T.int64(min=1, max=160)
    X = T.match_buffer(x, (n, 256))
    Y = T.match_buffer(y, (n, 256))
    for i, j, k in T.grid(n, 256, 256):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vk, vj]
