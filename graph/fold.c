/* Constant folding: an op whose arguments are all constants (the MLP's
 * transposed weights) is evaluated at compile time into a new constant, so
 * the compiled model does not redo it on every call. First, a batch_norm
 * with constant parameters right after a conv2d with constant weights (and
 * bias) becomes part of the conv: per output channel k, with
 * s = scale[k] / sqrt(var[k] + eps),
 *   w'[k] = w[k] * s,   bias'[k] = (bias[k] - mean[k]) * s + beta[k]. */
#include "graph/graph_impl.h"

#include <math.h>
#include <string.h>

static bool all_const(const mlc_gbinding *b) {
  for (int i = 0; i < b->n_args; i++)
    if (b->args[i]->kind != MLC_GVAR_CONST) return false;
  return b->kind == MLC_GCALL_OP && b->n_args > 0;
}

static void add_const(mlc_gmodule *m, mlc_gvar *c) {
  mlc_gvar **cs = MLC_NEW_ARRAY(m->arena, mlc_gvar *, m->n_consts + 1);
  if (m->n_consts) memcpy(cs, m->consts, sizeof *cs * (size_t)m->n_consts);
  cs[m->n_consts++] = c;
  m->consts = cs;
}

/* Replace uses of `from` in f by `to`. */
static void replace_uses(mlc_gfunc *f, const mlc_gvar *from, mlc_gvar *to) {
  for (int i = 0; i < f->n_bindings; i++)
    for (int j = 0; j < f->bindings[i].n_args; j++)
      if (f->bindings[i].args[j] == from) f->bindings[i].args[j] = to;
  for (int i = 0; i < f->n_outputs; i++)
    if (f->outputs[i] == from) f->outputs[i] = to;
}

/* A constant named base, or base_1, ... when base is taken. */
static mlc_gvar *new_const(mlc_gmodule *m, const char *base, const mlc_gtype *t) {
  const char *name = base;
  for (int k = 1;; k++) {
    bool taken = false;
    for (int i = 0; i < m->n_consts && !taken; i++) taken = strcmp(m->consts[i]->name, name) == 0;
    for (int i = 0; i < m->n_funcs && !taken; i++)
      for (int j = 0; j < m->funcs[i]->n_bindings && !taken; j++)
        taken = strcmp(m->funcs[i]->bindings[j].var->name, name) == 0;
    if (!taken) break;
    name = mlc_arena_printf(m->arena, "%s_%d", base, k);
  }
  mlc_gvar *c = mlc_gvar_new(m, name, MLC_GVAR_CONST, t);
  c->data = mlc_arena_alloc(m->arena, (size_t)mlc_gtype_bytes(t));
  add_const(m, c);
  return c;
}

mlc_gvar *mlc_graph_const_new(mlc_gmodule *m, const char *base, const mlc_gtype *t) {
  return new_const(m, base, t);
}

/* The conv2d binding bn (a batch_norm) can fold into, or NULL. */
static mlc_gbinding *foldable_conv(mlc_gfunc *f, const mlc_gbinding *bn) {
  if (bn->kind != MLC_GCALL_OP || bn->op != MLC_GOP_BATCH_NORM) return NULL;
  for (int i = 1; i < 5; i++)
    if (bn->args[i]->kind != MLC_GVAR_CONST) return NULL;
  const mlc_gvar *x = bn->args[0];
  int d = x->kind == MLC_GVAR_BOUND ? mlc_gfunc_def(f, x) : -1;
  if (d < 0 || mlc_gfunc_uses(f, x) != 1 || mlc_gfunc_is_output(f, x)) return NULL;
  mlc_gbinding *c = &f->bindings[d];
  if (c->kind != MLC_GCALL_OP || c->op != MLC_GOP_CONV2D) return NULL;
  for (int i = 1; i < c->n_args; i++)
    if (c->args[i]->kind != MLC_GVAR_CONST) return NULL;
  return c;
}

/* conv takes on bn's result: new weights and bias, bn's var. */
static void fold_into_conv(mlc_gmodule *m, mlc_gbinding *conv, const mlc_gbinding *bn) {
  const mlc_gvar *w = conv->args[1];
  int64_t K = w->type.shape[0], per_k = mlc_gtype_numel(&w->type) / K;
  const float *scale = bn->args[1]->data, *beta = bn->args[2]->data;
  const float *mean = bn->args[3]->data, *var = bn->args[4]->data;
  const float *bias = conv->n_args == 3 ? conv->args[2]->data : NULL;
  mlc_gvar *w2 = new_const(m, mlc_arena_printf(m->arena, "%s_weight", bn->var->name), &w->type);
  mlc_gtype bt = {MLC_FLOAT32, 1, {K}};
  mlc_gvar *b2 = new_const(m, mlc_arena_printf(m->arena, "%s_bias", bn->var->name), &bt);
  const float *wd = w->data;
  float *w2d = w2->data, *b2d = b2->data;
  for (int64_t k = 0; k < K; k++) {
    double s = scale[k] / sqrt((double)var[k] + bn->attrs.eps);
    for (int64_t i = 0; i < per_k; i++) w2d[k * per_k + i] = (float)(wd[k * per_k + i] * s);
    b2d[k] = (float)(((bias ? bias[k] : 0) - mean[k]) * s + beta[k]);
  }
  mlc_gvar **args = MLC_NEW_ARRAY(m->arena, mlc_gvar *, 3);
  args[0] = conv->args[0], args[1] = w2, args[2] = b2;
  conv->args = args;
  conv->n_args = 3;
  conv->var = bn->var;
}

/* Each foldable batch_norm goes into its conv; its binding goes away (the
 * conv, defined earlier, now defines bn's var). */
static void fold_batch_norms(mlc_gmodule *m, mlc_gfunc *f) {
  bool *gone = MLC_NEW_ARRAY(m->arena, bool, f->n_bindings + 1);
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding *conv = foldable_conv(f, &f->bindings[i]);
    if (conv) fold_into_conv(m, conv, &f->bindings[i]);
    gone[i] = conv != NULL;
  }
  int k = 0;
  for (int i = 0; i < f->n_bindings; i++)
    if (!gone[i]) f->bindings[k++] = f->bindings[i];
  f->n_bindings = k;
}

static void fold_func(mlc_gmodule *m, mlc_gfunc *f) {
  int k = 0;
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding *b = &f->bindings[i];
    if (!all_const(b) || mlc_gfunc_is_output(f, b->var)) {
      f->bindings[k++] = *b;
      continue;
    }
    const void *in[MLC_GRAPH_MAX_ARGS];
    for (int j = 0; j < b->n_args; j++) in[j] = b->args[j]->data;
    mlc_gvar *c = mlc_gvar_new(m, b->var->name, MLC_GVAR_CONST, &b->var->type);
    c->data = mlc_arena_alloc(m->arena, (size_t)mlc_gtype_bytes(&c->type));
    mlc_arena *scratch = mlc_arena_new_child(m->arena); /* under the pass's escape point */
    mlc_graph_eval_op(scratch, b, in, c->data);
    mlc_arena_free(scratch);
    add_const(m, c);
    replace_uses(f, b->var, c);
  }
  f->n_bindings = k;
}

bool mlc_graph_fold_constants(mlc_gmodule *m, mlc_error *err) {
  for (int i = 0; i < m->n_funcs; i++) {
    fold_func(m, m->funcs[i]); /* first: parameters computed from weights become weights */
    fold_batch_norms(m, m->funcs[i]);
  }
  mlc_graph_remove_unused(m);
  return mlc_graph_verify(m, err);
}
