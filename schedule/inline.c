/* compute_inline and reverse_compute_inline: fold a producer's expression
 * into its readers, or a consumer's expression into its producer, and
 * remove the folded block (and its buffer), as TensorIR does. All checks
 * come before the first change, so a refusal leaves the state as it was. */
#include "schedule/sched_impl.h"

#include <stdio.h>
#include <string.h>

/* ---- expression rewriting ------------------------------------------------------ */

/* Replace every load of buf in e by f(indices), rebuilding only what
 * changes. */
typedef struct load_rw {
  mlc_arena *a;
  const mlc_buffer *buf;
  int n;           /* vars standing for the load's indices */
  mlc_var **vars;
  mlc_expr *value; /* the expression to put in place of a load */
} load_rw;

static mlc_expr *inline_load(mlc_arena *a, mlc_expr *e, void *ud) {
  load_rw *w = ud;
  if (e->kind != MLC_EXPR_LOAD || e->load.buf != w->buf) return e;
  return mlc_expr_subst(a, w->value, w->n, w->vars, e->load.indices);
}

static mlc_expr *rw_expr(load_rw *w, mlc_expr *e) { return mlc_expr_map(w->a, e, inline_load, w); }

static bool is_load_of(const mlc_expr *e, void *buf) {
  return e->kind == MLC_EXPR_LOAD && e->load.buf == buf;
}

/* Rewrite every expression of a statement tree in place (nodes keep their
 * identity, so handles survive); blocks whose contents changed get their
 * regions inferred again. Returns whether anything changed. */
static bool rw_stmt(load_rw *w, mlc_stmt *st) {
  bool ch = false;
  switch (st->kind) {
  case MLC_STMT_FOR: {
    mlc_expr *mn = rw_expr(w, st->loop.min), *ex = rw_expr(w, st->loop.extent);
    ch = mn != st->loop.min || ex != st->loop.extent;
    st->loop.min = mn, st->loop.extent = ex;
    return rw_stmt(w, st->loop.body) || ch;
  }
  case MLC_STMT_BLOCK_REALIZE: {
    mlc_block *b = st->realize.block;
    for (int i = 0; i < b->n_iters; i++) {
      mlc_expr *v = rw_expr(w, st->realize.values[i]);
      ch = ch || v != st->realize.values[i];
      st->realize.values[i] = v;
    }
    if (st->realize.predicate) {
      mlc_expr *p = rw_expr(w, st->realize.predicate);
      ch = ch || p != st->realize.predicate;
      st->realize.predicate = p;
    }
    bool inner = (b->init && rw_stmt(w, b->init));
    inner = rw_stmt(w, b->body) || inner;
    if (inner) mlc_block_infer_regions(w->a, b);
    return ch || inner;
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) ch = rw_stmt(w, st->seq.stmts[i]) || ch;
    return ch;
  case MLC_STMT_STORE:
    for (int i = 0; i < st->store.buf->ndim; i++) {
      mlc_expr *x = rw_expr(w, st->store.indices[i]);
      ch = ch || x != st->store.indices[i];
      st->store.indices[i] = x;
    }
    {
      mlc_expr *v = rw_expr(w, st->store.value);
      ch = ch || v != st->store.value;
      st->store.value = v;
    }
    return ch;
  case MLC_STMT_IF: {
    mlc_expr *c = rw_expr(w, st->if_.cond);
    ch = c != st->if_.cond;
    st->if_.cond = c;
    ch = rw_stmt(w, st->if_.then_s) || ch;
    if (st->if_.else_s) ch = rw_stmt(w, st->if_.else_s) || ch;
    return ch;
  }
  case MLC_STMT_ALLOCATE: return rw_stmt(w, st->alloc.body);
  case MLC_STMT_EVALUATE: {
    mlc_expr *v = rw_expr(w, st->eval.value);
    ch = v != st->eval.value;
    st->eval.value = v;
    return ch;
  }
  }
  mlc_unreachable();
}

