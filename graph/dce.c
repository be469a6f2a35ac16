/* The dce pass: dead-code removal (remove_all_unused, plus unused
 * sub-functions, prim_funcs and constants, after sending calls of identical
 * prim_funcs to one of them). */
#include "graph/graph_impl.h"

#include <string.h>

/* Drop bindings whose result nothing uses, chains included: one walk from
 * the last binding back, keeping a binding when an output or a kept
 * binding uses its var (bindings are in dataflow order). */
void mlc_gfunc_remove_unused(mlc_gmodule *m, mlc_gfunc *f) {
  mlc_arena *a = mlc_arena_new_child(m->arena);
  mlc_gmap live = {.a = a};
  for (int i = 0; i < f->n_outputs; i++) mlc_gmap_put(&live, f->outputs[i], 1);
  bool *keep = MLC_NEW_ARRAY(a, bool, f->n_bindings + 1);
  int k = 0;
  for (int i = f->n_bindings - 1; i >= 0; i--) {
    const mlc_gbinding *b = &f->bindings[i];
    keep[i] = mlc_gmap_get(&live, b->var, NULL);
    if (!keep[i]) continue;
    k++;
    for (int j = 0; j < b->n_args; j++) mlc_gmap_put(&live, b->args[j], 1);
  }
  if (k < f->n_bindings) {
    mlc_gbinding *bs = MLC_NEW_ARRAY(m->arena, mlc_gbinding, k + 1);
    k = 0;
    for (int i = 0; i < f->n_bindings; i++)
      if (keep[i]) bs[k++] = f->bindings[i];
    f->bindings = bs;
    f->n_bindings = k;
  }
  mlc_arena_free(a);
}


/* Sub-functions and prim_funcs that some function calls, constants that
 * some function uses: one walk, then one lookup per candidate. */
void mlc_graph_remove_unused(mlc_gmodule *m) {
  for (int i = 0; i < m->n_funcs; i++) mlc_gfunc_remove_unused(m, m->funcs[i]);
  mlc_arena *a = mlc_arena_new_child(m->arena);
  mlc_gmap called = {.a = a};
  for (int i = 0; i < m->n_funcs; i++)
    for (int j = 0; j < m->funcs[i]->n_bindings; j++) {
      const mlc_gbinding *b = &m->funcs[i]->bindings[j];
      if (b->kind == MLC_GCALL_FUNC) mlc_gmap_put(&called, b->callee, 1);
    }
  int k = 0;
  for (int i = 0; i < m->n_funcs; i++)
    if (strcmp(m->funcs[i]->name, "main") == 0 || mlc_gmap_get(&called, m->funcs[i], NULL))
      m->funcs[k++] = m->funcs[i];
  m->n_funcs = k;
  /* prim_funcs called by the functions kept (not by those just dropped). */
  for (int i = 0; i < m->n_funcs; i++)
    for (int j = 0; j < m->funcs[i]->n_bindings; j++) {
      const mlc_gbinding *b = &m->funcs[i]->bindings[j];
      if (b->kind == MLC_GCALL_TIR) mlc_gmap_put(&called, b->tir, 1);
    }
  k = 0;
  for (int i = 0; i < m->tir->n_funcs; i++)
    if (mlc_gmap_get(&called, m->tir->funcs[i], NULL)) m->tir->funcs[k++] = m->tir->funcs[i];
  m->tir->n_funcs = k;
  mlc_gmap used = {.a = a};
  for (int i = 0; i < m->n_funcs; i++) {
    const mlc_gfunc *f = m->funcs[i];
    for (int j = 0; j < f->n_bindings; j++)
      for (int x = 0; x < f->bindings[j].n_args; x++)
        mlc_gmap_put(&used, f->bindings[j].args[x], 1);
    for (int j = 0; j < f->n_outputs; j++) mlc_gmap_put(&used, f->outputs[j], 1);
  }
  k = 0;
  for (int i = 0; i < m->n_consts; i++)
    if (mlc_gmap_get(&used, m->consts[i], NULL)) m->consts[k++] = m->consts[i];
  m->n_consts = k;
  mlc_arena_free(a);
}

/* The structural hash and equality with their serializations in a
 * scratch arena freed at once, so that dedup's scratch stays the size of
 * its maps; a child of a, so under the pass's escape point. */
static uint64_t hash_of(mlc_arena *a, const mlc_prim_func *p) {
  mlc_arena *s = mlc_arena_new_child(a);
  uint64_t h = mlc_func_struct_hash_in(s, p);
  mlc_arena_free(s);
  return h;
}

static bool equal(mlc_arena *a, const mlc_prim_func *x, const mlc_prim_func *y) {
  mlc_arena *s = mlc_arena_new_child(a);
  bool eq = mlc_func_struct_equal_in(s, x, y);
  mlc_arena_free(s);
  return eq;
}

/* Calls of structurally equal prim_funcs (two identical layers) go to the
 * first of them, so each distinct kernel is compiled once. */
static void dedup_prim_funcs(mlc_gmodule *m) {
  int n = m->tir->n_funcs;
  mlc_arena *a = mlc_arena_new_child(m->arena);
  mlc_gmap by_hash = {.a = a}; /* structural hash -> index of its first function + 1 */
  mlc_gmap dup = {.a = a};     /* a duplicate prim_func -> index of its first */
  for (int i = 0; i < n; i++) {
    mlc_prim_func *p = m->tir->funcs[i];
    uint64_t h = hash_of(a, p);
    /* The hash as a key (a pointer-sized int): the first function of each
     * class under key h, or h + 1, h + 2, ... when a different function
     * took h (a collision); lookups walk the same keys. */
    for (uint64_t k = h;; k++) {
      int first;
      const void *key = (const void *)(uintptr_t)(k ? k : 1);
      if (!mlc_gmap_get(&by_hash, key, &first)) {
        mlc_gmap_put(&by_hash, key, i + 1);
        break;
      }
      if (equal(a, m->tir->funcs[first - 1], p)) {
        mlc_gmap_put(&dup, p, first - 1);
        break;
      }
    }
  }
  for (int k = 0; k < m->n_funcs; k++)
    for (int b = 0; b < m->funcs[k]->n_bindings; b++) {
      int first;
      mlc_gbinding *bd = &m->funcs[k]->bindings[b];
      if (bd->tir && mlc_gmap_get(&dup, bd->tir, &first)) bd->tir = m->tir->funcs[first];
    }
  mlc_arena_free(a);
}

bool mlc_graph_dce(mlc_gmodule *m, mlc_error *err) {
  dedup_prim_funcs(m);
  mlc_graph_remove_unused(m);
  return mlc_graph_verify(m, err);
}
