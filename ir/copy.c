/* Deep copy of functions and modules, and substitution of vars.
 *
 * Both are hot in a tuner (every candidate replays its trace on a fresh
 * copy), so they avoid the heap: the copy's old->new map of vars and
 * buffers is an open-addressing table on the stack that grows into the
 * destination arena only for big functions, and substitution returns the
 * input node itself wherever nothing below it changed.
 */
#include "ir/ir.h"

#include <string.h>

/* ---- pointer map -------------------------------------------------------- */

enum { MAP_INLINE = 256 }; /* slots on the stack; a power of two */

typedef struct ptr_map {
  const void **keys;
  void **vals;
  uint32_t cap, n; /* cap a power of two, kept at most half full */
  mlc_arena *a;    /* where a grown table goes */
  const void *inline_keys[MAP_INLINE];
  void *inline_vals[MAP_INLINE];
} ptr_map;

static void map_init(ptr_map *m, mlc_arena *a) {
  m->keys = m->inline_keys;
  m->vals = m->inline_vals;
  m->cap = MAP_INLINE;
  m->n = 0;
  m->a = a;
  memset(m->inline_keys, 0, sizeof m->inline_keys);
}

static uint32_t ptr_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (uint32_t)x;
}

static void *map_get(const ptr_map *m, const void *k) {
  for (uint32_t i = ptr_hash(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == k) return m->vals[i];
    if (!m->keys[i]) return NULL;
  }
}

static void map_put(ptr_map *m, const void *k, void *v);

static void map_grow(ptr_map *m) {
  const void **ok = m->keys;
  void **ov = m->vals;
  uint32_t ocap = m->cap;
  m->cap *= 2;
  m->n = 0;
  m->keys = MLC_NEW_ARRAY(m->a, const void *, m->cap);
  m->vals = MLC_NEW_ARRAY(m->a, void *, m->cap);
  for (uint32_t i = 0; i < ocap; i++)
    if (ok[i]) map_put(m, ok[i], ov[i]);
}

static void map_put(ptr_map *m, const void *k, void *v) {
  if (2 * (m->n + 1) > m->cap) map_grow(m);
  uint32_t i = ptr_hash(k) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) m->n++;
  m->keys[i] = k;
  m->vals[i] = v;
}

/* ---- deep copy ---------------------------------------------------------- */

/* A copy takes its memory from one zeroed block of the destination arena,
 * sized beforehand by a walk over the source (size_*): one arena call and
 * one memset instead of one per node. What the estimate missed (a var used
 * but never defined) falls back to the arena. */
typedef struct copier {
  mlc_arena *a;
  char *cur, *end; /* the presized block */
  ptr_map map;     /* old var/buffer -> its copy */
} copier;

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

static void *cp_alloc(copier *c, size_t n) {
  n = ALIGN8(n);
  if ((size_t)(c->end - c->cur) >= n) {
    void *p = c->cur;
    c->cur += n;
    return p;
  }
  return mlc_arena_alloc(c->a, n);
}

#define CP_NEW(c, T) ((T *)cp_alloc((c), sizeof(T)))
#define CP_ARRAY(c, T, n) ((T *)cp_alloc((c), sizeof(T) * (size_t)(n)))

/* Sizes, mirroring the cp_* functions below allocation by allocation. */
static size_t size_str(const char *s) { return s ? ALIGN8(strlen(s) + 1) : 0; }
static size_t size_ptrs(int n) { return ALIGN8(sizeof(void *) * (size_t)(n > 0 ? n : 1)); }

static size_t size_var(const mlc_var *v) { return ALIGN8(sizeof(mlc_var)) + size_str(v->name); }

static size_t size_expr(const mlc_expr *e);

static size_t size_buf(const mlc_buffer *b) {
  size_t t = ALIGN8(sizeof(mlc_buffer)) + size_str(b->name) + size_str(b->scope) +
             (b->ndim ? ALIGN8(sizeof(int64_t) * (size_t)b->ndim) : 0);
  if (b->dims) {
    t += size_ptrs(b->ndim);
    for (int d = 0; d < b->ndim; d++) t += size_expr(b->dims[d]);
  }
  return t;
}