/* ---- shared checks ----------------------------------------------------------------- */

typedef struct inl {
  const char *prim;
  char who[96];
  mlc_stmt *scope;      /* the scope block's realize */
  sched_stmts blocks;
  int self;             /* the block's index in blocks */
  mlc_stmt *realize;
  mlc_block *blk;
  mlc_buffer *buf;      /* the buffer that disappears */
  sched_removal rm;
} inl;

static bool inl_begin(mlc_sched *s, inl *p, mlc_block *b, mlc_error *err) {
  mlc_stmt *path[SCHED_MAX_DEPTH];
  p->blk = b;
  p->realize = sched_find_realize(s, b);
  int n = sched_path_to(s, p->realize, path), si = sched_scope_index(path, n);
  if (si < 0) return mlc_error_set(err, "%s: %s: the root block cannot be inlined", p->prim, p->who);
  p->scope = path[si];
  p->blocks = sched_scope_blocks(s, p->scope);
  p->self = sched_stmts_index(&p->blocks, p->realize);
  if (b->init)
    return mlc_error_set(err, "%s: %s: the block has an init (it is a reduction)", p->prim, p->who);
  if (!sched_check_complete(&p->blocks, b, p->prim, err))
    return false; /* the message names the primitive and the block */
  return true;
}

static bool is_allocated(const mlc_block *scope, const mlc_buffer *buf) {
  for (int i = 0; i < scope->n_allocs; i++)
    if (scope->allocs[i] == buf) return true;
  return false;
}

static void drop_alloc(mlc_block *scope, const mlc_buffer *buf) {
  int j = 0;
  for (int i = 0; i < scope->n_allocs; i++)
    if (scope->allocs[i] != buf) scope->allocs[j++] = scope->allocs[i];
  scope->n_allocs = j;
}

/* The iter var of b that e is exactly; -1 if none. */
static int iter_index(const mlc_block *b, const mlc_expr *e) {
  if (e->kind != MLC_EXPR_VAR) return -1;
  for (int k = 0; k < b->n_iters; k++)
    if (b->iters[k].var == e->var) return k;
  return -1;
}

/* A reduction that feeds x and shares a loop with y, whose reduce iter
 * follows that loop, is unfinished while y runs in that loop. */
static const char *unfinished_at(mlc_sched *s, mlc_stmt *w, mlc_stmt *y) {
  const mlc_block *b = w->realize.block;
  if (!b->init) return NULL;
  mlc_stmt *pw[SCHED_MAX_DEPTH], *py[SCHED_MAX_DEPTH];
  int nw = sched_path_to(s, w, pw), ny = sched_path_to(s, y, py);
  for (int i = 0; i < nw && i < ny && pw[i] == py[i]; i++) {
    if (pw[i]->kind != MLC_STMT_FOR) continue;
    for (int k = 0; k < b->n_iters; k++)
      if (b->iters[k].kind == MLC_ITER_REDUCE &&
          mlc_expr_uses_var(w->realize.values[k], pw[i]->loop.var))
        return b->name;
  }
  return NULL;
}

/* ---- compute_inline -------------------------------------------------------------------- */

