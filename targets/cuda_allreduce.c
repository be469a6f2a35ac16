/* Before lowering, for cuda: cross-thread reductions, as TVM's
 * LowerCrossThreadReduction. A reduction block whose reduce loops include
 * one bound to threadIdx (softmax's row max and sum with one row per
 * thread block: k split into [k0, k1], k1 bound to threadIdx.x) would have
 * every thread of the block update one element at once. Its loop nest
 *
 *   for k0 in range(K0):
 *     for k1 in T.thread_binding(T, thread="threadIdx.x"):
 *       block B: (init W[i] = id) W[i] = W[i] op f(k0 * T + k1)
 *
 * becomes, with two buffers of T elements, in_thread_W (local: one per
 * thread) and cross_thread_W (shared):
 *
 *   for k1 in T.thread_binding(T, thread="threadIdx.x"):
 *     in_thread_W[k1] = id
 *     for k0 in range(K0): in_thread_W[k1] = in_thread_W[k1] op f(k0 * T + k1)
 *     cross_thread_W[k1] = in_thread_W[k1]
 *     for s = P/2, P/4, ..., 1 (P: T rounded up to a power of two):
 *       if k1 < s and k1 + s < T:
 *         cross_thread_W[k1] = cross_thread_W[k1] op cross_thread_W[k1 + s]
 *     (if k1 == 0:) W[i] = cross_thread_W[0]
 *
 * each statement a block, so lowering places and compacts the buffers
 * (in_thread_W to one register per thread, cross_thread_W to T elements
 * outside the threadIdx loop) and the kernel generator puts a barrier
 * before each tree step and the final read. The final store is thread
 * 0's alone where W is visible to the other threads (a parameter, or
 * shared); a thread-private W gets it in every thread.
 *
 * The loops from the thread-bound one up to the outermost loop above it
 * whose var only the block's reduce iters use (the "chain") must lead to
 * the block alone; the block must be `W[...] = W[...] op e` with op one of
 * + * max min (either operand order, e not reading W) and an init that
 * is op's identity (0, 1, the lowest or highest value), or it is refused
 * with the reason. The tree reorders the reduction: exact for max/min and
 * integers, within float rounding for sums and products (as on any GPU
 * library).
 */
#include "targets/cuda_internal.h"

#include <string.h>

enum { MAX_CHAIN = 16 };

typedef struct chain {
  int n;
  mlc_stmt *loops[MAX_CHAIN]; /* outermost first */
  int thread;                 /* index of the threadIdx loop in loops */
  mlc_stmt *realize;
} chain;

typedef struct xr_ctx {
  mlc_arena *a;
  mlc_error *err;
  const mlc_prim_func *f;
  MLC_VEC(mlc_buffer *) allocs; /* the buffers added to the root block */
  bool failed;
} xr_ctx;

static bool is_thread_loop(const mlc_stmt *s) {
  return s->kind == MLC_STMT_FOR && s->loop.kind == MLC_FOR_THREAD_BINDING && s->loop.thread &&
         strncmp(s->loop.thread, "threadIdx.", 10) == 0;
}

/* The single path of loops from s down to one block realize. */
static bool follow_chain(mlc_stmt *s, chain *ch) {
  ch->n = 0;
  ch->thread = -1;
  while (s->kind == MLC_STMT_FOR) {
    if (ch->n == MAX_CHAIN) return false;
    if (is_thread_loop(s)) ch->thread = ch->thread < 0 ? ch->n : -2;
    ch->loops[ch->n++] = s;
    s = s->loop.body;
  }
  ch->realize = s->kind == MLC_STMT_BLOCK_REALIZE ? s : NULL;
  return ch->realize != NULL;
}

static bool uses_any_loop(const mlc_expr *e, const chain *ch) {
  for (int i = 0; i < ch->n; i++)
    if (mlc_expr_uses_var(e, ch->loops[i]->loop.var)) return true;
  return false;
}

static bool var_outside_chain(const mlc_expr *e, void *ud) {
  const chain *ch = ud;
  if (e->kind != MLC_EXPR_VAR) return false;
  for (int i = 0; i < ch->n; i++)
    if (ch->loops[i]->loop.var == e->var) return false;
  return true;
}

