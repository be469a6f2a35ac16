/* The patterns pass: exporters' decomposed layer norm and erf GELU back
 * into one op (layernorm, gelu). */
#include "graph/graph_impl.h"

#include <math.h>
#include <string.h>

/* The op binding of f defining v when it is a call of op, or NULL. */
static mlc_gbinding *def_of(mlc_gfunc *f, const mlc_gvar *v, mlc_gop op) {
  int d = v->kind == MLC_GVAR_BOUND ? mlc_gfunc_def(f, v) : -1;
  if (d < 0) return NULL;
  mlc_gbinding *b = &f->bindings[d];
  return b->kind == MLC_GCALL_OP && b->op == op ? b : NULL;
}

/* def_of, when v has exactly `uses` uses (none of them as an output). */
static mlc_gbinding *def_used(mlc_gfunc *f, const mlc_gvar *v, mlc_gop op, int uses) {
  mlc_gbinding *b = def_of(f, v, op);
  for (int i = 0; b && i < f->n_outputs; i++)
    if (f->outputs[i] == v) return NULL;
  return b && mlc_gfunc_uses(f, v) == uses ? b : NULL;
}

/* The binding reading v when that is v's only use and a call of op. */
static mlc_gbinding *sole_consumer(mlc_gfunc *f, const mlc_gvar *v, mlc_gop op) {
  if (mlc_gfunc_uses(f, v) != 1) return NULL;
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding *b = &f->bindings[i];
    for (int j = 0; j < b->n_args; j++)
      if (b->args[j] == v) return b->kind == MLC_GCALL_OP && b->op == op ? b : NULL;
  }
  return NULL; /* the use is an output */
}

/* A one-element constant (any rank), its value in *v. */
static bool scalar_const(const mlc_gvar *c, double *v) {
  if (c->kind != MLC_GVAR_CONST || c->type.dtype != MLC_FLOAT32 || mlc_gtype_numel(&c->type) != 1) return false;
  *v = *(const float *)c->data;
  return true;
}

/* A one-element constant equal to want, within float32 rounding of the
 * exporter's literal. */
static bool const_near(const mlc_gvar *c, double want) {
  double v;
  return scalar_const(c, &v) && fabs(v - want) <= 1e-6 * fabs(want);
}

/* The operand of a binary b other than v; NULL when v is not an operand. */
static mlc_gvar *other_arg(const mlc_gbinding *b, const mlc_gvar *v) {
  if (b->args[0] == v) return b->args[1];
  return b->args[1] == v ? b->args[0] : NULL;
}

/* A reduce_mean with keepdims over the trailing axes from *ax on (at
 * least one), the same as want_ax unless that is -1. */
static bool mean_over_trailing(const mlc_gbinding *b, int want_ax, int *ax) {
  bool red[MLC_GRAPH_MAX_DIMS];
  mlc_error e;
  int nd = b->args[0]->type.ndim;
  if (!b->attrs.keepdims || !mlc_gop_reduced_axes(b->op, &b->attrs, nd, red, &e)) return false;
  *ax = nd;
  while (*ax > 0 && red[*ax - 1]) (*ax)--;
  for (int d = 0; d < *ax; d++)
    if (red[d]) return false;
  return *ax < nd && (want_ax < 0 || *ax == want_ax);
}

/* Whether t is x's dims from ax on (layernorm's gamma and beta). */
static bool trailing_shape(const mlc_gtype *t, const mlc_gtype *x, int ax) {
  if (t->ndim != x->ndim - ax) return false;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != x->shape[ax + d]) return false;
  return true;
}

/* The decomposed layer norm exporters emit, from its division n:
 *   mean = reduce_mean(x, trailing axes, keepdims)   d = x - mean
 *   var = reduce_mean(d ** 2 (or d * d), same axes)  n = d / sqrt(var + eps)
 *   y = n * gamma [+ beta]
 * with every intermediate used only inside the pattern. Rewrites y's
 * binding to layernorm(x, gamma[, beta]); the rest becomes unused. */