static bool inline_plan(mlc_sched *s, inl *p, mlc_error *err) {
  mlc_block *b = p->blk;
  if (!inl_begin(s, p, b, err)) return false;
  if (b->n_writes != 1)
    return mlc_error_set(err, "%s: %s: the block writes %d buffers, not exactly one", p->prim,
                         p->who, b->n_writes);
  p->buf = b->writes[0].buf;
  if (!is_allocated(p->scope->realize.block, p->buf))
    return mlc_error_set(err, "%s: %s: the block is an output block: %s is not allocated in its "
                              "scope",
                         p->prim, p->who, p->buf->name);
  mlc_stmt *body = b->body;
  if (body->kind != MLC_STMT_STORE || body->store.buf != p->buf)
    return mlc_error_set(err, "%s: %s: the block's body is not a single store to %s", p->prim,
                         p->who, p->buf->name);
  bool used[256] = {0};
  if (b->n_iters > 256) return mlc_error_set(err, "%s: %s: too many iters", p->prim, p->who);
  for (int d = 0; d < p->buf->ndim; d++) {
    int k = iter_index(b, body->store.indices[d]);
    if (k < 0 || used[k])
      return mlc_error_set(err, "%s: %s: the store's index %d is not a distinct iter var; only a "
                                "trivially indexed store can be inlined",
                           p->prim, p->who, d);
    used[k] = true;
  }
  int k;
  for (k = 0; k < b->n_iters; k++)
    if (!used[k] && mlc_expr_uses_var(body->store.value, b->iters[k].var))
      return mlc_error_set(err, "%s: %s: the stored value uses iter %s, which is not an index",
                           p->prim, p->who, b->iters[k].var->name);
  if (mlc_expr_any(body->store.value, is_load_of, p->buf))
    return mlc_error_set(err, "%s: %s: the stored value reads %s itself", p->prim, p->who,
                         p->buf->name);
  /* Readers evaluate the value later: what it reads must be final by then. */
  for (int i = 0; i < p->blocks.v.len; i++) {
    mlc_stmt *r = p->blocks.v.data[i];
    const mlc_block *o = r->realize.block;
    if (i == p->self) continue;
    if (i < p->self && sched_block_reads(o, p->buf))
      return mlc_error_set(err, "%s: %s: block \"%s\" reads %s before the block writes it",
                           p->prim, p->who, o->name, p->buf->name);
    for (int j = 0; j < b->n_reads; j++)
      if (sched_block_writes(o, b->reads[j].buf) && i > p->self)
        return mlc_error_set(err, "%s: %s: block \"%s\" writes %s, which the block reads, after it",
                             p->prim, p->who, o->name, b->reads[j].buf->name);
  }
  for (int i = 0; i < p->self; i++)
    for (int j = 0; j < b->n_reads; j++) {
      mlc_stmt *w = p->blocks.v.data[i];
      if (!sched_block_writes(w->realize.block, b->reads[j].buf)) continue;
      for (int c = p->self + 1; c < p->blocks.v.len; c++) {
        mlc_stmt *y = p->blocks.v.data[c];
        const char *red = sched_block_reads(y->realize.block, p->buf) ? unfinished_at(s, w, y) : NULL;
        if (red)
          return mlc_error_set(err, "%s: %s: block \"%s\" would read %s while reduction \"%s\" is "
                                    "still accumulating it",
                               p->prim, p->who, y->realize.block->name, b->reads[j].buf->name, red);
      }
    }
  return sched_removal_plan(s, p->realize, p->prim, &p->rm, err);
}

bool sched_compute_inline(mlc_sched *s, mlc_rv block, const char *prim, mlc_error *err) {
  inl p = {.prim = prim};
  if (!sched_check_block(s, prim, block, err)) return false;
  sched_rv_desc(s, block, p.who);
  p.blk = s->rvs.data[block].block;
  if (!inline_plan(s, &p, err)) return false;
  sched_removal_apply(s, &p.rm);
  mlc_stmt *st = p.blk->body;
  mlc_var **vars = MLC_NEW_ARRAY(s->arena, mlc_var *, p.buf->ndim + 1);
  for (int d = 0; d < p.buf->ndim; d++) vars[d] = st->store.indices[d]->var;
  load_rw w = {s->arena, p.buf, p.buf->ndim, vars, st->store.value};
  for (int i = 0; i < p.blocks.v.len; i++)
    if (i != p.self) rw_stmt(&w, p.blocks.v.data[i]);
  drop_alloc(p.scope->realize.block, p.buf);
  return true;
}

bool sched_can_compute_inline(mlc_sched *s, mlc_block *b) {
  mlc_error e = {{0}};
  inl p = {.prim = "compute_inline"};
  snprintf(p.who, sizeof p.who, "block %s", b->name);
  p.blk = b;
  return inline_plan(s, &p, &e);
}

