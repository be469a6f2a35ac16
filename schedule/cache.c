/* Cache stages and buffer storage: cache_read, cache_write, set_scope and
 * storage_align, with TensorIR's semantics.
 *
 * A cache stage is a copy block "<buffer>_<scope>" over loops ax0, ax1, ...
 * that covers the region of the buffer the stage must hold at its place;
 * the cache buffer is allocated in the scope block (the parent block of
 * the given block, normally the root), as TVM places it: compute_at moves
 * the stage later. The place is found as TVM's CacheLocDetector finds it:
 * right after the buffer's writer and before the first block that reads
 * what the writer wrote, in the innermost loop (or the scope block) holding
 * both; a buffer nobody in the scope writes is copied at the scope's start.
 * A stage placed directly in the scope block (no loop around it) gets a
 * cache of the region's shape, accesses shifted by the region's start, as
 * TensorIR compacts it (a 16 x 16 tile cached in a blockized block is a
 * 16 x 16 buffer there); under a loop the cache keeps the buffer's shape.
 * Consumers of a cache_read after the stage's loop read what all its
 * iterations copied.
 *
 * Every check runs before the IR is touched, so a refusal leaves the state
 * exactly as it was. Besides TensorIR's own checks, cache_read/cache_write
 * refuse what would change results (a consumer reading outside what the
 * cache holds, a write-back that would copy elements the writer never
 * wrote): the tuner trusts every accepted schedule to compute the same
 * thing. */
#include "schedule/sched_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scopes and names ------------------------------------------------------ */

/* global, shared, local, each optionally tagged ("global.A_reg",
 * "shared.dyn"), as TVM's StorageScope reads them. */
static bool valid_scope(const char *sc) {
  static const char *const ranks[] = {"global", "shared", "local"};
  if (!sc) return false;
  for (int i = 0; i < MLC_COUNTOF(ranks); i++) {
    size_t n = strlen(ranks[i]);
    if (strncmp(sc, ranks[i], n) != 0) continue;
    if (sc[n] == 0) return true;
    if (sc[n] != '.' || !sc[n + 1]) return false;
    for (const char *p = sc + n + 1; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '_') return false;
    return true;
  }
  return false;
}

static bool scope_check(const char *prim, const char *who, const char *sc, mlc_error *err) {
  if (valid_scope(sc)) return true;
  return mlc_error_set(err,
                       "%s: %s: invalid storage scope \"%s\" (expected global, shared or local, "
                       "optionally with a .tag)",
                       prim, who, sc ? sc : "(null)");
}

typedef struct name_ctx {
  const char *name;
  bool taken;
} name_ctx;

/* Whether st allocates a buffer named c->name (a block's or T.decl_buffer). */
static bool allocates_name(const mlc_stmt *st, void *ud) {
  const char *name = ((const name_ctx *)ud)->name;
  if (st->kind == MLC_STMT_ALLOCATE) return strcmp(st->alloc.buf->name, name) == 0;
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return false;
  const mlc_block *b = st->realize.block;
  for (int i = 0; i < b->n_allocs; i++)
    if (strcmp(b->allocs[i]->name, name) == 0) return true;
  return false;
}

static void name_in_stmt(const mlc_stmt *st, name_ctx *c) {
  if (mlc_stmt_any(st, allocates_name, c)) c->taken = true;
}

typedef struct block_name_ctx {
  const char *name;
  bool taken;
} block_name_ctx;

static void block_named(mlc_stmt *r, void *ctx);

static void block_name_in(const mlc_block *b, block_name_ctx *c) {
  if (b->init) sched_each_realize(b->init, block_named, c);
  sched_each_realize(b->body, block_named, c);
}

static void block_named(mlc_stmt *r, void *ctx) {
  block_name_ctx *c = ctx;
  if (strcmp(r->realize.block->name, c->name) == 0) c->taken = true;
  block_name_in(r->realize.block, c);
}

/* Block names are unique in a function here (the verifier requires it;
 * TVM tolerates repeats): a second "A_shared" stage is "A_shared_1". */
static const char *unique_block_name(mlc_sched *s, const char *name) {
  const char *out = name;
  for (int k = 1;; k++) {
    block_name_ctx c = {out, false};
    block_named(s->func->body, &c);
    if (!c.taken) return out;
    out = mlc_arena_suffixed(s->arena, name, k);
  }
}

static bool buffer_name_taken(const mlc_sched *s, const char *name) {
  name_ctx c = {name, false};
  for (int i = 0; i < s->func->n_params; i++)
    if (strcmp(s->func->params[i]->name, name) == 0) return true;
  name_in_stmt(s->func->body, &c);
  return c.taken;
}

/* "<base>_<scope>" with the scope's dots made underscores (TVMScript prints
 * buffer names as identifiers), and _1, _2, ... if another buffer has it:
 * the printed function must read back. */
static const char *scoped_buffer_name(mlc_sched *s, const char *base, const char *scope) {
  char *name = mlc_arena_printf(s->arena, "%s_%s", base, scope);
  for (char *p = name; *p; p++)
    if (*p == '.') *p = '_';
  const char *out = name;
  for (int k = 1; buffer_name_taken(s, out); k++) out = mlc_arena_suffixed(s->arena, name, k);
  return out;
}

/* ---- where things are ------------------------------------------------------------ */

static bool lists_buffer(int n, const mlc_region *rs, const mlc_buffer *buf) {
  for (int i = 0; i < n; i++)
    if (rs[i].buf == buf) return true;
  return false;
}

/* The realize of the block's parent block (its scope), or NULL for the root. */
static mlc_stmt *scope_realize_of(mlc_sched *s, mlc_stmt *realize) {
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, realize, path);
  for (int i = n - 2; i >= 0; i--)
    if (path[i]->kind == MLC_STMT_BLOCK_REALIZE) return path[i];
  return NULL;
}

typedef struct realize_list {
  mlc_arena *a;
  MLC_VEC(mlc_stmt *) v;
} realize_list;

static void push_realize(mlc_stmt *r, void *ctx) {
  realize_list *l = ctx;
  MLC_VEC_APUSH(l->a, l->v, r);
}

/* The blocks directly inside the scope block, in program order. */
static realize_list scope_children(mlc_sched *s, mlc_block *scope) {
  realize_list l = {s->arena, {0}};
  if (scope->init) sched_each_realize(scope->init, push_realize, &l);
  sched_each_realize(scope->body, push_realize, &l);
  return l;
}

static int index_in(const realize_list *l, const mlc_block *b) {
  for (int i = 0; i < l->v.len; i++)
    if (l->v.data[i]->realize.block == b) return i;
  return -1;
}

/* ---- insertion point (TVM's CacheLocDetector) ------------------------------------------- */

typedef struct detector {
  const mlc_block *writer;
  mlc_block **related; /* blocks that must see the cache stage before them */
  int n_related;
  bool visited_block, visited_related;
  int pos;          /* index in loc's body; -1 until found */
  mlc_stmt *seq;    /* the SEQ where pos was found */
  mlc_stmt *loop;   /* innermost loop holding that SEQ; NULL: the scope block */
  bool loop_set;
} detector;

static bool is_related(const detector *d, const mlc_block *b) {
  for (int i = 0; i < d->n_related; i++)
    if (d->related[i] == b) return true;
  return false;
}

static void detect(detector *d, mlc_stmt *st) {
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_SEQ: {
    bool before = d->visited_block;
    d->visited_block = false;
    for (int i = 0; i < st->seq.n && d->pos == -1; i++) {
      detect(d, st->seq.stmts[i]);
      if (d->visited_block && d->visited_related && d->pos == -1) {
        d->pos = i, d->seq = st;
        break;
      }
      if (d->visited_related) break; /* a consumer before the writer */
    }
    d->visited_block = d->visited_block || before;
    return;
  }
  case MLC_STMT_FOR:
    detect(d, st->loop.body);
    if (d->visited_block && d->visited_related && !d->loop_set && d->pos != -1)
      d->loop = st, d->loop_set = true;
    return;
  case MLC_STMT_BLOCK_REALIZE:
    if (st->realize.block == d->writer) d->visited_block = true;
    else if (is_related(d, st->realize.block)) d->visited_related = true;
    return;
  case MLC_STMT_IF:
    detect(d, st->if_.then_s);
    detect(d, st->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: detect(d, st->alloc.body); return;
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return;
  }
  mlc_unreachable();
}

/* Where the stage goes: the body of `loop` (or of the scope block when
 * NULL), before its child `pos` (a body that is not a SEQ: 0 before, 1
 * after). */
typedef struct stage_loc {
  mlc_stmt *loop;
  int pos;
} stage_loc;

static mlc_stmt **loc_slot(mlc_block *scope, const stage_loc *loc) {
  return loc->loop ? &loc->loop->loop.body : &scope->body;
}

static bool find_loc(mlc_block *scope, const mlc_block *writer, mlc_block **related, int n_related,
                     stage_loc *loc) {
  if (n_related == 0) { /* nobody reads it afterwards: the end of the scope */
    loc->loop = NULL;
    loc->pos = scope->body->kind == MLC_STMT_SEQ ? scope->body->seq.n : 1;
    return true;
  }
  detector d = {writer, related, n_related, false, false, -1, NULL, NULL, false};
  detect(&d, scope->body);
  if (!d.visited_block || !d.visited_related || d.pos == -1) return false;
  loc->loop = d.loop_set ? d.loop : NULL;
  loc->pos = d.pos;
  /* The SEQ must be the container's body itself (not under an if). */
  return *loc_slot(scope, loc) == d.seq;
}

