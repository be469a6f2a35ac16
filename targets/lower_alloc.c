/* Passes 2 and 3 of mlc_target_lower: where each intermediate buffer lives
 * and how big it is, then row-major flattening of every access.
 *
 * Placement. A root alloc goes to the lowest loop body or branch of an if
 * that contains all its uses (their paths' longest common prefix), as TVM's
 * PlanAndUpdateBufferAllocationLocation does, but never inside a loop a
 * reduction into the buffer accumulates over (its iterations share the
 * partial sums), inside a vectorized loop (lanes would need copies), or,
 * for "shared" buffers, inside a threadIdx loop.
 *
 * Compaction. An ALLOCATE's buffer shrinks, per dimension, to the range its
 * accesses cover while the loops inside the ALLOCATE run: for an index
 * affine in those loops, the range is [index at the loops' extremes], and
 * accesses must agree up to constants (checked with mlc_expr_const_diff).
 * So C_local[i0 * 8 + i1, j0 * 32 + j1] allocated inside loop j0 becomes an
 * [8, 32] buffer indexed by [i1, j1]. A dimension that cannot be proven
 * keeps its full extent.
 */
#include "targets/lower_internal.h"

#include <string.h>

/* A copy of a loop stack with room for one more entry (never NULL). */
static mlc_stmt **dup_stack(mlc_arena *a, mlc_stmt *const *data, int len) {
  mlc_stmt **out = MLC_NEW_ARRAY(a, mlc_stmt *, len + 1);
  for (int i = 0; i < len; i++) out[i] = data[i];
  return out;
}

/* ---- placement ------------------------------------------------------------ */

/* A place an allocation can wrap: a loop's body or a branch of an if. */
typedef struct scope {
  mlc_stmt *s;     /* the FOR or IF */
  mlc_stmt **body; /* the statement it runs there */
} scope;

static scope *dup_scopes(mlc_arena *a, const scope *data, int len) {
  scope *out = MLC_NEW_ARRAY(a, scope, len + 1);
  for (int i = 0; i < len; i++) out[i] = data[i];
  return out;
}

typedef struct place_info {
  mlc_buffer *buf;
  scope *path; /* scopes enclosing the first use, outermost first */
  int depth;   /* length of the common prefix of all uses; -1: unused */
} place_info;

typedef struct place_ctx {
  mlc_arena *a;
  place_info *infos;
  int n;
  MLC_VEC(scope) stack;
} place_ctx;

static void note_use(place_ctx *pc, const mlc_buffer *b) {
  for (int i = 0; i < pc->n; i++) {
    place_info *pi = &pc->infos[i];
    if (pi->buf != b) continue;
    if (pi->depth < 0) {
      pi->depth = pc->stack.len;
      pi->path = dup_scopes(pc->a, pc->stack.data, pc->stack.len);
    } else {
      int d = 0;
      while (d < pi->depth && d < pc->stack.len && pi->path[d].body == pc->stack.data[d].body) d++;
      pi->depth = d;
    }
    return;
  }
}

static void place_expr(const mlc_expr *e, void *ud) {
  if (e->kind == MLC_EXPR_LOAD) note_use(ud, e->load.buf);
  if (e->kind == MLC_EXPR_CALL_EXTERN)
    for (int i = 0; i < e->ext.n_args; i++)
      if (e->ext.args[i].kind != MLC_XARG_VALUE) note_use(ud, e->ext.args[i].buf);
}