bool mlc_sched_compute_inline(mlc_sched *s, mlc_rv block, mlc_error *err) {
  if (!sched_compute_inline(s, block, "compute_inline", err)) return false;
  mlc_operand in = MLC_OP_RV(block);
  sched_record(s, MLC_INST_COMPUTE_INLINE, 1, &in, 0, NULL, 0, NULL);
  return true;
}

/* ---- reverse_compute_inline ----------------------------------------------------------------- */

typedef struct rinl {
  inl c;              /* the consumer being removed */
  mlc_stmt *prod;     /* the producer's realize */
  mlc_expr **map;     /* consumer iter var -> expression in producer iters */
} rinl;

/* The one buffer the consumer reads that a block of the scope writes. */
static bool single_read(rinl *p, mlc_error *err) {
  const mlc_block *b = p->c.blk;
  mlc_buffer *found = NULL;
  for (int i = 0; i < b->n_reads; i++) {
    mlc_buffer *buf = b->reads[i].buf;
    bool written = false;
    for (int k = 0; k < p->c.blocks.v.len; k++)
      written = written || (k != p->c.self && sched_block_writes(p->c.blocks.v.data[k]->realize.block, buf));
    if (!written || buf == found) continue;
    if (found)
      return mlc_error_set(err, "%s: %s: the block reads two buffers produced in its scope (%s and "
                                "%s)",
                           p->c.prim, p->c.who, found->name, buf->name);
    found = buf;
  }
  if (!found)
    return mlc_error_set(err, "%s: %s: the block reads no buffer produced in its scope", p->c.prim,
                         p->c.who);
  p->c.buf = found;
  return true;
}

/* Exactly one producer, complete, with this consumer as its only one. */
static bool single_producer(mlc_sched *s, rinl *p, mlc_error *err) {
  int at = -1;
  for (int k = 0; k < p->c.blocks.v.len; k++)
    if (k != p->c.self && sched_block_writes(p->c.blocks.v.data[k]->realize.block, p->c.buf)) {
      if (at >= 0 || k > p->c.self)
        return mlc_error_set(err, "%s: %s: %s has more than one producer or one after the block",
                             p->c.prim, p->c.who, p->c.buf->name);
      at = k;
    }
  p->prod = p->c.blocks.v.data[at];
  const mlc_block *pb = p->prod->realize.block;
  if (pb->init || !sched_check_complete(&p->c.blocks, pb, p->c.prim, err))
    return mlc_error_set(err, "%s: %s: producer \"%s\" is not a complete block", p->c.prim,
                         p->c.who, pb->name);
  for (int k = 0; k < p->c.blocks.v.len; k++) {
    const mlc_block *o = p->c.blocks.v.data[k]->realize.block;
    if (k == p->c.self || k == at) continue;
    for (int i = 0; i < pb->n_writes; i++)
      if (sched_block_reads(o, pb->writes[i].buf))
        return mlc_error_set(err, "%s: %s: producer \"%s\" has another consumer, block \"%s\"",
                             p->c.prim, p->c.who, pb->name, o->name);
  }
  if (pb->n_writes != 1 || pb->body->kind != MLC_STMT_STORE || pb->body->store.buf != p->c.buf)
    return mlc_error_set(err, "%s: %s: producer \"%s\" is not a single store to %s", p->c.prim,
                         p->c.who, pb->name, p->c.buf->name);
  if (!is_allocated(p->c.scope->realize.block, p->c.buf))
    return mlc_error_set(err, "%s: %s: %s is not allocated in the scope (an output)", p->c.prim,
                         p->c.who, p->c.buf->name);
  (void)s;
  return true;
}

/* The loads of one buffer, in program order (up to max). */
typedef struct load_list {
  const mlc_buffer *buf;
  const mlc_expr **out;
  int n, max;
} load_list;

