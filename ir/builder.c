/* TE-like builder: tensors described as computes become TensorIR blocks, as
 * te.compute + te.create_prim_func do.
 *
 * A compute is described between mlc_te_begin and mlc_te_end/_reduce. The
 * index expressions handed to the caller are references to the loop vars of
 * the compute's T.grid nest; once the value is known, the block body is
 * rewritten to use the block's iter vars instead (a block body may refer
 * only to its iter vars), and each iter var is bound to its loop var, so the
 * printer can write `vi, vj, vk = T.axis.remap("SSR", [i, j, k])`.
 */
#include "ir/ir.h"

#include <float.h>
#include <limits.h>
#include <string.h>

struct mlc_te_tensor {
  mlc_buffer *buf;
  mlc_stmt *nest; /* the compute's loop nest; NULL for a placeholder */
};

typedef struct te_axis {
  mlc_var *loop;  /* the loop var; also what the caller's index exprs refer to */
  int64_t extent;
} te_axis;

struct mlc_te {
  mlc_arena *a;
  MLC_VEC(mlc_te_tensor *) tensors; /* creation order = program order */
  /* The compute being described (between begin and end). */
  bool open;
  const char *name;
  int ndim;
  te_axis *spatial;
  mlc_expr **index; /* refs to the spatial loop vars, handed to the caller */
  /* mlc_te_write_at: the output's shape and the index written (exprs over
   * index); out_ndim < 0: the compute's own shape, indexed by its axes */
  int out_ndim;
  int64_t out_shape[8];
  mlc_expr **out_index;
  /* Reduce axes made since the last compute ended; they belong to the next
   * reduction (te.reduce_axis is likewise made before te.compute). */
  MLC_VEC(te_axis) reduce;
};

mlc_te *mlc_te_new(mlc_arena *a) {
  mlc_te *te = MLC_NEW(a, mlc_te);
  te->a = a;
  return te;
}

mlc_te_tensor *mlc_te_placeholder(mlc_te *te, const char *name, int ndim,
                                  const int64_t *shape, mlc_dtype t) {
  MLC_ASSERT(ndim >= 0 && ndim <= 8);
  for (int i = 0; i < ndim; i++) MLC_ASSERT(shape[i] >= 1);
  mlc_te_tensor *x = MLC_NEW(te->a, mlc_te_tensor);
  x->buf = mlc_buffer_new(te->a, name, t, ndim, shape, "global");
  MLC_VEC_APUSH(te->a, te->tensors, x);
  return x;
}

mlc_expr **mlc_te_begin(mlc_te *te, const char *name, int ndim, const int64_t *shape,
                        const char *axis_names) {
  MLC_ASSERT(!te->open);
  MLC_ASSERT(ndim >= 0 && ndim <= 8);
  MLC_ASSERT(!axis_names || (int)strlen(axis_names) == ndim);
  te->open = true;
  te->name = mlc_arena_strdup(te->a, name);
  te->ndim = ndim;
  te->spatial = MLC_NEW_ARRAY(te->a, te_axis, ndim > 0 ? ndim : 1);
  te->index = MLC_NEW_ARRAY(te->a, mlc_expr *, ndim > 0 ? ndim : 1);
  te->out_ndim = -1;
  for (int i = 0; i < ndim; i++) {
    MLC_ASSERT(shape[i] >= 1 && shape[i] <= INT32_MAX);
    char *vname = axis_names ? mlc_arena_printf(te->a, "%c", axis_names[i])
                             : mlc_arena_printf(te->a, "i%d", i);
    te->spatial[i].loop = mlc_var_new(te->a, vname, MLC_INT32);
    te->spatial[i].extent = shape[i];
    te->index[i] = mlc_ref(te->a, te->spatial[i].loop);
  }
  return te->index;
}

void mlc_te_write_at(mlc_te *te, int ndim, const int64_t *shape, mlc_expr **idx) {
  MLC_ASSERT(te->open && ndim >= 0 && ndim <= 8);
  te->out_ndim = ndim;
  te->out_index = MLC_NEW_ARRAY(te->a, mlc_expr *, ndim > 0 ? ndim : 1);
  for (int i = 0; i < ndim; i++) {
    MLC_ASSERT(shape[i] >= 1 && shape[i] <= INT32_MAX);
    te->out_shape[i] = shape[i];
    te->out_index[i] = idx[i];
  }
}

mlc_expr *mlc_te_reduce_axis(mlc_te *te, int64_t extent, const char *name) {
  MLC_ASSERT(extent >= 1 && extent <= INT32_MAX);
  te_axis ax = {mlc_var_new(te->a, name, MLC_INT32), extent};
  MLC_VEC_APUSH(te->a, te->reduce, ax);
  return mlc_ref(te->a, ax.loop);
}