static void place_walk(place_ctx *pc, mlc_stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case MLC_STMT_FOR:
    lower_visit_expr(s->loop.min, place_expr, pc);
    lower_visit_expr(s->loop.extent, place_expr, pc);
    MLC_VEC_APUSH(pc->a, pc->stack, ((scope){s, &s->loop.body}));
    place_walk(pc, s->loop.body);
    pc->stack.len--;
    return;
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable(); /* pass 1 removed blocks */
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) place_walk(pc, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    note_use(pc, s->store.buf);
    lower_visit_exprs(s, place_expr, pc);
    return;
  case MLC_STMT_IF: /* each branch a scope: a kernel's variants allocate only their own */
    lower_visit_expr(s->if_.cond, place_expr, pc);
    MLC_VEC_APUSH(pc->a, pc->stack, ((scope){s, &s->if_.then_s}));
    place_walk(pc, s->if_.then_s);
    pc->stack.len--;
    if (s->if_.else_s) {
      MLC_VEC_APUSH(pc->a, pc->stack, ((scope){s, &s->if_.else_s}));
      place_walk(pc, s->if_.else_s);
      pc->stack.len--;
    }
    return;
  case MLC_STMT_ALLOCATE: place_walk(pc, s->alloc.body); return;
  case MLC_STMT_EVALUATE: lower_visit_exprs(s, place_expr, pc); return;
  }
  mlc_unreachable();
}

static bool is_carried(const lower_state *st, const mlc_buffer *b, const mlc_stmt *loop) {
  for (int i = 0; i < st->carries.len; i++)
    if (st->carries.data[i].buf == b && st->carries.data[i].loop == loop) return true;
  return false;
}

static bool blocks_placement(const lower_state *st, const mlc_buffer *b, const mlc_stmt *loop) {
  if (loop->kind != MLC_STMT_FOR) return false;
  if (loop->loop.kind == MLC_FOR_VECTORIZED) return true;
  if (strncmp(b->scope, "shared", 6) == 0 && loop->loop.kind == MLC_FOR_THREAD_BINDING &&
      loop->loop.thread && strncmp(loop->loop.thread, "threadIdx", 9) == 0)
    return true;
  return is_carried(st, b, loop);
}

mlc_stmt *lower_place_allocs(lower_state *st, mlc_stmt *body) {
  int n = st->root_allocs.len;
  if (n == 0) return body;
  place_ctx pc = {.a = st->a, .n = n};
  pc.infos = MLC_NEW_ARRAY(st->a, place_info, n);
  for (int i = 0; i < n; i++) pc.infos[i] = (place_info){st->root_allocs.data[i], NULL, -1};
  place_walk(&pc, body);
  for (int i = n - 1; i >= 0; i--) {
    place_info *pi = &pc.infos[i];
    if (pi->depth < 0) continue; /* never used: nothing to allocate */
    int d = 0;
    while (d < pi->depth && !blocks_placement(st, pi->buf, pi->path[d].s)) d++;
    if (d == 0) {
      body = mlc_allocate_new(st->a, pi->buf, body);
    } else {
      mlc_stmt **at = pi->path[d - 1].body;
      *at = mlc_allocate_new(st->a, pi->buf, *at);
    }
  }
  return body;
}

/* ---- expression visiting ---------------------------------------------------- */

/* The walk lives in ir/ (mlc_expr_visit); this name stays for targets' callers. */
void lower_visit_expr(const mlc_expr *e, lower_expr_fn fn, void *ud) { mlc_expr_visit(e, fn, ud); }

/* The expressions directly in s (not in nested statements). */
void lower_visit_exprs(const mlc_stmt *s, lower_expr_fn fn, void *ud) {
  switch (s->kind) {
  case MLC_STMT_FOR:
    lower_visit_expr(s->loop.min, fn, ud);
    lower_visit_expr(s->loop.extent, fn, ud);
    return;
  case MLC_STMT_BLOCK_REALIZE: return;
  case MLC_STMT_SEQ: return;
  case MLC_STMT_STORE:
    for (int i = 0; i < s->store.buf->ndim; i++) lower_visit_expr(s->store.indices[i], fn, ud);
    lower_visit_expr(s->store.value, fn, ud);
    return;
  case MLC_STMT_IF: lower_visit_expr(s->if_.cond, fn, ud); return;
  case MLC_STMT_ALLOCATE: return;
  case MLC_STMT_EVALUATE: lower_visit_expr(s->eval.value, fn, ud); return;
  }
  mlc_unreachable();
}

/* ---- compaction --------------------------------------------------------------- */

/* One access of the buffer being compacted: its indices and the loops
 * between the ALLOCATE and it. */