static size_t size_expr(const mlc_expr *e) {
  if (!e) return 0;
  size_t n = ALIGN8(sizeof(mlc_expr));
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR:
    return n;
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
    return n + size_expr(e->bin.a) + size_expr(e->bin.b);
  case MLC_EXPR_NOT:
    return n + size_expr(e->bin.a);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return n + size_expr(e->sel.cond) + size_expr(e->sel.t) + size_expr(e->sel.f);
  case MLC_EXPR_LOAD:
    n += size_ptrs(e->load.buf->ndim);
    for (int i = 0; i < e->load.buf->ndim; i++) n += size_expr(e->load.indices[i]);
    return n;
  case MLC_EXPR_CAST:
    return n + size_expr(e->cast.value);
  case MLC_EXPR_CALL:
    n += size_ptrs(mlc_intrin_nargs(e->call.op));
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) n += size_expr(e->call.args[i]);
    return n;
  case MLC_EXPR_CALL_EXTERN:
    n += size_str(e->ext.name) + ALIGN8(sizeof(mlc_xarg) * (size_t)(e->ext.n_args ? e->ext.n_args : 1));
    n += size_ptrs(e->ext.n_kids);
    for (int i = 0; i < e->ext.n_args; i++)
      if (e->ext.args[i].buf) n += size_buf(e->ext.args[i].buf);
    for (int i = 0; i < e->ext.n_kids; i++) n += size_expr(e->ext.kids[i]);
    return n;
  }
  mlc_unreachable();
}

static size_t size_anns(const mlc_ann *anns, int n) {
  if (!anns || n == 0) return 0;
  size_t t = ALIGN8(sizeof(mlc_ann) * (size_t)n);
  for (int i = 0; i < n; i++)
    t += size_str(anns[i].key) + size_str(anns[i].s) + size_anns(anns[i].items, anns[i].n);
  return t;
}

static size_t size_regions(const mlc_region *rs, int n) {
  if (!rs || n == 0) return 0;
  size_t t = ALIGN8(sizeof(mlc_region) * (size_t)n);
  for (int i = 0; i < n; i++) {
    int nd = rs[i].buf->ndim;
    t += ALIGN8(sizeof(mlc_range) * (size_t)(nd > 0 ? nd : 1));
    for (int d = 0; d < nd; d++) t += size_expr(rs[i].ranges[d].min) + size_expr(rs[i].ranges[d].extent);
  }
  return t;
}

static size_t size_stmt(const mlc_stmt *s);

static size_t size_block(const mlc_block *b) {
  size_t t = ALIGN8(sizeof(mlc_block)) + size_str(b->name);
  if (b->n_iters) t += ALIGN8(sizeof(mlc_iter_var) * (size_t)b->n_iters);
  for (int i = 0; i < b->n_iters; i++)
    t += size_var(b->iters[i].var) + size_expr(b->iters[i].dom.min) + size_expr(b->iters[i].dom.extent);
  if (b->n_allocs) t += size_ptrs(b->n_allocs);
  for (int i = 0; i < b->n_allocs; i++) t += size_buf(b->allocs[i]);
  return t + size_regions(b->reads, b->n_reads) + size_regions(b->writes, b->n_writes) +
         size_anns(b->anns, b->n_anns) + size_stmt(b->init) + size_stmt(b->body);
}

static size_t size_stmt(const mlc_stmt *s) {
  if (!s) return 0;
  size_t t = ALIGN8(sizeof(mlc_stmt));
  switch (s->kind) {
  case MLC_STMT_FOR:
    return t + size_var(s->loop.var) + size_expr(s->loop.min) + size_expr(s->loop.extent) +
           size_str(s->loop.thread) + size_anns(s->loop.anns, s->loop.n_anns) +
           size_stmt(s->loop.body);
  case MLC_STMT_BLOCK_REALIZE:
    t += size_block(s->realize.block) + size_expr(s->realize.predicate);
    if (s->realize.values) {
      t += size_ptrs(s->realize.block->n_iters);
      for (int i = 0; i < s->realize.block->n_iters; i++) t += size_expr(s->realize.values[i]);
    }
    return t;
  case MLC_STMT_SEQ:
    t += size_ptrs(s->seq.n);
    for (int i = 0; i < s->seq.n; i++) t += size_stmt(s->seq.stmts[i]);
    return t;
  case MLC_STMT_STORE:
    t += size_ptrs(s->store.buf->ndim) + size_expr(s->store.value);
    for (int i = 0; i < s->store.buf->ndim; i++) t += size_expr(s->store.indices[i]);
    return t;
  case MLC_STMT_IF:
    return t + size_expr(s->if_.cond) + size_stmt(s->if_.then_s) + size_stmt(s->if_.else_s);
  case MLC_STMT_ALLOCATE:
    return t + size_buf(s->alloc.buf) + size_stmt(s->alloc.body);
  case MLC_STMT_EVALUATE:
    return t + size_expr(s->eval.value);
  }
  mlc_unreachable();
}

static size_t size_func(const mlc_prim_func *f) {
  size_t t = ALIGN8(sizeof(mlc_prim_func)) + size_str(f->name) + size_ptrs(f->n_params);
  for (int i = 0; i < f->n_params; i++) t += size_buf(f->params[i]);
  if (f->n_sizes) t += ALIGN8(sizeof(mlc_size_var) * (size_t)f->n_sizes);
  return t + size_anns(f->attrs, f->n_attrs) + size_stmt(f->body);
}

static const char *cp_str(copier *c, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = cp_alloc(c, n);
  memcpy(d, s, n);
  return d;
}