mlc_expr *mlc_te_at_v(mlc_te *te, mlc_te_tensor *t, mlc_expr **idx) {
  return mlc_load(te->a, t->buf, idx);
}

mlc_expr *mlc_te_at(mlc_te *te, mlc_te_tensor *t, ...) {
  mlc_expr *idx[8];
  int n = t->buf->ndim;
  MLC_ASSERT(n <= 8);
  va_list ap;
  va_start(ap, t);
  for (int i = 0; i < n; i++) idx[i] = va_arg(ap, mlc_expr *);
  va_end(ap);
  return mlc_load(te->a, t->buf, idx);
}

mlc_buffer *mlc_te_buffer(mlc_te_tensor *t) { return t->buf; }

/* ---- turning a compute into a block ----------------------------------- */

/* TVM's naming: iter var "vi" for loop "i", "v_i0" for loop "i0". */
static const char *iter_name(mlc_arena *a, const char *loop) {
  return strlen(loop) == 1 ? mlc_arena_printf(a, "v%s", loop) : mlc_arena_printf(a, "v_%s", loop);
}

/* The identity of a reducer, as T.min_value / T.max_value give it. */
static mlc_expr *reduce_identity(mlc_arena *a, mlc_te_reducer r, mlc_dtype t) {
  double fmax = t == MLC_FLOAT16 ? 65504.0 : t == MLC_BFLOAT16 ? 0x1.fep127 : (double)FLT_MAX;
  int64_t imax = t == MLC_INT8    ? INT8_MAX
                 : t == MLC_UINT8 ? UINT8_MAX
                 : t == MLC_INT32 ? INT32_MAX
                                  : INT64_MAX;
  int64_t imin = t == MLC_INT8 ? INT8_MIN : t == MLC_UINT8 ? 0 : t == MLC_INT32 ? INT32_MIN : INT64_MIN;
  bool fl = mlc_dtype_is_float(t);
  MLC_ASSERT(fl || mlc_dtype_is_int(t));
  switch (r) {
  case MLC_TE_SUM:
    return fl ? mlc_float(a, t, 0.0) : mlc_int_t(a, t, 0);
  case MLC_TE_MAX:
    return fl ? mlc_float(a, t, -fmax) : mlc_int_t(a, t, imin);
  case MLC_TE_MIN:
    return fl ? mlc_float(a, t, fmax) : mlc_int_t(a, t, imax);
  case MLC_TE_PROD:
    return fl ? mlc_float(a, t, 1.0) : mlc_int_t(a, t, 1);
  }
  mlc_unreachable();
}

static mlc_expr *reduce_combine(mlc_arena *a, mlc_te_reducer r, mlc_expr *acc, mlc_expr *v) {
  switch (r) {
  case MLC_TE_SUM:
    return mlc_add(a, acc, v);
  case MLC_TE_MAX:
    return mlc_binary(a, MLC_EXPR_MAX, acc, v);
  case MLC_TE_MIN:
    return mlc_binary(a, MLC_EXPR_MIN, acc, v);
  case MLC_TE_PROD:
    return mlc_mul(a, acc, v);
  }
  mlc_unreachable();
}

/* A copy of e in which every node is new (the caller's index expressions
 * are typically used in several places; the IR stays a tree) and loop vars
 * are replaced by fresh refs to the matching iter vars. */
