/* The rewrite pass: multiply + add -> ewise_fma (as the notes'
 * EwiseFMARewriter). */
#include "graph/graph_impl.h"

#include <string.h>

/* The multiply binding defining v in f when v is used nowhere else, or NULL. */
/* u counts the uses before any rewrite: a rewrite only adds uses of the
 * product's operands, which have another use (the product) anyway, and
 * removes the only use of a product, which no later add reads. */
static const mlc_gbinding *single_use_multiply(const mlc_gfunc *f, const mlc_guses *u,
                                               const mlc_gvar *v) {
  int d;
  if (v->kind != MLC_GVAR_BOUND || mlc_guses_count(u, v) != 1) return NULL;
  if (!mlc_gmap_get(&u->def, v, &d)) return NULL;
  const mlc_gbinding *b = &f->bindings[d];
  return b->kind == MLC_GCALL_OP && b->op == MLC_GOP_MULTIPLY ? b : NULL;
}

static void rewrite_func(mlc_gmodule *m, mlc_gfunc *f) {
  mlc_arena *ua = mlc_arena_new_child(m->arena);
  mlc_guses u;
  mlc_guses_init(&u, ua, f);
  for (int i = 0; i < f->n_bindings; i++) {
    mlc_gbinding *b = &f->bindings[i];
    if (b->kind != MLC_GCALL_OP || b->op != MLC_GOP_ADD) continue;
    /* add is commutative: the product may be either operand. */
    for (int side = 0; side < 2; side++) {
      const mlc_gbinding *mul = single_use_multiply(f, &u, b->args[side]);
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
  mlc_arena_free(ua);
}

bool mlc_graph_rewrite_fma(mlc_gmodule *m, mlc_error *err) {
  for (int i = 0; i < m->n_funcs; i++) {
    rewrite_func(m, m->funcs[i]);
    mlc_gfunc_remove_unused(m, m->funcs[i]);
  }
  return mlc_graph_verify(m, err);
}
