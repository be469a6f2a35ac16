/* compute_at, reverse_compute_at and sample_compute_location: move a block
 * under a loop of the same scope, regenerating its loops so that one
 * iteration of the loop computes what the blocks there need (compute_at,
 * the block is a producer) or consumes what they produce (reverse, the
 * block is a consumer), as TensorIR does.
 *
 * Everything is planned before the IR is touched: the region inference,
 * the new loops and bindings, and the dependence checks that guarantee
 * the moved block still reads complete values and that its consumers do.
 * A refusal therefore leaves the state as it was. */
#include "schedule/sched_impl.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- buffers and blocks ---------------------------------------------------- */

bool sched_block_writes(const mlc_block *b, const mlc_buffer *buf) {
  for (int i = 0; i < b->n_writes; i++)
    if (b->writes[i].buf == buf) return true;
  return false;
}

bool sched_block_reads(const mlc_block *b, const mlc_buffer *buf) {
  for (int i = 0; i < b->n_reads; i++)
    if (b->reads[i].buf == buf) return true;
  /* A reduction reads its own output without listing it. */
  return b->init && sched_block_writes(b, buf);
}

/* A buffer that x writes and y reads, or NULL. */
static const mlc_buffer *flows(const mlc_block *x, const mlc_block *y) {
  for (int i = 0; i < x->n_writes; i++)
    if (sched_block_reads(y, x->writes[i].buf)) return x->writes[i].buf;
  return NULL;
}

static const mlc_buffer *both_write(const mlc_block *x, const mlc_block *y) {
  for (int i = 0; i < x->n_writes; i++)
    if (sched_block_writes(y, x->writes[i].buf)) return x->writes[i].buf;
  return NULL;
}

/* ---- scopes ------------------------------------------------------------------ */

int sched_scope_index(mlc_stmt **path, int n) {
  for (int i = n - 2; i >= 0; i--)
    if (path[i]->kind == MLC_STMT_BLOCK_REALIZE) return i;
  return -1;
}

static void push_realize(mlc_stmt *r, void *ctx) {
  sched_stmts *v = ctx;
  MLC_VEC_APUSH(v->arena, v->v, r);
}

sched_stmts sched_scope_blocks(mlc_sched *s, mlc_stmt *scope) {
  sched_stmts v = {s->arena, {0}};
  mlc_block *b = scope->realize.block;
  if (b->init) sched_each_realize(b->init, push_realize, &v);
  sched_each_realize(b->body, push_realize, &v);
  return v;
}

int sched_stmts_index(const sched_stmts *v, const mlc_stmt *x) {
  for (int i = 0; i < v->v.len; i++)
    if (v->v.data[i] == x) return i;
  return -1;
}

static bool is_allocated(const mlc_block *scope, const mlc_buffer *buf) {
  for (int i = 0; i < scope->n_allocs; i++)
    if (scope->allocs[i] == buf) return true;
  return false;
}

/* TensorIR's complete block: spatial iters only, the only writer of what
 * it writes in its scope, and no buffer both read and written. */
bool sched_check_complete(const sched_stmts *blocks, const mlc_block *b, const char *prim,
                          mlc_error *err) {
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind != MLC_ITER_SPATIAL)
      return mlc_error_set(err, "%s: block \"%s\" is not a complete block: iter %s is a reduce iter",
                           prim, b->name, b->iters[i].var->name);
  for (int i = 0; i < b->n_writes; i++)
    if (sched_block_reads(b, b->writes[i].buf))
      return mlc_error_set(err, "%s: block \"%s\" is not a complete block: it reads and writes %s",
                           prim, b->name, b->writes[i].buf->name);
  for (int k = 0; k < blocks->v.len; k++) {
    const mlc_block *o = blocks->v.data[k]->realize.block;
    const mlc_buffer *w = o != b ? both_write(b, o) : NULL;
    if (w)
      return mlc_error_set(err,
                           "%s: block \"%s\" is not a complete block: block \"%s\" also writes %s",
                           prim, b->name, o->name, w->name);
  }
  return true;
}

/* TensorIR's reduction block: an init, the only writer of its outputs,
 * whose write indices use spatial iters only. */
static bool check_reduction(const sched_stmts *blocks, const mlc_block *b, const char *prim,
                            mlc_error *err) {
  if (!b->init)
    return mlc_error_set(err, "%s: block \"%s\" is neither a complete nor a reduction block", prim,
                         b->name);
  for (int i = 0; i < b->n_writes; i++)
    for (int d = 0; d < b->writes[i].buf->ndim; d++)
      for (int k = 0; k < b->n_iters; k++)
        if (b->iters[k].kind == MLC_ITER_REDUCE &&
            (mlc_expr_uses_var(b->writes[i].ranges[d].min, b->iters[k].var) ||
             mlc_expr_uses_var(b->writes[i].ranges[d].extent, b->iters[k].var)))
          return mlc_error_set(err,
                               "%s: block \"%s\" is not a reduction block: its write of %s "
                               "depends on reduce iter %s",
                               prim, b->name, b->writes[i].buf->name, b->iters[k].var->name);
  for (int k = 0; k < blocks->v.len; k++) {
    const mlc_block *o = blocks->v.data[k]->realize.block;
    const mlc_buffer *w = o != b ? both_write(b, o) : NULL;
    if (w)
      return mlc_error_set(err, "%s: block \"%s\" is not a reduction block: block \"%s\" also writes %s",
                           prim, b->name, o->name, w->name);
  }
  return true;
}

/* ---- removing a leaf block ----------------------------------------------------- */

bool sched_removal_plan(mlc_sched *s, mlc_stmt *realize, const char *prim, sched_removal *out,
                        mlc_error *err) {
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, realize, path);
  MLC_ASSERT(n >= 2);
  int k = n - 1;
  /* Climb the loops that hold nothing but this block. */
  while (k > 0 && path[k - 1]->kind == MLC_STMT_FOR) k--;
  mlc_stmt *parent = path[k - 1];
  const char *name = realize->realize.block->name;
  switch (parent->kind) {
  case MLC_STMT_SEQ:
    *out = (sched_removal){parent, path[k], path[k - 2]};
    return true;
  case MLC_STMT_BLOCK_REALIZE:
    return mlc_error_set(err, "%s: block \"%s\" is the only child of block \"%s\"; it cannot be "
                              "removed from there",
                         prim, name, parent->realize.block->name);
  case MLC_STMT_IF:
  case MLC_STMT_ALLOCATE:
  case MLC_STMT_FOR:
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE:
    break;
  }
  return mlc_error_set(err, "%s: block \"%s\" is under a %s statement; it cannot be moved", prim,
                       name, mlc_stmt_kind_name(parent->kind));
}

void sched_removal_apply(mlc_sched *s, const sched_removal *rm) {
  mlc_stmt *seq = rm->seq;
  int j = 0;
  for (int i = 0; i < seq->seq.n; i++)
    if (seq->seq.stmts[i] != rm->elem) seq->seq.stmts[j++] = seq->seq.stmts[i];
  MLC_ASSERT(j == seq->seq.n - 1);
  seq->seq.n = j;
  if (j == 1) *sched_child_slot(rm->seq_parent, seq) = seq->seq.stmts[0];
  (void)s;
}

/* ---- loops and regions ---------------------------------------------------------- */

static bool const_range(const mlc_stmt *l, int64_t *mn, int64_t *ext) {
  return mlc_expr_is_const_int(l->loop.min, mn) && mlc_expr_is_const_int(l->loop.extent, ext);
}

/* A simplifier knowing the ranges of the loops on path[0..n). */
static mlc_simplifier *simp_of(mlc_arena *a, mlc_stmt **path, int n) {
  mlc_simplifier *sp = mlc_simplifier_new(a);
  for (int i = 0; i < n; i++) {
    int64_t mn, ext;
    if (path[i]->kind == MLC_STMT_FOR && const_range(path[i], &mn, &ext))
      mlc_simplifier_bind(sp, path[i]->loop.var, mn, ext);
  }
  return sp;
}

/* A block region with the realize's bindings substituted and the given
 * loops relaxed: what one execution of everything under them touches.
 * max_ext (may be NULL) receives a constant bound on each extent. */