static mlc_expr *copy_subst(mlc_arena *a, const mlc_expr *e, int n, mlc_var **from,
                            const mlc_block *blk) {
  mlc_expr *c = MLC_NEW(a, mlc_expr);
  *c = *e;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
    return c;
  case MLC_EXPR_VAR:
    for (int i = 0; i < n; i++)
      if (e->var == from[i]) return mlc_ref(a, blk->iters[i].var);
    return c;
  case MLC_EXPR_ADD:
  case MLC_EXPR_SUB:
  case MLC_EXPR_MUL:
  case MLC_EXPR_DIV:
  case MLC_EXPR_FLOORDIV:
  case MLC_EXPR_FLOORMOD:
  case MLC_EXPR_MIN:
  case MLC_EXPR_MAX:
  case MLC_EXPR_EQ:
  case MLC_EXPR_NE:
  case MLC_EXPR_LT:
  case MLC_EXPR_LE:
  case MLC_EXPR_GT:
  case MLC_EXPR_GE:
  case MLC_EXPR_AND:
  case MLC_EXPR_OR:
    c->bin.a = copy_subst(a, e->bin.a, n, from, blk);
    c->bin.b = copy_subst(a, e->bin.b, n, from, blk);
    return c;
  case MLC_EXPR_NOT:
    c->bin.a = copy_subst(a, e->bin.a, n, from, blk);
    return c;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    c->sel.cond = copy_subst(a, e->sel.cond, n, from, blk);
    c->sel.t = copy_subst(a, e->sel.t, n, from, blk);
    c->sel.f = copy_subst(a, e->sel.f, n, from, blk);
    return c;
  case MLC_EXPR_LOAD:
    c->load.indices = MLC_NEW_ARRAY(a, mlc_expr *, e->load.buf->ndim > 0 ? e->load.buf->ndim : 1);
    for (int i = 0; i < e->load.buf->ndim; i++)
      c->load.indices[i] = copy_subst(a, e->load.indices[i], n, from, blk);
    return c;
  case MLC_EXPR_CAST:
    c->cast.value = copy_subst(a, e->cast.value, n, from, blk);
    return c;
  case MLC_EXPR_CALL:
    c->call.args = MLC_NEW_ARRAY(a, mlc_expr *, mlc_intrin_nargs(e->call.op));
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++)
      c->call.args[i] = copy_subst(a, e->call.args[i], n, from, blk);
    return c;
  case MLC_EXPR_CALL_EXTERN:
    c->ext.kids = MLC_NEW_ARRAY(a, mlc_expr *, e->ext.n_kids ? e->ext.n_kids : 1);
    for (int i = 0; i < e->ext.n_kids; i++)
      c->ext.kids[i] = copy_subst(a, e->ext.kids[i], n, from, blk);
    return c;
  }
  mlc_unreachable();
}

/* The index the block writes, fresh each call: refs to its first nsp iter
 * vars, or mlc_te_write_at's exprs over them (loop vars: the spatial
 * ones). */
static mlc_expr **out_refs(mlc_arena *a, const mlc_te *te, const mlc_block *blk, mlc_var **loops) {
  int n = te->out_ndim < 0 ? te->ndim : te->out_ndim;
  mlc_expr **idx = MLC_NEW_ARRAY(a, mlc_expr *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++)
    idx[i] = te->out_ndim < 0 ? mlc_ref(a, blk->iters[i].var)
                              : copy_subst(a, te->out_index[i], te->ndim, loops, blk);
  return idx;
}

static void add_iter(mlc_arena *a, mlc_block *blk, te_axis ax, mlc_iter_kind kind) {
  mlc_iter_var *iv = &blk->iters[blk->n_iters++];
  iv->var = mlc_var_new(a, iter_name(a, ax.loop->name), MLC_INT32);
  iv->dom.min = mlc_int(a, 0);
  iv->dom.extent = mlc_int(a, ax.extent);
  iv->kind = kind;
}

/* Loop names must differ within one nest (T.grid(i, j, k) reads back by
 * name); a clash, e.g. a reduce axis named like a spatial one, gets "_1". */
static void unique_names(mlc_arena *a, te_axis *axes, int n) {
  for (int i = 1; i < n; i++) {
    const char *base = axes[i].loop->name;
    for (int suffix = 1;; suffix++) {
      bool clash = false;
      for (int j = 0; j < i; j++)
        if (strcmp(axes[j].loop->name, axes[i].loop->name) == 0) clash = true;
      if (!clash) break;
      axes[i].loop->name = mlc_arena_printf(a, "%s_%d", base, suffix);
    }
  }
}