static void note_load(const mlc_expr *e, void *ud) {
  load_list *l = ud;
  if (e->kind == MLC_EXPR_LOAD && e->load.buf == l->buf && l->n < l->max) l->out[l->n++] = e;
}

/* The consumer's loads of the buffer must all be at one index, and the
 * index a bijective affine map of its iters (TVM inverts it with
 * DetectIterMap): each dimension a single iter times +-1 plus a constant
 * (B[vi + 1], B[7 - vi]), or a fused sum of iters whose coefficients are
 * the mixed-radix strides of their domains (B[2 * vi + vj], vj in [0, 2)),
 * inverted with floordiv/floormod. Then each producer instance maps to one
 * consumer instance. */
static bool invert_index(mlc_arena *a, const mlc_block *b, mlc_expr *ix, mlc_expr *pidx,
                         mlc_expr **map) {
  mlc_fused_map *fm = MLC_NEW(a, mlc_fused_map);
  if (!mlc_expr_fused_map(a, ix, b->n_iters, b->iters, fm) || fm->m == 0 || fm->g != 1) return false;
  for (int i = 0; i < fm->m; i++)
    if (map[fm->order[i]]) return false;
  /* F = sign * (pidx - c0), the fused value in [0, span). */
  mlc_dtype t = ix->dtype;
  mlc_expr *f = mlc_mul(a, mlc_sub(a, pidx, mlc_int_t(a, t, fm->c0)), mlc_int_t(a, t, fm->sign));
  for (int i = 0; i < fm->m; i++) {
    int64_t st = fm->sign * fm->coeff[i];
    mlc_expr *q = st == 1 ? f : mlc_binary(a, MLC_EXPR_FLOORDIV, f, mlc_int_t(a, t, st));
    if (i + 1 < fm->m) q = mlc_binary(a, MLC_EXPR_FLOORMOD, q, mlc_int_t(a, t, fm->exts[i]));
    map[fm->order[i]] = mlc_add(a, q, mlc_int_t(a, t, fm->mins[i]));
  }
  return true;
}

/* Whether F, inverted against pf, gives back every index of the load:
 * index d equals floormod(floordiv(F, stride_d), extent_d) under the
 * iters' domains (d = 0 without the floormod). */
static bool unflatten_with(mlc_arena *a, const mlc_block *b, const mlc_expr *load, mlc_expr *f,
                           mlc_expr *pf, mlc_simplifier *sp, mlc_expr **map) {
  const mlc_buffer *buf = load->load.buf;
  mlc_dtype t = load->load.indices[0]->dtype;
  memset(map, 0, sizeof(mlc_expr *) * (size_t)(b->n_iters + 1));
  if (!invert_index(a, b, f, pf, map)) return false;
  int64_t stride = 1;
  for (int d = buf->ndim - 1; d >= 0; d--) {
    int64_t ext = buf->shape[d];
    mlc_expr *u = stride == 1 ? f : mlc_binary(a, MLC_EXPR_FLOORDIV, f, mlc_int_t(a, t, stride));
    if (d > 0) u = mlc_binary(a, MLC_EXPR_FLOORMOD, u, mlc_int_t(a, t, ext));
    int64_t diff;
    if (!mlc_expr_const_diff(a, mlc_simplify(sp, u), mlc_simplify(sp, load->load.indices[d]), &diff) ||
        diff)
      return false;
    stride *= ext;
  }
  return true;
}

/* The operand of e if e is `x op c` for the constant c; else NULL. */
static mlc_expr *operand_of(mlc_expr *e, mlc_expr_kind op, int64_t c) {
  int64_t k;
  return e->kind == op && mlc_expr_is_const_int(e->bin.b, &k) && k == c ? e->bin.a : NULL;
}

