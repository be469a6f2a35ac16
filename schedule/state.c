/* Schedule state: creation, copy, handles, tree navigation and the getters
 * (get_block, get_loops, get_child_blocks). */
#include "schedule/sched_impl.h"

#include <stdio.h>
#include <string.h>

/* ---- tree navigation -------------------------------------------------- */

static int n_children(const mlc_stmt *st) {
  switch (st->kind) {
  case MLC_STMT_FOR: return 1;
  case MLC_STMT_BLOCK_REALIZE: return 2; /* init (may be NULL), body */
  case MLC_STMT_SEQ: return st->seq.n;
  case MLC_STMT_IF: return 2;            /* else may be NULL */
  case MLC_STMT_ALLOCATE: return 1;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return 0;
  }
  mlc_unreachable();
}

/* The field holding child i; *slot may be NULL (no init, no else). */
static mlc_stmt **child_at(mlc_stmt *st, int i) {
  switch (st->kind) {
  case MLC_STMT_FOR: return &st->loop.body;
  case MLC_STMT_BLOCK_REALIZE: return i == 0 ? &st->realize.block->init : &st->realize.block->body;
  case MLC_STMT_SEQ: return &st->seq.stmts[i];
  case MLC_STMT_IF: return i == 0 ? &st->if_.then_s : &st->if_.else_s;
  case MLC_STMT_ALLOCATE: return &st->alloc.body;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: break;
  }
  mlc_unreachable();
}

/* The walk behind every handle check and location (tens of thousands a
 * search round): the children by kind, inline, and the last child of each
 * node followed in the loop instead of a call. */
static int path_rec(mlc_stmt *st, const mlc_stmt *target, mlc_stmt **path, int depth) {
  for (;;) {
    if (!st) return 0;
    MLC_ASSERT(depth < SCHED_MAX_DEPTH);
    path[depth++] = st;
    if (st == target) return depth;
    int r = 0;
    switch (st->kind) {
    case MLC_STMT_FOR: st = st->loop.body; break;
    case MLC_STMT_ALLOCATE: st = st->alloc.body; break;
    case MLC_STMT_BLOCK_REALIZE:
      r = path_rec(st->realize.block->init, target, path, depth);
      st = st->realize.block->body;
      break;
    case MLC_STMT_IF:
      r = path_rec(st->if_.then_s, target, path, depth);
      st = st->if_.else_s;
      break;
    case MLC_STMT_SEQ:
      if (st->seq.n == 0) return 0;
      for (int i = 0; i < st->seq.n - 1 && !r; i++) r = path_rec(st->seq.stmts[i], target, path, depth);
      st = st->seq.stmts[st->seq.n - 1];
      break;
    case MLC_STMT_STORE:
    case MLC_STMT_EVALUATE: return 0;
    }
    if (r) return r;
  }
}

int sched_height(const mlc_stmt *st) {
  int n = n_children(st), h = 0;
  for (int i = 0; i < n; i++) {
    mlc_stmt *c = *child_at((mlc_stmt *)st, i);
    int ch = c ? sched_height(c) : 0;
    if (ch > h) h = ch;
  }
  return h + 1;
}

int sched_func_height(mlc_sched *s) {
  if (!s->height || s->height > SCHED_MAX_NEST) s->height = sched_height(s->func->body);
  return s->height;
}

int sched_path_to(const mlc_sched *s, const mlc_stmt *target, mlc_stmt **path) {
  return path_rec(s->func->body, target, path, 0);
}

/* As path_rec, without the path. */
static mlc_stmt *find_realize_rec(mlc_stmt *st, const mlc_block *b) {
  for (;;) {
    if (!st) return NULL;
    mlc_stmt *r = NULL;
    switch (st->kind) {
    case MLC_STMT_FOR: st = st->loop.body; break;
    case MLC_STMT_ALLOCATE: st = st->alloc.body; break;
    case MLC_STMT_BLOCK_REALIZE:
      if (st->realize.block == b) return st;
      r = find_realize_rec(st->realize.block->init, b);
      st = st->realize.block->body;
      break;
    case MLC_STMT_IF:
      r = find_realize_rec(st->if_.then_s, b);
      st = st->if_.else_s;
      break;
    case MLC_STMT_SEQ:
      if (st->seq.n == 0) return NULL;
      for (int i = 0; i < st->seq.n - 1 && !r; i++) r = find_realize_rec(st->seq.stmts[i], b);
      st = st->seq.stmts[st->seq.n - 1];
      break;
    case MLC_STMT_STORE:
    case MLC_STMT_EVALUATE: return NULL;
    }
    if (r) return r;
  }
}

