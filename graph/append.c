/* The append pass: a concat in main of a model input and other rows,
 * along an axis with only extents of 1 before it, whose result is a model
 * output, becomes an append. Its kernel writes only the new rows; the
 * entry copies the input in first unless the caller passed the output's
 * memory as the input. A KV cache of a decode step (past rows in, past
 * and new rows out) is so extended in place: no copy of the cache per
 * step when the caller passes one buffer, allocated for the bound, as
 * both. */
#include "graph/graph_impl.h"

static bool is_param(const mlc_gfunc *f, const mlc_gvar *v) {
  for (int i = 0; i < f->n_params; i++)
    if (f->params[i] == v) return true;
  return false;
}

static bool appends_to_input(const mlc_gfunc *f, const mlc_gbinding *b) {
  if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_CONCAT || b->n_args != 2 ||
      !is_param(f, b->args[0]) || !mlc_gfunc_is_output(f, b->var))
    return false;
  const mlc_gtype *t = &b->args[0]->type;
  int ax = mlc_gop_axis(b->attrs.axis, t->ndim);
  for (int d = 0; d < ax; d++)
    if (t->shape[d] != 1) return false;
  return ax >= 0;
}

bool mlc_graph_append_in_place(mlc_gmodule *m, mlc_error *err) {
  mlc_gfunc *f = mlc_graph_main(m);
  for (int i = 0; i < f->n_bindings; i++)
    if (appends_to_input(f, &f->bindings[i])) f->bindings[i].op = MLC_GOP_APPEND;
  return mlc_graph_verify(m, err);
}

bool mlc_gbinding_appends(const mlc_gbinding *b) {
  return (b->kind == MLC_GCALL_OP || b->kind == MLC_GCALL_TIR) && b->op == MLC_GOP_APPEND;
}