/* A read whose indices are the row-major split of one fused sum F of the
 * iters, as a reshape reads (B[vi // 4, vi % 4] of a (4, 4) B): TVM's
 * DetectIterMap sees one bijective map there. F is inverted as one fused
 * map against the same sum of the producer's store indices, and accepted
 * only when it gives back every index (unflatten_with). The candidates
 * for F: the operand of the innermost index's floormod and of the first
 * index's floordiv, as written and simplified (the simplifier shares F out
 * between the indices: B[F // 128, F % 128] with F = vi * 2048 + vj * 64
 * + vk reads B[vi * 16 + (vj * 64 + vk) // 128, (vj * 64 + vk) % 128]),
 * and sum_d index_d * stride_d simplified, which recombines such pairs. */
static bool invert_unflattened(mlc_arena *a, const mlc_block *b, const mlc_expr *load,
                               const mlc_stmt *pst, mlc_expr **map) {
  const mlc_buffer *buf = load->load.buf;
  int n = buf->ndim;
  if (n < 2) return false;
  mlc_dtype t = load->load.indices[0]->dtype;
  mlc_expr *f = NULL, *pf = NULL;
  int64_t stride = 1;
  for (int d = n - 1; d >= 0; d--) {
    int64_t ext = buf->shape[d];
    if (ext <= 0) return false;
    mlc_expr *c = mlc_int_t(a, t, stride);
    mlc_expr *term = mlc_mul(a, load->load.indices[d], c);
    mlc_expr *pterm = mlc_mul(a, pst->store.indices[d], c);
    f = f ? mlc_add(a, term, f) : term;
    pf = pf ? mlc_add(a, pterm, pf) : pterm;
    if (d > 0 && mlc_mul_overflow(stride, ext, &stride)) return false;
  }
  mlc_simplifier *sp = mlc_simplifier_new(a);
  for (int k = 0; k < b->n_iters; k++) {
    int64_t mn, ext;
    if (!mlc_expr_is_const_int(b->iters[k].dom.min, &mn) ||
        !mlc_expr_is_const_int(b->iters[k].dom.extent, &ext))
      return false;
    mlc_simplifier_bind(sp, b->iters[k].var, mn, ext);
  }
  mlc_expr *last = load->load.indices[n - 1], *first = load->load.indices[0];
  mlc_expr *cand[5] = {
      operand_of(last, MLC_EXPR_FLOORMOD, buf->shape[n - 1]),
      operand_of(first, MLC_EXPR_FLOORDIV, stride),
      operand_of(mlc_simplify(sp, last), MLC_EXPR_FLOORMOD, buf->shape[n - 1]),
      operand_of(mlc_simplify(sp, first), MLC_EXPR_FLOORDIV, stride),
      f,
  };
  for (int i = 0; i < 5; i++)
    if (cand[i] && unflatten_with(a, b, load, mlc_simplify(sp, cand[i]), pf, sp, map)) return true;
  return false;
}