mlc_stmt *sched_find_realize(const mlc_sched *s, const mlc_block *b) {
  return find_realize_rec(s->func->body, b);
}

mlc_stmt **sched_child_slot(mlc_stmt *parent, mlc_stmt *child) {
  int n = n_children(parent);
  for (int i = 0; i < n; i++)
    if (*child_at(parent, i) == child) return child_at(parent, i);
  mlc_unreachable();
}

void sched_each_realize(mlc_stmt *st, void (*fn)(mlc_stmt *realize, void *ctx), void *ctx) {
  if (st->kind == MLC_STMT_BLOCK_REALIZE) {
    fn(st, ctx);
    return;
  }
  int n = n_children(st);
  for (int i = 0; i < n; i++) {
    mlc_stmt *c = *child_at(st, i);
    if (c) sched_each_realize(c, fn, ctx);
  }
}

/* Substitution rewrites expression fields only, so every statement node
 * (and every handle pointing at one) survives. */
static void subst_exprs(mlc_arena *a, mlc_expr **es, int n, int nv, mlc_var **vars,
                        mlc_expr **vals) {
  for (int i = 0; i < n; i++) es[i] = mlc_expr_subst(a, es[i], nv, vars, vals);
}

/* A substituted binding or predicate, simplified (simp not NULL) when the
 * substitution changed it. */
static mlc_expr *subst_binding(mlc_arena *a, mlc_simplifier *simp, mlc_expr *e, int n,
                               mlc_var **vars, mlc_expr **vals) {
  mlc_expr *x = mlc_expr_subst(a, e, n, vars, vals);
  return simp && x != e ? mlc_simplify(simp, x) : x;
}

static void subst_walk(mlc_arena *a, mlc_simplifier *simp, mlc_stmt *st, int n, mlc_var **vars,
                       mlc_expr **vals) {
  switch (st->kind) {
  case MLC_STMT_FOR:
    st->loop.min = mlc_expr_subst(a, st->loop.min, n, vars, vals);
    st->loop.extent = mlc_expr_subst(a, st->loop.extent, n, vars, vals);
    break;
  case MLC_STMT_BLOCK_REALIZE:
    for (int i = 0; i < st->realize.block->n_iters; i++)
      st->realize.values[i] = subst_binding(a, simp, st->realize.values[i], n, vars, vals);
    if (st->realize.predicate)
      st->realize.predicate = subst_binding(a, simp, st->realize.predicate, n, vars, vals);
    /* Block bodies see only their iter vars, never outer loop vars. */
    return;
  case MLC_STMT_SEQ: break;
  case MLC_STMT_STORE:
    subst_exprs(a, st->store.indices, st->store.buf->ndim, n, vars, vals);
    st->store.value = mlc_expr_subst(a, st->store.value, n, vars, vals);
    return;
  case MLC_STMT_IF: st->if_.cond = mlc_expr_subst(a, st->if_.cond, n, vars, vals); break;
  case MLC_STMT_ALLOCATE: break;
  case MLC_STMT_EVALUATE:
    st->eval.value = mlc_expr_subst(a, st->eval.value, n, vars, vals);
    return;
  }
  int nc = n_children(st);
  for (int i = 0; i < nc; i++) {
    mlc_stmt *c = *child_at(st, i);
    if (c) subst_walk(a, simp, c, n, vars, vals);
  }
}

void sched_subst_inplace(mlc_arena *a, mlc_stmt *st, int n, mlc_var **vars, mlc_expr **vals) {
  subst_walk(a, NULL, st, n, vars, vals);
}

/* ---- binding simplification ------------------------------------------ */

typedef struct simp_ctx {
  mlc_sched *s;
  mlc_simplifier *simp;
} simp_ctx;

static void simplify_realize(mlc_stmt *r, void *ctx_) {
  simp_ctx *ctx = ctx_;
  for (int i = 0; i < r->realize.block->n_iters; i++)
    r->realize.values[i] = mlc_simplify(ctx->simp, r->realize.values[i]);
  if (r->realize.predicate) r->realize.predicate = mlc_simplify(ctx->simp, r->realize.predicate);
}