typedef struct access_rec {
  mlc_expr **indices;
  mlc_stmt **loops;
  int n_loops;
} access_rec;

typedef struct compact_ctx {
  mlc_arena *a;
  const mlc_buffer *buf;
  MLC_VEC(mlc_stmt *) stack;
  MLC_VEC(access_rec) recs;
} compact_ctx;

static void record_access(compact_ctx *cc, mlc_expr **indices) {
  access_rec r = {indices, NULL, cc->stack.len};
  r.loops = dup_stack(cc->a, cc->stack.data, cc->stack.len);
  MLC_VEC_APUSH(cc->a, cc->recs, r);
}

/* A pointer argument's region counts as its first and last points (its
 * extents are constants); a stride alone is no access. */
static void compact_ptr(compact_ctx *cc, const mlc_expr *e, const mlc_xarg *x) {
  int nd = x->buf->ndim;
  mlc_expr **mins = e->ext.kids + x->kid, **exts = mins + nd;
  mlc_expr **last = MLC_NEW_ARRAY(cc->a, mlc_expr *, nd ? nd : 1);
  for (int d = 0; d < nd; d++)
    last[d] = mlc_sub(cc->a, mlc_add(cc->a, mins[d], exts[d]), mlc_int_t(cc->a, mins[d]->dtype, 1));
  record_access(cc, mins);
  record_access(cc, last);
}

static void compact_expr(const mlc_expr *e, void *ud) {
  compact_ctx *cc = ud;
  if (e->kind == MLC_EXPR_LOAD && e->load.buf == cc->buf) record_access(cc, e->load.indices);
  if (e->kind == MLC_EXPR_CALL_EXTERN)
    for (int i = 0; i < e->ext.n_args; i++)
      if (e->ext.args[i].kind == MLC_XARG_PTR && e->ext.args[i].buf == cc->buf)
        compact_ptr(cc, e, &e->ext.args[i]);
}

static void compact_walk(compact_ctx *cc, mlc_stmt *s) {
  if (!s) return;
  lower_visit_exprs(s, compact_expr, cc);
  switch (s->kind) {
  case MLC_STMT_FOR:
    MLC_VEC_APUSH(cc->a, cc->stack, s);
    compact_walk(cc, s->loop.body);
    cc->stack.len--;
    return;
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ:
    for (int i = 0; i < s->seq.n; i++) compact_walk(cc, s->seq.stmts[i]);
    return;
  case MLC_STMT_STORE:
    if (s->store.buf == cc->buf) record_access(cc, s->store.indices);
    return;
  case MLC_STMT_IF:
    compact_walk(cc, s->if_.then_s);
    compact_walk(cc, s->if_.else_s);
    return;
  case MLC_STMT_ALLOCATE: compact_walk(cc, s->alloc.body); return;
  case MLC_STMT_EVALUATE: return;
  }
  mlc_unreachable();
}

/* The index at the extremes of the loops it uses: *lo and *hi. False when
 * the index is not affine in those loops (or the simplifier cannot tell). */
static bool index_range(mlc_arena *a, mlc_simplifier *simp, mlc_expr *e, const access_rec *r,
                        mlc_expr **lo, mlc_expr **hi) {
  int n = 0;
  mlc_var **vars = MLC_NEW_ARRAY(a, mlc_var *, r->n_loops + 1);
  mlc_expr **los = MLC_NEW_ARRAY(a, mlc_expr *, r->n_loops + 1);
  mlc_expr **his = MLC_NEW_ARRAY(a, mlc_expr *, r->n_loops + 1);
  for (int i = 0; i < r->n_loops; i++) {
    const mlc_stmt *l = r->loops[i];
    mlc_var *v = l->loop.var;
    if (!mlc_expr_uses_var(e, v)) continue;
    mlc_expr *next = mlc_add(a, mlc_ref(a, v), mlc_int_t(a, v->dtype, 1));
    mlc_expr *shifted = mlc_expr_subst(a, e, 1, &v, &next);
    int64_t step;
    if (!mlc_expr_const_diff(a, shifted, e, &step)) return false;
    mlc_expr *first = l->loop.min;
    mlc_expr *last = mlc_sub(a, mlc_add(a, l->loop.min, l->loop.extent), mlc_int_t(a, l->loop.min->dtype, 1));
    vars[n] = v;
    los[n] = step >= 0 ? first : last;
    his[n] = step >= 0 ? last : first;
    n++;
  }
  *lo = mlc_simplify(simp, n ? mlc_expr_subst(a, e, n, vars, los) : e);
  *hi = mlc_simplify(simp, n ? mlc_expr_subst(a, e, n, vars, his) : e);
  return true;
}