static mlc_expr *cp_expr(copier *c, const mlc_expr *e);

static mlc_var *cp_var(copier *c, const mlc_var *v) {
  mlc_var *n = map_get(&c->map, v);
  if (n) return n;
  n = CP_NEW(c, mlc_var);
  n->name = cp_str(c, v->name);
  n->dtype = v->dtype;
  map_put(&c->map, v, n);
  return n;
}

static mlc_buffer *cp_buf(copier *c, const mlc_buffer *b) {
  mlc_buffer *n = map_get(&c->map, b);
  if (n) return n;
  n = CP_NEW(c, mlc_buffer);
  *n = *b;
  n->name = cp_str(c, b->name);
  n->scope = cp_str(c, b->scope);
  n->shape = NULL;
  if (b->ndim) {
    n->shape = CP_ARRAY(c, int64_t, b->ndim);
    memcpy(n->shape, b->shape, sizeof(int64_t) * (size_t)b->ndim);
  }
  map_put(&c->map, b, n);
  if (b->dims) {
    n->dims = CP_ARRAY(c, mlc_expr *, b->ndim > 0 ? b->ndim : 1);
    for (int d = 0; d < b->ndim; d++) n->dims[d] = cp_expr(c, b->dims[d]);
  }
  return n;
}

static mlc_expr **cp_exprs(copier *c, mlc_expr *const *es, int n) {
  if (!es) return NULL;
  mlc_expr **r = CP_ARRAY(c, mlc_expr *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) r[i] = cp_expr(c, es[i]);
  return r;
}

static mlc_expr *cp_expr(copier *c, const mlc_expr *e) {
  if (!e) return NULL;
  mlc_expr *n = CP_NEW(c, mlc_expr);
  *n = *e;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
    return n;
  case MLC_EXPR_VAR:
    n->var = cp_var(c, e->var);
    return n;
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
    n->bin.a = cp_expr(c, e->bin.a);
    n->bin.b = cp_expr(c, e->bin.b);
    return n;
  case MLC_EXPR_NOT:
    n->bin.a = cp_expr(c, e->bin.a);
    return n;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    n->sel.cond = cp_expr(c, e->sel.cond);
    n->sel.t = cp_expr(c, e->sel.t);
    n->sel.f = cp_expr(c, e->sel.f);
    return n;
  case MLC_EXPR_LOAD:
    n->load.buf = cp_buf(c, e->load.buf);
    n->load.indices = cp_exprs(c, e->load.indices, e->load.buf->ndim);
    return n;
  case MLC_EXPR_CAST:
    n->cast.value = cp_expr(c, e->cast.value);
    return n;
  case MLC_EXPR_CALL:
    n->call.args = cp_exprs(c, e->call.args, mlc_intrin_nargs(e->call.op));
    return n;
  case MLC_EXPR_CALL_EXTERN:
    n->ext.name = cp_str(c, e->ext.name);
    n->ext.args = CP_ARRAY(c, mlc_xarg, e->ext.n_args ? e->ext.n_args : 1);
    for (int i = 0; i < e->ext.n_args; i++) {
      n->ext.args[i] = e->ext.args[i];
      if (e->ext.args[i].buf) n->ext.args[i].buf = cp_buf(c, e->ext.args[i].buf);
    }
    n->ext.kids = cp_exprs(c, e->ext.kids, e->ext.n_kids);
    return n;
  }
  mlc_unreachable();
}

static mlc_ann *cp_anns(copier *c, const mlc_ann *anns, int n) {
  if (!anns || n == 0) return NULL;
  mlc_ann *r = CP_ARRAY(c, mlc_ann, n);
  for (int i = 0; i < n; i++) {
    r[i] = anns[i];
    r[i].key = cp_str(c, anns[i].key);
    r[i].s = cp_str(c, anns[i].s);
    r[i].items = cp_anns(c, anns[i].items, anns[i].n); /* LIST and DICT values */
  }
  return r;
}

static mlc_region *cp_regions(copier *c, const mlc_region *rs, int n) {
  if (!rs || n == 0) return NULL;
  mlc_region *r = CP_ARRAY(c, mlc_region, n);
  for (int i = 0; i < n; i++) {
    int nd = rs[i].buf->ndim;
    r[i].buf = cp_buf(c, rs[i].buf);
    r[i].ranges = CP_ARRAY(c, mlc_range, nd > 0 ? nd : 1);
    for (int d = 0; d < nd; d++) {
      r[i].ranges[d].min = cp_expr(c, rs[i].ranges[d].min);
      r[i].ranges[d].extent = cp_expr(c, rs[i].ranges[d].extent);
    }
  }
  return r;
}

static mlc_stmt *cp_stmt(copier *c, const mlc_stmt *s);