/* Whether realize r lies in loc's container at or after the insertion
 * point (it then runs after the stage, in the same iteration). */
static bool after_loc(mlc_sched *s, mlc_stmt *scope_r, const stage_loc *loc, mlc_stmt *r) {
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, r, path);
  mlc_stmt *container = loc->loop ? loc->loop : scope_r;
  mlc_stmt *body = *loc_slot(scope_r->realize.block, loc);
  for (int k = 0; k + 1 < n; k++) {
    if (path[k] != container) continue;
    if (path[k + 1] != body) return false; /* e.g. in the scope's init */
    if (body->kind != MLC_STMT_SEQ) return loc->pos == 0;
    if (k + 2 >= n) return false;
    for (int i = 0; i < body->seq.n; i++)
      if (body->seq.stmts[i] == path[k + 2]) return i >= loc->pos;
    return false;
  }
  return false;
}

/* ---- regions ------------------------------------------------------------------------ */

/* Region r of realize's block, in terms of the variables live at loc:
 * iter vars replaced by their bindings, loops between loc and the block
 * relaxed. False if one of those loops has non-constant bounds. */
static bool region_at(mlc_sched *s, mlc_stmt *realize, const mlc_region *r, mlc_stmt *loc_stmt,
                      mlc_region *out) {
  mlc_arena *a = s->arena;
  const mlc_block *b = realize->realize.block;
  mlc_var **iv = MLC_NEW_ARRAY(a, mlc_var *, b->n_iters + 1);
  for (int i = 0; i < b->n_iters; i++) iv[i] = b->iters[i].var;
  mlc_region sub = {r->buf, MLC_NEW_ARRAY(a, mlc_range, r->buf->ndim + 1)};
  for (int d = 0; d < r->buf->ndim; d++) {
    sub.ranges[d].min = mlc_expr_subst(a, r->ranges[d].min, b->n_iters, iv, realize->realize.values);
    sub.ranges[d].extent =
        mlc_expr_subst(a, r->ranges[d].extent, b->n_iters, iv, realize->realize.values);
  }
  mlc_stmt *path[SCHED_MAX_DEPTH];
  mlc_var *lv[SCHED_MAX_DEPTH];
  int64_t mins[SCHED_MAX_DEPTH], exts[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, realize, path), k = 0, nl = 0;
  while (k < n && path[k] != loc_stmt) k++;
  for (int i = k + 1; i < n - 1; i++) {
    bool symbolic;
    if (path[i]->kind != MLC_STMT_FOR) continue;
    if (!sched_loop_range(s, path[i], &mins[nl], &exts[nl], &symbolic)) return false;
    lv[nl++] = path[i]->loop.var;
  }
  *out = mlc_region_relax(a, sub, nl, lv, mins, exts);
  return true;
}

/* Cut constant ranges to the buffer's shape (relaxing ignores predicates,
 * so an uneven split reaches past the end). False if a range is empty. */
static bool clamp_region(mlc_arena *a, mlc_region *r) {
  for (int d = 0; d < r->buf->ndim; d++) {
    int64_t mn, ext;
    if (!mlc_expr_is_const_int(r->ranges[d].min, &mn) ||
        !mlc_expr_is_const_int(r->ranges[d].extent, &ext))
      continue;
    int64_t lo = mn < 0 ? 0 : mn, hi = mn + ext > r->buf->shape[d] ? r->buf->shape[d] : mn + ext;
    if (hi <= lo) return false;
    mlc_dtype t = r->ranges[d].min->dtype;
    r->ranges[d].min = mlc_int_t(a, mlc_dtype_is_int(t) ? t : MLC_INT32, lo);
    r->ranges[d].extent = mlc_int_t(a, mlc_dtype_is_int(t) ? t : MLC_INT32, hi - lo);
  }
  return true;
}

static bool constant_extents(const mlc_region *r) {
  int64_t e;
  for (int d = 0; d < r->buf->ndim; d++)
    if (!mlc_expr_is_const_int(r->ranges[d].extent, &e) || e < 1) return false;
  return true;
}

/* inner inside outer, provably (same symbolic base, constant extents). */
static bool region_within(mlc_arena *a, const mlc_region *inner, const mlc_region *outer) {
  for (int d = 0; d < inner->buf->ndim; d++) {
    int64_t ie, oe, diff;
    if (!mlc_expr_is_const_int(inner->ranges[d].extent, &ie) ||
        !mlc_expr_is_const_int(outer->ranges[d].extent, &oe) ||
        !mlc_expr_const_diff(a, inner->ranges[d].min, outer->ranges[d].min, &diff))
      return false;
    if (diff < 0 || diff + ie > oe) return false;
  }
  return true;
}

static const mlc_region *region_of(int n, const mlc_region *rs, const mlc_buffer *buf) {
  for (int i = 0; i < n; i++)
    if (rs[i].buf == buf) return &rs[i];
  return NULL;
}

static mlc_region full_region(mlc_arena *a, mlc_buffer *buf) {
  mlc_region r = {buf, MLC_NEW_ARRAY(a, mlc_range, buf->ndim + 1)};
  for (int d = 0; d < buf->ndim; d++)
    r.ranges[d] = (mlc_range){mlc_int(a, 0), mlc_int(a, buf->shape[d])};
  return r;
}

/* ---- rewriting buffer accesses ---------------------------------------------------------- */

/* Accesses of `from` use `to` instead (copy on write: expression nodes may
 * be shared between statements). A compacted cache holds the region
 * starting at `offset` (per dimension, NULL: 0; the array NULL: no
 * compaction), so its indices are the old ones minus the offset, as
 * TensorIR rewrites them. */
typedef struct buf_swap {
  const mlc_buffer *from;
  mlc_buffer *to;
  mlc_expr **offset;
} buf_swap;

static mlc_expr *shifted(mlc_arena *a, mlc_expr *ix, mlc_expr *off) {
  if (!off) return ix;
  if (off->dtype != ix->dtype) off = mlc_cast(a, ix->dtype, off);
  return mlc_simplify_expr(a, mlc_sub(a, ix, off));
}

static mlc_expr **shifted_indices(mlc_arena *a, const buf_swap *w, mlc_expr **idx) {
  if (!w->offset) return idx;
  int nd = w->from->ndim;
  mlc_expr **out = MLC_NEW_ARRAY(a, mlc_expr *, nd + 1);
  for (int d = 0; d < nd; d++) out[d] = shifted(a, idx[d], w->offset[d]);
  return out;
}

static mlc_expr *swap_load(mlc_arena *a, mlc_expr *e, void *ud) {
  const buf_swap *w = ud;
  if (e->kind != MLC_EXPR_LOAD || e->load.buf != w->from) return e;
  mlc_expr *n = mlc_arena_memdup(a, e, sizeof *e);
  n->load.buf = w->to;
  n->load.indices = shifted_indices(a, w, e->load.indices);
  return n;
}

static mlc_expr *swap_expr(mlc_arena *a, mlc_expr *e, const buf_swap *w) {
  return mlc_expr_map(a, e, swap_load, (void *)w);
}

static mlc_expr **swap_exprs(mlc_arena *a, mlc_expr **es, int n, const buf_swap *w) {
  return mlc_exprs_map(a, es, n, swap_load, (void *)w);
}

/* A fresh region array with `from` replaced (arrays may be shared). */
static mlc_region *swap_regions(mlc_arena *a, int n, mlc_region *rs, const buf_swap *w) {
  if (!lists_buffer(n, rs, w->from)) return rs;
  mlc_region *out = MLC_NEW_ARRAY(a, mlc_region, n + 1);
  for (int i = 0; i < n; i++) {
    out[i] = rs[i];
    if (out[i].buf != w->from) continue;
    out[i].buf = w->to;
    if (!w->offset) continue;
    out[i].ranges = MLC_NEW_ARRAY(a, mlc_range, w->from->ndim + 1);
    for (int d = 0; d < w->from->ndim; d++)
      out[i].ranges[d] = (mlc_range){shifted(a, rs[i].ranges[d].min, w->offset[d]),
                                     rs[i].ranges[d].extent};
  }
  return out;
}

typedef struct swap_ctx {
  mlc_arena *a;
  buf_swap w;
  bool stores; /* also redirect stores and write regions (the writer) */
} swap_ctx;

static void swap_stmt(swap_ctx *c, mlc_stmt **slot);

static void swap_block(swap_ctx *c, mlc_block *b) {
  b->reads = swap_regions(c->a, b->n_reads, b->reads, &c->w);
  if (c->stores) b->writes = swap_regions(c->a, b->n_writes, b->writes, &c->w);
  if (b->init) swap_stmt(c, &b->init);
  swap_stmt(c, &b->body);
}

/* Loops and realizes are changed in place (handles point at them); a
 * changed store or evaluate becomes a new node, since leaves may be
 * shared with a copy made by substitution. */