static mlc_region region_at(mlc_arena *a, const mlc_region *r, const mlc_stmt *realize, int nl,
                            mlc_stmt *const *loops, int64_t *max_ext) {
  const mlc_block *b = realize->realize.block;
  mlc_var **iv = MLC_NEW_ARRAY(a, mlc_var *, b->n_iters + 1);
  for (int i = 0; i < b->n_iters; i++) iv[i] = b->iters[i].var;
  mlc_region x = {r->buf, MLC_NEW_ARRAY(a, mlc_range, r->buf->ndim + 1)};
  for (int d = 0; d < r->buf->ndim; d++) {
    x.ranges[d].min = mlc_expr_subst(a, r->ranges[d].min, b->n_iters, iv, realize->realize.values);
    x.ranges[d].extent =
        mlc_expr_subst(a, r->ranges[d].extent, b->n_iters, iv, realize->realize.values);
  }
  mlc_var **lv = MLC_NEW_ARRAY(a, mlc_var *, nl + 1);
  int64_t *mins = MLC_NEW_ARRAY(a, int64_t, nl + 1), *exts = MLC_NEW_ARRAY(a, int64_t, nl + 1);
  int k = 0;
  for (int i = 0; i < nl; i++)
    if (const_range(loops[i], &mins[k], &exts[k])) lv[k++] = loops[i]->loop.var;
  return mlc_region_relax_bounded(a, x, k, lv, mins, exts, max_ext);
}

/* The loops strictly between `top` and realize r (top NULL: from the root). */
static int loops_below(mlc_sched *s, const mlc_stmt *top, mlc_stmt *r, mlc_stmt **out) {
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, r, path), k = 0, i = 0;
  if (top)
    while (i < n && path[i] != top) i++;
  for (i = top ? i + 1 : 0; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_FOR) out[k++] = path[i];
  return k;
}

static bool prove_ge0(mlc_simplifier *sp, mlc_expr *e) {
  int64_t lo, hi;
  e = mlc_simplify(sp, e);
  return mlc_simplifier_bounds(sp, e, &lo, &hi) && lo >= 0;
}

static mlc_expr *last_of(mlc_arena *a, const mlc_range *r) {
  return mlc_sub(a, mlc_add(a, r->min, r->extent), mlc_int_t(a, r->min->dtype, 1));
}

/* inner, clipped to the buffer, lies within outer for every value of the
 * loops the simplifier knows. inner_max bounds inner's extents (an extent
 * that varies, floordiv(3 * i + 2, 4) - floordiv(3 * i, 4) + 1, is then
 * compared through its bound). */
static bool region_within(mlc_arena *a, mlc_simplifier *sp, const mlc_region *inner,
                          const int64_t *inner_max, const mlc_region *outer) {
  for (int d = 0; d < inner->buf->ndim; d++) {
    const mlc_range *x = &inner->ranges[d], *y = &outer->ranges[d];
    mlc_dtype t = x->min->dtype;
    bool lo = prove_ge0(sp, mlc_sub(a, x->min, y->min)) || prove_ge0(sp, mlc_sub(a, mlc_int_t(a, t, 0), y->min));
    mlc_expr *ylast = last_of(a, y);
    int64_t off, yext;
    bool hi = prove_ge0(sp, mlc_sub(a, ylast, last_of(a, x))) ||
              prove_ge0(sp, mlc_sub(a, ylast, mlc_int_t(a, t, inner->buf->shape[d] - 1))) ||
              (inner_max[d] > 0 && mlc_expr_const_diff(a, x->min, y->min, &off) && off >= 0 &&
               mlc_expr_is_const_int(y->extent, &yext) && off + inner_max[d] <= yext);
    if (!lo || !hi) return false;
  }
  return true;
}

/* ---- the plan ---------------------------------------------------------------------- */

typedef struct ca_plan {
  const char *prim;
  bool reverse;
  char who[256];          /* "b1 (block Y) at l3 (loop j)" for messages */
  mlc_stmt *realize;      /* the block's realize now */
  mlc_block *blk;
  mlc_stmt *loop;         /* the target loop */
  int lpath_n;
  sched_stmts blocks;     /* the scope's blocks in program order */
  int n_sub;              /* the loop body's statements */
  mlc_stmt **sub;
  int insert_pos;
  sched_removal rm;
  mlc_stmt *subtree;      /* new loops around new_realize */
  mlc_stmt *new_realize;
  int n_new_loops;
  mlc_stmt **new_loops;
  mlc_stmt *lpath[SCHED_MAX_DEPTH]; /* root .. loop; last: plan_new leaves it as it is */
} ca_plan;

/* A plan with every field zero but the path (8 KB, filled before read). */
static ca_plan *plan_new(mlc_sched *s) {
  ca_plan *p = mlc_arena_alloc_uninit(s->arena, sizeof *p);
  memset(p, 0, offsetof(ca_plan, lpath));
  return p;
}

/* Which statement of the loop's body holds realize r; -1 if none. */
static int subtree_of(mlc_sched *s, const ca_plan *p, mlc_stmt *r) {
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, r, path);
  bool seq = p->loop->loop.body->kind == MLC_STMT_SEQ;
  for (int i = 0; i < n; i++)
    if (path[i] == p->loop && i + 1 < n) {
      if (!seq) return 0; /* the body itself */
      for (int k = 0; k < p->n_sub; k++)
        if (i + 2 < n && p->sub[k] == path[i + 2]) return k;
      mlc_unreachable();
    }
  return -1;
}

static bool plan_where(mlc_sched *s, ca_plan *p, mlc_error *err) {
  mlc_stmt *bpath[SCHED_MAX_DEPTH];
  int bn = sched_path_to(s, p->realize, bpath);
  for (int i = 0; i < bn; i++)
    if (bpath[i] == p->loop)
      return mlc_error_set(err, "%s: %s: the loop is an ancestor of the block", p->prim, p->who);
  p->lpath_n = sched_path_to(s, p->loop, p->lpath);
  int bs = sched_scope_index(bpath, bn), ls = sched_scope_index(p->lpath, p->lpath_n);
  if (bs < 0) return mlc_error_set(err, "%s: %s: the root block cannot be moved", p->prim, p->who);
  if (ls < 0 || bpath[bs] != p->lpath[ls])
    return mlc_error_set(err, "%s: %s: the loop is not in the block's scope (block \"%s\")", p->prim,
                         p->who, bpath[bs]->realize.block->name);
  for (int i = ls + 1; i <= p->lpath_n - 1; i++) {
    int64_t mn, ext;
    bool symbolic;
    if (p->lpath[i]->kind == MLC_STMT_FOR && !sched_loop_range(s, p->lpath[i], &mn, &ext, &symbolic))
      return mlc_error_set(err, "%s: %s: loop %s has non-constant bounds", p->prim, p->who,
                           p->lpath[i]->loop.var->name);
  }
  p->blocks = sched_scope_blocks(s, bpath[bs]);
  mlc_stmt *body = p->loop->loop.body;
  if (body->kind == MLC_STMT_SEQ) {
    p->n_sub = body->seq.n;
    p->sub = body->seq.stmts;
  } else {
    p->n_sub = 1;
    p->sub = MLC_NEW_ARRAY(s->arena, mlc_stmt *, 1);
    p->sub[0] = body;
  }
  return true;
}

/* The checks TensorIR makes on the block itself. */
static bool plan_block_kind(mlc_sched *s, ca_plan *p, mlc_error *err) {
  mlc_error e2 = {{0}}, e3 = {{0}};
  const mlc_block *b = p->blk;
  if (!sched_check_complete(&p->blocks, b, p->prim, &e2) && !check_reduction(&p->blocks, b, p->prim, &e3))
    return mlc_error_set(err, "%s: %s: the block must be a complete or a reduction block (%s)",
                         p->prim, p->who, (b->init ? e3.msg : e2.msg) + strlen(p->prim) + 2);
  if (!p->reverse) {
    mlc_stmt *path[SCHED_MAX_DEPTH];
    int n = sched_path_to(s, p->realize, path);
    const mlc_block *scope = path[sched_scope_index(path, n)]->realize.block;
    for (int i = 0; i < b->n_writes; i++)
      if (!is_allocated(scope, b->writes[i].buf))
        return mlc_error_set(err,
                             "%s: %s: the block is an output block: it writes %s, which is not "
                             "allocated in its scope",
                             p->prim, p->who, b->writes[i].buf->name);
  }
  return true;
}

/* TensorIR's insertion point: after the last producer and before the
 * first consumer among the loop body's statements; compute_at needs every
 * consumer under the loop, reverse_compute_at every producer. */