static void bind_loops(mlc_simplifier *simp, mlc_stmt *st) {
  if (st->kind == MLC_STMT_BLOCK_REALIZE) return;
  int64_t mn, ext;
  if (st->kind == MLC_STMT_FOR && mlc_expr_is_const_int(st->loop.min, &mn) &&
      mlc_expr_is_const_int(st->loop.extent, &ext))
    mlc_simplifier_bind(simp, st->loop.var, mn, ext);
  int n = n_children(st);
  for (int i = 0; i < n; i++) {
    mlc_stmt *c = *child_at(st, i);
    if (c) bind_loops(simp, c);
  }
}

/* A simplifier that knows the ranges of the loops above st (on its path)
 * and under it. */
static mlc_simplifier *simplifier_at(mlc_sched *s, mlc_stmt *st) {
  mlc_simplifier *simp = mlc_simplifier_new(s->arena);
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, st, path);
  for (int i = 0; i < n - 1; i++) {
    int64_t mn, ext;
    if (path[i]->kind == MLC_STMT_FOR && mlc_expr_is_const_int(path[i]->loop.min, &mn) &&
        mlc_expr_is_const_int(path[i]->loop.extent, &ext))
      mlc_simplifier_bind(simp, path[i]->loop.var, mn, ext);
  }
  bind_loops(simp, st);
  return simp;
}

void sched_simplify_bindings(mlc_sched *s, mlc_stmt *st) {
  simp_ctx ctx = {s, simplifier_at(s, st)};
  sched_each_realize(st, simplify_realize, &ctx);
}

void sched_subst_bindings(mlc_sched *s, mlc_stmt *st, int n, mlc_var **vars, mlc_expr **vals) {
  subst_walk(s->arena, simplifier_at(s, st), st, n, vars, vals);
}

/* ---- handles ------------------------------------------------------------ */

void sched_reserve(mlc_sched *s, int n_insts, int n_rvs) {
  if (n_insts > s->trace.insts.cap)
    mlc_vec_grow_((void **)&s->trace.insts.data, &s->trace.insts.cap, n_insts,
                  sizeof *s->trace.insts.data, s->arena);
  if (n_rvs > s->rvs.cap)
    mlc_vec_grow_((void **)&s->rvs.data, &s->rvs.cap, n_rvs, sizeof *s->rvs.data, s->arena);
  if (n_rvs > s->trace.rv_kinds.cap)
    mlc_vec_grow_((void **)&s->trace.rv_kinds.data, &s->trace.rv_kinds.cap, n_rvs,
                  sizeof *s->trace.rv_kinds.data, s->arena);
}

mlc_rv sched_new_rv(mlc_sched *s, mlc_rv_kind k, mlc_block *b, mlc_stmt *loop, int64_t v) {
  rv_entry e = {.kind = k, .block = b, .loop = loop, .value = v};
  MLC_VEC_APUSH(s->arena, s->rvs, e);
  MLC_VEC_APUSH(s->arena, s->trace.rv_kinds, k);
  return s->rvs.len - 1;
}

/* buf[*at..] = at most max bytes of x (the caller leaves room). */
static void put_text(char *buf, int *at, const char *x, size_t max) {
  size_t n = strnlen(x, max);
  memcpy(buf + *at, x, n);
  *at += (int)n;
}

/* Formatted by hand: primitives describe their handles for the messages
 * they may give, tens of thousands of times a search round. */
const char *sched_rv_desc(const mlc_sched *s, mlc_rv rv, char buf[96]) {
  char name[16];
  if (rv < 0 || rv >= s->rvs.len) {
    snprintf(buf, 96, "handle %d", (int)rv);
    return buf;
  }
  mlc_trace_rv_name(&s->trace, rv, name);
  const rv_entry *e = &s->rvs.data[rv];
  int at = 0;
  put_text(buf, &at, name, 16);
  if (e->kind != MLC_RV_VALUE) {
    put_text(buf, &at, e->kind == MLC_RV_BLOCK ? " (block " : " (loop ", 8);
    put_text(buf, &at, e->kind == MLC_RV_BLOCK ? e->block->name : e->loop->loop.var->name, 60);
    put_text(buf, &at, ")", 1);
  }
  buf[at] = '\0';
  return buf;
}