static void swap_stmt(swap_ctx *c, mlc_stmt **slot) {
  mlc_stmt *st = *slot, *n;
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_FOR: swap_stmt(c, &st->loop.body); return;
  case MLC_STMT_BLOCK_REALIZE: swap_block(c, st->realize.block); return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) swap_stmt(c, &st->seq.stmts[i]);
    return;
  case MLC_STMT_STORE: {
    mlc_expr **idx = swap_exprs(c->a, st->store.indices, st->store.buf->ndim, &c->w);
    mlc_expr *v = swap_expr(c->a, st->store.value, &c->w);
    bool redirect = c->stores && st->store.buf == c->w.from;
    if (idx == st->store.indices && v == st->store.value && !redirect) return;
    n = mlc_arena_memdup(c->a, st, sizeof *st);
    n->store.indices = redirect ? shifted_indices(c->a, &c->w, idx) : idx, n->store.value = v;
    if (redirect) n->store.buf = c->w.to;
    *slot = n;
    return;
  }
  case MLC_STMT_IF:
    st->if_.cond = swap_expr(c->a, st->if_.cond, &c->w);
    swap_stmt(c, &st->if_.then_s);
    swap_stmt(c, &st->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: swap_stmt(c, &st->alloc.body); return;
  case MLC_STMT_EVALUATE: {
    mlc_expr *v = swap_expr(c->a, st->eval.value, &c->w);
    if (v == st->eval.value) return;
    n = mlc_arena_memdup(c->a, st, sizeof *st);
    n->eval.value = v;
    *slot = n;
    return;
  }
  }
  mlc_unreachable();
}

/* ---- building the stage ---------------------------------------------------------------- */

/* for ax0, ax1, ... in T.grid(region extents):
 *   with T.block(name): v_d = T.axis.spatial(shape_d, min_d + ax_d)
 *     dst[v0, v1, ...] = src[v0, v1, ...]
 * A compacted cache (the stage sits in its scope block, as TensorIR's
 * cache_full_region = false) holds only the region: v_d =
 * T.axis.spatial(extent_d, ax_d), the cache is indexed v_d and the
 * region's buffer min_d + v_d. */
static mlc_stmt *make_stage(mlc_sched *s, const char *name, const mlc_region *region,
                            mlc_buffer *src, mlc_buffer *dst, bool compact, mlc_block **out_block) {
  mlc_arena *a = s->arena;
  int nd = region->buf->ndim;
  mlc_block *b = mlc_block_new(a, name);
  b->n_iters = nd;
  b->iters = MLC_NEW_ARRAY(a, mlc_iter_var, nd + 1);
  mlc_expr **idx = MLC_NEW_ARRAY(a, mlc_expr *, nd + 1), **vals = MLC_NEW_ARRAY(a, mlc_expr *, nd + 1);
  mlc_expr **orig_idx = compact ? MLC_NEW_ARRAY(a, mlc_expr *, nd + 1) : idx;
  mlc_var **ax = MLC_NEW_ARRAY(a, mlc_var *, nd + 1);
  mlc_range *point = MLC_NEW_ARRAY(a, mlc_range, nd + 1);
  mlc_range *orig_point = compact ? MLC_NEW_ARRAY(a, mlc_range, nd + 1) : point;
  for (int d = 0; d < nd; d++) {
    mlc_dtype t = region->ranges[d].extent->dtype;
    if (!mlc_dtype_is_int(t)) t = MLC_INT32;
    mlc_var *v = mlc_var_new(a, mlc_arena_numbered(a, "v", d), t);
    ax[d] = mlc_var_new(a, mlc_arena_numbered(a, "ax", d), t);
    /* The iter spans the buffer's extent: its symbolic one where it has one
     * (an index then provably below it at every size). */
    mlc_expr *dom = compact ? region->ranges[d].extent : mlc_int_t(a, t, region->buf->shape[d]);
    int64_t mn0, ext0;
    if (region->buf->dims && region->buf->dims[d]->kind != MLC_EXPR_INT_IMM &&
        mlc_expr_is_const_int(region->ranges[d].min, &mn0) && mn0 == 0 &&
        mlc_expr_is_const_int(dom, &ext0) && ext0 == region->buf->shape[d])
      dom = region->buf->dims[d]->dtype == t ? region->buf->dims[d] : mlc_cast(a, t, region->buf->dims[d]);
    b->iters[d] = (mlc_iter_var){v, {mlc_int_t(a, t, 0), dom}, MLC_ITER_SPATIAL};
    idx[d] = mlc_ref(a, v);
    point[d] = (mlc_range){idx[d], mlc_int_t(a, t, 1)};
    int64_t mn;
    bool zero = mlc_expr_is_const_int(region->ranges[d].min, &mn) && mn == 0;
    mlc_expr *start = zero ? mlc_ref(a, ax[d]) : mlc_add(a, region->ranges[d].min, mlc_ref(a, ax[d]));
    vals[d] = compact ? mlc_ref(a, ax[d]) : start;
    if (!compact) continue;
    orig_idx[d] = zero ? idx[d] : mlc_add(a, region->ranges[d].min, idx[d]);
    orig_point[d] = (mlc_range){orig_idx[d], mlc_int_t(a, t, 1)};
  }
  mlc_expr **src_idx = src == region->buf ? orig_idx : idx, **dst_idx = dst == region->buf ? orig_idx : idx;
  b->n_reads = b->n_writes = 1;
  b->reads = MLC_NEW(a, mlc_region);
  b->writes = MLC_NEW(a, mlc_region);
  *b->reads = (mlc_region){src, src == region->buf ? orig_point : point};
  *b->writes = (mlc_region){dst, dst == region->buf ? orig_point : point};
  b->body = mlc_store_new(a, dst, dst_idx, mlc_load(a, src, src_idx));
  mlc_stmt *st = mlc_realize_new(a, b, vals, NULL);
  for (int d = nd - 1; d >= 0; d--)
    st = mlc_for_new(a, ax[d], mlc_int_t(a, ax[d]->dtype, 0), region->ranges[d].extent,
                     MLC_FOR_SERIAL, st);
  *out_block = b;
  return st;
}

static void insert_stage(mlc_arena *a, mlc_stmt **slot, int pos, mlc_stmt *stage) {
  mlc_stmt *body = *slot;
  if (body->kind == MLC_STMT_SEQ) { /* keep the SEQ node, grow its array */
    mlc_stmt **arr = MLC_NEW_ARRAY(a, mlc_stmt *, body->seq.n + 1);
    for (int i = 0, k = 0; i <= body->seq.n; i++)
      arr[i] = i == pos ? stage : body->seq.stmts[k++];
    body->seq.stmts = arr;
    body->seq.n++;
    return;
  }
  mlc_stmt *two[2] = {pos == 0 ? stage : body, pos == 0 ? body : stage};
  *slot = mlc_seq_new(a, 2, two);
}

static void add_alloc(mlc_arena *a, mlc_block *scope, mlc_buffer *buf) {
  mlc_buffer **arr = MLC_NEW_ARRAY(a, mlc_buffer *, scope->n_allocs + 1);
  for (int i = 0; i < scope->n_allocs; i++) arr[i] = scope->allocs[i];
  arr[scope->n_allocs] = buf;
  scope->allocs = arr;
  scope->n_allocs++;
}

/* ---- shared preconditions ------------------------------------------------------------------ */

/* What both cache primitives resolved before touching the IR. */
typedef struct cache_plan {
  mlc_block *blk;      /* the given block */
  mlc_stmt *scope_r;   /* realize of its scope block */
  mlc_block *scope;
  mlc_buffer *buf;     /* the buffer cached */
  realize_list kids;   /* the scope's child blocks */
  mlc_block **cons;    /* blocks that will use the cache */
  int n_cons;
  stage_loc loc;
  mlc_region region;   /* what the stage copies, in the vars live at loc */
  bool compact;        /* the cache holds just `region` (the stage is in the scope block) */
  mlc_expr **offset;   /* compact: region's start per dimension, NULL where 0 */
  bool symbolic;       /* the cache holds the whole of a buffer of symbolic extents */
  bool tail_guard;     /* the writer's predicate cuts the tails of symbolic extents: the
                          write-back copies only what lies inside them */
} cache_plan;

static bool check_consumer_list(mlc_sched *s, const char *prim, const char *who, cache_plan *p,
                                int n, const mlc_rv *cons, mlc_error *err) {
  char d[96];
  p->cons = MLC_NEW_ARRAY(s->arena, mlc_block *, n + p->kids.v.len + 1);
  p->n_cons = 0;
  for (int i = 0; i < n; i++) {
    if (!sched_check_block(s, prim, cons[i], err)) return false;
    mlc_block *c = s->rvs.data[cons[i]].block;
    sched_rv_desc(s, cons[i], d);
    if (index_in(&p->kids, c) < 0)
      return mlc_error_set(err, "%s: %s: consumer %s is not a block of the same scope", prim, who, d);
    if (!lists_buffer(c->n_reads, c->reads, p->buf) || lists_buffer(c->n_writes, c->writes, p->buf))
      return mlc_error_set(err, "%s: %s: consumer %s does not read buffer %s (or also writes it)",
                           prim, who, d, p->buf->name);
    for (int j = 0; j < p->n_cons; j++)
      if (p->cons[j] == c) return mlc_error_set(err, "%s: %s: consumer %s is given twice", prim, who, d);
    p->cons[p->n_cons++] = c;
  }
  return true;
}

