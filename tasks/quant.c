/* Integer tasks for dot-product instructions: dense_int8. */
#include "tasks/task_impl.h"

/* ---- dense_int8: C[i, j] = sum_k int32(A[i, k]) * int32(W[j, k]) ---------- *
 * uint8 activations A[M, K] times int8 weights, accumulated in int32 as
 * quantized inference does. The weights come pre-packed for AVX-512 VNNI's
 * 16x4 tile (TVM's dot_16x4 layout): W[j, k] is B[j / 16, k / 4, j % 16,
 * k % 4], so each 16 outputs x 4 reduction elements are 64 contiguous
 * bytes. N must be a multiple of 16, K of 4. */

static mlc_prim_func *dense_int8_build(mlc_arena *a, const int64_t *s) {
  int64_t M = s[0], N = s[1], K = s[2];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(M, K), MLC_UINT8);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 4, SHAPE(N / 16, K / 4, 16, 4), MLC_INT8);
  mlc_expr **ij = mlc_te_begin(te, "C", 2, SHAPE(M, N), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
  mlc_expr *j = ij[1];
  mlc_expr *w = mlc_te_at(te, B, mlc_binary(a, MLC_EXPR_FLOORDIV, j, mlc_int(a, 16)),
                          mlc_binary(a, MLC_EXPR_FLOORDIV, k, mlc_int(a, 4)),
                          mlc_binary(a, MLC_EXPR_FLOORMOD, j, mlc_int(a, 16)),
                          mlc_binary(a, MLC_EXPR_FLOORMOD, k, mlc_int(a, 4)));
  mlc_expr *x = mlc_cast(a, MLC_INT32, mlc_te_at(te, A, ij[0], k));
  mlc_te_tensor *C = mlc_te_sum(te, mlc_mul(a, x, mlc_cast(a, MLC_INT32, w)));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));
}

/* A multiply-add counts 2 operations, as for the float tasks. */
static double dense_int8_flops(const int64_t *s) { return 2.0 * s[0] * s[1] * s[2]; }

static int dense_int8_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  if (s[1] % 16 || s[2] % 4) {
    mlc_error_set(err, "N (%lld) must be a multiple of 16 and K (%lld) of 4, the packed weight tile",
                  (long long)s[1], (long long)s[2]);
    return -1;
  }
  b[0] = (mlc_task_buf){"A", mlc_task_mul(2, SHAPE(s[0], s[2])), 1};
  b[1] = (mlc_task_buf){"B", mlc_task_mul(2, SHAPE(s[1], s[2])), 1};
  b[2] = (mlc_task_buf){"C", mlc_task_mul(2, SHAPE(s[0], s[1])), 4};
  return 3;
}

const mlc_task_entry mlc_task_dense_int8 = {
    .def = {.name = "dense_int8",
            .shape_doc = "M,N,K",
            .description = "C[M,N] (int32) = A[M,K] (uint8) @ W[N,K]^T (int8, packed [N/16,K/4,16,4])",
            .n_dims = 3,
            .defaults = {1024, 1024, 1024},
            .build = dense_int8_build,
            .flops = dense_int8_flops},
    .buffers = dense_int8_buffers,
};
