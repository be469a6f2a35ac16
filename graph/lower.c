/* Lowering: every op call becomes R.call_tir of a prim_func written with
 * the ir builder (the notes' LowerToTensorIR with call_te). Ops that match a
 * built-in task (2-d matmul, batch matmul, conv2d, softmax, layernorm, 2-d
 * transpose) reuse the task's builder; the rest are written here. */
#include "graph/graph_impl.h"
#include "tasks/tasks.h"

#include <float.h>
#include <stdio.h>
#include <string.h>

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

static mlc_expr *f32(mlc_arena *a, double v) { return mlc_float(a, MLC_FLOAT32, v); }

static mlc_te_tensor *placeholder(mlc_te *te, const char *name, const mlc_gtype *t) {
  return mlc_te_placeholder(te, name, t->ndim, t->shape, t->dtype);
}

/* x read at the output index idx of an n-d broadcast result. */
static mlc_expr *bcast_at(mlc_arena *a, mlc_te *te, mlc_te_tensor *x, const mlc_gtype *xt,
                          const mlc_gtype *out, mlc_expr **idx) {
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  int off = out->ndim - xt->ndim;
  for (int d = 0; d < xt->ndim; d++)
    ix[d] = xt->shape[d] == 1 && out->shape[d + off] != 1 ? mlc_int(a, 0) : idx[d + off];
  return mlc_te_at_v(te, x, ix);
}

static mlc_prim_func *lower_elemwise(mlc_arena *a, const char *name, mlc_gop op, int n,
                                     mlc_gvar *const *args, const mlc_gtype *out) {
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *in[3], *tensors[4];
  for (int i = 0; i < n; i++) tensors[i] = in[i] = placeholder(te, args[i]->name, &args[i]->type);
  char block[64];
  snprintf(block, sizeof block, "T_%s", mlc_gop_name(op));
  mlc_expr **idx = mlc_te_begin(te, block, out->ndim, out->shape, NULL);
  mlc_expr *v[3];
  for (int i = 0; i < n; i++) v[i] = bcast_at(a, te, in[i], &args[i]->type, out, idx);
  mlc_expr *value = NULL;
  switch (op) {
  case MLC_GOP_ADD: value = mlc_add(a, v[0], v[1]); break;
  case MLC_GOP_MULTIPLY: value = mlc_mul(a, v[0], v[1]); break;
  case MLC_GOP_EWISE_FMA: value = mlc_add(a, mlc_mul(a, v[0], v[1]), v[2]); break;
  case MLC_GOP_RELU: value = mlc_binary(a, MLC_EXPR_MAX, v[0], f32(a, 0)); break;
  case MLC_GOP_GELU: {
    /* 0.5 * x * (1 + erf(x / sqrt(2))) */
    mlc_expr *e = mlc_call(a, MLC_INTRIN_ERF, (mlc_expr *[]){mlc_mul(a, v[0], f32(a, 0.70710678118654752))});
    value = mlc_mul(a, mlc_mul(a, f32(a, 0.5), v[0]), mlc_add(a, f32(a, 1), e));
    break;
  }
  case MLC_GOP_MATMUL:
  case MLC_GOP_DENSE:
  case MLC_GOP_SOFTMAX:
  case MLC_GOP_LAYERNORM:
  case MLC_GOP_CONV2D:
  case MLC_GOP_MAX_POOL2D:
  case MLC_GOP_RESHAPE:
  case MLC_GOP_FLATTEN:
  case MLC_GOP_TRANSPOSE: mlc_unreachable();
  }
  tensors[n] = mlc_te_end(te, value);
  return mlc_te_create_prim_func(te, name, n + 1, tensors);
}

static mlc_prim_func *lower_dense(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                  const mlc_gtype *out) {
  int64_t M = out->shape[0], N = out->shape[1], K = args[0]->type.shape[1];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, &args[0]->type);
  mlc_te_tensor *W = placeholder(te, args[1]->name, &args[1]->type);
  mlc_expr **ij = mlc_te_begin(te, "T_dense", 2, SHAPE(M, N), "ij");
  mlc_expr *k = mlc_te_reduce_axis(te, K, "k");
  mlc_te_tensor *Y = mlc_te_sum(te, mlc_mul(a, mlc_te_at(te, X, ij[0], k), mlc_te_at(te, W, ij[1], k)));
  return mlc_te_create_prim_func(te, name, 3, (mlc_te_tensor *[]){X, W, Y});
}