static mlc_block *cp_block(copier *c, const mlc_block *b) {
  mlc_block *n = CP_NEW(c, mlc_block);
  *n = *b;
  n->name = cp_str(c, b->name);
  if (b->n_iters) {
    n->iters = CP_ARRAY(c, mlc_iter_var, b->n_iters);
    for (int i = 0; i < b->n_iters; i++) {
      n->iters[i].var = cp_var(c, b->iters[i].var);
      n->iters[i].dom.min = cp_expr(c, b->iters[i].dom.min);
      n->iters[i].dom.extent = cp_expr(c, b->iters[i].dom.extent);
      n->iters[i].kind = b->iters[i].kind;
    }
  } else {
    n->iters = NULL;
  }
  if (b->n_allocs) {
    n->allocs = CP_ARRAY(c, mlc_buffer *, b->n_allocs);
    for (int i = 0; i < b->n_allocs; i++) n->allocs[i] = cp_buf(c, b->allocs[i]);
  } else {
    n->allocs = NULL;
  }
  n->reads = cp_regions(c, b->reads, b->n_reads);
  n->writes = cp_regions(c, b->writes, b->n_writes);
  n->anns = cp_anns(c, b->anns, b->n_anns);
  n->init = cp_stmt(c, b->init);
  n->body = cp_stmt(c, b->body);
  return n;
}

static mlc_stmt *cp_stmt(copier *c, const mlc_stmt *s) {
  if (!s) return NULL;
  mlc_stmt *n = CP_NEW(c, mlc_stmt);
  *n = *s;
  switch (s->kind) {
  case MLC_STMT_FOR:
    n->loop.var = cp_var(c, s->loop.var);
    n->loop.min = cp_expr(c, s->loop.min);
    n->loop.extent = cp_expr(c, s->loop.extent);
    n->loop.thread = cp_str(c, s->loop.thread);
    n->loop.anns = cp_anns(c, s->loop.anns, s->loop.n_anns);
    n->loop.body = cp_stmt(c, s->loop.body);
    return n;
  case MLC_STMT_BLOCK_REALIZE:
    /* The block first: its iter vars get their copies before any use. */
    n->realize.block = cp_block(c, s->realize.block);
    n->realize.values = cp_exprs(c, s->realize.values, s->realize.block->n_iters);
    n->realize.predicate = cp_expr(c, s->realize.predicate);
    return n;
  case MLC_STMT_SEQ:
    n->seq.stmts = CP_ARRAY(c, mlc_stmt *, s->seq.n > 0 ? s->seq.n : 1);
    for (int i = 0; i < s->seq.n; i++) n->seq.stmts[i] = cp_stmt(c, s->seq.stmts[i]);
    return n;
  case MLC_STMT_STORE:
    n->store.buf = cp_buf(c, s->store.buf);
    n->store.indices = cp_exprs(c, s->store.indices, s->store.buf->ndim);
    n->store.value = cp_expr(c, s->store.value);
    return n;
  case MLC_STMT_IF:
    n->if_.cond = cp_expr(c, s->if_.cond);
    n->if_.then_s = cp_stmt(c, s->if_.then_s);
    n->if_.else_s = cp_stmt(c, s->if_.else_s);
    return n;
  case MLC_STMT_ALLOCATE:
    n->alloc.buf = cp_buf(c, s->alloc.buf);
    n->alloc.body = cp_stmt(c, s->alloc.body);
    return n;
  case MLC_STMT_EVALUATE:
    n->eval.value = cp_expr(c, s->eval.value);
    return n;
  }
  mlc_unreachable();
}

static mlc_prim_func *cp_func(copier *c, const mlc_prim_func *f) {
  mlc_prim_func *n = CP_NEW(c, mlc_prim_func);
  n->name = cp_str(c, f->name);
  n->n_params = f->n_params;
  n->params = CP_ARRAY(c, mlc_buffer *, f->n_params > 0 ? f->n_params : 1);
  n->n_sizes = f->n_sizes;
  n->sizes = NULL;
  if (f->n_sizes) {
    n->sizes = CP_ARRAY(c, mlc_size_var, f->n_sizes);
    for (int k = 0; k < f->n_sizes; k++)
      n->sizes[k] = (mlc_size_var){cp_var(c, f->sizes[k].var), f->sizes[k].lo, f->sizes[k].hi};
  }
  for (int i = 0; i < f->n_params; i++) n->params[i] = cp_buf(c, f->params[i]);
  n->n_attrs = f->n_attrs;
  n->attrs = cp_anns(c, f->attrs, f->n_attrs);
  n->body = cp_stmt(c, f->body);
  return n;
}

static void copier_init(copier *c, mlc_arena *a, size_t bytes) {
  c->a = a;
  /* not zeroed: every cp_* function writes each field of what it takes
   * from the block (a node copied whole, then its pointers replaced) */
  c->cur = bytes ? mlc_arena_alloc_uninit(a, bytes) : NULL;
  c->end = c->cur + bytes;
  map_init(&c->map, a);
}