static mlc_te_tensor *finish(mlc_te *te, mlc_expr *value, bool is_reduce, mlc_te_reducer r) {
  mlc_arena *a = te->a;
  MLC_ASSERT(te->open);
  MLC_ASSERT(is_reduce ? te->reduce.len > 0 : te->reduce.len == 0);
  int nsp = te->ndim, n = nsp + te->reduce.len;
  te_axis *axes = MLC_NEW_ARRAY(a, te_axis, n > 0 ? n : 1);
  for (int i = 0; i < nsp; i++) axes[i] = te->spatial[i];
  for (int i = 0; i < te->reduce.len; i++) axes[nsp + i] = te->reduce.data[i];

  unique_names(a, axes, n);

  mlc_block *blk = mlc_block_new(a, te->name);
  blk->iters = MLC_NEW_ARRAY(a, mlc_iter_var, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) add_iter(a, blk, axes[i], i < nsp ? MLC_ITER_SPATIAL : MLC_ITER_REDUCE);

  /* The body may only use iter vars: loop var -> iter var. */
  mlc_var **loops = MLC_NEW_ARRAY(a, mlc_var *, n > 0 ? n : 1);
  mlc_expr **binds = MLC_NEW_ARRAY(a, mlc_expr *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    loops[i] = axes[i].loop;
    binds[i] = mlc_ref(a, axes[i].loop);
  }
  mlc_expr *v = copy_subst(a, value, n, loops, blk);

  int64_t shape[8];
  for (int i = 0; i < nsp; i++) shape[i] = te->spatial[i].extent;
  mlc_te_tensor *out = MLC_NEW(a, mlc_te_tensor);
  if (te->out_ndim < 0) out->buf = mlc_buffer_new(a, te->name, value->dtype, nsp, shape, "global");
  else out->buf = mlc_buffer_new(a, te->name, value->dtype, te->out_ndim, te->out_shape, "global");
  if (is_reduce) {
    mlc_expr *acc = mlc_load(a, out->buf, out_refs(a, te, blk, loops));
    blk->init = mlc_store_new(a, out->buf, out_refs(a, te, blk, loops),
                              reduce_identity(a, r, value->dtype));
    blk->body = mlc_store_new(a, out->buf, out_refs(a, te, blk, loops), reduce_combine(a, r, acc, v));
  } else {
    blk->body = mlc_store_new(a, out->buf, out_refs(a, te, blk, loops), v);
  }
  mlc_block_infer_regions(a, blk);

  /* Spatial loops outside, reduce loops inside, as create_prim_func does. */
  mlc_stmt *nest = mlc_realize_new(a, blk, binds, NULL);
  for (int i = n - 1; i >= 0; i--)
    nest = mlc_for_new(a, axes[i].loop, mlc_int(a, 0), mlc_int(a, axes[i].extent), MLC_FOR_SERIAL,
                       nest);
  out->nest = nest;
  MLC_VEC_APUSH(a, te->tensors, out);

  te->open = false;
  te->reduce.len = 0;
  return out;
}

mlc_te_tensor *mlc_te_end(mlc_te *te, mlc_expr *value) { return finish(te, value, false, MLC_TE_SUM); }

mlc_te_tensor *mlc_te_reduce(mlc_te *te, mlc_te_reducer r, mlc_expr *value) {
  return finish(te, value, true, r);
}

mlc_te_tensor *mlc_te_sum(mlc_te *te, mlc_expr *value) { return finish(te, value, true, MLC_TE_SUM); }

/* ---- the prim_func ------------------------------------------------------ */

static bool is_arg(mlc_te_tensor *t, int n, mlc_te_tensor **args) {
  for (int i = 0; i < n; i++)
    if (args[i] == t) return true;
  return false;
}

/* Requires every placeholder to be among args and at least one compute.
 * Every compute described on te is emitted, in the order described (which
 * is a valid producer-before-consumer order, as each value can only read
 * tensors that already exist). */
mlc_prim_func *mlc_te_create_prim_func(mlc_te *te, const char *name, int n,
                                       mlc_te_tensor **args) {
  mlc_arena *a = te->a;
  MLC_ASSERT(!te->open);
  mlc_prim_func *f = mlc_func_new(a, name);
  f->n_params = n;
  f->params = MLC_NEW_ARRAY(a, mlc_buffer *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) f->params[i] = args[i]->buf;

  mlc_block *root = mlc_block_new(a, "root");
  int nt = te->tensors.len;
  mlc_stmt **nests = MLC_NEW_ARRAY(a, mlc_stmt *, nt > 0 ? nt : 1);
  root->allocs = MLC_NEW_ARRAY(a, mlc_buffer *, nt > 0 ? nt : 1);
  int n_nests = 0;
  for (int i = 0; i < nt; i++) {
    mlc_te_tensor *t = te->tensors.data[i];
    bool arg = is_arg(t, n, args);
    if (!t->nest) {
      MLC_ASSERT(arg); /* a placeholder must be a parameter */
      continue;
    }
    nests[n_nests++] = t->nest;
    if (!arg) root->allocs[root->n_allocs++] = t->buf;
  }
  MLC_ASSERT(n_nests > 0);
  root->body = mlc_seq_new(a, n_nests, nests);
  f->body = mlc_realize_new(a, root, NULL, NULL);

  f->n_attrs = 2;
  f->attrs = MLC_NEW_ARRAY(a, mlc_ann, 2);
  f->attrs[0] = (mlc_ann){.key = "global_symbol", .kind = MLC_ANN_STRING,
                          .s = mlc_arena_strdup(a, name)};
  f->attrs[1] = (mlc_ann){.key = "tir.noalias", .kind = MLC_ANN_BOOL, .i = 1};
  return f;
}