/* Whether the thread loop of the chain feeds a reduce iter of its block:
 * a cross-thread reduction, to be lowered or refused. */
static bool feeds_reduce(const chain *ch) {
  if (ch->thread < 0) return false;
  const mlc_block *b = ch->realize->realize.block;
  const mlc_var *tv = ch->loops[ch->thread]->loop.var;
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind == MLC_ITER_REDUCE && mlc_expr_uses_var(ch->realize->realize.values[i], tv))
      return true;
  return false;
}

/* The reduction B must be for the rewrite: NULL when it is one, else why
 * not. *rhs: the operand that is not the accumulator. */
static const char *check_block(xr_ctx *c, const chain *ch, mlc_expr **rhs) {
  const mlc_block *b = ch->realize->realize.block;
  mlc_expr **vals = ch->realize->realize.values;
  if (ch->thread == -2) return "two of its loops are bound to threadIdx";
  const mlc_stmt *tl = ch->loops[ch->thread];
  int64_t v;
  if (!mlc_expr_is_const_int(tl->loop.min, &v) || v != 0 ||
      !mlc_expr_is_const_int(tl->loop.extent, &v))
    return "its threadIdx loop does not start at 0 with a constant extent";
  for (int i = 0; i < ch->n; i++)
    if (i != ch->thread && ch->loops[i]->loop.kind != MLC_FOR_SERIAL &&
        ch->loops[i]->loop.kind != MLC_FOR_UNROLLED)
      return "a loop between its threadIdx loop and the block is neither serial nor unrolled";
  for (int i = 0; i < b->n_iters; i++) {
    bool red = b->iters[i].kind == MLC_ITER_REDUCE;
    if (!red && uses_any_loop(vals[i], ch))
      return "a spatial iter is bound to a loop among its reduce loops";
    if (red && mlc_expr_any(vals[i], var_outside_chain, (void *)ch))
      return "a reduce iter is bound to a loop outside the threadIdx loop's nest";
  }
  if (b->n_writes != 1 || b->n_allocs != 0) return "it writes more than one buffer";
  mlc_reducer r;
  const char *why = mlc_block_reducer(b, &r);
  if (!why) *rhs = r.value;
  return why;
}

/* ---- building the rewrite -------------------------------------------------------------- */

static mlc_block *new_block(mlc_arena *a, const char *name, int n, mlc_iter_var *iters,
                            mlc_stmt *body) {
  mlc_block *b = mlc_block_new(a, name);
  b->n_iters = n;
  b->iters = n ? mlc_arena_memdup(a, iters, sizeof *iters * (size_t)n) : NULL;
  b->body = body;
  mlc_block_infer_regions(a, b);
  return b;
}

/* A one-iter block over the thread index: body(vt) where pred holds. */
static mlc_stmt *thread_block(mlc_arena *a, const char *name, mlc_var *vt, int64_t T,
                              mlc_var *tloop, mlc_stmt *body, mlc_expr *pred) {
  mlc_iter_var it = {vt, {mlc_int(a, 0), mlc_int(a, T)}, MLC_ITER_SPATIAL};
  mlc_block *b = new_block(a, name, 1, &it, body);
  mlc_expr *bind = mlc_ref(a, tloop);
  return mlc_realize_new(a, b, &bind, pred);
}

static mlc_expr *at1(mlc_arena *a, mlc_buffer *buf, mlc_expr *i) {
  return mlc_load(a, buf, (mlc_expr *[]){i});
}

static mlc_stmt *store1(mlc_arena *a, mlc_buffer *buf, mlc_expr *i, mlc_expr *v) {
  return mlc_store_new(a, buf, (mlc_expr *[]){i}, v);
}