static bool plan_insertion(mlc_sched *s, ca_plan *p, int index, mlc_error *err) {
  int self = sched_stmts_index(&p->blocks, p->realize);
  int last_prod = -1, first_cons = p->n_sub;
  for (int k = 0; k < p->blocks.v.len; k++) {
    mlc_stmt *r = p->blocks.v.data[k];
    if (r == p->realize) continue;
    const mlc_block *o = r->realize.block;
    bool prod = k < self && flows(o, p->blk), cons = k > self && flows(p->blk, o);
    if (!prod && !cons) continue;
    int at = subtree_of(s, p, r);
    if (at < 0 && ((cons && !p->reverse) || (prod && p->reverse)))
      return mlc_error_set(err, "%s: %s: %s \"%s\" is not under the loop", p->prim, p->who,
                           cons ? "consumer" : "producer", o->name);
    if (at < 0) continue;
    if (prod && at > last_prod) last_prod = at;
    if (cons && at < first_cons) first_cons = at;
  }
  if (last_prod >= first_cons)
    return mlc_error_set(err, "%s: %s: a producer and a consumer of the block share statement %d "
                              "of the loop body; there is no place between them",
                         p->prim, p->who, first_cons);
  if (index == -1) p->insert_pos = first_cons;
  else if (index == -2) p->insert_pos = last_prod + 1;
  else if (index >= last_prod + 1 && index <= first_cons) p->insert_pos = index;
  else
    return mlc_error_set(err, "%s: %s: index %d is not valid; valid: -1, -2, or %d to %d", p->prim,
                         p->who, index, last_prod + 1, first_cons);
  return true;
}

/* ---- region inference ---------------------------------------------------------------- */

/* Storage scopes whose buffers a whole thread block shares: a stage in
 * them covers what every thread under the loop needs (TVM's
 * CanRelaxStorageUnderThread: shared relaxes threadIdx and vthread). */
static bool relax_under_thread(const mlc_buffer *buf, const mlc_stmt *l) {
  if (l->loop.kind != MLC_FOR_THREAD_BINDING || !l->loop.thread) return false;
  if (strncmp(buf->scope, "shared", 6) != 0) return false;
  return strncmp(l->loop.thread, "threadIdx", 9) == 0 || strncmp(l->loop.thread, "vthread", 7) == 0;
}

/* One dimension of what the dependents need: [lo, hi] (inclusive, in
 * terms of the loops above), never more than ext elements. */
typedef struct need {
  bool any;
  mlc_expr *lo, *hi;
  int64_t ext;
} need;

/* The hull of [lo, hi] (at most ext elements) and what r already holds,
 * when their bounds differ by constants. */
static bool hull_add(mlc_arena *a, need *r, mlc_expr *lo, mlc_expr *hi, int64_t ext) {
  if (!r->any) {
    *r = (need){true, lo, hi, ext};
    return true;
  }
  int64_t dl, dh;
  if (!mlc_expr_const_diff(a, lo, r->lo, &dl) || !mlc_expr_const_diff(a, hi, r->hi, &dh))
    return false;
  int64_t grow = (dl < 0 ? -dl : 0) + (dh > 0 ? dh : 0);
  if (dl < 0) r->lo = lo;
  if (dh > 0) r->hi = hi;
  /* Either set may be the larger one. */
  r->ext = r->ext + grow > ext ? r->ext + grow : ext;
  return true;
}

static bool need_add(mlc_arena *a, need *n, const mlc_range *r, int64_t max_ext) {
  if (max_ext < 1) return false;
  mlc_expr *hi = mlc_simplify_expr(a, last_of(a, r));
  return hull_add(a, n, mlc_simplify_expr(a, r->min), hi, max_ext);
}

/* The iteration domain found for one iter var: [lo, hi] (inclusive), at
 * most ext values; exact when hi - lo + 1 == ext. */
typedef need iter_dom;

/* A relaxed region still refers to a loop it was relaxed over when that
 * loop's bounds are not constant: the block could not be placed above it. */
static bool uses_loop_var(const mlc_expr *e, int nl, mlc_stmt *const *loops) {
  for (int i = 0; i < nl; i++)
    if (mlc_expr_uses_var(e, loops[i]->loop.var)) return true;
  return false;
}

/* e with the vars of the loops above the location (and it) that run once
 * replaced by their start: a dependent placed there earlier may have had
 * such a var simplified away (an extent-1 batch loop's i0 became 0), and
 * the hull of its region and another's must see the same expression. */
static mlc_expr *unit_loops_fixed(mlc_arena *a, const ca_plan *p, mlc_expr *e) {
  mlc_var *vars[SCHED_MAX_DEPTH];
  mlc_expr *vals[SCHED_MAX_DEPTH];
  int n = 0;
  for (int i = 0; i < p->lpath_n; i++) {
    const mlc_stmt *l = p->lpath[i];
    int64_t ext;
    if (l->kind == MLC_STMT_FOR && mlc_expr_is_const_int(l->loop.extent, &ext) && ext == 1)
      vars[n] = l->loop.var, vals[n++] = l->loop.min;
  }
  return n ? mlc_simplify_expr(a, mlc_expr_subst(a, e, n, vars, vals)) : e;
}

/* need_add, and when the hulls' bounds do not differ by constants, again
 * with the loops that run once fixed at their start in both. */
static bool need_add_fixing_unit_loops(mlc_arena *a, const ca_plan *p, need *n, mlc_range *r, int64_t max_ext) {
  if (need_add(a, n, r, max_ext)) return true;
  if (!n->any) return false;
  n->lo = unit_loops_fixed(a, p, n->lo);
  n->hi = unit_loops_fixed(a, p, n->hi);
  r->min = unit_loops_fixed(a, p, r->min);
  r->extent = unit_loops_fixed(a, p, r->extent);
  return need_add(a, n, r, max_ext);
}

/* What the dependents under the loop need of buffer buf, per dimension. */
static bool required_of(mlc_sched *s, ca_plan *p, const mlc_buffer *buf, need *req,
                        mlc_error *err) {
  mlc_arena *a = s->arena;
  int self = sched_stmts_index(&p->blocks, p->realize);
  int64_t *max_ext = MLC_NEW_ARRAY(a, int64_t, buf->ndim + 1);
  for (int k = 0; k < p->blocks.v.len; k++) {
    mlc_stmt *r = p->blocks.v.data[k];
    if (r == p->realize || subtree_of(s, p, r) < 0) continue;
    const mlc_block *o = r->realize.block;
    bool dep = p->reverse ? k < self && sched_block_writes(o, buf) : k > self && sched_block_reads(o, buf);
    if (!dep) continue;
    mlc_stmt *loops[SCHED_MAX_DEPTH];
    int nl = loops_below(s, p->loop, r, loops);
    if (!p->reverse)
      for (int i = 0; i < p->lpath_n; i++)
        if (p->lpath[i]->kind == MLC_STMT_FOR && relax_under_thread(buf, p->lpath[i]))
          loops[nl++] = p->lpath[i];
    int nr = p->reverse ? o->n_writes : o->n_reads;
    const mlc_region *rs = p->reverse ? o->writes : o->reads;
    for (int i = 0; i < nr; i++) {
      if (rs[i].buf != buf) continue;
      mlc_region x = region_at(a, &rs[i], r, nl, loops, max_ext);
      for (int d = 0; d < buf->ndim; d++)
        if (uses_loop_var(x.ranges[d].min, nl, loops) || uses_loop_var(x.ranges[d].extent, nl, loops) ||
            !need_add_fixing_unit_loops(a, p, &req[d], &x.ranges[d], max_ext[d]))
          return mlc_error_set(err, "%s: %s: cannot bound what block \"%s\" needs of %s in "
                                    "dimension %d",
                               p->prim, p->who, o->name, buf->name, d);
    }
  }
  return true;
}

/* ---- solving a quasi-affine index for the iter domains ---------------------------------- */

/* Solving index e of the block (in its iter vars) for the instances whose
 * e lies in [lo, hi]: TVM's block var domain inference over quasi-affine
 * maps (DetectIterMap's sums of splits of iter vars, with floordiv and
 * floormod by constants), inverted with integer set arithmetic. */
typedef struct solver {
  mlc_sched *s;
  ca_plan *p;
  iter_dom *dom;
  const mlc_buffer *buf;
  int dim;
  mlc_simplifier *sp_iter; /* the block's iter domains */
  mlc_error *err;
} solver;

