/* Pattern rewrite (multiply + add -> ewise_fma, as the notes' EwiseFMARewriter)
 * and dead-code removal (remove_all_unused, plus unused sub-functions,
 * prim_funcs and constants, after sending calls of identical prim_funcs to
 * one of them). */
#include "graph/graph_impl.h"

#include <string.h>

/* The multiply binding defining v in f when v is used nowhere else, or NULL. */
static const mlc_gbinding *single_use_multiply(const mlc_gfunc *f, const mlc_gvar *v) {
  if (v->kind != MLC_GVAR_BOUND || mlc_gfunc_uses(f, v) != 1) return NULL;
  int d = mlc_gfunc_def(f, v);
  if (d < 0) return NULL;
  const mlc_gbinding *b = &f->bindings[d];
  return b->kind == MLC_GCALL_OP && b->op == MLC_GOP_MULTIPLY ? b : NULL;
}

static void rewrite_func(mlc_gmodule *m, mlc_gfunc *f) {
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding *b = &f->bindings[i];
    if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_ADD) continue;
    /* add is commutative: the product may be either operand. */
    for (int side = 0; side < 2; side++) {
      const mlc_gbinding *mul = single_use_multiply(f, b->args[side]);
      if (!mul) continue;
      mlc_gvar *addend = b->args[1 - side];
      mlc_gvar **args = MLC_NEW_ARRAY(m->arena, mlc_gvar *, 3);
      args[0] = mul->args[0];
      args[1] = mul->args[1];
      args[2] = addend;
      b->op = MLC_GOP_EWISE_FMA;
      b->args = args;
      b->n_args = 3;
      break;
    }
  }
}

static bool is_used(const mlc_gfunc *f, const mlc_gvar *v) { return mlc_gfunc_uses(f, v) > 0; }

/* Drop bindings whose result nothing uses, last first so chains go too. */
static void remove_unused_bindings(mlc_gmodule *m, mlc_gfunc *f) {
  bool changed = true;
  while (changed) {
    changed = false;
    int k = 0;
    mlc_gbinding *bs = MLC_NEW_ARRAY(m->arena, mlc_gbinding, f->n_bindings + 1);
    for (int i = 0; i < f->n_bindings; i++)
      if (is_used(f, f->bindings[i].var)) bs[k++] = f->bindings[i];
      else changed = true;
    f->bindings = bs;
    f->n_bindings = k;
  }
}

bool mlc_graph_rewrite_fma(mlc_gmodule *m, mlc_error *err) {
  for (int i = 0; i < m->n_funcs; i++) {
    rewrite_func(m, m->funcs[i]);
    remove_unused_bindings(m, m->funcs[i]);
  }
  return mlc_graph_verify(m, err);
}

/* ---- dead code ------------------------------------------------------------- */

static bool func_called(const mlc_gmodule *m, const mlc_gfunc *g) {
  for (int i = 0; i < m->n_funcs; i++)
    for (int j = 0; j < m->funcs[i]->n_bindings; j++) {
      const mlc_gbinding *b = &m->funcs[i]->bindings[j];
      if (b->kind == MLC_GCALL_FUNC && b->callee == g) return true;
    }
  return false;
}

static bool tir_called(const mlc_gmodule *m, const mlc_prim_func *p) {
  for (int i = 0; i < m->n_funcs; i++)
    for (int j = 0; j < m->funcs[i]->n_bindings; j++) {
      const mlc_gbinding *b = &m->funcs[i]->bindings[j];
      if (b->kind == MLC_GCALL_TIR && b->tir == p) return true;
    }
  return false;
}

static bool const_used(const mlc_gmodule *m, const mlc_gvar *c) {
  for (int i = 0; i < m->n_funcs; i++)
    if (is_used(m->funcs[i], c)) return true;
  return false;
}

void mlc_graph_remove_unused(mlc_gmodule *m) {
  for (int i = 0; i < m->n_funcs; i++) remove_unused_bindings(m, m->funcs[i]);
  int k = 0;
  for (int i = 0; i < m->n_funcs; i++)
    if (strcmp(m->funcs[i]->name, "main") == 0 || func_called(m, m->funcs[i]))
      m->funcs[k++] = m->funcs[i];
  m->n_funcs = k;
  k = 0;
  for (int i = 0; i < m->tir->n_funcs; i++)
    if (tir_called(m, m->tir->funcs[i])) m->tir->funcs[k++] = m->tir->funcs[i];
  m->tir->n_funcs = k;
  k = 0;
  for (int i = 0; i < m->n_consts; i++)
    if (const_used(m, m->consts[i])) m->consts[k++] = m->consts[i];
  m->n_consts = k;
}

/* Calls of structurally equal prim_funcs (two identical layers) go to the
 * first of them, so each distinct kernel is compiled once. */
static void dedup_prim_funcs(mlc_gmodule *m) {
  int n = m->tir->n_funcs;
  uint64_t *h = mlc_xmalloc(sizeof *h * (size_t)(n + 1));
  for (int i = 0; i < n; i++) h[i] = mlc_func_struct_hash(m->tir->funcs[i]);
  for (int i = 0; i < n; i++) {
    mlc_prim_func *p = m->tir->funcs[i], *first = p;
    for (int j = 0; j < i && first == p; j++)
      if (h[j] == h[i] && mlc_func_struct_equal(m->tir->funcs[j], p)) first = m->tir->funcs[j];
    if (first == p) continue;
    for (int k = 0; k < m->n_funcs; k++)
      for (int b = 0; b < m->funcs[k]->n_bindings; b++)
        if (m->funcs[k]->bindings[b].tir == p) m->funcs[k]->bindings[b].tir = first;
  }
  mlc_free(h);
}

bool mlc_graph_dce(mlc_gmodule *m, mlc_error *err) {
  dedup_prim_funcs(m);
  mlc_graph_remove_unused(m);
  return mlc_graph_verify(m, err);
}