/* Max over a pool x pool window; padding reads as the lowest float. */
static mlc_prim_func *lower_pool(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                 const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, "T_pool_max", 4, out->shape, "ncyx");
  mlc_expr *rh = mlc_te_reduce_axis(te, at->pool, "rh");
  mlc_expr *rw = mlc_te_reduce_axis(te, at->pool, "rw");
  mlc_expr *y = mlc_add(a, mlc_mul(a, o[2], mlc_int(a, at->stride)), rh);
  mlc_expr *x = mlc_add(a, mlc_mul(a, o[3], mlc_int(a, at->stride)), rw);
  mlc_expr *v;
  if (at->padding == 0) v = mlc_te_at(te, X, o[0], o[1], y, x);
  else {
    mlc_expr *p = mlc_int(a, at->padding);
    y = mlc_sub(a, y, p);
    x = mlc_sub(a, x, p);
    mlc_expr *in = mlc_binary(
        a, MLC_EXPR_AND,
        mlc_binary(a, MLC_EXPR_AND, mlc_binary(a, MLC_EXPR_GE, y, mlc_int(a, 0)),
                   mlc_binary(a, MLC_EXPR_LT, y, mlc_int(a, xt->shape[2]))),
        mlc_binary(a, MLC_EXPR_AND, mlc_binary(a, MLC_EXPR_GE, x, mlc_int(a, 0)),
                   mlc_binary(a, MLC_EXPR_LT, x, mlc_int(a, xt->shape[3]))));
    v = mlc_if_then_else(a, in, mlc_te_at(te, X, o[0], o[1], y, x), f32(a, -FLT_MAX));
  }
  mlc_te_tensor *Y = mlc_te_reduce(te, MLC_TE_MAX, v);
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* Reshape and flatten: the row-major flat index of the output element,
 * taken apart again over the input's shape. */
static mlc_prim_func *lower_reshape(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                    const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, "T_reshape", out->ndim, out->shape, NULL);
  mlc_expr *flat = o[0];
  for (int d = 1; d < out->ndim; d++)
    flat = mlc_add(a, mlc_mul(a, flat, mlc_int(a, out->shape[d])), o[d]);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  int64_t stride = 1;
  for (int d = xt->ndim - 1; d >= 0; d--) {
    mlc_expr *q = stride == 1 ? flat : mlc_binary(a, MLC_EXPR_FLOORDIV, flat, mlc_int(a, stride));
    ix[d] = d == 0 ? q : mlc_binary(a, MLC_EXPR_FLOORMOD, q, mlc_int(a, xt->shape[d]));
    stride *= xt->shape[d];
  }
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at_v(te, X, ix));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

static mlc_prim_func *lower_transpose(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                      const mlc_gattrs *at, const mlc_gtype *out) {
  const mlc_gtype *xt = &args[0]->type;
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr **o = mlc_te_begin(te, "T_transpose", out->ndim, out->shape, NULL);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  for (int d = 0; d < xt->ndim; d++) {
    int64_t ax = at->n_ints ? at->ints[d] : xt->ndim - 1 - d;
    ix[ax] = o[d];
  }
  mlc_te_tensor *Y = mlc_te_end(te, mlc_te_at_v(te, X, ix));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* Softmax over the last axis of an n-d tensor, the task's four blocks
 * (max, exp, sum, divide) with the leading axes as rows. */
static mlc_prim_func *lower_softmax(mlc_arena *a, const char *name, mlc_gvar *const *args) {
  const mlc_gtype *xt = &args[0]->type;
  int r = xt->ndim - 1;
  int64_t C = xt->shape[r];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  mlc_expr **o = mlc_te_begin(te, "T_softmax_maxelem", r, xt->shape, NULL);
  memcpy(ix, o, sizeof *ix * (size_t)r);
  ix[r] = mlc_te_reduce_axis(te, C, "k");
  mlc_te_tensor *mx = mlc_te_reduce(te, MLC_TE_MAX, mlc_te_at_v(te, X, ix));
  o = mlc_te_begin(te, "T_softmax_exp", xt->ndim, xt->shape, NULL);
  mlc_te_tensor *ex = mlc_te_end(
      te, mlc_call(a, MLC_INTRIN_EXP, (mlc_expr *[]){mlc_sub(a, mlc_te_at_v(te, X, o), mlc_te_at_v(te, mx, o))}));
  o = mlc_te_begin(te, "T_softmax_expsum", r, xt->shape, NULL);
  memcpy(ix, o, sizeof *ix * (size_t)r);
  ix[r] = mlc_te_reduce_axis(te, C, "k");
  mlc_te_tensor *sum = mlc_te_sum(te, mlc_te_at_v(te, ex, ix));
  o = mlc_te_begin(te, "T_softmax_norm", xt->ndim, xt->shape, NULL);
  mlc_te_tensor *Y = mlc_te_end(te, mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, ex, o), mlc_te_at_v(te, sum, o)));
  return mlc_te_create_prim_func(te, name, 2, (mlc_te_tensor *[]){X, Y});
}