static mlc_expr *ci(mlc_arena *a, mlc_dtype t, int64_t v) { return mlc_int_t(a, t, v); }

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* fdiv, fmod_ and plus take their operands simplified, so by 1 and by 0
 * they are the operand itself: a plain iter var's index (most) then
 * solves without simplifier calls. */
static mlc_expr *fdiv(mlc_arena *a, mlc_expr *x, int64_t c) {
  if (c == 1) return x;
  return mlc_simplify_expr(a, mlc_binary(a, MLC_EXPR_FLOORDIV, x, ci(a, x->dtype, c)));
}

static mlc_expr *fmod_(mlc_arena *a, mlc_expr *x, int64_t c) {
  return mlc_simplify_expr(a, mlc_binary(a, MLC_EXPR_FLOORMOD, x, ci(a, x->dtype, c)));
}

static mlc_expr *plus(mlc_arena *a, mlc_expr *x, int64_t c) {
  if (c == 0) return x;
  return mlc_simplify_expr(a, mlc_add(a, x, ci(a, x->dtype, c)));
}

static bool not_quasi_affine(solver *v, mlc_expr *e) {
  mlc_str o = {.arena = v->s->arena}; /* under replay's escape point */
  mlc_print_expr(&o, e);
  mlc_error_set(v->err,
                "%s: %s: the block's index into %s in dimension %d (%s) is not a quasi-affine map "
                "of its iter vars (sums of iter vars times constants, floordiv and floormod by "
                "constants) that can be inverted",
                v->p->prim, v->p->who, v->buf->name, v->dim, mlc_str_cstr(&o));
  mlc_str_free(&o);
  return false;
}

/* Iter k takes [lo, hi] (at most ext values). */
static bool dom_add(solver *v, int k, mlc_expr *lo, mlc_expr *hi, int64_t ext) {
  if (hull_add(v->s->arena, &v->dom[k], lo, hi, ext)) return true;
  return mlc_error_set(v->err, "%s: %s: iter %s would need two unrelated ranges", v->p->prim,
                       v->p->who, v->p->blk->iters[k].var->name);
}

/* x with m * x + k in [lo, hi] (m != 0): at most floordiv(ext - 1, |m|) + 1
 * values. */
static void solve_scaled(mlc_arena *a, int64_t m, int64_t k, mlc_expr *lo, mlc_expr *hi,
                         int64_t ext, mlc_expr **xlo, mlc_expr **xhi, int64_t *xext) {
  int64_t am = m < 0 ? -m : m;
  mlc_expr *l = plus(a, lo, -k), *h = plus(a, hi, -k);
  if (m < 0) {
    mlc_expr *t = mlc_simplify_expr(a, mlc_sub(a, ci(a, lo->dtype, 0), h));
    h = mlc_simplify_expr(a, mlc_sub(a, ci(a, lo->dtype, 0), l));
    l = t;
  }
  *xlo = fdiv(a, plus(a, l, am - 1), am); /* ceildiv */
  *xhi = fdiv(a, h, am);
  int64_t d;
  *xext = mlc_expr_const_diff(a, *xhi, *xlo, &d) ? d + 1 : (ext - 1) / am + 1;
}

/* The values floordiv(x, c) takes for x in [lo, hi] (at most ext). */
static void div_set(mlc_arena *a, mlc_expr *lo, mlc_expr *hi, int64_t ext, int64_t c,
                    mlc_expr **qlo, mlc_expr **qhi, int64_t *qext) {
  int64_t d;
  *qlo = fdiv(a, lo, c);
  *qhi = fdiv(a, hi, c);
  if (mlc_expr_const_diff(a, *qhi, *qlo, &d)) *qext = d + 1;
  else *qext = (ext - 2 >= 0 ? (ext - 2) / c : -1) + 2;
}

static bool solve_index(solver *v, mlc_expr *e, mlc_expr *lo, mlc_expr *hi, int64_t ext);

/* The index is a fused iterator of the iter vars (mlc_expr_fused_map):
 * each iter is floormod(floordiv(F, stride), ext) of the fused value F,
 * and its set follows from F's. */
static bool solve_linear(solver *v, const mlc_fused_map *fm, mlc_expr *lo, mlc_expr *hi,
                         int64_t ext) {
  mlc_arena *a = v->s->arena;
  if (fm->m == 0) return true;
  /* e = sign * g * F + c0. */
  mlc_expr *flo, *fhi;
  int64_t fext;
  solve_scaled(a, fm->sign * fm->g, fm->c0, lo, hi, ext, &flo, &fhi, &fext);
  for (int i = 0; i < fm->m; i++) {
    int64_t st = abs64(fm->coeff[i]) / fm->g, qext, d;
    mlc_expr *qlo, *qhi;
    div_set(a, flo, fhi, fext, st, &qlo, &qhi, &qext);
    if (i + 1 < fm->m) { /* floormod by the iter's extent */
      bool one_period =
          mlc_expr_const_diff(a, fdiv(a, qhi, fm->exts[i]), fdiv(a, qlo, fm->exts[i]), &d) && d == 0;
      if (!one_period || qext >= fm->exts[i]) {
        qlo = ci(a, lo->dtype, 0);
        qhi = ci(a, lo->dtype, fm->exts[i] - 1);
        qext = fm->exts[i];
      } else {
        qlo = fmod_(a, qlo, fm->exts[i]);
        qhi = fmod_(a, qhi, fm->exts[i]);
      }
    }
    if (!dom_add(v, fm->order[i], plus(a, qlo, fm->mins[i]), plus(a, qhi, fm->mins[i]), qext))
      return false;
  }
  return true;
}

static bool solve_index(solver *v, mlc_expr *e, mlc_expr *lo, mlc_expr *hi, int64_t ext) {
  mlc_arena *a = v->s->arena;
  const mlc_block *b = v->p->blk;
  int64_t c;
  e = mlc_simplify(v->sp_iter, e);
  if (mlc_expr_is_const_int(e, &c)) return true;
  if ((e->kind == MLC_EXPR_FLOORDIV || e->kind == MLC_EXPR_FLOORMOD) &&
      mlc_expr_is_const_int(e->bin.b, &c) && c > 0) {
    mlc_expr *x = e->bin.a;
    int64_t ec; /* ext * c, refused if it wraps */
    if (e->kind == MLC_EXPR_FLOORDIV) /* x in [c * lo, c * hi + c - 1] */
      return !mlc_mul_overflow(ext, c, &ec) &&
             solve_index(v, x, mlc_simplify_expr(a, mlc_mul(a, lo, ci(a, lo->dtype, c))),
                         plus(a, mlc_mul(a, hi, ci(a, hi->dtype, c)), c - 1), ec);
    int64_t xl, xh, ql, qh;
    /* Within one period floormod is a shift; over a whole period every
     * instance is needed anyway. */
    if (mlc_simplifier_bounds(v->sp_iter, x, &xl, &xh) && (ql = xl / c - (xl % c < 0)) ==
                                                             (qh = xh / c - (xh % c < 0)))
      return solve_index(v, x, plus(a, lo, ql * c), plus(a, hi, ql * c), ext);
    int64_t l, h;
    if (mlc_expr_is_const_int(lo, &l) && mlc_expr_is_const_int(hi, &h) && l <= 0 && h >= c - 1)
      return true;
    return not_quasi_affine(v, e);
  }
  mlc_fused_map *fm = MLC_NEW(a, mlc_fused_map);
  if (!mlc_expr_fused_map(a, e, b->n_iters, b->iters, fm)) return not_quasi_affine(v, e);
  return solve_linear(v, fm, lo, hi, ext);
}

/* Narrow the iter domains so that what the block provides of buf (its
 * writes for compute_at, its reads for reverse) covers req. */
static bool solve_buffer(mlc_sched *s, ca_plan *p, const mlc_region *prov, const need *req,
                         iter_dom *dom, mlc_error *err) {
  mlc_arena *a = s->arena;
  const mlc_block *b = p->blk;
  solver v = {s, p, dom, prov->buf, 0, mlc_simplifier_new(a), err};
  for (int k = 0; k < b->n_iters; k++) {
    int64_t mn, ext;
    if (mlc_expr_is_const_int(b->iters[k].dom.min, &mn) && mlc_expr_is_const_int(b->iters[k].dom.extent, &ext))
      mlc_simplifier_bind(v.sp_iter, b->iters[k].var, mn, ext);
  }
  for (int d = 0; d < prov->buf->ndim; d++) {
    if (!req[d].any) continue;
    int64_t ext;
    if (!mlc_expr_is_const_int(prov->ranges[d].extent, &ext) || ext != 1)
      return mlc_error_set(err,
                           "%s: %s: the block %s a range of %s in dimension %d, not one element "
                           "per instance; its instances cannot be matched to the loop's",
                           p->prim, p->who, p->reverse ? "reads" : "writes", prov->buf->name, d);
    v.dim = d;
    if (!solve_index(&v, prov->ranges[d].min, req[d].lo, req[d].hi, req[d].ext)) return false;
  }
  return true;
}