static bool consumer_map(mlc_sched *s, rinl *p, mlc_error *err) {
  mlc_arena *a = s->arena;
  const mlc_block *b = p->c.blk, *pb = p->prod->realize.block;
  const mlc_buffer *buf = p->c.buf;
  mlc_stmt *st = b->body;
  if (st->kind != MLC_STMT_STORE)
    return mlc_error_set(err, "%s: %s: the block's body is not a single store", p->c.prim, p->c.who);
  if (p->c.realize->realize.predicate)
    return mlc_error_set(err, "%s: %s: the block has a predicate (T.where)", p->c.prim, p->c.who);
  const mlc_expr *loads[64];
  load_list found = {buf, loads, 0, MLC_COUNTOF(loads)};
  mlc_expr_visit(st->store.value, note_load, &found);
  for (int i = 0; i < st->store.buf->ndim; i++) mlc_expr_visit(st->store.indices[i], note_load, &found);
  int nl = found.n;
  if (nl == 0)
    return mlc_error_set(err, "%s: %s: the stored value does not read %s", p->c.prim, p->c.who,
                         buf->name);
  for (int i = 1; i < nl; i++)
    for (int d = 0; d < buf->ndim; d++) {
      int64_t diff;
      if (!mlc_expr_const_diff(a, loads[i]->load.indices[d], loads[0]->load.indices[d], &diff) || diff)
        return mlc_error_set(err, "%s: %s: the block reads %s at different indices", p->c.prim,
                             p->c.who, buf->name);
    }
  p->map = MLC_NEW_ARRAY(a, mlc_expr *, b->n_iters + 1);
  memset(p->map, 0, sizeof(mlc_expr *) * (size_t)(b->n_iters + 1));
  mlc_stmt *pst = pb->body;
  mlc_simplifier *sp = mlc_simplifier_new(a);
  for (int k = 0; k < pb->n_iters; k++) {
    int64_t mn, ext;
    if (mlc_expr_is_const_int(pb->iters[k].dom.min, &mn) && mlc_expr_is_const_int(pb->iters[k].dom.extent, &ext))
      mlc_simplifier_bind(sp, pb->iters[k].var, mn, ext);
  }
  int bad = -1;
  for (int d = 0; d < buf->ndim && bad < 0; d++)
    if (!invert_index(a, b, mlc_simplify_expr(a, loads[0]->load.indices[d]), pst->store.indices[d],
                      p->map))
      bad = d;
  if (bad >= 0) {
    memset(p->map, 0, sizeof(mlc_expr *) * (size_t)(b->n_iters + 1));
    if (!invert_unflattened(a, b, loads[0], pst, p->map)) {
      mlc_str o = {.arena = a}; /* under replay's escape point */
      mlc_print_expr(&o, mlc_simplify_expr(a, loads[0]->load.indices[bad]));
      mlc_error_set(err, "%s: %s: index %d of the block's read of %s (%s) is not a bijective "
                         "affine map of its iter vars (distinct iters, a single one times +-1 or "
                         "a fused sum of them), nor are the indices the row-major split of one",
                    p->c.prim, p->c.who, bad, buf->name, mlc_str_cstr(&o));
      mlc_str_free(&o);
      return false;
    }
  }
  /* Every producer instance must have its consumer instance: a store
   * outside the consumer's domain would need a predicate the verifier
   * (and the bounds of the consumer's output) cannot accept. */
  for (int k = 0; k < b->n_iters; k++) {
    if (!p->map[k]) continue;
    p->map[k] = mlc_simplify(sp, p->map[k]);
    int64_t lo, hi, dmin, dext;
    const mlc_iter_var *it = &b->iters[k];
    if (!mlc_expr_is_const_int(it->dom.min, &dmin) || !mlc_expr_is_const_int(it->dom.extent, &dext) ||
        !mlc_simplifier_bounds(sp, p->map[k], &lo, &hi) || lo < dmin || hi > dmin + dext - 1)
      return mlc_error_set(err,
                           "%s: %s: producer \"%s\" writes elements of %s that no instance of the "
                           "block reads (iter %s would leave its domain)",
                           p->c.prim, p->c.who, pb->name, buf->name, it->var->name);
  }
  for (int k = 0; k < b->n_iters; k++) {
    int64_t ext;
    if (p->map[k]) continue;
    if (!mlc_expr_is_const_int(b->iters[k].dom.extent, &ext) || ext != 1)
      return mlc_error_set(err, "%s: %s: iter %s does not appear in the read of %s", p->c.prim,
                           p->c.who, b->iters[k].var->name, buf->name);
    p->map[k] = b->iters[k].dom.min;
  }
  return true;
}

/* The consumer now runs at the producer's place: nothing in between may
 * write what it reads or touch what it writes. */
