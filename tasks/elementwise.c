/* Small memory-bound kernels: vecadd, window_sum, transpose, reduce_sum.
 * Their FLOP count is one per output element touched (transpose moves
 * without arithmetic; counting its elements keeps GFLOP/s comparable). */
#include "tasks/task_impl.h"

/* ---- vecadd: C[i] = A[i] + B[i] --------------------------------------------- */

static mlc_prim_func *vecadd_build(mlc_arena *a, const int64_t *s) {
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 1, SHAPE(s[0]), F32);
  mlc_te_tensor *B = mlc_te_placeholder(te, "B", 1, SHAPE(s[0]), F32);
  mlc_expr **i = mlc_te_begin(te, "C", 1, SHAPE(s[0]), "i");
  mlc_te_tensor *C = mlc_te_end(te, mlc_add(a, mlc_te_at(te, A, i[0]), mlc_te_at(te, B, i[0])));
  return mlc_te_create_prim_func(te, "main", 3, TENSORS(A, B, C));
}

static double vecadd_flops(const int64_t *s) { return (double)s[0]; }

static int vecadd_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("A", 1, SHAPE(s[0]));
  b[1] = mlc_task_buf_f32("B", 1, SHAPE(s[0]));
  b[2] = mlc_task_buf_f32("C", 1, SHAPE(s[0]));
  return 3;
}

const mlc_task_entry mlc_task_vecadd = {
    .def = {.name = "vecadd",
            .shape_doc = "N",
            .description = "C[N] = A[N] + B[N]",
            .n_dims = 1,
            .defaults = {1 << 20},
            .build = vecadd_build,
            .flops = vecadd_flops},
    .buffers = vecadd_buffers,
};

/* ---- window_sum: B[i] = A[i] + A[i + 1] + A[i + 2], the notes' GPU example -- */

static mlc_prim_func *window_sum_build(mlc_arena *a, const int64_t *s) {
  int64_t N = s[0];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 1, SHAPE(N + 2), F32);
  mlc_expr **i = mlc_te_begin(te, "B", 1, SHAPE(N), "i");
  mlc_expr *v = mlc_te_at(te, A, i[0]);
  v = mlc_add(a, v, mlc_te_at(te, A, mlc_add(a, i[0], mlc_int(a, 1))));
  v = mlc_add(a, v, mlc_te_at(te, A, mlc_add(a, i[0], mlc_int(a, 2))));
  mlc_te_tensor *B = mlc_te_end(te, v);
  return mlc_te_create_prim_func(te, "main", 2, TENSORS(A, B));
}

static double window_sum_flops(const int64_t *s) { return 2.0 * s[0]; }

static int window_sum_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("A", 1, SHAPE(s[0] + 2));
  b[1] = mlc_task_buf_f32("B", 1, SHAPE(s[0]));
  return 2;
}

const mlc_task_entry mlc_task_window_sum = {
    .def = {.name = "window_sum",
            .shape_doc = "N",
            .description = "B[N] = A[i] + A[i+1] + A[i+2] over A[N+2]",
            .n_dims = 1,
            .defaults = {1 << 20},
            .build = window_sum_build,
            .flops = window_sum_flops},
    .buffers = window_sum_buffers,
};

/* ---- transpose: B[i, j] = A[j, i] -------------------------------------------- */

static mlc_prim_func *transpose_build(mlc_arena *a, const int64_t *s) {
  int64_t M = s[0], N = s[1];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(M, N), F32);
  mlc_expr **ij = mlc_te_begin(te, "B", 2, SHAPE(N, M), "ij");
  mlc_te_tensor *B = mlc_te_end(te, mlc_te_at(te, A, ij[1], ij[0]));
  return mlc_te_create_prim_func(te, "main", 2, TENSORS(A, B));
}

static double transpose_flops(const int64_t *s) { return (double)s[0] * s[1]; }

static int transpose_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("A", 2, SHAPE(s[0], s[1]));
  b[1] = mlc_task_buf_f32("B", 2, SHAPE(s[1], s[0]));
  return 2;
}

const mlc_task_entry mlc_task_transpose = {
    .def = {.name = "transpose",
            .shape_doc = "M,N",
            .description = "B[N,M] = A[M,N]^T",
            .n_dims = 2,
            .defaults = {1024, 1024},
            .build = transpose_build,
            .flops = transpose_flops},
    .buffers = transpose_buffers,
};

/* ---- reduce_sum: B[i] = sum_k A[i, k] ----------------------------------------- */

static mlc_prim_func *reduce_sum_build(mlc_arena *a, const int64_t *s) {
  int64_t M = s[0], N = s[1];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(M, N), F32);
  mlc_expr **i = mlc_te_begin(te, "B", 1, SHAPE(M), "i");
  mlc_expr *k = mlc_te_reduce_axis(te, N, "k");
  mlc_te_tensor *B = mlc_te_sum(te, mlc_te_at(te, A, i[0], k));
  return mlc_te_create_prim_func(te, "main", 2, TENSORS(A, B));
}

static double reduce_sum_flops(const int64_t *s) { return (double)s[0] * s[1]; }

static int reduce_sum_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("A", 2, SHAPE(s[0], s[1]));
  b[1] = mlc_task_buf_f32("B", 1, SHAPE(s[0]));
  return 2;
}

const mlc_task_entry mlc_task_reduce_sum = {
    .def = {.name = "reduce_sum",
            .shape_doc = "M,N",
            .description = "B[M] = sum over N of A[M,N]",
            .n_dims = 2,
            .defaults = {1024, 1024},
            .build = reduce_sum_build,
            .flops = reduce_sum_flops},
    .buffers = reduce_sum_buffers,
};