static bool plan_domains(mlc_sched *s, ca_plan *p, iter_dom *dom, mlc_error *err) {
  const mlc_block *b = p->blk;
  int n = p->reverse ? b->n_reads : b->n_writes;
  const mlc_region *prov = p->reverse ? b->reads : b->writes;
  for (int i = 0; i < n; i++) {
    need *req = MLC_NEW_ARRAY(s->arena, need, prov[i].buf->ndim + 1);
    memset(req, 0, sizeof(need) * (size_t)(prov[i].buf->ndim + 1));
    if (!required_of(s, p, prov[i].buf, req, err) || !solve_buffer(s, p, &prov[i], req, dom, err))
      return false;
  }
  return true;
}

/* New loops ax0, ax1, ... for the iter domains (unit ones dropped unless
 * preserved) and the realize binding min + ax, guarded where the domain
 * may leave the iter's range. */
static void build_subtree(mlc_sched *s, ca_plan *p, iter_dom *dom, bool preserve_unit_loops) {
  mlc_arena *a = s->arena;
  mlc_block *b = p->blk;
  mlc_simplifier *sp = simp_of(a, p->lpath, p->lpath_n);
  mlc_expr **vals = MLC_NEW_ARRAY(a, mlc_expr *, b->n_iters + 1);
  mlc_expr *pred = NULL;
  p->new_loops = MLC_NEW_ARRAY(a, mlc_stmt *, b->n_iters + 1);
  p->n_new_loops = 0;
  for (int i = 0; i < b->n_iters; i++) {
    mlc_iter_var *it = &b->iters[i];
    int64_t dmin = 0, dext = 0;
    bool cdom = mlc_expr_is_const_int(it->dom.min, &dmin) && mlc_expr_is_const_int(it->dom.extent, &dext);
    mlc_dtype t = it->var->dtype;
    /* A domain of symbolic extent (a function's size, from 0): iterated
     * whole over that extent, or in part under a predicate below it. */
    bool sdom = !cdom && mlc_expr_is_const_int(it->dom.min, &dmin) && dmin == 0;
    bool full = !dom[i].any || (cdom && dom[i].ext >= dext);
    mlc_expr *mn = full ? it->dom.min : mlc_simplify(sp, dom[i].lo);
    int64_t ext = full ? dext : dom[i].ext;
    if (full && !cdom) ext = 1; /* a symbolic extent: the loop runs over it below */
    mlc_expr *v = mn;
    if (ext != 1 || preserve_unit_loops || (full && sdom)) {
      mlc_var *lv = mlc_var_new(a, mlc_arena_numbered(a, "ax", p->n_new_loops), t);
      mlc_expr *lext = full && sdom ? it->dom.extent : mlc_int_t(a, t, ext);
      mlc_stmt *l = mlc_for_new(a, lv, mlc_int_t(a, t, 0), lext, MLC_FOR_SERIAL, NULL);
      if (!(full && sdom)) mlc_simplifier_bind(sp, lv, 0, ext);
      p->new_loops[p->n_new_loops++] = l;
      v = mlc_simplify(sp, mlc_add(a, mn, mlc_ref(a, lv)));
    }
    vals[i] = v;
    if (!full && sdom) {
      mlc_expr *c = mlc_binary(a, MLC_EXPR_LT, v, it->dom.extent);
      pred = pred ? mlc_binary(a, MLC_EXPR_AND, pred, c) : c;
      if (!prove_ge0(sp, mn)) {
        mlc_expr *g = mlc_binary(a, MLC_EXPR_GE, v, mlc_int_t(a, t, 0));
        pred = mlc_binary(a, MLC_EXPR_AND, pred, g);
      }
    }
    if (full || !cdom) continue;
    /* A set whose size varies with the loops above (floordiv bounds) is
     * iterated at its largest size; a predicate cuts the rest. */
    if (!prove_ge0(sp, mlc_sub(a, dom[i].hi, mlc_add(a, mn, mlc_int_t(a, t, ext - 1))))) {
      mlc_expr *c = mlc_binary(a, MLC_EXPR_LE, v, dom[i].hi);
      pred = pred ? mlc_binary(a, MLC_EXPR_AND, pred, c) : c;
    }
    /* The domain may leave [dmin, dmin + dext): a predicate keeps it in. */
    if (!prove_ge0(sp, mlc_sub(a, mn, mlc_int_t(a, t, dmin)))) {
      mlc_expr *c = mlc_binary(a, MLC_EXPR_GE, v, mlc_int_t(a, t, dmin));
      pred = pred ? mlc_binary(a, MLC_EXPR_AND, pred, c) : c;
    }
    if (!prove_ge0(sp, mlc_sub(a, mlc_int_t(a, t, dmin + dext - ext), mn))) {
      mlc_expr *c = mlc_binary(a, MLC_EXPR_LT, v, mlc_int_t(a, t, dmin + dext));
      pred = pred ? mlc_binary(a, MLC_EXPR_AND, pred, c) : c;
    }
  }
  p->new_realize = mlc_realize_new(a, b, vals, pred);
  mlc_stmt *st = p->new_realize;
  for (int i = p->n_new_loops - 1; i >= 0; i--) {
    p->new_loops[i]->loop.body = st;
    st = p->new_loops[i];
  }
  p->subtree = st;
}

/* ---- dependences ----------------------------------------------------------------------------- */

/* A block under the loop that feeds the moved one must finish each element
 * within one iteration: none of its reduce iters may follow the loop or
 * the loops above it. */
static const char *spread_reduce(ca_plan *p, const mlc_stmt *r) {
  const mlc_block *o = r->realize.block;
  for (int i = 0; i < o->n_iters; i++) {
    if (o->iters[i].kind != MLC_ITER_REDUCE) continue;
    for (int k = 0; k < p->lpath_n; k++)
      if (p->lpath[k]->kind == MLC_STMT_FOR && mlc_expr_uses_var(r->realize.values[i], p->lpath[k]->loop.var))
        return o->iters[i].var->name;
  }
  return NULL;
}

/* What realize r (under the loop) touches of buf in one iteration. */
static bool touched_at(mlc_sched *s, ca_plan *p, mlc_stmt *r, bool write, const mlc_buffer *buf,
                       bool is_new, mlc_region *out, int64_t *max_ext) {
  mlc_stmt *loops[SCHED_MAX_DEPTH];
  int nl = is_new ? p->n_new_loops : loops_below(s, p->loop, r, loops);
  mlc_stmt *const *lp = is_new ? p->new_loops : loops;
  const mlc_block *o = r->realize.block;
  int n = write ? o->n_writes : o->n_reads;
  const mlc_region *rs = write ? o->writes : o->reads;
  bool found = false;
  for (int i = 0; i < n; i++) {
    if (rs[i].buf != buf) continue;
    if (found) return false; /* two regions: keep it simple, refuse */
    *out = region_at(s->arena, &rs[i], r, nl, lp, max_ext);
    found = true;
  }
  return found;
}