/* Layer normalization over the last axis, as the layernorm task computes
 * it (two-pass variance), for any rank and epsilon. */
static mlc_prim_func *lower_layernorm(mlc_arena *a, const char *name, mlc_gvar *const *args,
                                      double eps) {
  const mlc_gtype *xt = &args[0]->type;
  int r = xt->ndim - 1;
  int64_t C = xt->shape[r];
  mlc_te *te = mlc_te_new(a);
  mlc_te_tensor *X = placeholder(te, args[0]->name, xt);
  mlc_te_tensor *G = placeholder(te, args[1]->name, &args[1]->type);
  mlc_te_tensor *B = placeholder(te, args[2]->name, &args[2]->type);
  mlc_expr *ix[MLC_GRAPH_MAX_DIMS];
  mlc_expr **o = mlc_te_begin(te, "mean_sum", r, xt->shape, NULL);
  memcpy(ix, o, sizeof *ix * (size_t)r);
  ix[r] = mlc_te_reduce_axis(te, C, "k");
  mlc_te_tensor *msum = mlc_te_sum(te, mlc_te_at_v(te, X, ix));
  o = mlc_te_begin(te, "var_sum", r, xt->shape, NULL);
  memcpy(ix, o, sizeof *ix * (size_t)r);
  ix[r] = mlc_te_reduce_axis(te, C, "k");
  mlc_expr *mean = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, msum, o), f32(a, (double)C));
  mlc_expr *d = mlc_sub(a, mlc_te_at_v(te, X, ix), mean);
  mlc_te_tensor *vsum = mlc_te_sum(te, mlc_mul(a, d, d));
  o = mlc_te_begin(te, "T_layer_norm", xt->ndim, xt->shape, NULL);
  mean = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, msum, o), f32(a, (double)C));
  mlc_expr *var = mlc_binary(a, MLC_EXPR_DIV, mlc_te_at_v(te, vsum, o), f32(a, (double)C));
  mlc_expr *inv = mlc_call(a, MLC_INTRIN_RSQRT, (mlc_expr *[]){mlc_add(a, var, f32(a, eps))});
  mlc_expr *norm = mlc_mul(a, mlc_sub(a, mlc_te_at_v(te, X, o), mean), inv);
  mlc_te_tensor *Y = mlc_te_end(te, mlc_add(a, mlc_mul(a, norm, mlc_te_at(te, G, o[r])), mlc_te_at(te, B, o[r])));
  return mlc_te_create_prim_func(te, name, 4, (mlc_te_tensor *[]){X, G, B, Y});
}

/* A built-in task's prim_func, renamed, its inputs named after the args. */
static mlc_prim_func *from_task(mlc_arena *a, const char *task, const int64_t *shape,
                                const char *name, int n, mlc_gvar *const *args) {
  const mlc_task_def *d = mlc_task_find(task);
  MLC_ASSERT(d);
  mlc_prim_func *f = mlc_task_build(a, d, shape);
  f->name = mlc_arena_strdup(a, name);
  for (int i = 0; i < f->n_attrs; i++)
    if (strcmp(f->attrs[i].key, "global_symbol") == 0) f->attrs[i].s = f->name;
  for (int i = 0; i < n; i++) f->params[i]->name = mlc_arena_strdup(a, args[i]->name);
  return f;
}

