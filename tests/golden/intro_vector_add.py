from tvm.script import tir as T
@T.prim_func
def main(A: T.Buffer[128, "float32"], # buffers that holds data
         B: T.Buffer[128, "float32"],
         C: T.Buffer[128, "float32"]):
    for i in range(128): # loop nests that drive compute iterations
        with T.block("C"):
            vi = T.axis.spatial(128, i) # extra info about iteration
            C[vi] = A[vi] + B[vi] # computation statements