static bool check_under_loop(mlc_sched *s, ca_plan *p, int self, int k, mlc_simplifier *sp,
                             mlc_error *err) {
  mlc_stmt *r = p->blocks.v.data[k];
  const mlc_block *o = r->realize.block, *b = p->blk;
  int at = subtree_of(s, p, r);
  const mlc_buffer *buf;
  if ((buf = both_write(o, b)))
    return mlc_error_set(err, "%s: %s: block \"%s\" under the loop also writes %s", p->prim, p->who,
                         o->name, buf->name);
  if ((buf = flows(o, b))) { /* o feeds b */
    mlc_region w, x;
    const char *red = spread_reduce(p, r);
    if (k > self || at >= p->insert_pos)
      return mlc_error_set(err, "%s: %s: block \"%s\" writes %s, which the block reads, and would "
                                "run after it",
                           p->prim, p->who, o->name, buf->name);
    if (red)
      return mlc_error_set(err, "%s: %s: block \"%s\" that the block reads from is not finished "
                                "within one iteration (its reduce iter %s follows this loop or an "
                                "outer one)",
                           p->prim, p->who, o->name, red);
    int64_t *xm = MLC_NEW_ARRAY(s->arena, int64_t, buf->ndim + 1);
    if (!touched_at(s, p, r, true, buf, false, &w, NULL) ||
        !touched_at(s, p, p->new_realize, false, buf, true, &x, xm) ||
        !region_within(s->arena, sp, &x, xm, &w))
      return mlc_error_set(err, "%s: %s: in one iteration of the loop the block would read parts "
                                "of %s that block \"%s\" has not written yet",
                           p->prim, p->who, buf->name, o->name);
  }
  if ((buf = flows(b, o))) { /* b feeds o */
    mlc_region w, x;
    if (k < self || at < p->insert_pos)
      return mlc_error_set(err, "%s: %s: block \"%s\" reads %s, which the block writes, and would "
                                "run before it",
                           p->prim, p->who, o->name, buf->name);
    int64_t *xm = MLC_NEW_ARRAY(s->arena, int64_t, buf->ndim + 1);
    if (!touched_at(s, p, p->new_realize, true, buf, true, &w, NULL) ||
        !touched_at(s, p, r, false, buf, false, &x, xm) || !region_within(s->arena, sp, &x, xm, &w))
      return mlc_error_set(err, "%s: %s: in one iteration of the loop block \"%s\" would read "
                                "parts of %s that the block does not write there",
                           p->prim, p->who, o->name, buf->name);
  }
  return true;
}

/* Blocks the move passes over (outside the loop, between the block's old
 * and new places) must not touch what it reads and writes in a
 * conflicting way; blocks under the loop must keep every dependence
 * satisfied in each iteration. */
static bool plan_dependences(mlc_sched *s, ca_plan *p, mlc_error *err) {
  int self = sched_stmts_index(&p->blocks, p->realize);
  int first = -1, last = -1;
  for (int k = 0; k < p->blocks.v.len; k++)
    if (p->blocks.v.data[k] != p->realize && subtree_of(s, p, p->blocks.v.data[k]) >= 0) {
      if (first < 0) first = k;
      last = k;
    }
  if (first < 0)
    return mlc_error_set(err, "%s: %s: the loop holds no block", p->prim, p->who);
  int lo = self < first ? self + 1 : last + 1, hi = self < first ? first : self;
  mlc_simplifier *sp = simp_of(s->arena, p->lpath, p->lpath_n);
  for (int i = 0; i < p->n_new_loops; i++) {
    int64_t ext;
    mlc_expr_is_const_int(p->new_loops[i]->loop.extent, &ext);
    mlc_simplifier_bind(sp, p->new_loops[i]->loop.var, 0, ext);
  }
  const mlc_block *b = p->blk;
  for (int k = 0; k < p->blocks.v.len; k++) {
    if (k == self) continue;
    const mlc_block *o = p->blocks.v.data[k]->realize.block;
    if (k >= first && k <= last) {
      if (!check_under_loop(s, p, self, k, sp, err)) return false;
      continue;
    }
    if (k < lo || k >= hi) continue;
    const mlc_buffer *buf = both_write(o, b);
    if (!buf) buf = flows(o, b);
    if (!buf) buf = flows(b, o);
    if (buf)
      return mlc_error_set(err, "%s: %s: the block would move past block \"%s\", which also "
                                "accesses %s",
                           p->prim, p->who, o->name, buf->name);
  }
  return true;
}

/* ---- a reverse-computed reduction split across the loop ----
 *
 * The region the loop's iterations need may give each of them only part of
 * a reduce iter's domain (TVM's reverse_compute_at of the final sum of an
 * rfactor into the loop over the partial sums): vk = i_o * 4 + k. The
 * block then runs each output's reduction in pieces over successive
 * iterations, which computes the same sum when
 *  - the loops that split it (at or above the target) are serial, unrolled
 *    or thread-bound: parallel or vectorized iterations would race on the
 *    output (a thread-bound one is the GPU backend's to check: it refuses
 *    or rewrites a store the threads do not tell apart);
 *  - they feed no spatial iter, so one output's pieces follow each other;
 *  - with the new loops they step through the domain exactly once, from its
 *    minimum up, with no predicate: the init, which runs where every reduce
 *    iter is at its minimum, comes first and each value is added once;
 *  - no other block under those loops reads or writes the output between
 *    the pieces. */

static bool serial_order(mlc_for_kind k) {
  switch (k) {
  case MLC_FOR_SERIAL:
  case MLC_FOR_UNROLLED:
  case MLC_FOR_THREAD_BINDING: return true;
  case MLC_FOR_PARALLEL:
  case MLC_FOR_VECTORIZED: return false;
  }
  mlc_unreachable();
}

typedef struct red_step {
  int64_t stride, count;
} red_step;

/* The stride of v along loop l (v at l + 1 minus v); false unless constant. */
static bool stride_along(mlc_arena *a, mlc_expr *v, const mlc_stmt *l, int64_t *stride) {
  mlc_var *lv = l->loop.var;
  mlc_expr *next = mlc_add(a, mlc_ref(a, lv), mlc_int_t(a, lv->dtype, 1));
  return mlc_expr_const_diff(a, mlc_expr_subst(a, v, 1, &lv, &next), v, stride);
}

/* Whether the steps, sorted by stride, count 0 .. total - 1 once each. */
static bool steps_partition(red_step *st, int n, int64_t total) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && st[j].stride < st[j - 1].stride; j--) {
      red_step t = st[j];
      st[j] = st[j - 1], st[j - 1] = t;
    }
  int64_t reach = 1;
  for (int i = 0; i < n; i++) {
    if (st[i].stride != reach) return false;
    reach *= st[i].count;
  }
  return reach == total;
}

/* v with every loop in ls at its start. */
static mlc_expr *at_loop_starts(mlc_arena *a, mlc_expr *v, mlc_stmt *const *ls, int n) {
  for (int i = 0; i < n; i++) {
    mlc_var *lv = ls[i]->loop.var;
    v = mlc_expr_subst(a, v, 1, &lv, &ls[i]->loop.min);
  }
  return mlc_simplify_expr(a, v);
}

static bool split_loop_ok(mlc_sched *s, ca_plan *p, const mlc_iter_var *it, mlc_stmt *l,
                          mlc_error *err) {
  const mlc_block *b = p->blk;
  if (!serial_order(l->loop.kind))
    return mlc_error_set(err, "%s: %s: reduce iter %s would be split across iterations of loop %s, "
                              "which are not run in order",
                         p->prim, p->who, it->var->name, l->loop.var->name);
  for (int i = 0; i < b->n_iters; i++)
    if (b->iters[i].kind == MLC_ITER_SPATIAL &&
        mlc_expr_uses_var(p->new_realize->realize.values[i], l->loop.var))
      return mlc_error_set(err, "%s: %s: reduce iter %s would be split across iterations of loop "
                                "%s, which also moves spatial iter %s",
                           p->prim, p->who, it->var->name, l->loop.var->name, b->iters[i].var->name);
  for (int k = 0; k < p->blocks.v.len; k++) {
    mlc_stmt *path[SCHED_MAX_DEPTH];
    const mlc_block *o = p->blocks.v.data[k]->realize.block;
    const mlc_buffer *buf = o == b ? NULL : both_write(o, b);
    if (!buf && o != b) buf = flows(b, o);
    if (!buf) continue;
    int n = sched_path_to(s, p->blocks.v.data[k], path);
    for (int j = 0; j < n; j++)
      if (path[j] == l)
        return mlc_error_set(err, "%s: %s: reduce iter %s would be split across iterations of "
                                  "loop %s, where block \"%s\" accesses %s before the sum is done",
                             p->prim, p->who, it->var->name, l->loop.var->name, o->name, buf->name);
  }
  return true;
}

/* Checks one reduce iter of the block as build_subtree bound it (see
 * above); one that no loop at or above the target moves is whole. */
