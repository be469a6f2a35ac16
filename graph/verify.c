/* The graph verifier, run after every pass. */
#include "graph/graph_impl.h"

#include <string.h>

void mlc_gtype_of_buffer(const mlc_buffer *b, mlc_gtype *t) {
  memset(t, 0, sizeof *t);
  t->dtype = b->dtype;
  t->ndim = b->ndim;
  for (int i = 0; i < b->ndim && i < MLC_GRAPH_MAX_DIMS; i++) t->shape[i] = b->shape[i];
}

/* Whether v is visible at binding `upto` of f: a param, a constant of the
 * module, or defined by an earlier binding. */
static bool visible(const mlc_gmodule *m, const mlc_gfunc *f, int upto, const mlc_gvar *v) {
  switch (v->kind) {
  case MLC_GVAR_PARAM:
    for (int i = 0; i < f->n_params; i++)
      if (f->params[i] == v) return true;
    return false;
  case MLC_GVAR_CONST:
    for (int i = 0; i < m->n_consts; i++)
      if (m->consts[i] == v) return true;
    return false;
  case MLC_GVAR_BOUND:
    for (int i = 0; i < upto; i++)
      if (f->bindings[i].var == v) return true;
    return false;
  }
  mlc_unreachable();
}

static bool in_tir(const mlc_gmodule *m, const mlc_prim_func *p) {
  for (int i = 0; i < m->tir->n_funcs; i++)
    if (m->tir->funcs[i] == p) return true;
  return false;
}

static bool check_tir_call(const mlc_gmodule *m, const mlc_gbinding *b, mlc_error *err) {
  const mlc_prim_func *p = b->tir;
  if (!p || !in_tir(m, p)) return mlc_error_set(err, "call_tir of a prim_func not in the module");
  if (p->n_params != b->n_args + 1)
    return mlc_error_set(err, "call_tir %s: %d args + output for %d params", p->name, b->n_args,
                         p->n_params);
  for (int i = 0; i <= b->n_args; i++) {
    mlc_gtype t;
    mlc_gtype_of_buffer(p->params[i], &t);
    const mlc_gtype *want = i < b->n_args ? &b->args[i]->type : &b->var->type;
    if (!mlc_gtype_equal(&t, want)) {
      char s0[128], s1[128];
      mlc_gtype_str(&t, s0, sizeof s0);
      mlc_gtype_str(want, s1, sizeof s1);
      return mlc_error_set(err, "call_tir %s: param %s has shape %s, the call passes %s",
                           p->name, p->params[i]->name, s0, s1);
    }
  }
  return true;
}

static bool check_func_call(const mlc_gbinding *b, mlc_error *err) {
  const mlc_gfunc *g = b->callee;
  if (!g->primitive) return mlc_error_set(err, "call of %s, which is not primitive", g->name);
  if (g->n_params != b->n_args || g->n_outputs != 1)
    return mlc_error_set(err, "call of %s: %d args for %d params", g->name, b->n_args,
                         g->n_params);
  for (int i = 0; i < b->n_args; i++)
    if (!mlc_gtype_equal(&g->params[i]->type, &b->args[i]->type))
      return mlc_error_set(err, "call of %s: arg %d does not match param %s", g->name, i,
                           g->params[i]->name);
  if (!mlc_gtype_equal(&g->outputs[0]->type, &b->var->type))
    return mlc_error_set(err, "call of %s: result type differs from the binding's", g->name);
  return true;
}

/* Constant gather indices must be whole numbers inside the axis: the
 * kernel would read row 0 for any other. */