static bool is_reverse_2d(const mlc_gattrs *at, const mlc_gtype *t) {
  return t->ndim == 2 && (at->n_ints == 0 || (at->ints[0] == 1 && at->ints[1] == 0));
}

mlc_prim_func *mlc_graph_lower_op(mlc_arena *a, const char *name, mlc_gop op,
                                  const mlc_gattrs *at, int n, mlc_gvar *const *args,
                                  const mlc_gtype *out, mlc_error *err) {
  const mlc_gtype *x = &args[0]->type;
  switch (op) {
  case MLC_GOP_MATMUL:
    if (x->ndim == 2)
      return from_task(a, "matmul", SHAPE(x->shape[0], out->shape[1], x->shape[1]), name, n, args);
    return from_task(a, "batch_matmul",
                     SHAPE(x->shape[0], x->shape[1], out->shape[2], x->shape[2]), name, n, args);
  case MLC_GOP_DENSE: return lower_dense(a, name, args, out);
  case MLC_GOP_SOFTMAX:
    if (x->ndim == 2) return from_task(a, "softmax", x->shape, name, n, args);
    return lower_softmax(a, name, args);
  case MLC_GOP_LAYERNORM:
    if (x->ndim == 2 && at->eps == 1e-5) return from_task(a, "layernorm", x->shape, name, n, args);
    return lower_layernorm(a, name, args, at->eps);
  case MLC_GOP_CONV2D: {
    const int64_t *w = args[1]->type.shape;
    return from_task(a, "conv2d_nchw",
                     SHAPE(x->shape[0], x->shape[1], x->shape[2], x->shape[3], w[0], w[2], w[3],
                           at->stride, at->padding),
                     name, n, args);
  }
  case MLC_GOP_MAX_POOL2D: return lower_pool(a, name, args, at, out);
  case MLC_GOP_RESHAPE:
  case MLC_GOP_FLATTEN: return lower_reshape(a, name, args, out);
  case MLC_GOP_TRANSPOSE:
    if (is_reverse_2d(at, x)) return from_task(a, "transpose", x->shape, name, n, args);
    return lower_transpose(a, name, args, at, out);
  case MLC_GOP_ADD:
  case MLC_GOP_MULTIPLY:
  case MLC_GOP_EWISE_FMA:
  case MLC_GOP_RELU:
  case MLC_GOP_GELU: return lower_elemwise(a, name, op, n, args, out);
  }
  mlc_unreachable();
}

/* ---- the pass ---------------------------------------------------------------- */

/* "add", "add1", "add2", ... as TVM names call_te results. */
static const char *unique_name(mlc_gmodule *m, const char *base) {
  for (int k = 0;; k++) {
    const char *s = k ? mlc_arena_printf(m->arena, "%s%d", base, k) : base;
    if (!mlc_module_find(m->tir, s) && !mlc_graph_find_func(m, s))
      return mlc_arena_strdup(m->arena, s);
  }
}

/* Param names must differ within a prim_func: add(x, x) gets x and x_1. */
static void dedup_params(mlc_arena *a, mlc_prim_func *f) {
  for (int i = 1; i < f->n_params; i++)
    for (int j = 0; j < i; j++)
      if (strcmp(f->params[i]->name, f->params[j]->name) == 0) {
        f->params[i]->name = mlc_arena_printf(a, "%s_%d", f->params[i]->name, i);
        j = -1;
      }
}

bool mlc_graph_lower(mlc_gmodule *m, mlc_error *err) {
  for (int i = 0; i < m->n_funcs; i++) {
    mlc_gfunc *f = m->funcs[i];
    for (int j = 0; j < f->n_bindings; j++) {
      mlc_gbinding *b = &f->bindings[j];
      if (b->kind != MLC_GCALL_OP) continue;
      const char *name = unique_name(m, mlc_gop_name(b->op));
      mlc_prim_func *p = mlc_graph_lower_op(m->arena, name, b->op, &b->attrs, b->n_args, b->args,
                                            &b->var->type, err);
      if (!p) return false;
      dedup_params(m->arena, p);
      mlc_module_add(m->arena, m->tir, p);
      b->kind = MLC_GCALL_TIR;
      b->tir = p;
    }
  }
  return mlc_graph_verify(m, err);
}