mlc_prim_func *mlc_func_copy(mlc_arena *a, const mlc_prim_func *f) {
  copier c;
  copier_init(&c, a, size_func(f));
  return cp_func(&c, f);
}

mlc_stmt *mlc_stmt_copy_mapped(mlc_arena *a, const mlc_stmt *s, int n, const void *const *from,
                               void *const *to) {
  copier c;
  copier_init(&c, a, size_stmt(s));
  for (int i = 0; i < n; i++) map_put(&c.map, from[i], to[i]);
  return cp_stmt(&c, s);
}

mlc_module *mlc_module_copy(mlc_arena *a, const mlc_module *m) {
  mlc_module *n = MLC_NEW(a, mlc_module);
  n->name = m->name ? mlc_arena_strdup(a, m->name) : NULL;
  n->n_funcs = m->n_funcs;
  n->funcs = MLC_NEW_ARRAY(a, mlc_prim_func *, m->n_funcs > 0 ? m->n_funcs : 1);
  size_t bytes = 0;
  for (int i = 0; i < m->n_funcs; i++) bytes += size_func(m->funcs[i]);
  /* One map for the whole module: a buffer shared by two functions stays
   * shared in the copy. */
  copier c;
  copier_init(&c, a, bytes);
  for (int i = 0; i < m->n_funcs; i++) n->funcs[i] = cp_func(&c, m->funcs[i]);
  return n;
}

/* ---- substitution -------------------------------------------------------- */

enum { SUBST_LINEAR_MAX = 12 }; /* above this many vars, look up by hash */

typedef struct subst {
  mlc_arena *a;
  int n;
  mlc_var **vars;
  mlc_expr **values;
  ptr_map *map; /* var -> value when n is large, else NULL */
} subst;

static mlc_expr *subst_lookup(const subst *su, const mlc_var *v) {
  if (su->map) return map_get(su->map, v);
  for (int i = 0; i < su->n; i++)
    if (su->vars[i] == v) return su->values[i];
  return NULL;
}

static mlc_expr *sb_expr(subst *su, mlc_expr *e);

/* Substituted copies of n exprs; NULL when none changed. */
static mlc_expr **sb_exprs(subst *su, mlc_expr **es, int n) {
  mlc_expr **r = NULL;
  for (int i = 0; i < n; i++) {
    mlc_expr *x = sb_expr(su, es[i]);
    if (x == es[i] && !r) continue;
    if (!r) {
      r = MLC_NEW_ARRAY(su->a, mlc_expr *, n);
      memcpy(r, es, sizeof(mlc_expr *) * (size_t)i);
    }
    r[i] = x;
  }
  return r;
}

static mlc_expr *dup_expr(subst *su, const mlc_expr *e) {
  mlc_expr *n = MLC_NEW(su->a, mlc_expr);
  *n = *e;
  return n;
}

static mlc_expr *sb_expr(subst *su, mlc_expr *e) {
  if (!e) return NULL;
  mlc_expr *n, *x, *y, *z;
  mlc_expr **arr;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
    return e;
  case MLC_EXPR_VAR:
    n = subst_lookup(su, e->var);
    return n ? n : e;
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
    x = sb_expr(su, e->bin.a);
    y = sb_expr(su, e->bin.b);
    if (x == e->bin.a && y == e->bin.b) return e;
    /* Through the constructor: a literal value adopts the other side's
     * dtype, as when the expression was first built. */
    return mlc_binary(su->a, e->kind, x, y);
  case MLC_EXPR_NOT:
    x = sb_expr(su, e->bin.a);
    return x == e->bin.a ? e : mlc_not(su->a, x);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    x = sb_expr(su, e->sel.cond);
    y = sb_expr(su, e->sel.t);
    z = sb_expr(su, e->sel.f);
    if (x == e->sel.cond && y == e->sel.t && z == e->sel.f) return e;
    return e->kind == MLC_EXPR_SELECT ? mlc_select(su->a, x, y, z)
                                      : mlc_if_then_else(su->a, x, y, z);
  case MLC_EXPR_LOAD:
    arr = sb_exprs(su, e->load.indices, e->load.buf->ndim);
    if (!arr) return e;
    n = dup_expr(su, e);
    n->load.indices = arr;
    return n;
  case MLC_EXPR_CAST:
    x = sb_expr(su, e->cast.value);
    if (x == e->cast.value) return e;
    n = dup_expr(su, e);
    n->cast.value = x;
    return n;
  case MLC_EXPR_CALL:
    arr = sb_exprs(su, e->call.args, mlc_intrin_nargs(e->call.op));
    if (!arr) return e;
    n = dup_expr(su, e);
    n->call.args = arr;
    return n;
  case MLC_EXPR_CALL_EXTERN:
    arr = sb_exprs(su, e->ext.kids, e->ext.n_kids);
    if (!arr) return e;
    n = dup_expr(su, e);
    n->ext.kids = arr;
    return n;
  }
  mlc_unreachable();
}

