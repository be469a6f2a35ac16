/* Constant folding: an op whose arguments are all constants (the MLP's
 * transposed weights) is evaluated at compile time into a new constant, so
 * the compiled model does not redo it on every call. */
#include "graph/graph_impl.h"

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

static void fold_func(mlc_gmodule *m, mlc_gfunc *f) {
  int k = 0;
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding *b = &f->bindings[i];
    bool is_output = false;
    for (int j = 0; j < f->n_outputs; j++) is_output |= f->outputs[j] == b->var;
    if (!all_const(b) || is_output) {
      f->bindings[k++] = *b;
      continue;
    }
    float *in[8];
    for (int j = 0; j < b->n_args; j++) in[j] = b->args[j]->data;
    mlc_gvar *c = mlc_gvar_new(m, b->var->name, MLC_GVAR_CONST, &b->var->type);
    c->data = mlc_arena_alloc(m->arena, sizeof(float) * (size_t)mlc_gtype_numel(&c->type));
    mlc_graph_ref_op(b, in, c->data);
    add_const(m, c);
    replace_uses(f, b->var, c);
  }
  f->n_bindings = k;
}

bool mlc_graph_fold_constants(mlc_gmodule *m, mlc_error *err) {
  for (int i = 0; i < m->n_funcs; i++) fold_func(m, m->funcs[i]);
  mlc_graph_remove_unused(m);
  return mlc_graph_verify(m, err);
}