static mlc_stmt *lower_chain(xr_ctx *c, const chain *ch, mlc_expr *rhs) {
  mlc_arena *a = c->a;
  const mlc_block *b = ch->realize->realize.block;
  mlc_expr **vals = ch->realize->realize.values;
  const mlc_stmt *tl = ch->loops[ch->thread], *up = b->body;
  mlc_var *t = tl->loop.var;
  int64_t T;
  mlc_expr_is_const_int(tl->loop.extent, &T);
  mlc_expr_kind op = up->store.value->kind;
  mlc_buffer *W = up->store.buf;
  mlc_dtype dt = W->dtype;
  mlc_buffer *in = mlc_buffer_new(a, mlc_arena_printf(a, "in_thread_%s", W->name), dt, 1,
                                  (int64_t[]){T}, "local");
  mlc_buffer *cross = mlc_buffer_new(a, mlc_arena_printf(a, "cross_thread_%s", W->name), dt, 1,
                                     (int64_t[]){T}, "shared");
  MLC_VEC_APUSH(a, c->allocs, in);
  MLC_VEC_APUSH(a, c->allocs, cross);
  MLC_VEC(mlc_stmt *) seq = {0};

  /* in_thread_W[t] = identity */
  mlc_var *v0 = mlc_var_new(a, "v_t", t->dtype);
  MLC_VEC_APUSH(a, seq, thread_block(a, mlc_arena_printf(a, "%s_in_thread_init", b->name), v0,
                                     T, t, store1(a, in, mlc_ref(a, v0), b->init->store.value),
                                     NULL));

  /* The block over the chain's other loops, accumulating into in_thread_W:
   * its spatial iters as they were, one iter per chain loop (the thread's
   * spatial, the others reduce), the old reduce iters replaced by their
   * bindings in the new iters. */
  int n_sp = 0;
  for (int i = 0; i < b->n_iters; i++) n_sp += b->iters[i].kind != MLC_ITER_REDUCE;
  int ni = n_sp + ch->n;
  mlc_iter_var *iters = MLC_NEW_ARRAY(a, mlc_iter_var, ni);
  mlc_expr **binds = MLC_NEW_ARRAY(a, mlc_expr *, ni);
  mlc_var **loop_vars = MLC_NEW_ARRAY(a, mlc_var *, ch->n);
  mlc_expr **iter_refs = MLC_NEW_ARRAY(a, mlc_expr *, ch->n);
  int k = 0;
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind != MLC_ITER_REDUCE) iters[k] = b->iters[i], binds[k++] = vals[i];
  mlc_var *vt = NULL;
  for (int i = 0; i < ch->n; i++) {
    const mlc_stmt *l = ch->loops[i];
    mlc_var *nv = mlc_var_new(a, mlc_arena_printf(a, "v_%s", l->loop.var->name), l->loop.var->dtype);
    bool is_t = i == ch->thread;
    if (is_t) vt = nv;
    iters[k] = (mlc_iter_var){nv, {l->loop.min, l->loop.extent},
                              is_t ? MLC_ITER_SPATIAL : MLC_ITER_REDUCE};
    binds[k++] = mlc_ref(a, l->loop.var);
    loop_vars[i] = l->loop.var;
    iter_refs[i] = mlc_ref(a, nv);
  }
  /* old reduce iter -> its binding over the new iters */
  mlc_var **old = MLC_NEW_ARRAY(a, mlc_var *, b->n_iters);
  mlc_expr **repl = MLC_NEW_ARRAY(a, mlc_expr *, b->n_iters);
  int nr = 0;
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind == MLC_ITER_REDUCE) {
      old[nr] = b->iters[i].var;
      repl[nr++] = mlc_expr_subst(a, vals[i], ch->n, loop_vars, iter_refs);
    }
  mlc_expr *e = mlc_expr_subst(a, rhs, nr, old, repl);
  mlc_expr *acc = at1(a, in, mlc_ref(a, vt));
  mlc_block *nb = new_block(a, b->name, ni, iters,
                            store1(a, in, mlc_ref(a, vt), mlc_binary(a, op, acc, e)));
  nb->n_anns = b->n_anns;
  nb->anns = b->anns;
  mlc_stmt *inner = mlc_realize_new(a, nb, binds, ch->realize->realize.predicate);
  for (int i = ch->n - 1; i >= 0; i--) {
    if (i == ch->thread) continue;
    mlc_stmt *l = mlc_arena_memdup(a, ch->loops[i], sizeof *ch->loops[i]);
    l->loop.body = inner;
    inner = l;
  }
  MLC_VEC_APUSH(a, seq, inner);

  /* cross_thread_W[t] = in_thread_W[t] */
  mlc_var *v1 = mlc_var_new(a, "v_t", t->dtype);
  MLC_VEC_APUSH(a, seq, thread_block(a, mlc_arena_printf(a, "%s_cross_thread", b->name), v1, T, t,
                                     store1(a, cross, mlc_ref(a, v1), at1(a, in, mlc_ref(a, v1))),
                                     NULL));
  /* the tree: half of the live partials add the other half, until one */
  int64_t P = 1;
  while (P < T) P *= 2;
  for (int64_t s = P / 2; s >= 1; s /= 2) {
    mlc_var *vs = mlc_var_new(a, "v_t", t->dtype);
    mlc_expr *other = mlc_add(a, mlc_ref(a, vs), mlc_int_t(a, vs->dtype, s));
    mlc_stmt *st = store1(a, cross, mlc_ref(a, vs),
                          mlc_binary(a, op, at1(a, cross, mlc_ref(a, vs)), at1(a, cross, other)));
    mlc_expr *pred = mlc_binary(a, MLC_EXPR_LT, mlc_ref(a, t), mlc_int_t(a, t->dtype, s));
    if (2 * s > T)
      pred = mlc_binary(a, MLC_EXPR_AND, pred,
                        mlc_binary(a, MLC_EXPR_LT, mlc_add(a, mlc_ref(a, t), mlc_int_t(a, t->dtype, s)),
                                   mlc_int_t(a, t->dtype, T)));
    MLC_VEC_APUSH(a, seq, thread_block(a, mlc_arena_printf(a, "%s_cross_thread_%lld", b->name,
                                                           (long long)s),
                                       vs, T, t, st, pred));
  }

  /* W[...] = cross_thread_W[0]: the block's spatial iters (fresh), thread
   * 0 only unless W is each thread's own */
  mlc_iter_var *wit = MLC_NEW_ARRAY(a, mlc_iter_var, n_sp + 1);
  mlc_expr **wb = MLC_NEW_ARRAY(a, mlc_expr *, n_sp + 1);
  mlc_var **sold = MLC_NEW_ARRAY(a, mlc_var *, n_sp + 1);
  mlc_expr **snew = MLC_NEW_ARRAY(a, mlc_expr *, n_sp + 1);
  k = 0;
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind == MLC_ITER_REDUCE) continue;
    mlc_var *nv = mlc_var_new(a, b->iters[i].var->name, b->iters[i].var->dtype);
    wit[k] = b->iters[i];
    wit[k].var = nv;
    wb[k] = vals[i];
    sold[k] = b->iters[i].var;
    snew[k++] = mlc_ref(a, nv);
  }
  mlc_expr **widx = MLC_NEW_ARRAY(a, mlc_expr *, W->ndim);
  for (int d = 0; d < W->ndim; d++) widx[d] = mlc_expr_subst(a, up->store.indices[d], k, sold, snew);
  bool own = strncmp(W->scope, "shared", 6) != 0;
  for (int i = 0; i < c->f->n_params && own; i++) own = c->f->params[i] != W;
  mlc_block *wblk = new_block(a, mlc_arena_printf(a, "%s_write", b->name), k, wit,
                              mlc_store_new(a, W, widx, at1(a, cross, mlc_int_t(a, t->dtype, 0))));
  mlc_expr *wpred = own ? NULL : mlc_binary(a, MLC_EXPR_EQ, mlc_ref(a, t), mlc_int_t(a, t->dtype, 0));
  MLC_VEC_APUSH(a, seq, mlc_realize_new(a, wblk, wb, wpred));

  mlc_stmt *tloop = mlc_arena_memdup(a, tl, sizeof *tl);
  tloop->loop.body = mlc_seq_new(a, seq.len, seq.data);
  return tloop;
}