static mlc_stmt *sb_stmt(subst *su, mlc_stmt *s);

static mlc_region *sb_regions(subst *su, mlc_region *rs, int n) {
  mlc_region *r = NULL;
  for (int i = 0; i < n; i++) {
    int nd = rs[i].buf->ndim;
    mlc_range *ranges = NULL;
    for (int d = 0; d < nd; d++) {
      mlc_expr *mn = sb_expr(su, rs[i].ranges[d].min);
      mlc_expr *ex = sb_expr(su, rs[i].ranges[d].extent);
      if (!ranges && mn == rs[i].ranges[d].min && ex == rs[i].ranges[d].extent) continue;
      if (!ranges) {
        ranges = MLC_NEW_ARRAY(su->a, mlc_range, nd);
        memcpy(ranges, rs[i].ranges, sizeof(mlc_range) * (size_t)d);
      }
      ranges[d] = (mlc_range){mn, ex};
    }
    if (!ranges) continue;
    if (!r) r = mlc_arena_memdup(su->a, rs, sizeof(mlc_region) * (size_t)n);
    r[i].ranges = ranges;
  }
  return r;
}

static mlc_block *sb_block(subst *su, mlc_block *b) {
  mlc_iter_var *iters = NULL;
  for (int i = 0; i < b->n_iters; i++) {
    mlc_expr *mn = sb_expr(su, b->iters[i].dom.min);
    mlc_expr *ex = sb_expr(su, b->iters[i].dom.extent);
    if (!iters && mn == b->iters[i].dom.min && ex == b->iters[i].dom.extent) continue;
    if (!iters) iters = mlc_arena_memdup(su->a, b->iters, sizeof(mlc_iter_var) * (size_t)b->n_iters);
    iters[i].dom = (mlc_range){mn, ex};
  }
  mlc_region *reads = sb_regions(su, b->reads, b->n_reads);
  mlc_region *writes = sb_regions(su, b->writes, b->n_writes);
  mlc_stmt *init = sb_stmt(su, b->init);
  mlc_stmt *body = sb_stmt(su, b->body);
  if (!iters && !reads && !writes && init == b->init && body == b->body) return b;
  mlc_block *n = MLC_NEW(su->a, mlc_block);
  *n = *b;
  if (iters) n->iters = iters;
  if (reads) n->reads = reads;
  if (writes) n->writes = writes;
  n->init = init;
  n->body = body;
  return n;
}

static mlc_stmt *dup_stmt(subst *su, const mlc_stmt *s) {
  mlc_stmt *n = MLC_NEW(su->a, mlc_stmt);
  *n = *s;
  return n;
}

static mlc_stmt *sb_stmt(subst *su, mlc_stmt *s) {
  if (!s) return NULL;
  mlc_stmt *n;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    mlc_expr *mn = sb_expr(su, s->loop.min), *ex = sb_expr(su, s->loop.extent);
    mlc_stmt *body = sb_stmt(su, s->loop.body);
    if (mn == s->loop.min && ex == s->loop.extent && body == s->loop.body) return s;
    n = dup_stmt(su, s);
    n->loop.min = mn;
    n->loop.extent = ex;
    n->loop.body = body;
    return n;
  }
  case MLC_STMT_BLOCK_REALIZE: {
    mlc_expr **vals = s->realize.values
                          ? sb_exprs(su, s->realize.values, s->realize.block->n_iters)
                          : NULL;
    mlc_expr *pred = sb_expr(su, s->realize.predicate);
    mlc_block *blk = sb_block(su, s->realize.block);
    if (!vals && pred == s->realize.predicate && blk == s->realize.block) return s;
    n = dup_stmt(su, s);
    if (vals) n->realize.values = vals;
    n->realize.predicate = pred;
    n->realize.block = blk;
    return n;
  }
  case MLC_STMT_SEQ: {
    mlc_stmt **arr = NULL;
    for (int i = 0; i < s->seq.n; i++) {
      mlc_stmt *x = sb_stmt(su, s->seq.stmts[i]);
      if (x == s->seq.stmts[i] && !arr) continue;
      if (!arr) {
        arr = MLC_NEW_ARRAY(su->a, mlc_stmt *, s->seq.n);
        memcpy(arr, s->seq.stmts, sizeof(mlc_stmt *) * (size_t)i);
      }
      arr[i] = x;
    }
    if (!arr) return s;
    n = dup_stmt(su, s);
    n->seq.stmts = arr;
    return n;
  }
  case MLC_STMT_STORE: {
    mlc_expr **idx = sb_exprs(su, s->store.indices, s->store.buf->ndim);
    mlc_expr *v = sb_expr(su, s->store.value);
    if (!idx && v == s->store.value) return s;
    n = dup_stmt(su, s);
    if (idx) n->store.indices = idx;
    n->store.value = v;
    return n;
  }
  case MLC_STMT_IF: {
    mlc_expr *c = sb_expr(su, s->if_.cond);
    mlc_stmt *t = sb_stmt(su, s->if_.then_s), *f = sb_stmt(su, s->if_.else_s);
    if (c == s->if_.cond && t == s->if_.then_s && f == s->if_.else_s) return s;
    n = dup_stmt(su, s);
    n->if_.cond = c;
    n->if_.then_s = t;
    n->if_.else_s = f;
    return n;
  }
  case MLC_STMT_ALLOCATE: {
    mlc_stmt *body = sb_stmt(su, s->alloc.body);
    if (body == s->alloc.body) return s;
    n = dup_stmt(su, s);
    n->alloc.body = body;
    return n;
  }
  case MLC_STMT_EVALUATE: {
    mlc_expr *v = sb_expr(su, s->eval.value);
    if (v == s->eval.value) return s;
    n = dup_stmt(su, s);
    n->eval.value = v;
    return n;
  }
  }
  mlc_unreachable();
}