/* Compact dimension d: *offset (NULL: none) and *extent. */
static void compact_dim(mlc_arena *a, mlc_simplifier *simp, const mlc_buffer *b, int d,
                        const compact_ctx *cc, mlc_expr **offset, int64_t *extent) {
  *offset = NULL;
  *extent = b->shape[d];
  mlc_expr *base = NULL;
  int64_t min_off = 0, max_off = 0;
  for (int k = 0; k < cc->recs.len; k++) {
    const access_rec *r = &cc->recs.data[k];
    mlc_expr *lo, *hi;
    if (!index_range(a, simp, r->indices[d], r, &lo, &hi)) return;
    int64_t dl, dh;
    if (!base) base = lo;
    if (!mlc_expr_const_diff(a, lo, base, &dl) || !mlc_expr_const_diff(a, hi, base, &dh)) return;
    if (k == 0 || dl < min_off) min_off = dl;
    if (k == 0 || dh > max_off) max_off = dh;
  }
  int64_t ext = max_off - min_off + 1;
  if (!base || ext <= 0 || ext >= b->shape[d]) return;
  mlc_expr *off = mlc_add(a, base, mlc_int_t(a, base->dtype, min_off));
  *offset = mlc_simplify(simp, off);
  *extent = ext;
}

/* ---- flattening ------------------------------------------------------------------ */

typedef struct flat_buf {
  const mlc_buffer *orig;
  mlc_buffer *flat;
  mlc_expr **offset; /* per dimension, NULL entries: 0; NULL: no compaction */
  int64_t *extent;   /* per dimension, after compaction */
  mlc_expr **dims;   /* a parameter's symbolic extents (its layout), or NULL */
} flat_buf;

typedef struct flat_ctx {
  mlc_arena *a;
  mlc_simplifier *simp;
  MLC_VEC(flat_buf) bufs; /* innermost scope last */
  mlc_error *err;
  bool failed;
} flat_ctx;

static mlc_stmt *flat_stmt(flat_ctx *fc, mlc_stmt *s);

static mlc_buffer *flat_buffer(mlc_arena *a, const mlc_buffer *b, const int64_t *extent) {
  int64_t n = 1;
  for (int d = 0; d < b->ndim; d++) n *= extent[d];
  return mlc_buffer_new(a, b->name, b->dtype, 1, &n, b->scope);
}

static const flat_buf *find_buf(flat_ctx *fc, const mlc_buffer *b) {
  for (int i = fc->bufs.len - 1; i >= 0; i--)
    if (fc->bufs.data[i].orig == b) return &fc->bufs.data[i];
  return NULL;
}

/* Row-major offset into the (compacted) buffer, int32 unless it may not
 * fit; the indices are flattened already. */
static mlc_expr *flat_index(flat_ctx *fc, const flat_buf *fb, mlc_expr **indices) {
  mlc_arena *a = fc->a;
  mlc_dtype t = fb->flat->shape[0] > INT32_MAX ? MLC_INT64 : MLC_INT32;
  mlc_expr *flat = mlc_int_t(a, t, 0);
  for (int d = 0; d < fb->orig->ndim; d++) {
    mlc_expr *ix = indices[d];
    if (fb->offset && fb->offset[d]) {
      mlc_expr *off = fb->offset[d];
      if (off->dtype != ix->dtype) off = mlc_cast(a, ix->dtype, off);
      ix = mlc_sub(a, ix, off);
    }
    if (ix->dtype != t) ix = mlc_cast(a, t, ix);
    mlc_expr *ext = fb->dims ? fb->dims[d] : mlc_int_t(a, t, fb->extent[d]);
    if (ext->dtype != t) ext = mlc_cast(a, t, ext);
    flat = mlc_add(a, mlc_mul(a, flat, ext), ix);
  }
  return mlc_simplify(fc->simp, flat);
}