/* ---- the walk ----------------------------------------------------------------------------- */

static mlc_stmt *rw(xr_ctx *c, mlc_stmt *s);

static mlc_stmt *rw_block_realize(xr_ctx *c, mlc_stmt *s) {
  mlc_block *b = s->realize.block;
  mlc_stmt *body = rw(c, b->body);
  if (body == b->body) return s;
  mlc_block *nb = mlc_arena_memdup(c->a, b, sizeof *b);
  nb->body = body;
  mlc_stmt *ns = mlc_arena_memdup(c->a, s, sizeof *s);
  ns->realize.block = nb;
  return ns;
}

static mlc_stmt *rw(xr_ctx *c, mlc_stmt *s) {
  if (!s || c->failed) return s;
  switch (s->kind) {
  case MLC_STMT_FOR: {
    chain ch;
    if (follow_chain(s, &ch) && feeds_reduce(&ch)) {
      mlc_expr *rhs = NULL;
      const char *why = check_block(c, &ch, &rhs);
      if (!why) return lower_chain(c, &ch, rhs);
      /* The thread loop itself heads the smallest chain: refuse there, so
       * that a larger chain above it may still be tried first. */
      if (ch.thread == 0) {
        c->failed = true;
        mlc_error_set(c->err, "block %s: its reduction over loop %s (bound to %s) runs across "
                              "threads, which needs a cross-thread reduction, but %s",
                      ch.realize->realize.block->name, ch.loops[0]->loop.var->name,
                      ch.loops[0]->loop.thread, why);
        return s;
      }
    }
    mlc_stmt *body = rw(c, s->loop.body);
    if (body == s->loop.body) return s;
    mlc_stmt *ns = mlc_arena_memdup(c->a, s, sizeof *s);
    ns->loop.body = body;
    return ns;
  }
  case MLC_STMT_BLOCK_REALIZE: return rw_block_realize(c, s);
  case MLC_STMT_SEQ: {
    mlc_stmt **kids = NULL;
    for (int i = 0; i < s->seq.n; i++) {
      mlc_stmt *k = rw(c, s->seq.stmts[i]);
      if (k == s->seq.stmts[i] && !kids) continue;
      if (!kids) {
        kids = MLC_NEW_ARRAY(c->a, mlc_stmt *, s->seq.n);
        memcpy(kids, s->seq.stmts, sizeof *kids * (size_t)s->seq.n);
      }
      kids[i] = k;
    }
    return kids ? mlc_seq_new(c->a, s->seq.n, kids) : s;
  }
  case MLC_STMT_IF: {
    mlc_stmt *t = rw(c, s->if_.then_s), *e = rw(c, s->if_.else_s);
    if (t == s->if_.then_s && e == s->if_.else_s) return s;
    return mlc_if_new(c->a, s->if_.cond, t, e);
  }
  case MLC_STMT_ALLOCATE: {
    mlc_stmt *body = rw(c, s->alloc.body);
    return body == s->alloc.body ? s : mlc_allocate_new(c->a, s->alloc.buf, body);
  }
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return s;
  }
  mlc_unreachable();
}

const mlc_prim_func *cuda_lower_allreduce(mlc_arena *a, const mlc_prim_func *f, mlc_error *err) {
  if (!f->body || f->body->kind != MLC_STMT_BLOCK_REALIZE) return f;
  xr_ctx c = {.a = a, .err = err, .f = f};
  mlc_stmt *body = rw_block_realize(&c, f->body);
  if (c.failed) return NULL;
  if (body == f->body) return f;
  mlc_block *root = mlc_arena_memdup(a, body->realize.block, sizeof(mlc_block));
  mlc_buffer **allocs = MLC_NEW_ARRAY(a, mlc_buffer *, root->n_allocs + c.allocs.len);
  if (root->n_allocs) memcpy(allocs, root->allocs, sizeof *allocs * (size_t)root->n_allocs);
  memcpy(allocs + root->n_allocs, c.allocs.data, sizeof *allocs * (size_t)c.allocs.len);
  root->allocs = allocs;
  root->n_allocs += c.allocs.len;
  mlc_stmt *rs = mlc_arena_memdup(a, body, sizeof *body);
  rs->realize.block = root;
  mlc_prim_func *out = mlc_arena_memdup(a, f, sizeof *f);
  out->body = rs;
  return out;
}