/* Above SUBST_LINEAR_MAX vars the lookup goes through a hash map; it lives
 * on the stack of the public entry points. */
static void subst_init(subst *su, ptr_map *m, mlc_arena *a, int n, mlc_var **vars,
                       mlc_expr **values) {
  su->a = a;
  su->n = n;
  su->vars = vars;
  su->values = values;
  su->map = NULL;
  if (n <= SUBST_LINEAR_MAX) return;
  map_init(m, a);
  for (int i = 0; i < n; i++) map_put(m, vars[i], values[i]);
  su->map = m;
}

mlc_expr *mlc_expr_subst(mlc_arena *a, mlc_expr *e, int n, mlc_var **vars, mlc_expr **values) {
  if (n == 0) return e;
  subst su;
  if (n <= SUBST_LINEAR_MAX) {
    subst_init(&su, NULL, a, n, vars, values);
    return sb_expr(&su, e);
  }
  ptr_map m;
  subst_init(&su, &m, a, n, vars, values);
  return sb_expr(&su, e);
}

mlc_stmt *mlc_stmt_subst(mlc_arena *a, mlc_stmt *s, int n, mlc_var **vars, mlc_expr **values) {
  if (n == 0) return s;
  subst su;
  if (n <= SUBST_LINEAR_MAX) {
    subst_init(&su, NULL, a, n, vars, values);
    return sb_stmt(&su, s);
  }
  ptr_map m;
  subst_init(&su, &m, a, n, vars, values);
  return sb_stmt(&su, s);
}

void mlc_expr_visit(const mlc_expr *e, void (*fn)(const mlc_expr *e, void *ud), void *ud) {
  if (!e) return;
  fn(e, ud);
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR: return;
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
    mlc_expr_visit(e->bin.a, fn, ud);
    mlc_expr_visit(e->bin.b, fn, ud);
    return;
  case MLC_EXPR_NOT: mlc_expr_visit(e->bin.a, fn, ud); return;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    mlc_expr_visit(e->sel.cond, fn, ud);
    mlc_expr_visit(e->sel.t, fn, ud);
    mlc_expr_visit(e->sel.f, fn, ud);
    return;
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++) mlc_expr_visit(e->load.indices[i], fn, ud);
    return;
  case MLC_EXPR_CAST: mlc_expr_visit(e->cast.value, fn, ud); return;
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++) mlc_expr_visit(e->call.args[i], fn, ud);
    return;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_kids; i++) mlc_expr_visit(e->ext.kids[i], fn, ud);
    return;
  }
  mlc_unreachable();
}

bool mlc_expr_any(const mlc_expr *e, bool (*fn)(const mlc_expr *e, void *ud), void *ud) {
  if (!e) return false;
  if (fn(e, ud)) return true;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR: return false;
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
  case MLC_EXPR_OR: return mlc_expr_any(e->bin.a, fn, ud) || mlc_expr_any(e->bin.b, fn, ud);
  case MLC_EXPR_NOT: return mlc_expr_any(e->bin.a, fn, ud);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return mlc_expr_any(e->sel.cond, fn, ud) || mlc_expr_any(e->sel.t, fn, ud) ||
           mlc_expr_any(e->sel.f, fn, ud);
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++)
      if (mlc_expr_any(e->load.indices[i], fn, ud)) return true;
    return false;
  case MLC_EXPR_CAST: return mlc_expr_any(e->cast.value, fn, ud);
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++)
      if (mlc_expr_any(e->call.args[i], fn, ud)) return true;
    return false;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_kids; i++)
      if (mlc_expr_any(e->ext.kids[i], fn, ud)) return true;
    return false;
  }
  mlc_unreachable();
}