static void match_layernorm(mlc_gmodule *m, mlc_gfunc *f, mlc_gbinding *n) {
  mlc_gbinding *s = def_used(f, n->args[1], MLC_GOP_SQRT, 1);
  mlc_gbinding *ve = s ? def_used(f, s->args[0], MLC_GOP_ADD, 1) : NULL;
  if (!ve) return;
  double eps;
  int ax, side = scalar_const(ve->args[1], &eps) ? 0 : 1;
  if (!scalar_const(ve->args[1 - side], &eps) || !(eps > 0)) return;
  mlc_gbinding *var = def_used(f, ve->args[side], MLC_GOP_REDUCE_MEAN, 1);
  if (!var || !mean_over_trailing(var, -1, &ax)) return;
  mlc_gvar *dv = n->args[0];
  mlc_gbinding *p = def_used(f, var->args[0], MLC_GOP_POWER, 1);
  bool squared = p && p->args[0] == dv && p->attrs.exponent == 2;
  if (!squared && (p = def_used(f, var->args[0], MLC_GOP_MULTIPLY, 1)))
    squared = p->args[0] == dv && p->args[1] == dv;
  /* d feeds the square (once as power, twice as d * d) and the division */
  int d_uses = squared && p->op == MLC_GOP_POWER ? 2 : 3;
  mlc_gbinding *d = squared ? def_used(f, dv, MLC_GOP_SUBTRACT, d_uses) : NULL;
  mlc_gbinding *mean = d ? def_used(f, d->args[1], MLC_GOP_REDUCE_MEAN, 1) : NULL;
  int mean_ax;
  if (!mean || mean->args[0] != d->args[0] || !mean_over_trailing(mean, ax, &mean_ax)) return;
  mlc_gvar *x = d->args[0];
  mlc_gbinding *mul = sole_consumer(f, n->var, MLC_GOP_MULTIPLY);
  mlc_gvar *gamma = mul ? other_arg(mul, n->var) : NULL;
  if (!gamma || gamma == n->var || !trailing_shape(&gamma->type, &x->type, ax)) return;
  mlc_gbinding *last = mul, *add = sole_consumer(f, mul->var, MLC_GOP_ADD);
  mlc_gvar *beta = add ? other_arg(add, mul->var) : NULL;
  if (beta && beta != mul->var && trailing_shape(&beta->type, &x->type, ax)) last = add;
  else beta = NULL;
  const mlc_gbinding *chain[] = {d, p, n, mul, last};
  for (int i = 0; i < MLC_COUNTOF(chain); i++)
    if (!mlc_gtype_equal(&chain[i]->var->type, &x->type)) return;
  mlc_gvar **args = MLC_NEW_ARRAY(m->arena, mlc_gvar *, 3);
  args[0] = x, args[1] = gamma, args[2] = beta;
  mlc_gattrs_init(MLC_GOP_LAYERNORM, &last->attrs);
  last->attrs.axis = ax;
  last->attrs.eps = eps;
  last->op = MLC_GOP_LAYERNORM;
  last->args = args;
  last->n_args = beta ? 3 : 2;
}

/* x / sqrt(2) or x * (1 / sqrt(2)), used once: its x, or NULL. */
static mlc_gvar *scaled_by_rsqrt2(mlc_gfunc *f, const mlc_gvar *v) {
  mlc_gbinding *b = def_used(f, v, MLC_GOP_DIVIDE, 1);
  if (b) return const_near(b->args[1], M_SQRT2) ? b->args[0] : NULL;
  if (!(b = def_used(f, v, MLC_GOP_MULTIPLY, 1))) return NULL;
  for (int side = 0; side < 2; side++)
    if (const_near(b->args[1 - side], M_SQRT1_2)) return b->args[side];
  return NULL;
}

/* The erf GELU, x * 0.5 * (1 + erf(x / sqrt(2))), from its erf e, with
 * the products in any of the orders exporters use:
 *   (x * a) * 0.5   (x * 0.5) * a   (a * 0.5) * x   where a = 1 + erf(...).
 * Rewrites the last product's binding to gelu(x). */
static void match_gelu(mlc_gfunc *f, mlc_gbinding *e) {
  mlc_gvar *x = scaled_by_rsqrt2(f, e->args[0]);
  mlc_gbinding *a = x ? sole_consumer(f, e->var, MLC_GOP_ADD) : NULL;
  if (!a || !const_near(other_arg(a, e->var), 1)) return;
  mlc_gbinding *m1 = sole_consumer(f, a->var, MLC_GOP_MULTIPLY), *last = NULL;
  mlc_gvar *p = m1 ? other_arg(m1, a->var) : NULL;
  if (!p || p == a->var) return;
  mlc_gbinding *m2 = sole_consumer(f, m1->var, MLC_GOP_MULTIPLY);
  mlc_gvar *q = m2 ? other_arg(m2, m1->var) : NULL;
  mlc_gbinding *half = def_used(f, p, MLC_GOP_MULTIPLY, 1);
  if (p == x && q && const_near(q, 0.5)) last = m2;
  else if (const_near(p, 0.5) && q == x) last = m2;
  else if (half && other_arg(half, x) && const_near(other_arg(half, x), 0.5)) last = m1;
  if (!last || !mlc_gtype_equal(&last->var->type, &x->type)) return;
  mlc_gattrs_init(MLC_GOP_GELU, &last->attrs);
  last->op = MLC_GOP_GELU;
  last->args[0] = x;
  last->n_args = 1;
}

bool mlc_graph_rewrite_patterns(mlc_gmodule *m, mlc_error *err) {
  for (int i = 0; i < m->n_funcs; i++) {
    mlc_gfunc *f = m->funcs[i];
    for (int j = 0; j < f->n_bindings; j++) {
      mlc_gbinding *b = &f->bindings[j];
      if (b->kind != MLC_GCALL_OP) continue;
      if (b->op == MLC_GOP_DIVIDE) match_layernorm(m, f, b);
      else if (b->op == MLC_GOP_ERF) match_gelu(f, b);
    }
    mlc_gfunc_remove_unused(m, f);
  }
  return mlc_graph_verify(m, err);
}