static bool reduce_split_ok(mlc_sched *s, ca_plan *p, int i, mlc_error *err) {
  mlc_arena *a = s->arena;
  const mlc_iter_var *it = &p->blk->iters[i];
  mlc_expr *v = p->new_realize->realize.values[i];
  mlc_stmt **ls = MLC_NEW_ARRAY(a, mlc_stmt *, p->lpath_n + p->n_new_loops + 1);
  red_step *st = MLC_NEW_ARRAY(a, red_step, p->lpath_n + p->n_new_loops + 1);
  int n = 0, n_split = 0;
  for (int k = 0; k < p->lpath_n + p->n_new_loops; k++) {
    mlc_stmt *l = k < p->lpath_n ? p->lpath[k] : p->new_loops[k - p->lpath_n];
    if (l->kind != MLC_STMT_FOR || !mlc_expr_uses_var(v, l->loop.var)) continue;
    if (k < p->lpath_n && !split_loop_ok(s, p, it, l, err)) return false;
    n_split += k < p->lpath_n;
    int64_t stride, count;
    if (!stride_along(a, v, l, &stride) || stride <= 0 ||
        !mlc_expr_is_const_int(l->loop.extent, &count))
      return mlc_error_set(err, "%s: %s: reduce iter %s would be split across iterations of the "
                                "loop, and %s does not step it up by a constant",
                           p->prim, p->who, it->var->name, l->loop.var->name);
    ls[n] = l;
    st[n++] = (red_step){stride, count};
  }
  int64_t dmin, dext, first;
  if (n_split == 0) return true;
  if (p->new_realize->realize.predicate || !mlc_expr_is_const_int(it->dom.min, &dmin) ||
      !mlc_expr_is_const_int(it->dom.extent, &dext) || !steps_partition(st, n, dext) ||
      !mlc_expr_is_const_int(at_loop_starts(a, v, ls, n), &first) || first != dmin)
    return mlc_error_set(err, "%s: %s: reduce iter %s would be split across iterations of the "
                              "loop, and its pieces would not cover its domain once each from "
                              "the start",
                         p->prim, p->who, it->var->name);
  return true;
}

static bool plan_reduce_split(mlc_sched *s, ca_plan *p, mlc_error *err) {
  for (int i = 0; i < p->blk->n_iters; i++)
    if (p->blk->iters[i].kind == MLC_ITER_REDUCE && !reduce_split_ok(s, p, i, err)) return false;
  return true;
}

static bool plan(mlc_sched *s, ca_plan *p, mlc_rv block, mlc_rv loop, bool preserve_unit_loops,
                 int index, mlc_error *err) {
  char d1[96], d2[96];
  if (!sched_check_block(s, p->prim, block, err) || !sched_check_loop(s, p->prim, loop, err))
    return false;
  p->blk = s->rvs.data[block].block;
  p->loop = s->rvs.data[loop].loop;
  p->realize = sched_find_realize(s, p->blk);
  snprintf(p->who, sizeof p->who, "%s at %s", sched_rv_desc(s, block, d1), sched_rv_desc(s, loop, d2));
  if (!plan_where(s, p, err) || !plan_block_kind(s, p, err) ||
      !plan_insertion(s, p, index, err))
    return false;
  iter_dom *dom = MLC_NEW_ARRAY(s->arena, iter_dom, p->blk->n_iters + 1);
  memset(dom, 0, sizeof(iter_dom) * (size_t)(p->blk->n_iters + 1));
  if (!plan_domains(s, p, dom, err)) return false;
  if (!sched_removal_plan(s, p->realize, p->prim, &p->rm, err)) return false;
  build_subtree(s, p, dom, preserve_unit_loops);
  return (!p->reverse || plan_reduce_split(s, p, err)) && plan_dependences(s, p, err);
}

static void apply(mlc_sched *s, ca_plan *p) {
  sched_removal_apply(s, &p->rm);
  mlc_stmt **sub = MLC_NEW_ARRAY(s->arena, mlc_stmt *, p->n_sub + 1);
  for (int i = 0, j = 0; i <= p->n_sub; i++)
    sub[i] = i == p->insert_pos ? p->subtree : p->sub[j++];
  p->loop->loop.body = mlc_seq_new(s->arena, p->n_sub + 1, sub);
  sched_simplify_bindings(s, p->subtree);
}

/* 0 for an ordinary loop handle, -1 / -2 for the root / inline marks
 * that sample_compute_location returns. */
static int loop_mark(const mlc_sched *s, mlc_rv rv) {
  if (rv < 0 || rv >= s->rvs.len || s->rvs.data[rv].kind != MLC_RV_LOOP) return 0;
  return (int)s->rvs.data[rv].value;
}

static void record(mlc_sched *s, mlc_inst_kind k, mlc_rv block, mlc_rv loop,
                   bool preserve_unit_loops, int index) {
  mlc_operand in[2] = {MLC_OP_RV(block), MLC_OP_RV(loop)};
  mlc_attr at[2] = {sched_attr_bool("preserve_unit_loops", preserve_unit_loops),
                    sched_attr_int("index", index)};
  sched_record(s, k, 2, in, 2, at, 0, NULL);
}

/* The plan sample_compute_location made for exactly this call (the one
 * can_compute_at makes), or NULL. */
static ca_plan *located_plan(mlc_sched *s, bool reverse, mlc_rv block, mlc_rv loop,
                             bool preserve_unit_loops, int index) {
  ca_plan *p = s->located;
  if (!p || reverse || !preserve_unit_loops || index != -1 || block < 0 || block >= s->rvs.len ||
      loop < 0 || loop >= s->rvs.len)
    return NULL;
  /* planned on this very tree: the same nodes are alive */
  const rv_entry *b = &s->rvs.data[block], *l = &s->rvs.data[loop];
  return b->kind == MLC_RV_BLOCK && b->block == p->blk && l->kind == MLC_RV_LOOP && l->loop == p->loop
             ? p
             : NULL;
}

static bool compute_at_impl(mlc_sched *s, bool reverse, mlc_rv block, mlc_rv loop,
                            bool preserve_unit_loops, int index, mlc_error *err) {
  const char *prim = reverse ? "reverse_compute_at" : "compute_at";
  mlc_inst_kind kind = reverse ? MLC_INST_REVERSE_COMPUTE_AT : MLC_INST_COMPUTE_AT;
  int mark = loop_mark(s, loop);
  if (mark == -1 || mark == -2) {
    /* As TVM: at the root mark nothing moves; at the inline mark the
     * block is inlined. */
    if (!sched_check_block(s, prim, block, err)) return false;
    if (mark == -2 && !(reverse ? sched_reverse_compute_inline(s, block, prim, err)
                                : sched_compute_inline(s, block, prim, err)))
      return false;
    record(s, kind, block, loop, preserve_unit_loops, index);
    return true;
  }
  ca_plan *p = located_plan(s, reverse, block, loop, preserve_unit_loops, index);
  if (!p) {
    p = plan_new(s);
    p->prim = prim;
    p->reverse = reverse;
    if (!plan(s, p, block, loop, preserve_unit_loops, index, err)) return false;
  }
  apply(s, p);
  record(s, kind, block, loop, preserve_unit_loops, index);
  return true;
}

bool mlc_sched_compute_at(mlc_sched *s, mlc_rv block, mlc_rv loop, bool preserve_unit_loops,
                          int index, mlc_error *err) {
  return compute_at_impl(s, false, block, loop, preserve_unit_loops, index, err);
}

bool mlc_sched_reverse_compute_at(mlc_sched *s, mlc_rv block, mlc_rv loop,
                                  bool preserve_unit_loops, int index, mlc_error *err) {
  return compute_at_impl(s, true, block, loop, preserve_unit_loops, index, err);
}

/* ---- sample_compute_location --------------------------------------------------------------- */

typedef enum loop_type { LOOP_SPATIAL, LOOP_REDUCE, LOOP_OPAQUE } loop_type;

typedef struct iter_type_ctx {
  const mlc_var *var;
  int n_spatial, n_reduce;
} iter_type_ctx;

static void count_iter_uses(mlc_stmt *r, void *ctx_) {
  iter_type_ctx *c = ctx_;
  const mlc_block *b = r->realize.block;
  for (int i = 0; i < b->n_iters; i++)
    if (mlc_expr_uses_var(r->realize.values[i], c->var)) {
      if (b->iters[i].kind == MLC_ITER_SPATIAL) c->n_spatial++;
      else c->n_reduce++;
    }
}

/* TVM's GetLoopIterType: what the block iters bound to the loop are. */
static loop_type loop_iter_type(const mlc_stmt *l) {
  iter_type_ctx c = {l->loop.var, 0, 0};
  sched_each_realize(l->loop.body, count_iter_uses, &c);
  if (c.n_spatial && c.n_reduce) return LOOP_OPAQUE;
  return c.n_reduce ? LOOP_REDUCE : LOOP_SPATIAL;
}