/* The given block, the index-th buffer of its reads or writes, its scope. */
static bool plan_start(mlc_sched *s, const char *prim, mlc_rv rv, int index, bool write,
                       const char *scope_name, cache_plan *p, char who[96], mlc_error *err) {
  memset(p, 0, sizeof *p);
  if (!sched_check_block(s, prim, rv, err)) return false;
  sched_rv_desc(s, rv, who);
  if (!scope_check(prim, who, scope_name, err)) return false;
  p->blk = s->rvs.data[rv].block;
  int n = write ? p->blk->n_writes : p->blk->n_reads;
  if (index < 0 || index >= n)
    return mlc_error_set(err,
                         "%s: %s: %s_buffer_index %d is out of range: the block %s %d buffer%s",
                         prim, who, write ? "write" : "read", index, write ? "writes" : "reads", n,
                         n == 1 ? "" : "s");
  p->buf = write ? p->blk->writes[index].buf : p->blk->reads[index].buf;
  p->scope_r = scope_realize_of(s, sched_find_realize(s, p->blk));
  if (!p->scope_r) return mlc_error_set(err, "%s: %s: the root block has no scope to cache in", prim, who);
  p->scope = p->scope_r->realize.block;
  p->kids = scope_children(s, p->scope);
  return true;
}

/* The only child block of the scope writing buf; NULL if none. */
static bool only_writer(mlc_sched *s, const char *prim, const char *who, cache_plan *p,
                        mlc_stmt **writer, mlc_error *err) {
  int count = 0;
  *writer = NULL;
  for (int i = 0; i < p->kids.v.len; i++) {
    mlc_block *b = p->kids.v.data[i]->realize.block;
    if (!lists_buffer(b->n_writes, b->writes, p->buf)) continue;
    count++;
    *writer = p->kids.v.data[i];
  }
  if (count > 1)
    return mlc_error_set(err, "%s: %s: buffer %s is written by %d blocks of the scope, not one",
                         prim, who, p->buf->name, count);
  return true;
}

/* The stage region where it goes: constant size, inside the buffer. */
static bool finish_region(mlc_sched *s, const char *prim, const char *who, cache_plan *p,
                          mlc_error *err) {
  if (!clamp_region(s->arena, &p->region))
    return mlc_error_set(err, "%s: %s: the region of %s to cache is empty", prim, who, p->buf->name);
  if (!constant_extents(&p->region))
    return mlc_error_set(err,
                         "%s: %s: the region of %s the stage must hold at its place has no "
                         "constant size",
                         prim, who, p->buf->name);
  return true;
}

/* ---- cache_read ------------------------------------------------------------------------ */

/* Where the copy goes and what it holds: after the buffer's only writer
 * and before its first consumer, holding the writer's output; or at the
 * scope's start, holding the whole buffer (or what the scope reads). */
static bool cache_read_plan(mlc_sched *s, cache_plan *p, const char *who, mlc_error *err) {
  const char *prim = "cache_read";
  mlc_stmt *w;
  if (!only_writer(s, prim, who, p, &w, err)) return false;
  if (!w) {
    p->loc = (stage_loc){NULL, 0};
    const mlc_region *sr = region_of(p->scope->n_reads, p->scope->reads, p->buf);
    p->region = sr ? *sr : full_region(s->arena, p->buf);
    return finish_region(s, prim, who, p, err);
  }
  mlc_block *wb = w->realize.block;
  /* (TVM's detector can also pick a place before the writer when both sit
   * in one child without a SEQ between them, e.g. the two arms of an if.) */
  if (!find_loc(p->scope, wb, p->cons, p->n_cons, &p->loc) || after_loc(s, p->scope_r, &p->loc, w))
    return mlc_error_set(err,
                         "%s: %s: found no place after writer \"%s\" of %s and before its "
                         "consumers (a consumer comes first)",
                         prim, who, wb->name, p->buf->name);
  if (p->loc.loop && w->realize.predicate)
    return mlc_error_set(err, "%s: %s: writer \"%s\" has a predicate inside the stage's loop", prim,
                         who, wb->name);
  mlc_stmt *loc_stmt = p->loc.loop ? p->loc.loop : p->scope_r;
  if (!region_at(s, w, region_of(wb->n_writes, wb->writes, p->buf), loc_stmt, &p->region))
    return mlc_error_set(err, "%s: %s: a loop above writer \"%s\" has non-constant bounds", prim,
                         who, wb->name);
  return finish_region(s, prim, who, p, err);
}

/* The statement under which both the stage and consumer realize r run
 * (the stage's loop, the scope block's realize, or a loop holding the
 * stage's loop and r), with r after the stage there: *anc. False if r may
 * run before the stage. Once the stage's loop has run all its iterations,
 * the cache holds what they copied, so a consumer after that loop sees the
 * union (TVM's cache_read with several consumers places the stage before
 * the first and lets the others read it later). */
static bool runs_after_stage(mlc_sched *s, const cache_plan *p, mlc_stmt *r, mlc_stmt **anc) {
  mlc_stmt *container = p->loc.loop ? p->loc.loop : p->scope_r;
  *anc = container;
  if (after_loc(s, p->scope_r, &p->loc, r)) return true;
  if (!p->loc.loop) return false;
  mlc_stmt *pc[SCHED_MAX_DEPTH], *pr[SCHED_MAX_DEPTH];
  int nc = sched_path_to(s, container, pc), nr = sched_path_to(s, r, pr), k = 0;
  while (k < nc && k < nr && pc[k] == pr[k]) k++;
  if (k == 0 || k >= nc || k >= nr || pc[k - 1]->kind != MLC_STMT_SEQ) return false;
  const mlc_stmt *seq = pc[k - 1];
  int ic = -1, ir = -1;
  for (int i = 0; i < seq->seq.n; i++) {
    if (seq->seq.stmts[i] == pc[k]) ic = i;
    if (seq->seq.stmts[i] == pr[k]) ir = i;
  }
  if (ic < 0 || ir <= ic) return false;
  for (int i = k - 1; i >= 0; i--)
    if (pc[i]->kind == MLC_STMT_FOR || pc[i] == p->scope_r) {
      *anc = pc[i];
      return true;
    }
  return false;
}

/* What the cache holds under anc once the stage's loops below it have run:
 * the stage's region relaxed over the loops from anc (exclusive) down to
 * the stage's loop (inclusive). */
static bool held_at(mlc_sched *s, const cache_plan *p, mlc_stmt *anc, mlc_region *out) {
  mlc_stmt *container = p->loc.loop ? p->loc.loop : p->scope_r;
  *out = p->region;
  if (anc == container) return true;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  mlc_var *lv[SCHED_MAX_DEPTH];
  int64_t mins[SCHED_MAX_DEPTH], exts[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, container, path), k = 0, nl = 0;
  while (k < n && path[k] != anc) k++;
  for (int i = k + 1; i < n; i++) {
    bool symbolic;
    if (path[i]->kind != MLC_STMT_FOR) continue;
    if (!sched_loop_range(s, path[i], &mins[nl], &exts[nl], &symbolic)) return false;
    lv[nl++] = path[i]->loop.var;
  }
  *out = mlc_region_relax(s->arena, p->region, nl, lv, mins, exts);
  return clamp_region(s->arena, out);
}

/* Each consumer runs after the stage and reads only what it holds. */
static bool consumers_covered(mlc_sched *s, const char *prim, const char *who, cache_plan *p,
                              mlc_error *err) {
  for (int i = 0; i < p->n_cons; i++) {
    mlc_block *c = p->cons[i];
    mlc_stmt *r = p->kids.v.data[index_in(&p->kids, c)], *anc;
    mlc_region held;
    if (!runs_after_stage(s, p, r, &anc))
      return mlc_error_set(err, "%s: %s: consumer \"%s\" does not run after the cache stage's place",
                           prim, who, c->name);
    if (!held_at(s, p, anc, &held))
      return mlc_error_set(err, "%s: %s: a loop above the cache stage has non-constant bounds", prim,
                           who);
    for (int k = 0; k < c->n_reads; k++) {
      mlc_region need;
      if (c->reads[k].buf != p->buf) continue;
      /* Clamped: reads past the buffer happen only on untaken sides of
       * T.if_then_else (padding), never for real. */
      if (!region_at(s, r, &c->reads[k], anc, &need) || !clamp_region(s->arena, &need) ||
          !region_within(s->arena, &need, &held))
        return mlc_error_set(err, "%s: %s: consumer \"%s\" reads a part of %s the cache would not hold",
                             prim, who, c->name, p->buf->name);
    }
  }
  return true;
}

/* TensorIR compacts a cache whose stage sits directly in the scope block
 * (no loop of the scope around it): the cache is the region's shape and
 * every access is shifted by the region's start. Under a loop the stage
 * runs once per iteration, so the cache keeps the buffer's shape. */
static void plan_compaction(mlc_sched *s, cache_plan *p) {
  p->compact = p->loc.loop == NULL;
  if (!p->compact) return;
  int nd = p->buf->ndim;
  p->offset = MLC_NEW_ARRAY(s->arena, mlc_expr *, nd + 1);
  for (int d = 0; d < nd; d++) {
    int64_t mn;
    bool zero = mlc_expr_is_const_int(p->region.ranges[d].min, &mn) && mn == 0;
    p->offset[d] = zero ? NULL : p->region.ranges[d].min;
  }
}