static const char *kind_word(mlc_rv_kind k) {
  switch (k) {
  case MLC_RV_BLOCK: return "a block";
  case MLC_RV_LOOP: return "a loop";
  case MLC_RV_VALUE: return "a sampled value";
  }
  mlc_unreachable();
}

static bool check_rv(const mlc_sched *s, const char *prim, mlc_rv rv, mlc_rv_kind want,
                     mlc_error *err) {
  char d[96];
  if (rv < 0 || rv >= s->rvs.len)
    return mlc_error_set(err, "%s: handle %d does not exist", prim, (int)rv);
  if (s->rvs.data[rv].kind != want)
    return mlc_error_set(err, "%s: %s is %s, expected %s", prim, sched_rv_desc(s, rv, d),
                         kind_word(s->rvs.data[rv].kind), kind_word(want));
  /* Before the walk that finds the handle, which holds SCHED_MAX_DEPTH. */
  if (want != MLC_RV_VALUE) {
    int h = sched_func_height((mlc_sched *)s); /* only fills the cache */
    if (h > SCHED_MAX_NEST)
      return mlc_error_set(err,
                           "%s: %s: function \"%s\" nests %d statements deep; schedules work on "
                           "functions of at most %d",
                           prim, sched_rv_desc(s, rv, d), s->func->name, h, SCHED_MAX_NEST);
  }
  if (!mlc_sched_rv_alive(s, rv))
    return mlc_error_set(err, "%s: %s is no longer in the function (a primitive replaced it)",
                         prim, sched_rv_desc(s, rv, d));
  return true;
}

bool sched_loop_range(const mlc_sched *s, const mlc_stmt *loop, int64_t *mn, int64_t *ext,
                      bool *symbolic) {
  int64_t lo;
  if (!mlc_expr_is_const_int(loop->loop.min, mn)) return false;
  *symbolic = !mlc_expr_is_const_int(loop->loop.extent, ext);
  return !*symbolic ||
         mlc_size_range(s->func->n_sizes, s->func->sizes, loop->loop.extent, &lo, ext);
}

bool sched_check_loop(const mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err) {
  return check_rv(s, prim, rv, MLC_RV_LOOP, err);
}
bool sched_check_block(const mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err) {
  return check_rv(s, prim, rv, MLC_RV_BLOCK, err);
}
bool sched_check_value(const mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err) {
  return check_rv(s, prim, rv, MLC_RV_VALUE, err);
}

bool mlc_sched_rv_alive(const mlc_sched *s, mlc_rv rv) {
  if (rv < 0 || rv >= s->rvs.len) return false;
  const rv_entry *e = &s->rvs.data[rv];
  mlc_stmt *path[SCHED_MAX_DEPTH];
  switch (e->kind) {
  case MLC_RV_BLOCK: return sched_find_realize(s, e->block) != NULL;
  case MLC_RV_LOOP: return sched_path_to(s, e->loop, path) > 0;
  case MLC_RV_VALUE: return true;
  }
  mlc_unreachable();
}

int mlc_sched_n_rvs(const mlc_sched *s) { return s->rvs.len; }

mlc_rv_kind mlc_sched_rv_kind(const mlc_sched *s, mlc_rv rv) {
  MLC_ASSERT(rv >= 0 && rv < s->rvs.len);
  return s->rvs.data[rv].kind;
}

int64_t mlc_sched_rv_value(const mlc_sched *s, mlc_rv rv) {
  MLC_ASSERT(rv >= 0 && rv < s->rvs.len && s->rvs.data[rv].kind == MLC_RV_VALUE);
  return s->rvs.data[rv].value;
}

const mlc_stmt *mlc_sched_rv_loop(const mlc_sched *s, mlc_rv rv) {
  if (rv < 0 || rv >= s->rvs.len || s->rvs.data[rv].kind != MLC_RV_LOOP) return NULL;
  return mlc_sched_rv_alive(s, rv) ? s->rvs.data[rv].loop : NULL;
}

const mlc_block *mlc_sched_rv_block(const mlc_sched *s, mlc_rv rv) {
  if (rv < 0 || rv >= s->rvs.len || s->rvs.data[rv].kind != MLC_RV_BLOCK) return NULL;
  return mlc_sched_rv_alive(s, rv) ? s->rvs.data[rv].block : NULL;
}