static mlc_expr *flat_access(flat_ctx *fc, const mlc_buffer *b, mlc_expr **indices,
                             mlc_buffer **flat) {
  const flat_buf *fb = find_buf(fc, b);
  if (!fb) {
    if (!fc->failed)
      mlc_error_set(fc->err, "buffer %s is used but is neither a parameter nor allocated",
                    b->name);
    fc->failed = true;
    *flat = (mlc_buffer *)b;
    return mlc_int(fc->a, 0);
  }
  *flat = fb->flat;
  return flat_index(fc, fb, indices);
}

/* An external call on flat buffers: a pointer's region becomes its flat
 * start and span, a stride the constant the (compacted) layout has. */
static mlc_expr *flat_extern(flat_ctx *fc, mlc_expr *e) {
  mlc_arena *a = fc->a;
  MLC_VEC(mlc_xarg) args = {0};
  MLC_VEC(mlc_expr *) kids = {0};
  for (int i = 0; i < e->ext.n_args; i++) {
    mlc_xarg x = e->ext.args[i];
    const flat_buf *fb = x.kind == MLC_XARG_VALUE ? NULL : find_buf(fc, x.buf);
    if (fb && fb->dims) {
      if (!fc->failed)
        mlc_error_set(fc->err, "T.call_extern on %s, a buffer with symbolic extents, is not "
                      "supported", x.buf->name);
      fc->failed = true;
      return e;
    }
    if (x.kind != MLC_XARG_VALUE && !fb) {
      if (!fc->failed)
        mlc_error_set(fc->err, "buffer %s is used but is neither a parameter nor allocated",
                      x.buf->name);
      fc->failed = true;
      return e;
    }
    switch (x.kind) {
    case MLC_XARG_VALUE:
      MLC_VEC_APUSH(a, kids, e->ext.kids[x.kid]);
      x.kid = kids.len - 1;
      break;
    case MLC_XARG_PTR: {
      int64_t span = 1, stride = 1;
      for (int d = x.buf->ndim - 1; d >= 0; d--) {
        int64_t ext = 1;
        mlc_expr_is_const_int(e->ext.kids[x.kid + x.buf->ndim + d], &ext); /* verified constant */
        span += (ext - 1) * stride;
        stride *= fb->extent[d];
      }
      mlc_expr *start = flat_index(fc, fb, e->ext.kids + x.kid);
      x.buf = fb->flat;
      x.kid = kids.len;
      MLC_VEC_APUSH(a, kids, start);
      MLC_VEC_APUSH(a, kids, mlc_int_t(a, start->dtype, span));
      break;
    }
    case MLC_XARG_STRIDE: {
      int64_t stride = 1;
      for (int d = x.buf->ndim - 1; d > x.dim; d--) stride *= fb->extent[d];
      MLC_VEC_APUSH(a, kids, mlc_int_t(a, stride > INT32_MAX ? MLC_INT64 : MLC_INT32, stride));
      x = (mlc_xarg){.kind = MLC_XARG_VALUE, .kid = kids.len - 1};
      break;
    }
    }
    MLC_VEC_APUSH(a, args, x);
  }
  return mlc_call_extern(a, e->dtype, e->ext.name, args.len, args.data, kids.len, kids.data);
}

/* Loads read the flat buffers (their indices, children first, are flat). */
static mlc_expr *flat_load(mlc_arena *a, mlc_expr *e, void *ud) {
  if (e->kind == MLC_EXPR_CALL_EXTERN) return flat_extern(ud, e);
  if (e->kind != MLC_EXPR_LOAD) return e;
  mlc_buffer *fb;
  mlc_expr *ix = flat_access(ud, e->load.buf, e->load.indices, &fb);
  return mlc_load(a, fb, &ix);
}

