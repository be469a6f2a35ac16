# cache_write of a block whose sub-blocks fill a tile of A and then read
# it back in reverse order, with a reduction over the tile after them:
# every read of A inside "scope" is of elements written before in the same
# iteration, so the whole of A's traffic inside goes to A_shared and one
# write-back after the scope copies the tiles to A for "out".
# trace: {"insts":[["GetBlock",[],{"name":"scope","func_name":"main"},["b0"]],["CacheWrite",["b0"],{"write_buffer_index":0,"storage_scope":"shared"},["b1"]]],"decisions":{},"version":1}
# from tvm.script import tir as T

@T.prim_func
def main(X: T.Buffer((64,), "float32"), R: T.Buffer((64,), "float32"), S: T.Buffer((8,), "float32"), Y: T.Buffer((64,), "float32")):
    A = T.alloc_buffer((64,))
    for t in range(8):
        with T.block("scope"):
            vt = T.axis.spatial(8, t)
            for x in range(8):
                with T.block("fill"):
                    vx = T.axis.spatial(64, vt * 8 + x)
                    A[vx] = X[vx] * T.float32(3)
            for x in range(8):
                with T.block("rev"):
                    vx = T.axis.spatial(64, vt * 8 + x)
                    R[vx] = A[vt * 16 - vx + 7] - X[vx]
            for k in range(8):
                with T.block("sum"):
                    vk = T.axis.reduce(8, k)
                    with T.init():
                        S[vt] = T.float32(0)
                    S[vt] = S[vt] + A[vt * 8 + vk]
    for i in range(64):
        with T.block("out"):
            vi = T.axis.spatial(64, i)
            Y[vi] = A[vi] + T.float32(1)