static mlc_buffer *new_cache_buffer(mlc_sched *s, const cache_plan *p, const char *scope) {
  const mlc_buffer *buf = p->buf;
  int64_t *shape = buf->shape;
  if (p->symbolic) { /* extents as the buffer's, storage for their bounds */
    mlc_buffer *c = mlc_buffer_new(s->arena, scoped_buffer_name(s, buf->name, scope), buf->dtype,
                                   buf->ndim, shape, scope);
    c->dims = buf->dims;
    return c;
  }
  if (p->compact) {
    shape = MLC_NEW_ARRAY(s->arena, int64_t, buf->ndim + 1);
    for (int d = 0; d < buf->ndim; d++) {
      bool sized = mlc_expr_is_const_int(p->region.ranges[d].extent, &shape[d]);
      MLC_ASSERT(sized); /* finish_region checked it */
    }
  }
  return mlc_buffer_new(s->arena, scoped_buffer_name(s, buf->name, scope), buf->dtype, buf->ndim,
                        shape, scope);
}

/* A write-back whose writer's tails were cut: it copies the elements of
 * the region inside the buffer's symbolic extents alone (the writer wrote
 * no others), `T.where(min + ax < n)` per symbolic extent. */
static void guard_tails(mlc_sched *s, const cache_plan *p, mlc_stmt *stage) {
  mlc_arena *a = s->arena;
  mlc_stmt *r = stage;
  mlc_expr *pred = NULL;
  for (int d = 0; d < p->buf->ndim; d++) {
    mlc_expr *ax = mlc_ref(a, r->loop.var), *dim = p->buf->dims[d];
    r = r->loop.body;
    if (dim->kind == MLC_EXPR_INT_IMM) continue;
    mlc_expr *at = mlc_add(a, p->region.ranges[d].min, ax);
    if (at->dtype != dim->dtype) at = mlc_cast(a, dim->dtype, at);
    mlc_expr *in = mlc_binary(a, MLC_EXPR_LT, at, dim);
    pred = pred ? mlc_binary(a, MLC_EXPR_AND, pred, in) : in;
  }
  MLC_ASSERT(r->kind == MLC_STMT_BLOCK_REALIZE);
  r->realize.predicate = pred;
}

/* Stage into the IR at the plan's place, cache allocated in the scope,
 * bindings simplified. */
static mlc_block *place_stage(mlc_sched *s, cache_plan *p, mlc_buffer *src, mlc_buffer *dst,
                              const char *scope_name) {
  mlc_block *sb;
  const char *name =
      unique_block_name(s, mlc_arena_printf(s->arena, "%s_%s", p->buf->name, scope_name));
  mlc_stmt *stage = make_stage(s, name, &p->region, src, dst, p->compact, &sb);
  if (p->tail_guard) guard_tails(s, p, stage);
  insert_stage(s->arena, loc_slot(p->scope, &p->loc), p->loc.pos, stage);
  sched_simplify_bindings(s, stage);
  return sb;
}

static void record_cache(mlc_sched *s, mlc_inst_kind k, mlc_rv rv, int n_cons, const mlc_rv *cons,
                         const char *index_key, int index, const char *scope, mlc_rv *out) {
  mlc_operand *in = MLC_NEW_ARRAY(s->arena, mlc_operand, n_cons + 1);
  in[0] = MLC_OP_RV(rv);
  for (int i = 0; i < n_cons; i++) in[i + 1] = MLC_OP_RV(cons[i]);
  mlc_attr at[2] = {sched_attr_int(index_key, index), sched_attr_str("storage_scope", scope)};
  sched_record(s, k, n_cons + 1, in, 2, at, 1, out);
}

bool mlc_sched_cache_read(mlc_sched *s, mlc_rv rv, int read_buffer_index, const char *storage_scope,
                          int n_consumers, const mlc_rv *consumers, mlc_rv *out, mlc_error *err) {
  const char *prim = "cache_read";
  char who[96];
  cache_plan p;
  if (!plan_start(s, prim, rv, read_buffer_index, false, storage_scope, &p, who, err)) return false;
  if (lists_buffer(p.blk->n_writes, p.blk->writes, p.buf))
    return mlc_error_set(err, "%s: %s: the block also writes buffer %s, so it cannot read it from a cache",
                         prim, who, p.buf->name);
  if (n_consumers < 0) return mlc_error_set(err, "%s: %s: negative consumer count", prim, who);
  if (!check_consumer_list(s, prim, who, &p, n_consumers, consumers, err)) return false;
  if (n_consumers == 0) /* every block of the scope that reads it (and does not write it) */
    for (int i = 0; i < p.kids.v.len; i++) {
      mlc_block *b = p.kids.v.data[i]->realize.block;
      if (lists_buffer(b->n_reads, b->reads, p.buf) && !lists_buffer(b->n_writes, b->writes, p.buf))
        p.cons[p.n_cons++] = b;
    }
  if (!cache_read_plan(s, &p, who, err) || !consumers_covered(s, prim, who, &p, err)) return false;
  plan_compaction(s, &p);

  /* Checked; now change the IR. */
  mlc_buffer *cache = new_cache_buffer(s, &p, storage_scope);
  add_alloc(s->arena, p.scope, cache);
  swap_ctx sc = {s->arena, {p.buf, cache, p.offset}, false};
  for (int i = 0; i < p.n_cons; i++) swap_block(&sc, p.cons[i]);
  mlc_block *sb = place_stage(s, &p, p.buf, cache, storage_scope);
  *out = sched_new_rv(s, MLC_RV_BLOCK, sb, NULL, 0);
  record_cache(s, MLC_INST_CACHE_READ, rv, n_consumers, consumers, "read_buffer_index",
               read_buffer_index, storage_scope, out);
  return true;
}

/* ---- cache_write ------------------------------------------------------------------------ */

/* The write-back copies the writer's whole write region, so the writer
 * must write every element of it: each dimension a constant range, or a
 * range [v * e + c, e) over its own spatial iter var v (e == 1: a point;
 * e > 1: a blockized block's tile), over loops that run v's whole domain
 * (the region at the scope then equals the domain box). */
static bool dense_write(mlc_sched *s, mlc_stmt *w, const mlc_region *r) {
  const mlc_block *b = w->realize.block;
  mlc_arena *a = s->arena;
  bool used[64] = {false};
  if (b->n_iters > 64) return false;
  for (int d = 0; d < r->buf->ndim; d++) {
    int64_t e, c;
    if (!mlc_expr_is_const_int(r->ranges[d].extent, &e) || e < 1) return false;
    mlc_expr *ix = mlc_simplify_expr(a, r->ranges[d].min);
    if (mlc_expr_is_const_int(ix, &c)) continue;
    int found = -1;
    for (int i = 0; i < b->n_iters && found < 0; i++) {
      mlc_expr *v = mlc_ref(a, b->iters[i].var);
      if (e > 1) v = mlc_mul(a, v, mlc_int_t(a, v->dtype, e));
      if (mlc_expr_const_diff(a, ix, v, &c)) found = i;
    }
    if (found < 0 || used[found] || b->iters[found].kind != MLC_ITER_SPATIAL) return false;
    used[found] = true;
  }
  return true;
}

/* One dimension of a written index: its steps (the coefficients of the
 * loops it uses, and 1 for a tile's extent) and how many of each. */
typedef struct step {
  int64_t stride, count;
} step;

static int cmp_steps(const void *x, const void *y) {
  int64_t a = ((const step *)x)->stride, b = ((const step *)y)->stride;
  return (a > b) - (a < b);
}

/* Whether sum(k_i * stride_i), 0 <= k_i < count_i, fills an interval:
 * by increasing stride, each at most one past the span so far. */
static bool steps_fill(step *st, int n) {
  qsort(st, (size_t)n, sizeof *st, cmp_steps);
  int64_t reach = 0;
  for (int i = 0; i < n; i++) {
    if (st[i].stride > reach + 1) return false;
    reach += st[i].stride * (st[i].count - 1);
  }
  return true;
}

/* A loop's extent as the fill check counts it: its constant, or, where
 * the writer's predicate cuts the tails of symbolic extents, its value at
 * the sizes' bounds (the loops then cover each extent rounded up to their
 * tile, at every size alike, and the predicate cuts it back). */
static bool extent_for_fill(mlc_sched *s, const mlc_stmt *loop, bool tails_cut, int64_t *ext) {
  if (mlc_expr_is_const_int(loop->loop.extent, ext)) return true;
  const mlc_prim_func *f = mlc_sched_func(s);
  if (!tails_cut || f->n_sizes > MLC_MAX_SIZES) return false;
  int64_t his[MLC_MAX_SIZES];
  for (int k = 0; k < f->n_sizes; k++) his[k] = f->sizes[k].hi;
  return mlc_size_eval(f, loop->loop.extent, his, ext) && *ext >= 1;
}

/* Whether writer w writes every element of its region relaxed at
 * loc_stmt (what the write-back copies): with the bindings substituted,
 * each dimension's start is affine in the loops between loc_stmt and the
 * block, no loop feeds two dimensions, and each dimension's steps fill an
 * interval. A predicate may skip iterations, so there must be none. */
