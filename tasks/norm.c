/* Row-wise normalizations: softmax and layernorm (over the last axis). */
#include "tasks/task_impl.h"

static mlc_expr *call1(mlc_arena *a, mlc_intrin op, mlc_expr *x) {
  return mlc_call(a, op, (mlc_expr *[]){x});
}

/* ---- softmax, as TOPI writes it: four blocks ------------------------------ */
/* maxelem[i] = max_k A[i, k]
 * exp[i, j]  = exp(A[i, j] - maxelem[i])
 * expsum[i]  = sum_k exp[i, k]
 * norm[i, j] = exp[i, j] * (1 / expsum[i])
 * The reciprocal once per row (the compiled loop hoists it) instead of a
 * division per element, which costs a vector unit what several exps do:
 * expsum >= 1 (the row's maximum contributes exp(0)), so 1 / expsum is a
 * normal number and the product within 1.5 ulp of the quotient. */

static mlc_prim_func *softmax_build(mlc_arena *a, const int64_t *s) {
  int64_t R = s[0], C = s[1];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(R, C), F32);

  mlc_expr **i = mlc_te_begin(te, "T_softmax_maxelem", 1, SHAPE(R), "i");
  mlc_expr *k = mlc_te_reduce_axis(te, C, "k");
  mlc_te_tensor *mx = mlc_te_reduce(te, MLC_TE_MAX, mlc_te_at(te, A, i[0], k));

  mlc_expr **ij = mlc_te_begin(te, "T_softmax_exp", 2, SHAPE(R, C), "ij");
  mlc_te_tensor *ex = mlc_te_end(
      te, call1(a, MLC_INTRIN_EXP,
                mlc_sub(a, mlc_te_at(te, A, ij[0], ij[1]), mlc_te_at(te, mx, ij[0]))));

  i = mlc_te_begin(te, "T_softmax_expsum", 1, SHAPE(R), "i");
  k = mlc_te_reduce_axis(te, C, "k");
  mlc_te_tensor *sum = mlc_te_sum(te, mlc_te_at(te, ex, i[0], k));

  ij = mlc_te_begin(te, "T_softmax_norm", 2, SHAPE(R, C), "ij");
  mlc_expr *inv = mlc_binary(a, MLC_EXPR_DIV, mlc_task_f32(a, 1), mlc_te_at(te, sum, ij[0]));
  mlc_te_tensor *out = mlc_te_end(te, mlc_mul(a, mlc_te_at(te, ex, ij[0], ij[1]), inv));
  return mlc_te_create_prim_func(te, "main", 2, TENSORS(A, out));
}

/* Per element, as the IR counts them: max, subtract, exp, add, the
 * reciprocal (computed once a row when compiled) and the product. */
static double softmax_flops(const int64_t *s) { return 6.0 * s[0] * s[1]; }

static int softmax_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("A", 2, SHAPE(s[0], s[1]));
  b[1] = mlc_task_buf_f32("T_softmax_maxelem", 1, SHAPE(s[0]));
  b[2] = mlc_task_buf_f32("T_softmax_exp", 2, SHAPE(s[0], s[1]));
  b[3] = mlc_task_buf_f32("T_softmax_expsum", 1, SHAPE(s[0]));
  b[4] = mlc_task_buf_f32("T_softmax_norm", 2, SHAPE(s[0], s[1]));
  return 5;
}

const mlc_task_entry mlc_task_softmax = {
    .def = {.name = "softmax",
            .shape_doc = "rows,cols",
            .description = "softmax over the last axis of A[rows,cols] (max, exp, sum, divide)",
            .n_dims = 2,
            .defaults = {256, 1024},
            .build = softmax_build,
            .flops = softmax_flops},
    .buffers = softmax_buffers,
};