/* compute_at(block, loop, preserve_unit_loops=true)'s plan if it would
 * succeed, else NULL. */
static ca_plan *can_compute_at(mlc_sched *s, mlc_rv block, mlc_stmt *loop) {
  mlc_error e = {{0}};
  ca_plan *p = plan_new(s);
  p->prim = "compute_at";
  /* A temporary handle would change the state; plan on the nodes. */
  p->blk = s->rvs.data[block].block;
  p->loop = loop;
  p->realize = sched_find_realize(s, p->blk);
  snprintf(p->who, sizeof p->who, "block %s", p->blk->name);
  if (!plan_where(s, p, &e) || !plan_block_kind(s, p, &e) || !plan_insertion(s, p, -1, &e))
    return NULL;
  iter_dom *dom = MLC_NEW_ARRAY(s->arena, iter_dom, p->blk->n_iters + 1);
  memset(dom, 0, sizeof(iter_dom) * (size_t)(p->blk->n_iters + 1));
  if (!plan_domains(s, p, dom, &e) || !sched_removal_plan(s, p->realize, p->prim, &p->rm, &e))
    return NULL;
  build_subtree(s, p, dom, true);
  return plan_dependences(s, p, &e) ? p : NULL;
}

/* TVM's CollectComputeLocation without the compute_at check: the loops of
 * the first consumer a location may be (cl, with their indices among its
 * loops in idx); how many. */
static int candidate_loops(mlc_sched *s, mlc_block *b, int64_t *idx, mlc_stmt **cl) {
  mlc_stmt *r = sched_find_realize(s, b), *path[SCHED_MAX_DEPTH], *cp[SCHED_MAX_DEPTH];
  int pn = sched_path_to(s, r, path);
  mlc_stmt *scope_r = path[sched_scope_index(path, pn)];
  sched_stmts blocks = sched_scope_blocks(s, scope_r);
  int self = sched_stmts_index(&blocks, r), n_cons = 0, lca_n = 0;
  mlc_stmt *first = NULL;
  for (int k = self + 1; k < blocks.v.len; k++) {
    mlc_stmt *c = blocks.v.data[k];
    if (!flows(b, c->realize.block)) continue;
    int cn = sched_path_to(s, c, path);
    if (n_cons++ == 0) {
      first = c;
      memcpy(cp, path, sizeof(mlc_stmt *) * (size_t)(cn - 1));
      lca_n = cn - 1; /* ancestors only */
    } else {
      int m = 0;
      while (m < lca_n && m < cn && cp[m] == path[m]) m++;
      lca_n = m;
    }
  }
  if (!first) return 0;
  /* The deepest loop or block among the common ancestors. */
  while (lca_n > 0 && cp[lca_n - 1]->kind != MLC_STMT_FOR && cp[lca_n - 1]->kind != MLC_STMT_BLOCK_REALIZE)
    lca_n--;
  if (lca_n == 0 || cp[lca_n - 1]->kind != MLC_STMT_FOR) return 0;
  mlc_stmt *boundary = cp[lca_n - 1];
  mlc_stmt *loops[SCHED_MAX_DEPTH];
  int nl = loops_below(s, scope_r, first, loops);
  int lca_pos = 0;
  while (lca_pos < nl && loops[lca_pos] != boundary) lca_pos++;
  if (lca_pos == nl) return 0;
  int last_spatial = -1;
  loop_type types[SCHED_MAX_DEPTH];
  for (int i = 0; i <= lca_pos; i++) {
    types[i] = loop_iter_type(loops[i]);
    if (types[i] == LOOP_SPATIAL) last_spatial = i;
  }
  bool seen_reduce = false;
  int n = 0;
  for (int i = 0; i <= lca_pos; i++) {
    int64_t ext;
    if (mlc_expr_is_const_int(loops[i]->loop.extent, &ext) && ext == 1) continue;
    if (types[i] == LOOP_SPATIAL) {
      if (seen_reduce) break;
    } else {
      seen_reduce = true;
      if (i > last_spatial) break;
    }
    idx[n] = i, cl[n++] = loops[i];
  }
  return n;
}

/* A location drawn uniformly among those compute_at accepts: inline (-2)
 * where the block can be inlined, the root (-1), the candidate loops.
 * Drawn first and checked after (a rejected loop leaves the draw), which
 * gives the same distribution as checking every candidate first, at one
 * compute_at plan a draw instead of one a candidate (those plans were
 * most of a fresh sample's time). */
static int64_t draw_location(mlc_sched *s, mlc_rv block, mlc_stmt **loop, ca_plan **plan) {
  mlc_block *b = s->rvs.data[block].block;
  int64_t idx[SCHED_MAX_DEPTH + 2];
  mlc_stmt *cl[SCHED_MAX_DEPTH + 2];
  int n = 0;
  if (sched_can_compute_inline(s, b)) idx[n] = -2, cl[n++] = NULL;
  idx[n] = -1, cl[n++] = NULL;
  n += candidate_loops(s, b, idx + n, cl + n);
  for (;;) {
    int k = (int)mlc_pcg32_bounded(&s->rng, (uint32_t)n);
    *loop = cl[k];
    *plan = cl[k] ? can_compute_at(s, block, cl[k]) : NULL;
    if (!cl[k] || *plan) return idx[k];
    idx[k] = idx[n - 1], cl[k] = cl[n - 1], n--; /* the root stays: n >= 1 */
  }
}

/* A kept decision (TVM keeps one that is still a candidate, else takes the
 * nearest candidate before it, the root at worst): only the candidates
 * that decide it are checked, from the decision outwards. */
static int64_t kept_location(mlc_sched *s, mlc_rv block, int64_t want, mlc_stmt **loop,
                             ca_plan **plan) {
  mlc_block *b = s->rvs.data[block].block;
  *loop = NULL, *plan = NULL;
  if (want == -2 && sched_can_compute_inline(s, b)) return -2;
  if (want < 0) return -1;
  int64_t idx[SCHED_MAX_DEPTH];
  mlc_stmt *cl[SCHED_MAX_DEPTH];
  for (int k = candidate_loops(s, b, idx, cl) - 1; k >= 0; k--)
    if (idx[k] <= want && (*plan = can_compute_at(s, block, cl[k])) != NULL) {
      *loop = cl[k];
      return idx[k];
    }
  return -1;
}

static mlc_stmt *mark_loop(mlc_sched *s, const char *name) {
  mlc_stmt *l = MLC_NEW(s->arena, mlc_stmt);
  memset(l, 0, sizeof *l);
  l->kind = MLC_STMT_FOR;
  l->loop.var = mlc_var_new(s->arena, name, MLC_INT32);
  return l;
}

bool sched_sample_compute_location(mlc_sched *s, mlc_rv block, const mlc_decision *want,
                                   bool *resampled, mlc_rv *out, mlc_error *err) {
  if (resampled) *resampled = false;
  if (!sched_check_block(s, "sample_compute_location", block, err)) return false;
  /* The root block has no enclosing scope, hence no location to choose. */
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int pn = sched_path_to(s, sched_find_realize(s, s->rvs.data[block].block), path);
  if (sched_scope_index(path, pn) < 0) {
    char d[96];
    return mlc_error_set(err, "sample_compute_location: %s is the root block: it has no compute location",
                         sched_rv_desc(s, block, d));
  }
  mlc_stmt *loop;
  ca_plan *plan;
  bool keep = want && want->n == 1;
  int64_t at = keep ? kept_location(s, block, want->v[0], &loop, &plan)
                    : draw_location(s, block, &loop, &plan);
  if (keep && at != want->v[0] && resampled) *resampled = true;
  if (at == -1) *out = sched_new_rv(s, MLC_RV_LOOP, NULL, mark_loop(s, "root"), -1);
  else if (at == -2) *out = sched_new_rv(s, MLC_RV_LOOP, NULL, mark_loop(s, "inline"), -2);
  else *out = sched_new_rv(s, MLC_RV_LOOP, NULL, loop, 0);
  mlc_operand in = MLC_OP_RV(block);
  mlc_inst *inst = sched_record(s, MLC_INST_SAMPLE_COMPUTE_LOCATION, 1, &in, 0, NULL, 1, out);
  inst->decision.n = 1;
  inst->decision.v[0] = at;
  s->located = plan;
  return true;
}

bool mlc_sched_sample_compute_location(mlc_sched *s, mlc_rv block, mlc_rv *out, mlc_error *err) {
  return sched_sample_compute_location(s, block, NULL, NULL, out, err);
}
