/* Maps from pointers or strings to ints, open addressing in an arena: the
 * passes look vars and names up in O(1), so a pass over n bindings stays
 * O(n) (scans of the function per binding made a 10,000-node model take
 * minutes). */
#include "graph/graph_impl.h"

#include <string.h>

static uint64_t key_hash(const mlc_gmap *g, const void *key) {
  if (g->strings) return mlc_hash_str(key, 0);
  uintptr_t p = (uintptr_t)key;
  return mlc_hash_bytes(&p, sizeof p, 0);
}

static bool key_eq(const mlc_gmap *g, const void *x, const void *y) {
  return g->strings ? strcmp(x, y) == 0 : x == y;
}

static int slot(const mlc_gmap *g, const void *key) {
  int i = (int)(key_hash(g, key) & (uint64_t)(g->cap - 1));
  while (g->keys[i] && !key_eq(g, g->keys[i], key)) i = (i + 1) & (g->cap - 1);
  return i;
}

static void grow(mlc_gmap *g) {
  mlc_gmap old = *g;
  g->cap = g->cap ? 2 * g->cap : 64;
  g->keys = MLC_NEW_ARRAY(g->a, const void *, g->cap);
  g->vals = MLC_NEW_ARRAY(g->a, int, g->cap);
  memset(g->keys, 0, sizeof(*g->keys) * (size_t)g->cap);
  g->len = 0;
  for (int i = 0; i < old.cap; i++)
    if (old.keys[i]) mlc_gmap_put(g, old.keys[i], old.vals[i]);
}

void mlc_gmap_put(mlc_gmap *g, const void *key, int val) {
  if (2 * (g->len + 1) > g->cap) grow(g);
  int i = slot(g, key);
  if (!g->keys[i]) {
    g->keys[i] = key;
    g->len++;
  }
  g->vals[i] = val;
}

bool mlc_gmap_get(const mlc_gmap *g, const void *key, int *val) {
  if (!g->cap) return false;
  int i = slot(g, key);
  if (!g->keys[i]) return false;
  if (val) *val = g->vals[i];
  return true;
}

static void count_one(mlc_gmap *count, const mlc_gvar *v) {
  int c = 0;
  mlc_gmap_get(count, v, &c);
  mlc_gmap_put(count, v, c + 1);
}

void mlc_guses_init(mlc_guses *u, mlc_arena *a, const mlc_gfunc *f) {
  u->count = (mlc_gmap){.a = a};
  u->first = (mlc_gmap){.a = a};
  u->def = (mlc_gmap){.a = a};
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    for (int j = 0; j < b->n_args; j++) {
      if (!mlc_gmap_get(&u->first, b->args[j], NULL)) mlc_gmap_put(&u->first, b->args[j], i);
      count_one(&u->count, b->args[j]);
    }
    if (b->var && !mlc_gmap_get(&u->def, b->var, NULL)) mlc_gmap_put(&u->def, b->var, i);
  }
  for (int i = 0; i < f->n_outputs; i++) count_one(&u->count, f->outputs[i]);
}

int mlc_guses_count(const mlc_guses *u, const mlc_gvar *v) {
  int c = 0;
  mlc_gmap_get(&u->count, v, &c);
  return c;
}