/* ---- layernorm: mean, variance, normalize ----------------------------------- */
/* mean_sum[i] = sum_k A[i, k]
 * var_sum[i]  = sum_k (A[i, k] - mean_sum[i] / cols)^2        (two passes: stable)
 * out[i, j]   = (A[i, j] - mean_sum[i] / cols)
 *               * rsqrt(var_sum[i] / cols + 1e-5) * gamma[j] + beta[j] */

#define LAYERNORM_EPS 1e-5

static mlc_prim_func *layernorm_build(mlc_arena *a, const int64_t *s) {
  int64_t R = s[0], C = s[1];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *A = mlc_te_placeholder(te, "A", 2, SHAPE(R, C), F32);
  mlc_te_tensor *gamma = mlc_te_placeholder(te, "gamma", 1, SHAPE(C), F32);
  mlc_te_tensor *beta = mlc_te_placeholder(te, "beta", 1, SHAPE(C), F32);

  mlc_expr **i = mlc_te_begin(te, "mean_sum", 1, SHAPE(R), "i");
  mlc_expr *k = mlc_te_reduce_axis(te, C, "k");
  mlc_te_tensor *msum = mlc_te_sum(te, mlc_te_at(te, A, i[0], k));

  i = mlc_te_begin(te, "var_sum", 1, SHAPE(R), "i");
  k = mlc_te_reduce_axis(te, C, "k");
  mlc_expr *mean = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at(te, msum, i[0]), mlc_task_f32(a, (double)C));
  mlc_expr *d = mlc_sub(a, mlc_te_at(te, A, i[0], k), mean);
  /* d appears twice; the builder copies the value, so the IR stays a tree. */
  mlc_te_tensor *vsum = mlc_te_sum(te, mlc_mul(a, d, d));

  mlc_expr **ij = mlc_te_begin(te, "T_layer_norm", 2, SHAPE(R, C), "ij");
  mean = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at(te, msum, ij[0]), mlc_task_f32(a, (double)C));
  mlc_expr *var = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at(te, vsum, ij[0]), mlc_task_f32(a, (double)C));
  mlc_expr *inv = call1(a, MLC_INTRIN_RSQRT, mlc_add(a, var, mlc_task_f32(a, LAYERNORM_EPS)));
  mlc_expr *norm = mlc_mul(a, mlc_sub(a, mlc_te_at(te, A, ij[0], ij[1]), mean), inv);
  mlc_te_tensor *out = mlc_te_end(
      te, mlc_add(a, mlc_mul(a, norm, mlc_te_at(te, gamma, ij[1])), mlc_te_at(te, beta, ij[1])));
  return mlc_te_create_prim_func(te, "main", 4, TENSORS(A, gamma, beta, out));
}

/* Per element: sum 1; variance: subtract, multiply, add 3; normalize:
 * subtract, multiply, multiply, add 4. */
static double layernorm_flops(const int64_t *s) { return 8.0 * s[0] * s[1]; }

static int layernorm_buffers(const int64_t *s, mlc_task_buf *b, mlc_error *err) {
  b[0] = mlc_task_buf_f32("A", 2, SHAPE(s[0], s[1]));
  b[1] = mlc_task_buf_f32("gamma", 1, SHAPE(s[1]));
  b[2] = mlc_task_buf_f32("beta", 1, SHAPE(s[1]));
  b[3] = mlc_task_buf_f32("mean_sum", 1, SHAPE(s[0]));
  b[4] = mlc_task_buf_f32("var_sum", 1, SHAPE(s[0]));
  b[5] = mlc_task_buf_f32("T_layer_norm", 2, SHAPE(s[0], s[1]));
  return 6;
}

const mlc_task_entry mlc_task_layernorm = {
    .def = {.name = "layernorm",
            .shape_doc = "rows,cols",
            .description = "layer normalization of A[rows,cols] over cols with gamma, beta "
                           "(eps 1e-5)",
            .n_dims = 2,
            .defaults = {256, 1024},
            .build = layernorm_build,
            .flops = layernorm_flops},
    .buffers = layernorm_buffers,
};