/* ---- lifetime ---------------------------------------------------------- */

mlc_sched *mlc_sched_new(const mlc_prim_func *f, uint64_t seed) {
  mlc_sched *s = mlc_xmalloc(sizeof *s);
  s->arena = mlc_arena_new();
  s->func = mlc_func_copy(s->arena, f);
  mlc_sched_seed(s, seed);
  return s;
}

/* The copy is the one allocation sized by f: guarded by an escape point so
 * that it fails with an error, and the arena takes the partial copy. */
static bool copy_guarded(mlc_sched *s, const mlc_prim_func *f) {
  jmp_buf jb;
  if (setjmp(jb)) return false;
  mlc_arena_set_oom_jump(s->arena, &jb);
  s->func = mlc_func_copy(s->arena, f);
  mlc_arena_set_oom_jump(s->arena, NULL);
  return true;
}

mlc_sched *mlc_sched_try_new(const mlc_prim_func *f, uint64_t seed, mlc_error *err) {
  mlc_sched *s = mlc_malloc(sizeof *s);
  if (!s) return mlc_error_set(err, "out of memory creating a schedule state"), NULL;
  memset(s, 0, sizeof *s);
  s->arena = mlc_arena_new(); /* fixed size: aborts by design */
  if (!copy_guarded(s, f)) {
    mlc_sched_free(s);
    return mlc_error_set(err, "out of memory copying %s into a schedule state", f->name), NULL;
  }
  mlc_sched_seed(s, seed);
  return s;
}

void mlc_sched_seed(mlc_sched *s, uint64_t seed) { mlc_pcg32_seed(&s->rng, seed, 0x5eed); }

void mlc_sched_set_fuse_outer_min(mlc_sched *s, int64_t min_outer) {
  s->fuse_outer_min = min_outer > 0 ? min_outer : 0;
}

void mlc_sched_free(mlc_sched *s) {
  if (!s) return;
  mlc_arena_free(s->arena);
  mlc_free(s);
}

/* Preorder list of statements; a copy has the same shape, so the i-th
 * statement of the copy corresponds to the i-th of the original. */
static void preorder(mlc_arena *a, mlc_stmt *st, void *list_) {
  MLC_VEC(mlc_stmt *) *list = list_;
  MLC_VEC_APUSH(a, *list, st);
  int n = n_children(st);
  for (int i = 0; i < n; i++) {
    mlc_stmt *c = *child_at(st, i);
    if (c) preorder(a, c, list);
  }
}

static int index_of(mlc_stmt **list, int n, const mlc_stmt *x) {
  for (int i = 0; i < n; i++)
    if (list[i] == x) return i;
  return -1;
}

mlc_sched *mlc_sched_copy(const mlc_sched *src) {
  mlc_sched *s = mlc_xmalloc(sizeof *s);
  s->arena = mlc_arena_new();
  s->func = mlc_func_copy(s->arena, src->func);
  s->rng = src->rng;
  s->fuse_outer_min = src->fuse_outer_min;
  MLC_VEC(mlc_stmt *) from = {0}, to = {0};
  preorder(s->arena, src->func->body, &from);
  preorder(s->arena, s->func->body, &to);
  MLC_ASSERT(from.len == to.len);
  for (int i = 0; i < src->rvs.len; i++) {
    rv_entry e = src->rvs.data[i];
    int k;
    switch (e.kind) {
    case MLC_RV_BLOCK: {
      /* A dead handle stays dead: it points at nothing in the copy. */
      mlc_stmt *r = sched_find_realize(src, e.block);
      k = r ? index_of(from.data, from.len, r) : -1;
      e.block = k >= 0 ? to.data[k]->realize.block : NULL;
      if (!e.block) {
        e.block = MLC_NEW(s->arena, mlc_block);
        e.block->name = mlc_arena_strdup(s->arena, src->rvs.data[i].block->name);
      }
      break;
    }
    case MLC_RV_LOOP:
      k = index_of(from.data, from.len, e.loop);
      e.loop = k >= 0 ? to.data[k] : NULL;
      if (!e.loop) {
        e.loop = MLC_NEW(s->arena, mlc_stmt);
        e.loop->kind = MLC_STMT_FOR;
        const mlc_var *v = src->rvs.data[i].loop->loop.var;
        e.loop->loop.var = mlc_var_new(s->arena, mlc_arena_strdup(s->arena, v->name), v->dtype);
      }
      break;
    case MLC_RV_VALUE: break;
    }
    MLC_VEC_APUSH(s->arena, s->rvs, e);
  }
  sched_trace_copy_into(s->arena, &s->trace, &src->trace);
  return s;
}