static mlc_expr *flat_expr(flat_ctx *fc, mlc_expr *e) { return mlc_expr_map(fc->a, e, flat_load, fc); }

static mlc_stmt *flat_allocate(flat_ctx *fc, mlc_stmt *s) {
  mlc_arena *a = fc->a;
  const mlc_buffer *b = s->alloc.buf;
  compact_ctx cc = {.a = a, .buf = b};
  compact_walk(&cc, s->alloc.body);
  if (cc.recs.len == 0) return flat_stmt(fc, s->alloc.body); /* unused */
  flat_buf fb = {.orig = b};
  fb.offset = MLC_NEW_ARRAY(a, mlc_expr *, b->ndim + 1);
  fb.extent = MLC_NEW_ARRAY(a, int64_t, b->ndim + 1);
  for (int d = 0; d < b->ndim; d++) compact_dim(a, fc->simp, b, d, &cc, &fb.offset[d], &fb.extent[d]);
  fb.flat = flat_buffer(a, b, fb.extent);
  MLC_VEC_APUSH(a, fc->bufs, fb);
  mlc_stmt *body = flat_stmt(fc, s->alloc.body);
  fc->bufs.len--;
  return mlc_allocate_new(a, fb.flat, body);
}

static mlc_stmt *flat_stmt(flat_ctx *fc, mlc_stmt *s) {
  mlc_arena *a = fc->a;
  if (!s) return NULL;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    int64_t min, ext;
    if (mlc_expr_is_const_int(s->loop.min, &min) && mlc_expr_is_const_int(s->loop.extent, &ext))
      mlc_simplifier_bind(fc->simp, s->loop.var, min, ext);
    mlc_stmt *n = mlc_arena_memdup(a, s, sizeof *s);
    n->loop.min = flat_expr(fc, s->loop.min);
    n->loop.extent = flat_expr(fc, s->loop.extent);
    n->loop.body = flat_stmt(fc, s->loop.body);
    return n;
  }
  case MLC_STMT_BLOCK_REALIZE: mlc_unreachable();
  case MLC_STMT_SEQ: {
    mlc_stmt **kids = MLC_NEW_ARRAY(a, mlc_stmt *, s->seq.n);
    for (int i = 0; i < s->seq.n; i++) kids[i] = flat_stmt(fc, s->seq.stmts[i]);
    return mlc_seq_new(a, s->seq.n, kids);
  }
  case MLC_STMT_STORE: {
    mlc_buffer *fb;
    mlc_expr **flat_ix = mlc_exprs_map(a, s->store.indices, s->store.buf->ndim, flat_load, fc);
    mlc_expr *ix = flat_access(fc, s->store.buf, flat_ix, &fb);
    return mlc_store_new(a, fb, &ix, flat_expr(fc, s->store.value));
  }
  case MLC_STMT_IF:
    return mlc_if_new(a, flat_expr(fc, s->if_.cond), flat_stmt(fc, s->if_.then_s),
                      flat_stmt(fc, s->if_.else_s));
  case MLC_STMT_ALLOCATE: return flat_allocate(fc, s);
  case MLC_STMT_EVALUATE: return mlc_evaluate_new(a, flat_expr(fc, s->eval.value));
  }
  mlc_unreachable();
}

mlc_stmt *lower_flatten(mlc_arena *a, mlc_stmt *body, int n_params, mlc_buffer **params,
                        mlc_buffer **flat_params, mlc_error *err) {
  flat_ctx fc = {.a = a, .simp = mlc_simplifier_new(a), .err = err};
  for (int i = 0; i < n_params; i++) {
    flat_buf fb = {.orig = params[i], .offset = NULL, .extent = params[i]->shape,
                   .dims = params[i]->dims};
    fb.flat = flat_buffer(a, params[i], params[i]->shape);
    flat_params[i] = fb.flat;
    MLC_VEC_APUSH(a, fc.bufs, fb);
  }
  mlc_stmt *out = flat_stmt(&fc, body);
  return fc.failed ? NULL : out;
}
