/* Matrix products: matmul, batch_matmul, dense_bias_relu, matmul_relu. */
#include "tasks/task_impl.h"


/* ---- matmul: C[i, j] = sum_k A[i, k] * B[k, j] ---------------------------- */

/* The reduction block `name` = A @ B over 2-d placeholders. */
static mlc_te_tensor *mm(mlc_arena *a, mlc_te *te, const char *name, mlc_te_tensor *A,
                         mlc_te_tensor *B, int64_t M, int64_t N, int64_t K) {
  mlc_expr **ij = mlc_te_begin(te, name, 2, SHAPE(M, N), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
  return mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, A, ij[0], k), mlc_te_at(te, B, k, ij[1])));
}

static mlc_prim_func *matmul_build(mlc_arena *a, const int64_t *s) {
  int64_t M = s[0], N = s[1], K = s[2];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(M, K), F32);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 2, SHAPE(K, N), F32);
  mlc_te_tensor *C = mm(a, te, "C", A, B, M, N, K);
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));
}

static double matmul_flops(const int64_t *s) { return 2.0 * s[0] * s[1] * s[2]; }

static int matmul_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("A", 2, SHAPE(s[0], s[2]));
  b[1] = mlc_task_buf_f32("B", 2, SHAPE(s[2], s[1]));
  b[2] = mlc_task_buf_f32("C", 2, SHAPE(s[0], s[1]));
  return 3;
}

const mlc_task_entry mlc_task_matmul = {
    .def = {.name = "matmul",
            .shape_doc = "M,N,K",
            .description = "C[M,N] = A[M,K] @ B[K,N]",
            .n_dims = 3,
            .defaults = {1024, 1024, 1024},
            .build = matmul_build,
            .flops = matmul_flops},
    .buffers = matmul_buffers,
};

/* ---- batch_matmul: C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] ------------- */

static mlc_prim_func *batch_matmul_build(mlc_arena *a, const int64_t *s) {
  int64_t Bt = s[0], M = s[1], N = s[2], K = s[3];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 3, SHAPE(Bt, M, K), F32);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 3, SHAPE(Bt, K, N), F32);
  mlc_expr **bij = mlc_te_begin(te, "C", 3, SHAPE(Bt, M, N), "bij");
  mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
  mlc_te_tensor *C = mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, A, bij[0], bij[1], k),
                                            mlc_te_at(te, B, bij[0], k, bij[2])));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));
}

static double batch_matmul_flops(const int64_t *s) { return 2.0 * s[0] * s[1] * s[2] * s[3]; }

static int batch_matmul_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("A", 3, SHAPE(s[0], s[1], s[3]));
  b[1] = mlc_task_buf_f32("B", 3, SHAPE(s[0], s[3], s[2]));
  b[2] = mlc_task_buf_f32("C", 3, SHAPE(s[0], s[1], s[2]));
  return 3;
}

const mlc_task_entry mlc_task_batch_matmul = {
    .def = {.name = "batch_matmul",
            .shape_doc = "B,M,N,K",
            .description = "C[B,M,N] = A[B,M,K] @ B[B,K,N], one matmul per batch",
            .n_dims = 4,
            .defaults = {8, 256, 256, 256},
            .build = batch_matmul_build,
            .flops = batch_matmul_flops},
    .buffers = batch_matmul_buffers,
};

/* ---- dense_bias_relu: C = relu(X @ W^T + B), the notes' linear0 + relu ---- */

static mlc_prim_func *dense_bias_relu_build(mlc_arena *a, const int64_t *s) {
  int64_t M = s[0], N = s[1], K = s[2];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = mlc_te_placeholder(te, "X", 2, SHAPE(M, K), F32);
  mlc_te_tensor *W = mlc_te_placeholder(te, "W", 2, SHAPE(N, K), F32);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 1, SHAPE(N), F32);
  mlc_expr **ij = mlc_te_begin(te, "Y", 2, SHAPE(M, N), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
  mlc_te_tensor *Y =
      mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, X, ij[0], k), mlc_te_at(te, W, ij[1], k)));
  ij = mlc_te_begin(te, "Z", 2, SHAPE(M, N), "ij");
  mlc_te_tensor *Z = mlc_te_end(te, mlc_add(a, mlc_te_at(te, Y, ij[0], ij[1]), mlc_te_at(te, B, ij[1])));
  ij = mlc_te_begin(te, "C", 2, SHAPE(M, N), "ij");
  mlc_te_tensor *C = mlc_te_end(
      te, mlc_binary(a, MLC_EXPR_MAX, mlc_te_at(te, Z, ij[0], ij[1]), mlc_task_f32(a, 0)));
  return mlc_te_create_prim_func(te, "main", 4, TENSORS(X, W, B, C));
}

/* Bias add and relu count one operation per output. */
static double dense_bias_relu_flops(const int64_t *s) {
  return 2.0 * s[0] * s[1] * s[2] + 2.0 * s[0] * s[1];
}

static int dense_bias_relu_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("X", 2, SHAPE(s[0], s[2]));
  b[1] = mlc_task_buf_f32("W", 2, SHAPE(s[1], s[2]));
  b[2] = mlc_task_buf_f32("B", 1, SHAPE(s[1]));
  b[3] = mlc_task_buf_f32("Y", 2, SHAPE(s[0], s[1]));
  b[4] = mlc_task_buf_f32("Z", 2, SHAPE(s[0], s[1]));
  b[5] = mlc_task_buf_f32("C", 2, SHAPE(s[0], s[1]));
  return 6;
}

const mlc_task_entry mlc_task_dense_bias_relu = {
    .def = {.name = "dense_bias_relu",
            .shape_doc = "M,N,K",
            .description = "C[M,N] = relu(X[M,K] @ W[N,K]^T + B[N]) (a linear layer)",
            .n_dims = 3,
            .defaults = {256, 512, 512},
            .build = dense_bias_relu_build,
            .flops = dense_bias_relu_flops},
    .buffers = dense_bias_relu_buffers,
};

/* ---- matmul_relu: Y = A @ B; C = max(Y, 0), the notes' mm_relu ------------ */

static mlc_prim_func *matmul_relu_build(mlc_arena *a, const int64_t *s) {
  int64_t M = s[0], N = s[1], K = s[2];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(M, K), F32);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 2, SHAPE(K, N), F32);
  mlc_te_tensor *Y = mm(a, te, "Y", A, B, M, N, K);
  mlc_expr **ij = mlc_te_begin(te, "C", 2, SHAPE(M, N), "ij");
  mlc_te_tensor *C = mlc_te_end(
      te, mlc_binary(a, MLC_EXPR_MAX, mlc_te_at(te, Y, ij[0], ij[1]), mlc_task_f32(a, 0)));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));
}

static double matmul_relu_flops(const int64_t *s) {
  return 2.0 * s[0] * s[1] * s[2] + 1.0 * s[0] * s[1];
}

static int matmul_relu_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  matmul_buffers(s, b, err);
  b[3] = mlc_task_buf_f32("Y", 2, SHAPE(s[0], s[1]));
  return 4;
}

const mlc_task_entry mlc_task_matmul_relu = {
    .def = {.name = "matmul_relu",
            .shape_doc = "M,N,K",
            .description = "C[M,N] = relu(A[M,K] @ B[K,N]) with Y = A @ B as an intermediate",
            .n_dims = 3,
            .defaults = {512, 512, 512},
            .build = matmul_relu_build,
            .flops = matmul_relu_flops},
    .buffers = matmul_relu_buffers,
};