const mlc_prim_func *mlc_sched_func(const mlc_sched *s) { return s->func; }
const mlc_trace *mlc_sched_trace(const mlc_sched *s) { return &s->trace; }
mlc_arena *mlc_sched_arena(mlc_sched *s) { return s->arena; }

/* ---- get_block ------------------------------------------------------------ */

typedef struct block_search {
  const char *name;
  int count;
  mlc_block *found;
} block_search;

static void search_blocks(mlc_stmt *st, block_search *bs) {
  if (st->kind == MLC_STMT_BLOCK_REALIZE && strcmp(st->realize.block->name, bs->name) == 0) {
    bs->count++;
    bs->found = st->realize.block;
  }
  int n = n_children(st);
  for (int i = 0; i < n; i++) {
    mlc_stmt *c = *child_at(st, i);
    if (c) search_blocks(c, bs);
  }
}

bool mlc_sched_get_block(mlc_sched *s, const char *name, const char *func_name, mlc_rv *out,
                         mlc_error *err) {
  if (!func_name) func_name = s->func->name;
  if (strcmp(func_name, s->func->name) != 0)
    return mlc_error_set(err, "get_block: no function named \"%s\" (the schedule holds \"%s\")",
                         func_name, s->func->name);
  block_search bs = {name, 0, NULL};
  search_blocks(s->func->body, &bs);
  if (bs.count == 0)
    return mlc_error_set(err, "get_block: no block named \"%s\" in function \"%s\"", name,
                         func_name);
  if (bs.count > 1)
    return mlc_error_set(err, "get_block: %d blocks are named \"%s\" in function \"%s\"",
                         bs.count, name, func_name);
  *out = sched_new_rv(s, MLC_RV_BLOCK, bs.found, NULL, 0);
  mlc_attr attrs[2] = {sched_attr_str("name", name), sched_attr_str("func_name", func_name)};
  sched_record(s, MLC_INST_GET_BLOCK, 0, NULL, 2, attrs, 1, out);
  return true;
}

/* ---- get_loops / get_child_blocks --------------------------------------- */

int mlc_sched_get_loops(mlc_sched *s, mlc_rv block, mlc_rv **out, mlc_error *err) {
  if (!sched_check_block(s, "get_loops", block, err)) return -1;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  mlc_stmt *r = sched_find_realize(s, s->rvs.data[block].block);
  int n = sched_path_to(s, r, path);
  int start = 0; /* just below the parent block's realize */
  for (int i = 0; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_BLOCK_REALIZE) start = i + 1;
  int count = 0;
  mlc_rv *res = MLC_NEW_ARRAY(s->arena, mlc_rv, n + 1);
  for (int i = start; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_FOR) res[count++] = sched_new_rv(s, MLC_RV_LOOP, NULL, path[i], 0);
  mlc_operand in = MLC_OP_RV(block);
  sched_record(s, MLC_INST_GET_LOOPS, 1, &in, 0, NULL, count, res);
  *out = res;
  return count;
}

static void collect_blocks(mlc_stmt *st, void *list_) {
  mlc_block **list = list_;
  int i = 0;
  while (list[i]) i++;
  list[i] = st->realize.block;
}

static int count_realizes(mlc_stmt *st) {
  if (st->kind == MLC_STMT_BLOCK_REALIZE) return 1;
  int n = n_children(st), total = 0;
  for (int i = 0; i < n; i++) {
    mlc_stmt *c = *child_at(st, i);
    if (c) total += count_realizes(c);
  }
  return total;
}