static bool rinline_deps(mlc_sched *s, rinl *p, mlc_error *err) {
  const mlc_block *b = p->c.blk;
  int at = sched_stmts_index(&p->c.blocks, p->prod);
  for (int k = at + 1; k < p->c.self; k++) {
    const mlc_block *o = p->c.blocks.v.data[k]->realize.block;
    for (int i = 0; i < b->n_reads; i++)
      if (sched_block_writes(o, b->reads[i].buf))
        return mlc_error_set(err, "%s: %s: block \"%s\" between the producer and the block writes %s",
                             p->c.prim, p->c.who, o->name, b->reads[i].buf->name);
    for (int i = 0; i < b->n_writes; i++)
      if (sched_block_writes(o, b->writes[i].buf) || sched_block_reads(o, b->writes[i].buf))
        return mlc_error_set(err, "%s: %s: block \"%s\" between the producer and the block "
                                  "accesses %s",
                             p->c.prim, p->c.who, o->name, b->writes[i].buf->name);
  }
  for (int k = 0; k < p->c.blocks.v.len; k++) {
    mlc_stmt *w = p->c.blocks.v.data[k];
    for (int i = 0; i < b->n_reads && k != p->c.self; i++)
      if (sched_block_writes(w->realize.block, b->reads[i].buf) && unfinished_at(s, w, p->prod))
        return mlc_error_set(err, "%s: %s: reduction \"%s\" is still accumulating %s where the "
                                  "producer runs",
                             p->c.prim, p->c.who, w->realize.block->name, b->reads[i].buf->name);
  }
  return true;
}

static bool rinline_plan(mlc_sched *s, rinl *p, mlc_error *err) {
  if (!inl_begin(s, &p->c, p->c.blk, err) || !single_read(p, err) || !single_producer(s, p, err) ||
      !consumer_map(s, p, err) || !rinline_deps(s, p, err))
    return false;
  return sched_removal_plan(s, p->c.realize, p->c.prim, &p->c.rm, err);
}

bool sched_reverse_compute_inline(mlc_sched *s, mlc_rv block, const char *prim, mlc_error *err) {
  mlc_arena *a = s->arena;
  rinl p = {.c = {.prim = prim}};
  if (!sched_check_block(s, prim, block, err)) return false;
  sched_rv_desc(s, block, p.c.who);
  p.c.blk = s->rvs.data[block].block;
  if (!rinline_plan(s, &p, err)) return false;
  sched_removal_apply(s, &p.c.rm);
  const mlc_block *b = p.c.blk;
  mlc_block *pb = p.prod->realize.block;
  mlc_stmt *cst = b->body;
  /* Loads of the buffer become the producer's value; then consumer iters
   * become producer expressions. */
  mlc_var **pv = MLC_NEW_ARRAY(a, mlc_var *, 1);
  load_rw w = {a, p.c.buf, 0, pv, pb->body->store.value};
  mlc_var **cv = MLC_NEW_ARRAY(a, mlc_var *, b->n_iters + 1);
  for (int k = 0; k < b->n_iters; k++) cv[k] = b->iters[k].var;
  int nd = cst->store.buf->ndim;
  mlc_expr **idx = MLC_NEW_ARRAY(a, mlc_expr *, nd + 1);
  for (int d = 0; d < nd; d++)
    idx[d] = mlc_simplify_expr(a, mlc_expr_subst(a, rw_expr(&w, cst->store.indices[d]), b->n_iters, cv, p.map));
  mlc_expr *val = mlc_expr_subst(a, rw_expr(&w, cst->store.value), b->n_iters, cv, p.map);
  pb->body = mlc_store_new(a, cst->store.buf, idx, val);
  mlc_block_infer_regions(a, pb);
  drop_alloc(p.c.scope->realize.block, p.c.buf);
  return true;
}

bool mlc_sched_reverse_compute_inline(mlc_sched *s, mlc_rv block, mlc_error *err) {
  if (!sched_reverse_compute_inline(s, block, "reverse_compute_inline", err)) return false;
  mlc_operand in = MLC_OP_RV(block);
  sched_record(s, MLC_INST_REVERSE_COMPUTE_INLINE, 1, &in, 0, NULL, 0, NULL);
  return true;
}