static bool check_gather_indices(const mlc_gbinding *b, mlc_error *err) {
  const mlc_gvar *ind = b->args[1];
  if (b->op != MLC_GOP_GATHER || ind->kind != MLC_GVAR_CONST) return true;
  int64_t n = b->args[0]->type.shape[mlc_gop_axis(b->attrs.axis, b->args[0]->type.ndim)];
  for (int64_t k = 0; k < mlc_gtype_numel(&ind->type); k++) {
    double v = ind->data[k];
    if (!(v >= (double)-n && v < (double)n) || v != (double)(int64_t)v)
      return mlc_error_set(err, "gather: index %g (element %lld of %s) is not a whole number in "
                                "[%lld, %lld)",
                           v, (long long)k, ind->name, (long long)-n, (long long)n);
  }
  return true;
}

static bool check_binding(const mlc_gmodule *m, const mlc_gfunc *f, int i, mlc_error *err) {
  const mlc_gbinding *b = &f->bindings[i];
  if (!b->var || b->var->kind != MLC_GVAR_BOUND)
    return mlc_error_set(err, "binding %d defines no bound var", i);
  for (int j = 0; j < i; j++)
    if (strcmp(f->bindings[j].var->name, b->var->name) == 0 || f->bindings[j].var == b->var)
      return mlc_error_set(err, "%s is defined twice", b->var->name);
  for (int j = 0; j < b->n_args; j++)
    if (!visible(m, f, i, b->args[j]))
      return mlc_error_set(err, "%s uses %s before it is defined", b->var->name,
                           b->args[j]->name);
  switch (b->kind) {
  case MLC_GCALL_OP: {
    mlc_gtype ts[MLC_GRAPH_MAX_ARGS], out;
    if (!mlc_gop_arity_ok(b->op, b->n_args)) return mlc_gop_arity_error(b->op, b->n_args, err);
    for (int j = 0; j < b->n_args; j++) ts[j] = b->args[j]->type;
    if (!mlc_gop_infer(b->op, &b->attrs, b->n_args, ts, &out, err)) return false;
    if (!mlc_gtype_equal(&out, &b->var->type))
      return mlc_error_set(err, "the op's result type differs from the binding's");
    return check_gather_indices(b, err);
  }
  case MLC_GCALL_FUNC:
    if (f->primitive) return mlc_error_set(err, "a primitive function calls %s", b->callee->name);
    return check_func_call(b, err);
  case MLC_GCALL_TIR: return check_tir_call(m, b, err);
  }
  mlc_unreachable();
}

static bool check_func(const mlc_gmodule *m, const mlc_gfunc *f, mlc_error *err) {
  for (int i = 0; i < f->n_params; i++)
    if (f->params[i]->kind != MLC_GVAR_PARAM)
      return mlc_error_set(err, "param %s is not a param var", f->params[i]->name);
  for (int i = 0; i < f->n_bindings; i++)
    if (!check_binding(m, f, i, err))
      return mlc_error_prefix(err, "binding %s",
                              f->bindings[i].var ? f->bindings[i].var->name : "?");
  if (f->n_outputs < 1) return mlc_error_set(err, "no outputs");
  if (f->primitive && f->n_outputs != 1) return mlc_error_set(err, "a primitive function has one output");
  for (int i = 0; i < f->n_outputs; i++)
    if (!visible(m, f, f->n_bindings, f->outputs[i]))
      return mlc_error_set(err, "output %s is not defined", f->outputs[i]->name);
  return true;
}

bool mlc_graph_verify(const mlc_gmodule *m, mlc_error *err) {
  if (!mlc_graph_main(m)) return mlc_error_set(err, "graph: no main function");
  for (int i = 0; i < m->n_funcs; i++) {
    for (int j = 0; j < i; j++)
      if (strcmp(m->funcs[i]->name, m->funcs[j]->name) == 0)
        return mlc_error_set(err, "graph: function %s is defined twice", m->funcs[i]->name);
    if (!check_func(m, m->funcs[i], err))
      return mlc_error_prefix(err, "graph: function %s", m->funcs[i]->name);
  }
  for (int i = 0; i < m->tir->n_funcs; i++)
    if (!mlc_verify_func(m->tir->funcs[i], err))
      return mlc_error_prefix(err, "graph: prim_func %s", m->tir->funcs[i]->name);
  return true;
}