static bool writes_whole_region(mlc_sched *s, mlc_stmt *w, const mlc_region *r, mlc_stmt *loc_stmt,
                                bool tails_cut) {
  if (w->realize.predicate && !tails_cut) return false;
  mlc_arena *a = s->arena;
  const mlc_block *b = w->realize.block;
  mlc_var **iv = MLC_NEW_ARRAY(a, mlc_var *, b->n_iters + 1);
  for (int i = 0; i < b->n_iters; i++) iv[i] = b->iters[i].var;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  mlc_stmt *loops[SCHED_MAX_DEPTH];
  bool used[SCHED_MAX_DEPTH] = {false};
  int n = sched_path_to(s, w, path), k = 0, nl = 0;
  while (k < n && path[k] != loc_stmt) k++;
  for (int i = k + 1; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_FOR) loops[nl++] = path[i];
  step *st = MLC_NEW_ARRAY(a, step, nl + 2);
  for (int d = 0; d < r->buf->ndim; d++) {
    int64_t e, stride, ext;
    if (!mlc_expr_is_const_int(r->ranges[d].extent, &e) || e < 1) return false;
    mlc_expr *ix = mlc_expr_subst(a, r->ranges[d].min, b->n_iters, iv, w->realize.values);
    int ns = 0;
    st[ns++] = (step){1, e};
    for (int l = 0; l < nl; l++) {
      mlc_var *v = loops[l]->loop.var;
      if (!mlc_expr_uses_var(ix, v)) continue;
      mlc_expr *next = mlc_add(a, mlc_ref(a, v), mlc_int_t(a, v->dtype, 1));
      if (used[l] || !mlc_expr_const_diff(a, mlc_expr_subst(a, ix, 1, &v, &next), ix, &stride) ||
          !extent_for_fill(s, loops[l], tails_cut, &ext))
        return false;
      used[l] = true;
      if (stride != 0 && ext > 1) st[ns++] = (step){stride < 0 ? -stride : stride, ext};
    }
    if (!steps_fill(st, ns)) return false;
  }
  return true;
}

/* The same box computed from the iter domains: what the writer writes when
 * its loops cover its domain. */
static bool domain_region(mlc_sched *s, mlc_stmt *w, const mlc_region *r, mlc_region *out) {
  const mlc_block *b = w->realize.block;
  mlc_arena *a = s->arena;
  mlc_var **iv = MLC_NEW_ARRAY(a, mlc_var *, b->n_iters + 1);
  int64_t *mins = MLC_NEW_ARRAY(a, int64_t, b->n_iters + 1), *exts = MLC_NEW_ARRAY(a, int64_t, b->n_iters + 1);
  for (int i = 0; i < b->n_iters; i++) {
    iv[i] = b->iters[i].var;
    if (!mlc_expr_is_const_int(b->iters[i].dom.min, &mins[i]) ||
        !mlc_expr_is_const_int(b->iters[i].dom.extent, &exts[i]))
      return false;
  }
  *out = mlc_region_relax(a, *r, b->n_iters, iv, mins, exts);
  return clamp_region(a, out);
}

static bool regions_equal(mlc_arena *a, const mlc_region *x, const mlc_region *y) {
  return region_within(a, x, y) && region_within(a, y, x);
}

/* Whether x == y after simplification. */
static bool same_value(mlc_arena *a, mlc_expr *x, mlc_expr *y) {
  int64_t d;
  if (x->dtype != y->dtype) return false;
  return mlc_expr_const_diff(a, x, y, &d) && d == 0;
}

/* Whether conjunct c of a block's predicate holds wherever the bindings
 * lie in their domains, as the tails a split of a symbolic extent adds do:
 * `b < D` for a binding b of domain [0, D), or `e < (D + k - 1) // k`
 * where b - e * k stays in [0, k) (the outer loop of a split by k). */
static bool implied_by_domain(mlc_sched *s, mlc_simplifier *simp, const mlc_stmt *w,
                              const mlc_expr *c) {
  mlc_arena *a = s->arena;
  const mlc_block *b = w->realize.block;
  if (c->kind != MLC_EXPR_LT) return false;
  for (int i = 0; i < b->n_iters; i++) {
    const mlc_range *dom = &b->iters[i].dom;
    mlc_expr *bind = w->realize.values[i];
    int64_t mn, k, lo, hi;
    if (!mlc_expr_is_const_int(dom->min, &mn) || mn != 0 || bind->dtype != c->bin.a->dtype) continue;
    if (same_value(a, c->bin.a, bind) && same_value(a, c->bin.b, dom->extent)) return true;
    const mlc_expr *e = c->bin.b;
    if (e->kind != MLC_EXPR_FLOORDIV || !mlc_expr_is_const_int(e->bin.b, &k) || k < 1) continue;
    mlc_expr *want = mlc_add(a, dom->extent, mlc_int_t(a, dom->extent->dtype, k - 1));
    mlc_expr *rest = mlc_sub(a, bind, mlc_mul(a, c->bin.a, mlc_int_t(a, bind->dtype, k)));
    if (e->bin.a->dtype == want->dtype && same_value(a, e->bin.a, want) &&
        mlc_simplifier_bounds(simp, mlc_simplify(simp, rest), &lo, &hi) && lo >= 0 && hi < k)
      return true;
  }
  return false;
}

static void and_conjuncts(mlc_expr *e, mlc_expr **out, int *n, int max) {
  if (e->kind == MLC_EXPR_AND) {
    and_conjuncts(e->bin.a, out, n, max);
    and_conjuncts(e->bin.b, out, n, max);
  } else if (*n < max) {
    out[(*n)++] = e;
  } else {
    out[0] = NULL; /* too many to check: refused */
  }
}

/* Whether writer w writes every element of a buffer of symbolic extents:
 * one element per spatial iter var, whose domains are the buffer's
 * extents, and a predicate (if any) that only cuts the tails splits of
 * those extents left. The cache then holds the whole buffer, as it is at
 * each size. */
static bool only_tails_cut(mlc_sched *s, mlc_stmt *w);

/* Whether each spatial iter var of symbolic domain is the written index
 * of a dimension of that extent: a tail its predicate cuts is then
 * exactly an index past the buffer's extent (a reduce iter's tail cuts
 * terms of a sum, not elements written). */
static bool tails_are_write_dims(mlc_sched *s, mlc_stmt *w, const mlc_region *wr) {
  const mlc_block *b = w->realize.block;
  for (int i = 0; i < b->n_iters; i++) {
    int64_t e, mn;
    if (mlc_expr_is_const_int(b->iters[i].dom.extent, &e) || b->iters[i].kind == MLC_ITER_REDUCE)
      continue;
    bool found = false;
    for (int d = 0; d < wr->buf->ndim && !found; d++)
      found = mlc_expr_is_const_int(b->iters[i].dom.min, &mn) && mn == 0 &&
              wr->ranges[d].min->kind == MLC_EXPR_VAR &&
              wr->ranges[d].min->var == b->iters[i].var && wr->buf->dims &&
              b->iters[i].dom.extent->dtype == wr->buf->dims[d]->dtype &&
              same_value(s->arena, b->iters[i].dom.extent, wr->buf->dims[d]);
    if (!found) return false;
  }
  return true;
}

static bool writes_all_of_symbolic(mlc_sched *s, mlc_stmt *w, const mlc_region *wr) {
  mlc_arena *a = s->arena;
  const mlc_block *b = w->realize.block;
  if (!dense_write(s, w, wr)) return false;
  for (int d = 0; d < wr->buf->ndim; d++) {
    bool found = false;
    for (int i = 0; i < b->n_iters && !found; i++) {
      int64_t mn;
      found = b->iters[i].kind == MLC_ITER_SPATIAL && mlc_expr_is_const_int(b->iters[i].dom.min, &mn) &&
              mn == 0 && wr->ranges[d].min->kind == MLC_EXPR_VAR &&
              wr->ranges[d].min->var == b->iters[i].var &&
              b->iters[i].dom.extent->dtype == wr->buf->dims[d]->dtype &&
              same_value(a, b->iters[i].dom.extent, wr->buf->dims[d]);
    }
    if (!found) return false;
  }
  return only_tails_cut(s, w);
}

/* Whether the writer's predicate (none: true) only cuts the tails splits
 * of symbolic extents left: each conjunct holds wherever the bindings lie
 * in their domains. */
static bool only_tails_cut(mlc_sched *s, mlc_stmt *w) {
  mlc_arena *a = s->arena;
  if (!w->realize.predicate) return true;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, w, path);
  mlc_simplifier *simp = mlc_simplifier_new(a);
  for (int i = 0; i < n; i++) {
    int64_t mn, ext;
    if (path[i]->kind == MLC_STMT_FOR && mlc_expr_is_const_int(path[i]->loop.min, &mn) &&
        mlc_expr_is_const_int(path[i]->loop.extent, &ext))
      mlc_simplifier_bind(simp, path[i]->loop.var, mn, ext);
  }
  mlc_expr *conj[16];
  int nc = 0;
  and_conjuncts(w->realize.predicate, conj, &nc, 16);
  for (int i = 0; i < nc; i++)
    if (!conj[i] || !implied_by_domain(s, simp, w, conj[i])) return false;
  return true;
}

