# Softmax over a symbolic number of rows, with intermediates allocated for
# the bound.
@T.prim_func
def main(x: T.handle, y: T.handle):
    n = T.int64(min=1, max=300)
    X = T.match_buffer(x, (n, 37))
    Y = T.match_buffer(y, (n, 37))
    row_max = T.alloc_buffer((n,))
    row_sum = T.alloc_buffer((n,))
    for i, j in T.grid(n, 37):
        with T.block("max"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                row_max[vi] = T.float32(-3.4e38)
            row_max[vi] = T.max(row_max[vi], X[vi, vj])
    for i, j in T.grid(n, 37):
        with T.block("sum"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                row_sum[vi] = T.float32(0)
            row_sum[vi] = row_sum[vi] + T.exp(X[vi, vj] - row_max[vi])
    for i, j in T.grid(n, 37):
        with T.block("norm"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = T.exp(X[vi, vj] - row_max[vi]) / row_sum[vi]