int mlc_sched_get_child_blocks(mlc_sched *s, mlc_rv rv, mlc_rv **out, mlc_error *err) {
  char d[96];
  if (rv < 0 || rv >= s->rvs.len || s->rvs.data[rv].kind == MLC_RV_VALUE) {
    mlc_error_set(err, "get_child_blocks: %s is not a block or loop", sched_rv_desc(s, rv, d));
    return -1;
  }
  if (!mlc_sched_rv_alive(s, rv)) {
    mlc_error_set(err, "get_child_blocks: %s is no longer in the function", sched_rv_desc(s, rv, d));
    return -1;
  }
  /* The statements directly inside: a block's init and body, a loop's body. */
  const rv_entry *e = &s->rvs.data[rv];
  mlc_stmt *roots[2];
  int nr = 0;
  if (e->kind == MLC_RV_LOOP) {
    roots[nr++] = e->loop->loop.body;
  } else {
    if (e->block->init) roots[nr++] = e->block->init;
    roots[nr++] = e->block->body;
  }
  int total = 0;
  for (int i = 0; i < nr; i++) total += count_realizes(roots[i]);
  mlc_block **blocks = MLC_NEW_ARRAY(s->arena, mlc_block *, total + 1);
  for (int i = 0; i < nr; i++) sched_each_realize(roots[i], collect_blocks, blocks);
  mlc_rv *res = MLC_NEW_ARRAY(s->arena, mlc_rv, total + 1);
  for (int i = 0; i < total; i++) res[i] = sched_new_rv(s, MLC_RV_BLOCK, blocks[i], NULL, 0);
  mlc_operand in = MLC_OP_RV(rv);
  sched_record(s, MLC_INST_GET_CHILD_BLOCKS, 1, &in, 0, NULL, total, res);
  *out = res;
  return total;
}

/* ---- get_producers / get_consumers ---------------------------------------- */

static bool reads_buf(const mlc_block *b, const mlc_buffer *buf) {
  for (int i = 0; i < b->n_reads; i++)
    if (b->reads[i].buf == buf) return true;
  /* A reduction reads its own output without listing it. */
  if (b->init)
    for (int i = 0; i < b->n_writes; i++)
      if (b->writes[i].buf == buf) return true;
  return false;
}

/* x writes something y reads: y depends on x (read after write). */
static bool feeds(const mlc_block *x, const mlc_block *y) {
  for (int i = 0; i < x->n_writes; i++)
    if (reads_buf(y, x->writes[i].buf)) return true;
  return false;
}

/* Producers (earlier siblings that b reads from) or consumers (later
 * siblings that read from b), among the blocks of b's parent block. */
static int deps(mlc_sched *s, const char *prim, mlc_inst_kind kind, mlc_rv rv, mlc_rv **out,
                mlc_error *err) {
  if (!sched_check_block(s, prim, rv, err)) return -1;
  mlc_block *b = s->rvs.data[rv].block;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, sched_find_realize(s, b), path);
  mlc_block *parent = NULL;
  for (int i = 0; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_BLOCK_REALIZE) parent = path[i]->realize.block;
  mlc_rv *res = NULL;
  int count = 0;
  if (parent) { /* the root block has no siblings */
    int total = (parent->init ? count_realizes(parent->init) : 0) + count_realizes(parent->body);
    mlc_block **sib = MLC_NEW_ARRAY(s->arena, mlc_block *, total + 1);
    if (parent->init) sched_each_realize(parent->init, collect_blocks, sib);
    sched_each_realize(parent->body, collect_blocks, sib);
    int self = 0;
    while (sib[self] != b) self++;
    res = MLC_NEW_ARRAY(s->arena, mlc_rv, total + 1);
    for (int i = 0; i < total; i++) {
      bool hit = kind == MLC_INST_GET_PRODUCERS ? i < self && feeds(sib[i], b)
                                                : i > self && feeds(b, sib[i]);
      if (hit) res[count++] = sched_new_rv(s, MLC_RV_BLOCK, sib[i], NULL, 0);
    }
  }
  mlc_operand in = MLC_OP_RV(rv);
  sched_record(s, kind, 1, &in, 0, NULL, count, res);
  *out = res;
  return count;
}

int mlc_sched_get_producers(mlc_sched *s, mlc_rv block, mlc_rv **out, mlc_error *err) {
  return deps(s, "get_producers", MLC_INST_GET_PRODUCERS, block, out, err);
}

int mlc_sched_get_consumers(mlc_sched *s, mlc_rv block, mlc_rv **out, mlc_error *err) {
  return deps(s, "get_consumers", MLC_INST_GET_CONSUMERS, block, out, err);
}