mlc_expr **mlc_exprs_map(mlc_arena *a, mlc_expr **es, int n, mlc_expr_map_fn fn, void *ud) {
  mlc_expr **out = es;
  for (int i = 0; i < n; i++) {
    mlc_expr *x = mlc_expr_map(a, es[i], fn, ud);
    if (x == es[i]) continue;
    if (out == es) out = mlc_arena_memdup(a, es, sizeof(mlc_expr *) * (size_t)n);
    out[i] = x;
  }
  return out;
}

/* e's children rewritten: e itself when none changed, else a copy. */
static mlc_expr *map_children(mlc_arena *a, mlc_expr *e, mlc_expr_map_fn fn, void *ud) {
  mlc_expr *n, *x, *y, *z, **xs;
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
  case MLC_EXPR_VAR: return e;
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
    x = mlc_expr_map(a, e->bin.a, fn, ud);
    y = mlc_expr_map(a, e->bin.b, fn, ud);
    if (x == e->bin.a && y == e->bin.b) return e;
    n = mlc_arena_memdup(a, e, sizeof *e);
    n->bin.a = x, n->bin.b = y;
    return n;
  case MLC_EXPR_NOT:
    x = mlc_expr_map(a, e->bin.a, fn, ud);
    if (x == e->bin.a) return e;
    n = mlc_arena_memdup(a, e, sizeof *e);
    n->bin.a = x;
    return n;
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    x = mlc_expr_map(a, e->sel.cond, fn, ud);
    y = mlc_expr_map(a, e->sel.t, fn, ud);
    z = mlc_expr_map(a, e->sel.f, fn, ud);
    if (x == e->sel.cond && y == e->sel.t && z == e->sel.f) return e;
    n = mlc_arena_memdup(a, e, sizeof *e);
    n->sel.cond = x, n->sel.t = y, n->sel.f = z;
    return n;
  case MLC_EXPR_LOAD:
    xs = mlc_exprs_map(a, e->load.indices, e->load.buf->ndim, fn, ud);
    if (xs == e->load.indices) return e;
    n = mlc_arena_memdup(a, e, sizeof *e);
    n->load.indices = xs;
    return n;
  case MLC_EXPR_CAST:
    x = mlc_expr_map(a, e->cast.value, fn, ud);
    if (x == e->cast.value) return e;
    n = mlc_arena_memdup(a, e, sizeof *e);
    n->cast.value = x;
    return n;
  case MLC_EXPR_CALL:
    xs = mlc_exprs_map(a, e->call.args, mlc_intrin_nargs(e->call.op), fn, ud);
    if (xs == e->call.args) return e;
    n = mlc_arena_memdup(a, e, sizeof *e);
    n->call.args = xs;
    return n;
  case MLC_EXPR_CALL_EXTERN:
    xs = mlc_exprs_map(a, e->ext.kids, e->ext.n_kids, fn, ud);
    if (xs == e->ext.kids) return e;
    n = mlc_arena_memdup(a, e, sizeof *e);
    n->ext.kids = xs;
    return n;
  }
  mlc_unreachable();
}

mlc_expr *mlc_expr_map(mlc_arena *a, mlc_expr *e, mlc_expr_map_fn fn, void *ud) {
  if (!e) return NULL;
  mlc_expr *n = map_children(a, e, fn, ud);
  return fn ? fn(a, n, ud) : n;
}

bool mlc_expr_uses_var(const mlc_expr *e, const mlc_var *v) {
  switch (e->kind) {
  case MLC_EXPR_INT_IMM:
  case MLC_EXPR_FLOAT_IMM:
    return false;
  case MLC_EXPR_VAR:
    return e->var == v;
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
    return mlc_expr_uses_var(e->bin.a, v) || mlc_expr_uses_var(e->bin.b, v);
  case MLC_EXPR_NOT:
    return mlc_expr_uses_var(e->bin.a, v);
  case MLC_EXPR_SELECT:
  case MLC_EXPR_IF_THEN_ELSE:
    return mlc_expr_uses_var(e->sel.cond, v) || mlc_expr_uses_var(e->sel.t, v) ||
           mlc_expr_uses_var(e->sel.f, v);
  case MLC_EXPR_LOAD:
    for (int i = 0; i < e->load.buf->ndim; i++)
      if (mlc_expr_uses_var(e->load.indices[i], v)) return true;
    return false;
  case MLC_EXPR_CAST:
    return mlc_expr_uses_var(e->cast.value, v);
  case MLC_EXPR_CALL:
    for (int i = 0; i < mlc_intrin_nargs(e->call.op); i++)
      if (mlc_expr_uses_var(e->call.args[i], v)) return true;
    return false;
  case MLC_EXPR_CALL_EXTERN:
    for (int i = 0; i < e->ext.n_kids; i++)
      if (mlc_expr_uses_var(e->ext.kids[i], v)) return true;
    return false;
  }
  mlc_unreachable();
}