static bool cache_write_plan(mlc_sched *s, cache_plan *p, mlc_stmt *w, const char *who,
                             mlc_error *err) {
  const char *prim = "cache_write";
  /* Blocks after the writer that read the buffer and stay on it: the
   * write-back must come before them. */
  mlc_block **related = MLC_NEW_ARRAY(s->arena, mlc_block *, p->kids.v.len + 1);
  int n_related = 0, wi = index_in(&p->kids, p->blk);
  for (int i = wi + 1; i < p->kids.v.len; i++) {
    mlc_block *b = p->kids.v.data[i]->realize.block;
    bool chosen = false;
    for (int k = 0; k < p->n_cons; k++) chosen = chosen || p->cons[k] == b;
    if (!chosen && lists_buffer(b->n_reads, b->reads, p->buf)) related[n_related++] = b;
  }
  if (!find_loc(p->scope, p->blk, related, n_related, &p->loc) ||
      (n_related > 0 && after_loc(s, p->scope_r, &p->loc, w)))
    return mlc_error_set(err, "%s: %s: found no place for the write-back before the consumers of %s",
                         prim, who, p->buf->name);
  /* A predicate: only one that cuts the tails of symbolic extents, the
   * write-back then guarded the same way. */
  if (w->realize.predicate) {
    if (!p->buf->dims || !tails_are_write_dims(s, w, region_of(p->blk->n_writes, p->blk->writes, p->buf)) ||
        !only_tails_cut(s, w))
      return mlc_error_set(err, "%s: %s: the block has a predicate inside the write-back's loop", prim,
                           who);
    p->tail_guard = true;
  }
  const mlc_region *wr = region_of(p->blk->n_writes, p->blk->writes, p->buf);
  mlc_stmt *loc_stmt = p->loc.loop ? p->loc.loop : p->scope_r;
  if (!p->loc.loop && p->buf->dims && writes_all_of_symbolic(s, w, wr)) {
    p->symbolic = true;
    p->region = (mlc_region){p->buf, MLC_NEW_ARRAY(s->arena, mlc_range, p->buf->ndim + 1)};
    for (int d = 0; d < p->buf->ndim; d++)
      p->region.ranges[d] = (mlc_range){mlc_int_t(s->arena, p->buf->dims[d]->dtype, 0),
                                        p->buf->dims[d]};
    return true;
  }
  if (!region_at(s, w, wr, loc_stmt, &p->region))
    return mlc_error_set(err, "%s: %s: a loop above the block has non-constant bounds", prim, who);
  if (!finish_region(s, prim, who, p, err)) return false;
  /* Either the loops under the place write the whole region, or (in the
   * scope block, e.g. through a fused loop's floordiv/floormod) the block
   * writes one element per spatial iter var and its loops run the whole
   * iteration domain. */
  mlc_region dom;
  bool whole = writes_whole_region(s, w, wr, loc_stmt, p->tail_guard) ||
               (!p->loc.loop && dense_write(s, w, wr) && domain_region(s, w, wr, &dom) &&
                regions_equal(s->arena, &dom, &p->region));
  if (!whole)
    return mlc_error_set(err,
                         "%s: %s: the block does not write every element of the region of %s the "
                         "cache must hold at the write-back's place, so the write-back would copy "
                         "elements it never writes",
                         prim, who, p->buf->name);
  return true;
}

/* Chosen consumers read the cache itself: they must come after the writer
 * and read only what it writes. */
static bool cache_consumers_ok(mlc_sched *s, const char *who, cache_plan *p, mlc_stmt *w,
                               mlc_error *err) {
  const char *prim = "cache_write";
  mlc_region all;
  const mlc_region *wr = region_of(p->blk->n_writes, p->blk->writes, p->buf);
  if (p->n_cons == 0) return true;
  if (!region_at(s, w, wr, p->scope_r, &all) || !clamp_region(s->arena, &all))
    return mlc_error_set(err, "%s: %s: cannot bound what the block writes", prim, who);
  int wi = index_in(&p->kids, p->blk);
  for (int i = 0; i < p->n_cons; i++) {
    mlc_block *c = p->cons[i];
    int ci = index_in(&p->kids, c);
    if (ci < wi)
      return mlc_error_set(err, "%s: %s: consumer \"%s\" comes before the block", prim, who, c->name);
    for (int k = 0; k < c->n_reads; k++) {
      mlc_region need;
      if (c->reads[k].buf != p->buf) continue;
      if (!region_at(s, p->kids.v.data[ci], &c->reads[k], p->scope_r, &need) ||
          !clamp_region(s->arena, &need) || !region_within(s->arena, &need, &all))
        return mlc_error_set(err, "%s: %s: consumer \"%s\" reads a part of %s the block does not write",
                             prim, who, c->name, p->buf->name);
    }
  }
  return true;
}

/* ---- a block that reads back what its sub-blocks wrote ----
 *
 * cache_write of a block with nested blocks sends every access to the
 * buffer inside it to the cache, reads included. The cache holds only what
 * the block writes, so each read inside must be of elements written before
 * in the same iteration of the block: by a sub-block in an earlier
 * statement of its body that writes every element of its region (TVM's
 * access_under_scope: "A" fills a tile, then "B" reads it). Loads outside
 * sub-blocks, and reads from a statement that also holds the writer (a
 * loop around both may read what a later iteration writes), do not count. */

static bool loads_buffer(const mlc_expr *e, void *buf) {
  return e->kind == MLC_EXPR_LOAD && e->load.buf == buf;
}

static mlc_walk access_step(const mlc_stmt *st, void *buf) {
  if (st->kind == MLC_STMT_STORE && st->store.buf == buf) return MLC_WALK_STOP;
  if (mlc_stmt_exprs_any(st, loads_buffer, buf)) return MLC_WALK_STOP;
  return st->kind == MLC_STMT_BLOCK_REALIZE ? MLC_WALK_SKIP : MLC_WALK_INTO;
}

/* Whether st accesses buf outside the blocks nested in it. */
static bool direct_access(const mlc_stmt *st, const mlc_buffer *buf) {
  return !mlc_stmt_walk(st, access_step, (void *)buf);
}

/* Whether some sub-block of the statements before `item` writes every
 * element of buf that `reader` reads, all relaxed at the block's realize. */
static bool written_before(mlc_sched *s, mlc_stmt *br, mlc_stmt **items, int item,
                           mlc_stmt *reader, const mlc_region *rd) {
  mlc_region need;
  if (!region_at(s, reader, rd, br, &need)) return false;
  for (int t = 0; t < item; t++) {
    realize_list ws = {s->arena, {0}};
    sched_each_realize(items[t], push_realize, &ws);
    for (int k = 0; k < ws.v.len; k++) {
      mlc_stmt *w = ws.v.data[k];
      const mlc_region *wr = region_of(w->realize.block->n_writes, w->realize.block->writes, rd->buf);
      mlc_region got;
      if (wr && writes_whole_region(s, w, wr, br, false) && region_at(s, w, wr, br, &got) &&
          region_within(s->arena, &need, &got))
        return true;
    }
  }
  return false;
}

/* Whether every read of buf inside the block at realize br is of elements
 * its sub-blocks wrote before in the same iteration. */
static bool reads_only_own_writes(mlc_sched *s, mlc_stmt *br, const mlc_buffer *buf) {
  mlc_stmt *body = br->realize.block->body;
  while (body && body->kind == MLC_STMT_ALLOCATE) body = body->alloc.body;
  if (!body || direct_access(body, buf)) return false;
  int n = body->kind == MLC_STMT_SEQ ? body->seq.n : 1;
  mlc_stmt **items = body->kind == MLC_STMT_SEQ ? body->seq.stmts : &body;
  int n_subs = 0;
  for (int t = 0; t < n; t++) {
    realize_list rs = {s->arena, {0}};
    sched_each_realize(items[t], push_realize, &rs);
    n_subs += rs.v.len;
    for (int k = 0; k < rs.v.len; k++) {
      const mlc_block *c = rs.v.data[k]->realize.block;
      if (c->init && lists_buffer(c->n_writes, c->writes, buf)) return false; /* reads its output */
      for (int r = 0; r < c->n_reads; r++)
        if (c->reads[r].buf == buf && !written_before(s, br, items, t, rs.v.data[k], &c->reads[r]))
          return false;
    }
  }
  return n_subs > 0;
}

bool mlc_sched_cache_write(mlc_sched *s, mlc_rv rv, int write_buffer_index,
                           const char *storage_scope, int n_consumers, const mlc_rv *consumers,
                           mlc_rv *out, mlc_error *err) {
  const char *prim = "cache_write";
  char who[96];
  cache_plan p;
  if (!plan_start(s, prim, rv, write_buffer_index, true, storage_scope, &p, who, err)) return false;
  mlc_stmt *w;
  if (!only_writer(s, prim, who, &p, &w, err)) return false;
  if (lists_buffer(p.blk->n_reads, p.blk->reads, p.buf) && !p.blk->init &&
      !reads_only_own_writes(s, w, p.buf))
    return mlc_error_set(err,
                         "%s: %s: the block reads the earlier content of %s, which the cache "
                         "would not hold",
                         prim, who, p.buf->name);
  if (n_consumers < 0) return mlc_error_set(err, "%s: %s: negative consumer count", prim, who);
  if (!check_consumer_list(s, prim, who, &p, n_consumers, consumers, err) ||
      !cache_consumers_ok(s, who, &p, w, err) || !cache_write_plan(s, &p, w, who, err))
    return false;

  /* Checked; now change the IR. */
  plan_compaction(s, &p);
  mlc_buffer *cache = new_cache_buffer(s, &p, storage_scope);
  add_alloc(s->arena, p.scope, cache);
  swap_ctx sc = {s->arena, {p.buf, cache, p.offset}, true};
  swap_block(&sc, p.blk);
  sc.stores = false;
  for (int i = 0; i < p.n_cons; i++) swap_block(&sc, p.cons[i]);
  mlc_block *sb = place_stage(s, &p, cache, p.buf, storage_scope);
  *out = sched_new_rv(s, MLC_RV_BLOCK, sb, NULL, 0);
  record_cache(s, MLC_INST_CACHE_WRITE, rv, n_consumers, consumers, "write_buffer_index",
               write_buffer_index, storage_scope, out);
  return true;
}

/* ---- set_scope / storage_align -------------------------------------------------------------- */

typedef struct alloc_search {
  const mlc_buffer *buf;
  bool found;
} alloc_search;

static bool block_allocates(const mlc_stmt *st, void *ud) {
  const mlc_buffer *buf = ((const alloc_search *)ud)->buf;
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return false;
  const mlc_block *b = st->realize.block;
  for (int i = 0; i < b->n_allocs; i++)
    if (b->allocs[i] == buf) return true;
  return false;
}

static void find_alloc_stmt(const mlc_stmt *st, alloc_search *c) {
  if (mlc_stmt_any(st, block_allocates, c)) c->found = true;
}

/* The index-th written buffer of a block, which some block must allocate
 * (a parameter's storage belongs to the caller). */
static bool allocated_write_buffer(mlc_sched *s, const char *prim, mlc_rv rv, int index,
                                   mlc_buffer **out, char who[96], mlc_error *err) {
  if (!sched_check_block(s, prim, rv, err)) return false;
  sched_rv_desc(s, rv, who);
  const mlc_block *b = s->rvs.data[rv].block;
  if (index < 0 || index >= b->n_writes)
    return mlc_error_set(err, "%s: %s: buffer_index %d is out of range: the block writes %d buffer%s",
                         prim, who, index, b->n_writes, b->n_writes == 1 ? "" : "s");
  *out = b->writes[index].buf;
  alloc_search c = {*out, false};
  find_alloc_stmt(s->func->body, &c);
  if (!c.found)
    return mlc_error_set(err,
                         "%s: %s: buffer %s is not allocated by a block (it is a function "
                         "parameter)",
                         prim, who, (*out)->name);
  return true;
}

bool mlc_sched_set_scope(mlc_sched *s, mlc_rv rv, int buffer_index, const char *storage_scope,
                         mlc_error *err) {
  const char *prim = "set_scope";
  char who[96];
  mlc_buffer *buf;
  if (!sched_check_block(s, prim, rv, err)) return false;
  sched_rv_desc(s, rv, who);
  const mlc_block *b = s->rvs.data[rv].block;
  if (buffer_index < 0 || buffer_index >= b->n_writes)
    return mlc_error_set(err, "%s: %s: buffer_index %d is out of range: the block writes %d buffer%s",
                         prim, who, buffer_index, b->n_writes, b->n_writes == 1 ? "" : "s");
  /* The scope it already has: nothing to do (TVM returns at once). */
  bool same = storage_scope && strcmp(b->writes[buffer_index].buf->scope, storage_scope) == 0;
  if (!same && (!scope_check(prim, who, storage_scope, err) ||
                !allocated_write_buffer(s, prim, rv, buffer_index, &buf, who, err)))
    return false;
  /* Buffers are shared by pointer: changing the one node changes every use.
   * TVM renames the buffer as it re-scopes it ("B" -> "B_shared"). */
  if (!same) {
    buf->name = scoped_buffer_name(s, buf->name, storage_scope);
    buf->scope = mlc_arena_strdup(s->arena, storage_scope);
  }
  mlc_operand in = MLC_OP_RV(rv);
  mlc_attr at[2] = {sched_attr_int("buffer_index", buffer_index),
                    sched_attr_str("storage_scope", storage_scope)};
  sched_record(s, MLC_INST_SET_SCOPE, 1, &in, 2, at, 0, NULL);
  return true;
}

/* The annotation value, as TVM stores it: a list of [buffer_index, axis,
 * factor, offset] integer tuples, the axis normalized to be non-negative. */
#define DIM_ALIGN_KEY "buffer_dim_align"

static bool is_align_tuple(const mlc_ann *v) {
  if (v->kind != MLC_ANN_LIST || v->n != 4) return false;
  for (int i = 0; i < 4; i++)
    if (v->items[i].kind != MLC_ANN_INT) return false;
  return true;
}

static bool is_align_list(const mlc_ann *v) {
  if (v->kind != MLC_ANN_LIST) return false;
  for (int i = 0; i < v->n; i++)
    if (!is_align_tuple(&v->items[i])) return false;
  return true;
}

static mlc_ann align_tuple(mlc_arena *a, int buffer_index, int axis, int factor, int offset) {
  mlc_ann *it = MLC_NEW_ARRAY(a, mlc_ann, 4);
  int64_t v[4] = {buffer_index, axis, factor, offset};
  for (int i = 0; i < 4; i++) it[i] = (mlc_ann){.kind = MLC_ANN_INT, .i = v[i]};
  return (mlc_ann){.kind = MLC_ANN_LIST, .n = 4, .items = it};
}

/* old's tuples with the one for (buffer_index, axis) replaced by the new
 * tuple, or the new tuple appended (TVM's order). */
static mlc_ann merged_align(mlc_arena *a, const mlc_ann *old, int buffer_index, int axis,
                            int factor, int offset) {
  int n = old ? old->n : 0, at = n;
  mlc_ann *it = MLC_NEW_ARRAY(a, mlc_ann, n + 1);
  for (int i = 0; i < n; i++) {
    it[i] = mlc_ann_dup(a, &old->items[i]);
    if (it[i].items[0].i == buffer_index && it[i].items[1].i == axis) at = i;
  }
  it[at] = align_tuple(a, buffer_index, axis, factor, offset);
  return (mlc_ann){.key = DIM_ALIGN_KEY, .kind = MLC_ANN_LIST, .n = at == n ? n + 1 : n, .items = it};
}

bool mlc_sched_storage_align(mlc_sched *s, mlc_rv rv, int buffer_index, int axis, int factor,
                             int offset, mlc_error *err) {
  const char *prim = "storage_align";
  char who[96];
  mlc_buffer *buf;
  if (!sched_check_block(s, prim, rv, err)) return false;
  sched_rv_desc(s, rv, who);
  const mlc_block *bc = s->rvs.data[rv].block;
  if (buffer_index < 0 || buffer_index >= bc->n_writes)
    return mlc_error_set(err, "%s: %s: buffer_index %d is out of range: the block writes %d buffer%s",
                         prim, who, buffer_index, bc->n_writes, bc->n_writes == 1 ? "" : "s");
  if (factor <= 0)
    return mlc_error_set(err, "%s: %s: factor %d must be positive", prim, who, factor);
  int nd = bc->writes[buffer_index].buf->ndim;
  if (axis < -nd || axis >= nd)
    return mlc_error_set(err, "%s: %s: axis %d is out of range [%d, %d) for buffer %s", prim, who,
                         axis, -nd, nd, bc->writes[buffer_index].buf->name);
  if (!allocated_write_buffer(s, prim, rv, buffer_index, &buf, who, err)) return false;
  mlc_block *b = s->rvs.data[rv].block;
  const mlc_ann *old = mlc_ann_find(b->n_anns, b->anns, DIM_ALIGN_KEY);
  if (old && !is_align_list(old))
    return mlc_error_set(err,
                         "%s: %s: the block's \"%s\" annotation is not a list of tuples "
                         "[buffer_index, axis, factor, offset]",
                         prim, who, DIM_ALIGN_KEY);
  int norm_axis = axis < 0 ? axis + nd : axis;
  /* Changed; a fresh annotation array (arrays may be shared). */
  mlc_ann ann = merged_align(s->arena, old, buffer_index, norm_axis, factor, offset);
  mlc_ann *na = MLC_NEW_ARRAY(s->arena, mlc_ann, b->n_anns + 1);
  int m = 0;
  for (int i = 0; i < b->n_anns; i++)
    na[m++] = strcmp(b->anns[i].key, DIM_ALIGN_KEY) == 0 ? ann : b->anns[i];
  if (!old) na[m++] = ann;
  b->anns = na;
  b->n_anns = m;
  mlc_operand in = MLC_OP_RV(rv);
  mlc_attr attrs[4] = {sched_attr_int("buffer_index", buffer_index), sched_attr_int("axis", axis),
                       sched_attr_int("factor", factor), sched_attr_int("offset", offset)};
  sched_record(s, MLC_INST_STORAGE_ALIGN, 1, &in, 4, attrs, 0, NULL);
  return true;
}
