/* Reduction primitives: decompose_reduction and rfactor (TensorIR
 * semantics), plus tree helpers blockize.c shares. Every precondition is
 * checked before the IR is touched, so a refusal leaves the state as it was. */
#include "schedule/sched_impl.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

/* ---- shared helpers --------------------------------------------------------- */

int sched_scope_loops(const mlc_sched *s, mlc_stmt *realize, mlc_stmt **loops, mlc_stmt **scope) {
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, realize, path);
  int start = 0;
  for (int i = 0; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_BLOCK_REALIZE) start = i + 1;
  if (scope) *scope = start > 0 ? path[start - 1] : NULL;
  int k = 0;
  for (int i = start; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_FOR) loops[k++] = path[i];
  return k;
}

void sched_insert_before(mlc_sched *s, mlc_stmt *at, mlc_stmt *st) {
  mlc_stmt *path[SCHED_MAX_DEPTH];
  int n = sched_path_to(s, at, path);
  MLC_ASSERT(n >= 2);
  mlc_stmt *parent = path[n - 2];
  if (parent->kind != MLC_STMT_SEQ) {
    mlc_stmt **slot = sched_child_slot(parent, at);
    *slot = mlc_seq_new(s->arena, 2, (mlc_stmt *[]){st, at});
    return;
  }
  /* Grow the sequence in place: the SEQ node may sit in any slot. */
  int m = parent->seq.n;
  mlc_stmt **arr = MLC_NEW_ARRAY(s->arena, mlc_stmt *, m + 1);
  int k = 0;
  for (int i = 0; i < m; i++) {
    if (parent->seq.stmts[i] == at) arr[k++] = st;
    arr[k++] = parent->seq.stmts[i];
  }
  MLC_ASSERT(k == m + 1);
  parent->seq.stmts = arr;
  parent->seq.n = m + 1;
}

static bool names_block(const mlc_stmt *st, void *name) {
  return st->kind == MLC_STMT_BLOCK_REALIZE && strcmp(st->realize.block->name, name) == 0;
}

static bool name_used(const mlc_stmt *st, const char *name) {
  return mlc_stmt_any(st, names_block, (void *)name);
}

const char *sched_fresh_block_name(mlc_sched *s, const char *base) {
  if (!name_used(s->func->body, base)) return mlc_arena_strdup(s->arena, base);
  for (int i = 1;; i++) {
    const char *n = mlc_arena_suffixed(s->arena, base, i);
    if (!name_used(s->func->body, n)) return n;
  }
}

int sched_conjuncts(mlc_expr *e, mlc_expr **out, int max) {
  if (!e) return 0;
  if (e->kind == MLC_EXPR_AND) {
    int n = sched_conjuncts(e->bin.a, out, max);
    return n + sched_conjuncts(e->bin.b, out + n, max - n);
  }
  MLC_ASSERT(max > 0);
  out[0] = e;
  return 1;
}

mlc_expr *sched_and_all(mlc_arena *a, int n, mlc_expr **es) {
  mlc_expr *r = NULL;
  for (int i = 0; i < n; i++) r = r ? mlc_binary(a, MLC_EXPR_AND, r, es[i]) : es[i];
  return r;
}

static bool regions_use_var(int n, const mlc_region *rs, const mlc_var *v) {
  for (int i = 0; i < n; i++)
    for (int d = 0; d < rs[i].buf->ndim; d++)
      if (mlc_expr_uses_var(rs[i].ranges[d].min, v) || mlc_expr_uses_var(rs[i].ranges[d].extent, v))
        return true;
  return false;
}

static bool is_var(const mlc_expr *e, void *v) { return e->kind == MLC_EXPR_VAR && e->var == v; }

/* Whether the statement itself (not its children) uses v; a block's
 * regions count. */
static bool node_uses_var(const mlc_stmt *st, void *v) {
  if (mlc_stmt_exprs_any(st, is_var, v)) return true;
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return false;
  const mlc_block *b = st->realize.block;
  return regions_use_var(b->n_reads, b->reads, v) || regions_use_var(b->n_writes, b->writes, v);
}

bool sched_stmt_uses_var(const mlc_stmt *st, const mlc_var *v) {
  return mlc_stmt_any(st, node_uses_var, (void *)v);
}

static bool uses_loop(const mlc_expr *e, const mlc_stmt *loop) {
  return e && mlc_expr_uses_var(e, loop->loop.var);
}

/* Regions with every range substituted (fresh arrays: regions may be shared). */
static mlc_region *subst_regions(mlc_arena *a, int n, const mlc_region *rs, int nv, mlc_var **vars,
                                 mlc_expr **vals) {
  mlc_region *out = MLC_NEW_ARRAY(a, mlc_region, n + 1);
  for (int i = 0; i < n; i++) {
    out[i].buf = rs[i].buf;
    out[i].ranges = MLC_NEW_ARRAY(a, mlc_range, rs[i].buf->ndim + 1);
    for (int d = 0; d < rs[i].buf->ndim; d++) {
      out[i].ranges[d].min = mlc_expr_subst(a, rs[i].ranges[d].min, nv, vars, vals);
      out[i].ranges[d].extent = mlc_expr_subst(a, rs[i].ranges[d].extent, nv, vars, vals);
    }
  }
  return out;
}

static mlc_stmt *copy_loop(mlc_arena *a, const mlc_stmt *old, mlc_var *v, mlc_stmt *body,
                           bool keep_anns) {
  mlc_stmt *l = mlc_for_new(a, v, old->loop.min, old->loop.extent, old->loop.kind, body);
  l->loop.thread = old->loop.thread;
  if (keep_anns) {
    l->loop.n_anns = old->loop.n_anns;
    l->loop.anns = old->loop.anns;
  }
  return l;
}

/* TensorIR's decompose_reduction and rfactor take only reduction blocks
 * with quasi-affine bindings. Both run the init once, before the first
 * update, so the block's own init must run there too: every reduce iter is
 * at its minimum when all loops are (a reversed reduce loop would run the
 * init last, and the programs would differ). `where` names the handle. */
static bool check_reduction_bindings(mlc_sched *s, const char *prim, const char *where,
                                           mlc_block *b, mlc_stmt *realize, mlc_stmt **loops,
                                           int n, mlc_error *err) {
  mlc_var *lv[SCHED_MAX_DEPTH];
  mlc_expr *lmin[SCHED_MAX_DEPTH];
  for (int j = 0; j < n; j++) lv[j] = loops[j]->loop.var, lmin[j] = loops[j]->loop.min;
  for (int i = 0; i < b->n_iters; i++) {
    mlc_expr *v = realize->realize.values[i];
    mlc_str t = {.arena = s->arena}; /* under replay's escape point */
    if (!mlc_expr_is_quasi_affine(v)) {
      mlc_print_expr(&t, v);
      mlc_error_set(err,
                    "%s: %s: block \"%s\" binds iter %s to %s, which is not quasi-affine (TensorIR's "
                    "%s requires affine bindings: loop vars, +, -, * constant, // and %% by a "
                    "positive constant)",
                    prim, where, b->name, b->iters[i].var->name, mlc_str_cstr(&t), prim);
      mlc_str_free(&t);
      return false;
    }
    if (b->iters[i].kind != MLC_ITER_REDUCE) continue;
    int64_t d = 1;
    mlc_expr *first = mlc_simplify_expr(s->arena, mlc_expr_subst(s->arena, v, n, lv, lmin));
    if (mlc_expr_const_diff(s->arena, first, b->iters[i].dom.min, &d) && d == 0) continue;
    mlc_print_expr(&t, v);
    mlc_error_set(err,
                  "%s: %s: reduce iter %s of block \"%s\" (bound to %s) is not at its minimum when "
                  "every loop is at its first iteration: the init would not run first",
                  prim, where, b->iters[i].var->name, b->name, mlc_str_cstr(&t));
    mlc_str_free(&t);
    return false;
  }
  return true;
}

/* A fresh copy of an annotation list (lists are replaced, never edited in
 * place, but a copy keeps the two blocks independent regardless). */
static mlc_ann *copy_anns(mlc_arena *a, int n, const mlc_ann *anns) {
  if (n == 0) return NULL;
  mlc_ann *out = MLC_NEW_ARRAY(a, mlc_ann, n);
  memcpy(out, anns, sizeof(mlc_ann) * (size_t)n);
  return out;
}

/* ---- decompose_reduction ------------------------------------------------------ */

static const char *const DR = "decompose_reduction";

static bool decompose_check(mlc_sched *s, mlc_rv brv, mlc_rv lrv, mlc_stmt **loops, int *n_loops,
                            int *at, mlc_error *err) {
  char bd[96], ld[96];
  if (!sched_check_block(s, DR, brv, err) || !sched_check_loop(s, DR, lrv, err)) return false;
  mlc_block *b = s->rvs.data[brv].block;
  mlc_stmt *loop = s->rvs.data[lrv].loop;
  sched_rv_desc(s, brv, bd);
  sched_rv_desc(s, lrv, ld);
  if (!b->init)
    return mlc_error_set(err, "%s: %s has no init: only a reduction block can be decomposed", DR, bd);
  mlc_stmt *r = sched_find_realize(s, b);
  int n = sched_scope_loops(s, r, loops, NULL);
  *at = -1;
  for (int i = 0; i < n; i++)
    if (loops[i] == loop) *at = i;
  if (*at < 0)
    return mlc_error_set(err, "%s: %s is not a loop around %s in its scope", DR, ld, bd);
  *n_loops = n;
  if (!check_reduction_bindings(s, DR, bd, b, r, loops, n, err)) return false;
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind != MLC_ITER_REDUCE) continue;
    for (int j = 0; j < *at; j++)
      if (uses_loop(r->realize.values[i], loops[j]))
        return mlc_error_set(err,
                             "%s: %s lies inside loop %s, which drives reduce iter %s of %s: the "
                             "loop must be above every loop the reduction depends on",
                             DR, ld, loops[j]->loop.var->name, b->iters[i].var->name, bd);
    if (sched_stmt_uses_var(b->init, b->iters[i].var))
      return mlc_error_set(err,
                           "%s: %s: the init uses reduce iter %s (TensorIR's reduction block "
                           "indexes its output with spatial iters only)",
                           DR, bd, b->iters[i].var->name);
  }
  for (int j = *at; j < n; j++) {
    int64_t ext;
    bool used = false;
    for (int i = 0; i < b->n_iters && !used; i++) used = uses_loop(r->realize.values[i], loops[j]);
    if (!used && !(mlc_expr_is_const_int(loops[j]->loop.extent, &ext) && ext == 1))
      return mlc_error_set(err,
                           "%s: loop %s (at or below %s) drives no iter of %s: the update would "
                           "accumulate once per iteration of it after the init moved out",
                           DR, loops[j]->loop.var->name, ld, bd);
  }
  return true;
}

/* The init block's realize under copies of the chosen loops. */
static mlc_stmt *decompose_init_nest(mlc_sched *s, mlc_block *b, mlc_stmt *r, mlc_stmt **loops,
                                     int n, int at, mlc_block **init_out) {
  mlc_arena *a = s->arena;
  mlc_block *ib = mlc_block_new(a, sched_fresh_block_name(s, mlc_arena_concat(a, b->name, "_init")));
  int ns = 0;
  for (int i = 0; i < b->n_iters; i++) ns += b->iters[i].kind == MLC_ITER_SPATIAL;
  ib->iters = MLC_NEW_ARRAY(a, mlc_iter_var, ns + 1);
  mlc_expr **vals = MLC_NEW_ARRAY(a, mlc_expr *, ns + 1);
  mlc_var **ov = MLC_NEW_ARRAY(a, mlc_var *, ns + 1);
  mlc_expr **nv = MLC_NEW_ARRAY(a, mlc_expr *, ns + 1);
  int k = 0;
  for (int i = 0; i < b->n_iters; i++) {
    if (b->iters[i].kind != MLC_ITER_SPATIAL) continue;
    mlc_var *old = b->iters[i].var;
    mlc_var *v = mlc_var_new(a, old->name, old->dtype);
    ib->iters[k] = (mlc_iter_var){v, b->iters[i].dom, MLC_ITER_SPATIAL};
    vals[k] = r->realize.values[i];
    ov[k] = old;
    nv[k++] = mlc_ref(a, v);
  }
  ib->n_iters = ns;
  /* TVM's DecomposeReduction gives the init block the block's annotations;
   * the init loops below are new loops and carry none. */
  ib->n_anns = b->n_anns;
  ib->anns = copy_anns(a, b->n_anns, b->anns);
  ib->body = mlc_stmt_subst(a, b->init, ns, ov, nv);
  ib->n_writes = b->n_writes;
  ib->writes = subst_regions(a, b->n_writes, b->writes, ns, ov, nv);

  /* Loops from the innermost up to `at`: kept if a binding uses them. */
  mlc_var *lv[SCHED_MAX_DEPTH];
  mlc_expr *lnew[SCHED_MAX_DEPTH];
  mlc_stmt *dropped[SCHED_MAX_DEPTH];
  bool chosen[SCHED_MAX_DEPTH];
  int nl = 0, nd = 0;
  for (int j = n - 1; j >= at; j--) {
    chosen[j] = false;
    for (int q = 0; q < ns && !chosen[j]; q++) chosen[j] = uses_loop(vals[q], loops[j]);
    if (!chosen[j]) {
      dropped[nd++] = loops[j];
      continue;
    }
    lv[nl] = loops[j]->loop.var;
    lnew[nl++] = mlc_ref(a, mlc_var_new(a, mlc_arena_concat(a, loops[j]->loop.var->name, "_init"),
                                        loops[j]->loop.var->dtype));
  }
  for (int q = 0; q < ns; q++) vals[q] = mlc_expr_subst(a, vals[q], nl, lv, lnew);
  /* Predicate terms about dropped loops go (TVM's RemakePredicate). */
  mlc_expr *conj[64], *keep[64];
  int nc = sched_conjuncts(r->realize.predicate, conj, 64), nk = 0;
  for (int c = 0; c < nc; c++) {
    bool about_dropped = false;
    for (int d = 0; d < nd; d++) about_dropped = about_dropped || uses_loop(conj[c], dropped[d]);
    if (!about_dropped) keep[nk++] = mlc_expr_subst(a, conj[c], nl, lv, lnew);
  }
  mlc_stmt *body = mlc_realize_new(a, ib, vals, sched_and_all(a, nk, keep));
  for (int j = n - 1, q = 0; j >= at; j--)
    if (chosen[j]) body = copy_loop(a, loops[j], lnew[q++]->var, body, false);
  *init_out = ib;
  return body;
}

bool mlc_sched_decompose_reduction(mlc_sched *s, mlc_rv brv, mlc_rv lrv, mlc_rv *out,
                                   mlc_error *err) {
  mlc_stmt *loops[SCHED_MAX_DEPTH];
  int n = 0, at = 0;
  if (!decompose_check(s, brv, lrv, loops, &n, &at, err)) return false;
  mlc_arena *a = s->arena;
  mlc_block *b = s->rvs.data[brv].block, *ib = NULL;
  mlc_stmt *r = sched_find_realize(s, b);
  mlc_stmt *nest = decompose_init_nest(s, b, r, loops, n, at, &ib);
  /* The update block reads its output explicitly now (TVM prepends it). */
  b->name = sched_fresh_block_name(s, mlc_arena_concat(a, b->name, "_update"));
  b->init = NULL;
  mlc_region *reads = MLC_NEW_ARRAY(a, mlc_region, b->n_reads + b->n_writes + 1);
  int nr = 0;
  for (int w = 0; w < b->n_writes; w++) {
    bool listed = false;
    for (int q = 0; q < b->n_reads; q++) listed = listed || b->reads[q].buf == b->writes[w].buf;
    if (!listed) reads[nr++] = b->writes[w];
  }
  for (int q = 0; q < b->n_reads; q++) reads[nr++] = b->reads[q];
  b->reads = reads;
  b->n_reads = nr;
  sched_insert_before(s, loops[at], nest);
  *out = sched_new_rv(s, MLC_RV_BLOCK, ib, NULL, 0);
  mlc_operand in[2] = {MLC_OP_RV(brv), MLC_OP_RV(lrv)};
  sched_record(s, MLC_INST_DECOMPOSE_REDUCTION, 2, in, 0, NULL, 1, out);
  return true;
}

/* ---- rfactor: checks ----------------------------------------------------------- */

static const char *const RF = "rfactor";

typedef struct rf_info {
  mlc_block *b;
  mlc_stmt *realize, *scope;
  mlc_stmt *loops[SCHED_MAX_DEPTH];
  int n, rf;                          /* loops around the block; index of the rf loop */
  bool red[SCHED_MAX_DEPTH];          /* loop drives a reduce iter */
  mlc_expr_kind op;                   /* ADD, MUL, MAX, MIN */
  mlc_expr *rhs, *identity;
  int axis;                           /* normalized factor_axis */
  char ld[96];
} rf_info;

typedef struct count_ctx {
  mlc_stmt *first;
  int n;
} count_ctx;

static void count_realize(mlc_stmt *r, void *ctx_) {
  count_ctx *c = ctx_;
  if (!c->first) c->first = r;
  c->n++;
}

/* The block's reducer (mlc_block_reducer), which rfactor splits. */
static bool rf_match_reducer(rf_info *f, mlc_error *err) {
  mlc_reducer r;
  const char *why = mlc_block_reducer(f->b, &r);
  if (why)
    return mlc_error_set(err, "%s: %s: block \"%s\": %s (a recognised commutative reducer: sum, product, max or min)",
                         RF, f->ld, f->b->name, why);
  f->op = r.op;
  f->rhs = r.value;
  f->identity = r.identity;
  return true;
}

static bool unit_extent(const mlc_stmt *loop) {
  int64_t ext;
  return mlc_expr_is_const_int(loop->loop.extent, &ext) && ext == 1;
}

/* Loops touched by spatial / reduce iters, as TVM's rfactor classifies
 * them. A loop no iter uses may be the rf loop only with extent 1 (the
 * unit loop a fuse and split leave): with a larger extent each rf slice
 * would hold the whole reduction and the write-back would count it again.
 * Below the outermost reduce loop such a loop must have extent 1, as in
 * TVM (kUnboundLoopUnderReductionLoop): the init would run again in every
 * iteration of it. */
static bool rf_check_loops(rf_info *f, mlc_error *err) {
  mlc_block *b = f->b;
  mlc_stmt *r = f->realize;
  int first = -1; /* outermost reduce loop */
  for (int j = 0; j < f->n; j++) {
    const char *sp = NULL, *rd = NULL;
    for (int i = 0; i < b->n_iters; i++)
      if (uses_loop(r->realize.values[i], f->loops[j])) {
        if (b->iters[i].kind == MLC_ITER_SPATIAL) sp = b->iters[i].var->name;
        else rd = b->iters[i].var->name;
      }
    f->red[j] = rd != NULL;
    if (rd && first < 0) first = j;
    if (j == f->rf && sp)
      return mlc_error_set(err, "%s: %s drives spatial iter %s of block \"%s\"; only a reduce loop can be factored",
                           RF, f->ld, sp, b->name);
    if (j == f->rf && !rd && !unit_extent(f->loops[j]))
      return mlc_error_set(err,
                           "%s: %s drives no reduce iter of block \"%s\" and its extent is not 1: "
                           "every rf slice would hold the whole reduction",
                           RF, f->ld, b->name);
    if (sp && rd)
      return mlc_error_set(err, "%s: %s: loop %s drives both spatial iter %s and reduce iter %s of block \"%s\"",
                           RF, f->ld, f->loops[j]->loop.var->name, sp, rd, b->name);
    if (!sp && !rd && first >= 0 && !unit_extent(f->loops[j]))
      return mlc_error_set(err,
                           "%s: %s: loop %s drives no iter of block \"%s\" and lies under reduce loop "
                           "%s with an extent other than 1: the init would run again in each of its "
                           "iterations",
                           RF, f->ld, f->loops[j]->loop.var->name, b->name,
                           f->loops[first]->loop.var->name);
  }
  /* The outermost reduce loop holds only the block (through loops). */
  if (first < 0) return true;
  for (mlc_stmt *c = f->loops[first]->loop.body; c != r; c = c->loop.body)
    if (c->kind != MLC_STMT_FOR)
      return mlc_error_set(err, "%s: %s: reduce loop %s holds more than block \"%s\"", RF, f->ld,
                           f->loops[first]->loop.var->name, b->name);
  return true;
}

typedef struct later_ctx {
  const mlc_block *b;
  const mlc_block *first, *bad; /* first block under the loop; a later one feeding b */
} later_ctx;

static void check_later(mlc_stmt *r, void *ctx_) {
  later_ctx *c = ctx_;
  const mlc_block *o = r->realize.block;
  if (!c->first) c->first = o;
  if (o == c->b) return;
  for (int w = 0; w < o->n_writes && !c->bad; w++)
    for (int q = 0; q < c->b->n_reads; q++)
      if (c->b->reads[q].buf == o->writes[w].buf) c->bad = o;
}

/* The rf nest goes before the outermost loop, so the block must come first
 * under it and no later block there may feed the reduction. */
static bool rf_check_siblings(rf_info *f, mlc_error *err) {
  later_ctx c = {f->b, NULL, NULL};
  sched_each_realize(f->loops[0]->loop.body, check_later, &c);
  if (c.first != f->b)
    return mlc_error_set(err, "%s: %s: block \"%s\" is not the first block under its outermost loop %s",
                         RF, f->ld, f->b->name, f->loops[0]->loop.var->name);
  if (c.bad)
    return mlc_error_set(err, "%s: %s: block \"%s\" under the same loops writes what block \"%s\" reads",
                         RF, f->ld, c.bad->name, f->b->name);
  return true;
}

static bool rf_check_bindings(mlc_sched *s, rf_info *f, mlc_error *err) {
  return check_reduction_bindings(s, RF, f->ld, f->b, f->realize, f->loops, f->n, err);
}

static bool rf_check(mlc_sched *s, mlc_rv lrv, int factor_axis, rf_info *f, mlc_error *err) {
  if (!sched_check_loop(s, RF, lrv, err)) return false;
  sched_rv_desc(s, lrv, f->ld);
  mlc_stmt *loop = s->rvs.data[lrv].loop;
  count_ctx cc = {NULL, 0};
  sched_each_realize(loop->loop.body, count_realize, &cc);
  if (cc.n != 1)
    return mlc_error_set(err, "%s: %s must hold exactly one block, holds %d", RF, f->ld, cc.n);
  f->realize = cc.first;
  mlc_block *b = f->b = cc.first->realize.block;
  if (!b->init)
    return mlc_error_set(err, "%s: %s: block \"%s\" has no init: not a reduction block", RF, f->ld, b->name);
  if (b->n_writes != 1 || b->n_allocs != 0)
    return mlc_error_set(err, "%s: %s: block \"%s\" must write one buffer and allocate none", RF,
                         f->ld, b->name);
  int64_t mn, ext;
  if (loop->loop.kind != MLC_FOR_SERIAL)
    return mlc_error_set(err, "%s: %s is %s, not serial", RF, f->ld, mlc_for_kind_name(loop->loop.kind));
  if (!mlc_expr_is_const_int(loop->loop.min, &mn) || !mlc_expr_is_const_int(loop->loop.extent, &ext) || mn != 0)
    return mlc_error_set(err, "%s: %s must start at 0 and have a constant extent", RF, f->ld);
  if (!rf_match_reducer(f, err)) return false;
  mlc_stmt *upd = b->body;
  for (int i = 0; i < b->n_iters; i++)
    for (int d = 0; d < upd->store.buf->ndim; d++)
      if (b->iters[i].kind == MLC_ITER_REDUCE && mlc_expr_uses_var(upd->store.indices[d], b->iters[i].var))
        return mlc_error_set(err, "%s: %s: block \"%s\" indexes its output with reduce iter %s", RF,
                             f->ld, b->name, b->iters[i].var->name);
  f->n = sched_scope_loops(s, f->realize, f->loops, &f->scope);
  f->rf = -1;
  for (int j = 0; j < f->n; j++)
    if (f->loops[j] == loop) f->rf = j;
  MLC_ASSERT(f->rf >= 0 && f->scope);
  if (!rf_check_bindings(s, f, err) || !rf_check_loops(f, err) || !rf_check_siblings(f, err))
    return false;
  mlc_expr *conj[64];
  int nc = sched_conjuncts(f->realize->realize.predicate, conj, 64);
  for (int c = 0; c < nc; c++)
    for (int j = 0; j < f->n; j++)
      if (f->red[j] && uses_loop(conj[c], f->loops[j]))
        return mlc_error_set(err,
                             "%s: %s: the predicate of block \"%s\" depends on reduce loop %s; "
                             "partial results could stay uninitialised",
                             RF, f->ld, b->name, f->loops[j]->loop.var->name);
  int nd = upd->store.buf->ndim;
  if (factor_axis < -(nd + 1) || factor_axis > nd)
    return mlc_error_set(err, "%s: %s: factor_axis %d is out of range [%d, %d] for %d-d buffer %s", RF,
                         f->ld, factor_axis, -(nd + 1), nd, nd, upd->store.buf->name);
  f->axis = factor_axis < 0 ? factor_axis + nd + 1 : factor_axis;
  return true;
}

/* ---- rfactor: rewrite ------------------------------------------------------------ */

static mlc_expr **insert_index(mlc_arena *a, mlc_expr **idx, int nd, int axis, mlc_expr *x) {
  mlc_expr **out = MLC_NEW_ARRAY(a, mlc_expr *, nd + 2);
  for (int d = 0, k = 0; d <= nd; d++) out[d] = d == axis ? x : idx[k++];
  return out;
}

static mlc_expr *combine(mlc_arena *a, mlc_expr_kind op, mlc_expr *acc, mlc_expr *v) {
  return mlc_binary(a, op, acc, v);
}

/* Loop vars of an expression in preorder, each once, among the block's loops. */
typedef struct order_ctx {
  const rf_info *f;
  int *order, n;
} order_ctx;

static bool collect_loop(const mlc_expr *e, void *ctx_) {
  order_ctx *c = ctx_;
  if (e->kind != MLC_EXPR_VAR) return false;
  for (int j = 0; j < c->f->n; j++)
    if (c->f->loops[j]->loop.var == e->var) {
      for (int q = 0; q < c->n; q++)
        if (c->order[q] == j) return false;
      c->order[c->n++] = j;
    }
  return false;
}

/* The rf block "<name>_rf" writing buf_rf, under copies of all loops. */
static mlc_stmt *rf_build_rf_nest(mlc_sched *s, rf_info *f, mlc_buffer *rfbuf, mlc_block **out) {
  mlc_arena *a = s->arena;
  mlc_block *b = f->b;
  mlc_stmt *r = f->realize, *upd = b->body;
  int n = f->n, ni = b->n_iters;
  /* New loop vars for the copied nest. */
  mlc_var *lold[SCHED_MAX_DEPTH];
  mlc_expr *lnew[SCHED_MAX_DEPTH];
  for (int j = 0; j < n; j++) {
    lold[j] = f->loops[j]->loop.var;
    lnew[j] = mlc_ref(a, mlc_var_new(a, lold[j]->name, lold[j]->dtype));
  }
  mlc_block *rb = mlc_block_new(a, sched_fresh_block_name(s, mlc_arena_concat(a, b->name, "_rf")));
  rb->iters = MLC_NEW_ARRAY(a, mlc_iter_var, ni + n + 2);
  mlc_expr **vals = MLC_NEW_ARRAY(a, mlc_expr *, ni + n + 2);
  mlc_var *bvar_of_loop[SCHED_MAX_DEPTH] = {0}; /* loop -> new block var */
  mlc_var **iv_old = MLC_NEW_ARRAY(a, mlc_var *, ni + 1);
  mlc_expr **iv_new = MLC_NEW_ARRAY(a, mlc_expr *, ni + 1);
  int k = 0;
  mlc_stmt *rl = f->loops[f->rf];
  mlc_var *vrf = mlc_var_new(a, mlc_arena_concat(a, "v", rl->loop.var->name), rl->loop.var->dtype);
  rb->iters[k] = (mlc_iter_var){vrf, {rl->loop.min, rl->loop.extent}, MLC_ITER_SPATIAL};
  vals[k++] = lnew[f->rf];
  bvar_of_loop[f->rf] = vrf;
  for (int i = 0; i < ni; i++) {
    mlc_iter_var it = b->iters[i];
    mlc_expr *bind = r->realize.values[i];
    iv_old[i] = it.var;
    if (it.kind == MLC_ITER_SPATIAL || !uses_loop(bind, rl)) {
      mlc_var *v = mlc_var_new(a, it.var->name, it.var->dtype);
      rb->iters[k] = (mlc_iter_var){v, it.dom, it.kind};
      vals[k++] = mlc_expr_subst(a, bind, n, lold, lnew);
      iv_new[i] = mlc_ref(a, v);
      continue;
    }
    /* A reduce iter over the rf loop: one reduce iter per other loop. */
    int order[SCHED_MAX_DEPTH];
    order_ctx oc = {f, order, 0};
    mlc_expr_any(bind, collect_loop, &oc);
    int no = oc.n;
    mlc_var *from[SCHED_MAX_DEPTH];
    mlc_expr *to[SCHED_MAX_DEPTH];
    for (int q = 0; q < no; q++) {
      int j = order[q];
      if (!bvar_of_loop[j]) {
        mlc_stmt *l = f->loops[j];
        bvar_of_loop[j] = mlc_var_new(a, mlc_arena_concat(a, "v", l->loop.var->name), l->loop.var->dtype);
        rb->iters[k] = (mlc_iter_var){bvar_of_loop[j], {l->loop.min, l->loop.extent}, MLC_ITER_REDUCE};
        vals[k++] = lnew[j];
      }
      from[q] = f->loops[j]->loop.var;
      to[q] = mlc_ref(a, bvar_of_loop[j]);
    }
    iv_new[i] = mlc_expr_subst(a, bind, no, from, to);
  }
  rb->n_iters = k;
  /* Both new blocks keep the block's annotations, as in TVM's rfactor. */
  rb->n_anns = b->n_anns;
  rb->anns = copy_anns(a, b->n_anns, b->anns);
  bool has_reduce = false;
  for (int q = 0; q < k; q++) has_reduce = has_reduce || rb->iters[q].kind == MLC_ITER_REDUCE;
  int nd = upd->store.buf->ndim;
  mlc_expr **idx = MLC_NEW_ARRAY(a, mlc_expr *, nd + 1);
  for (int d = 0; d < nd; d++) idx[d] = mlc_expr_subst(a, upd->store.indices[d], ni, iv_old, iv_new);
  idx = insert_index(a, idx, nd, f->axis, mlc_ref(a, vrf));
  mlc_expr *rhs = mlc_expr_subst(a, f->rhs, ni, iv_old, iv_new);
  /* Without a reduce iter each rf element is written once: a plain store. */
  rb->body = mlc_store_new(a, rfbuf, idx,
                           has_reduce ? combine(a, f->op, mlc_load(a, rfbuf, idx), rhs) : rhs);
  if (has_reduce) rb->init = mlc_store_new(a, rfbuf, idx, f->identity);
  rb->n_reads = b->n_reads;
  rb->reads = subst_regions(a, b->n_reads, b->reads, ni, iv_old, iv_new);
  mlc_region *w = subst_regions(a, 1, b->writes, ni, iv_old, iv_new);
  mlc_range *rr = MLC_NEW_ARRAY(a, mlc_range, nd + 2);
  for (int d = 0, q = 0; d <= nd; d++)
    rr[d] = d == f->axis ? (mlc_range){mlc_ref(a, vrf), mlc_int_t(a, vrf->dtype, 1)} : w[0].ranges[q++];
  rb->writes = MLC_NEW(a, mlc_region);
  rb->writes[0] = (mlc_region){rfbuf, rr};
  rb->n_writes = 1;
  mlc_expr *pred = r->realize.predicate ? mlc_expr_subst(a, r->realize.predicate, n, lold, lnew) : NULL;
  mlc_stmt *body = mlc_realize_new(a, rb, vals, pred);
  for (int j = n - 1; j >= 0; j--) body = copy_loop(a, f->loops[j], lnew[j]->var, body, true);
  *out = rb;
  return body;
}

/* The original block becomes the write-back block: B[idx] op= B_rf[.., v, ..]
 * reducing over the rf loop, under the original loops. */
static void rf_make_writeback(mlc_sched *s, rf_info *f, mlc_buffer *rfbuf) {
  mlc_arena *a = s->arena;
  mlc_block *b = f->b;
  mlc_stmt *r = f->realize, *upd = b->body, *rl = f->loops[f->rf];
  int ni = b->n_iters, k = 0;
  mlc_iter_var *iters = MLC_NEW_ARRAY(a, mlc_iter_var, ni + 2);
  mlc_expr **vals = MLC_NEW_ARRAY(a, mlc_expr *, ni + 2);
  mlc_var **old = MLC_NEW_ARRAY(a, mlc_var *, ni + 1);
  mlc_expr **nw = MLC_NEW_ARRAY(a, mlc_expr *, ni + 1);
  int nsub = 0;
  mlc_var *vrf = mlc_var_new(a, mlc_arena_concat(a, "v", rl->loop.var->name), rl->loop.var->dtype);
  iters[k] = (mlc_iter_var){vrf, {rl->loop.min, rl->loop.extent}, MLC_ITER_REDUCE};
  vals[k++] = mlc_ref(a, rl->loop.var);
  for (int i = 0; i < ni; i++) {
    if (b->iters[i].kind != MLC_ITER_SPATIAL) continue;
    mlc_var *v = mlc_var_new(a, b->iters[i].var->name, b->iters[i].var->dtype);
    iters[k] = (mlc_iter_var){v, b->iters[i].dom, MLC_ITER_SPATIAL};
    vals[k++] = r->realize.values[i];
    old[nsub] = b->iters[i].var;
    nw[nsub++] = mlc_ref(a, v);
  }
  int nd = upd->store.buf->ndim;
  mlc_expr **idx = MLC_NEW_ARRAY(a, mlc_expr *, nd + 1);
  for (int d = 0; d < nd; d++) idx[d] = mlc_expr_subst(a, upd->store.indices[d], nsub, old, nw);
  mlc_expr **ridx = insert_index(a, idx, nd, f->axis, mlc_ref(a, vrf));
  mlc_buffer *out = upd->store.buf;
  b->body = mlc_store_new(a, out, idx, combine(a, f->op, mlc_load(a, out, idx), mlc_load(a, rfbuf, ridx)));
  b->init = mlc_store_new(a, out, idx, f->identity);
  b->iters = iters;
  b->n_iters = k;
  r->realize.values = vals;
  b->reads = MLC_NEW(a, mlc_region);
  b->reads[0] = (mlc_region){rfbuf, MLC_NEW_ARRAY(a, mlc_range, nd + 2)};
  for (int d = 0; d <= nd; d++) b->reads[0].ranges[d] = (mlc_range){ridx[d], mlc_int_t(a, ridx[d]->dtype, 1)};
  b->n_reads = 1;
  b->writes = MLC_NEW(a, mlc_region);
  b->writes[0] = (mlc_region){out, MLC_NEW_ARRAY(a, mlc_range, nd + 1)};
  for (int d = 0; d < nd; d++) b->writes[0].ranges[d] = (mlc_range){idx[d], mlc_int_t(a, idx[d]->dtype, 1)};
  b->n_writes = 1;
}

bool mlc_sched_rfactor(mlc_sched *s, mlc_rv lrv, int factor_axis, mlc_rv *out, mlc_error *err) {
  rf_info f;
  memset(&f, 0, sizeof f);
  if (!rf_check(s, lrv, factor_axis, &f, err)) return false;
  mlc_arena *a = s->arena;
  mlc_buffer *ob = f.b->body->store.buf;
  int nd = ob->ndim;
  int64_t ext = 0;
  mlc_expr_is_const_int(f.loops[f.rf]->loop.extent, &ext);
  int64_t *shape = MLC_NEW_ARRAY(a, int64_t, nd + 2);
  for (int d = 0, q = 0; d <= nd; d++) shape[d] = d == f.axis ? ext : ob->shape[q++];
  mlc_buffer *rfbuf = mlc_buffer_new(a, mlc_arena_concat(a, ob->name, "_rf"), ob->dtype, nd + 1,
                                     shape, ob->scope);
  mlc_block *rb = NULL;
  mlc_stmt *nest = rf_build_rf_nest(s, &f, rfbuf, &rb);
  rf_make_writeback(s, &f, rfbuf);
  sched_insert_before(s, f.loops[0], nest);
  /* The write-back keeps the spatial loops and the rf loop only. */
  for (int j = 0; j < f.n; j++) {
    if (!f.red[j] || j == f.rf) continue;
    mlc_stmt *path[SCHED_MAX_DEPTH];
    int depth = sched_path_to(s, f.loops[j], path);
    *sched_child_slot(path[depth - 2], f.loops[j]) = f.loops[j]->loop.body;
  }
  mlc_block *scope = f.scope->realize.block;
  mlc_buffer **allocs = MLC_NEW_ARRAY(a, mlc_buffer *, scope->n_allocs + 1);
  for (int i = 0; i < scope->n_allocs; i++) allocs[i] = scope->allocs[i];
  allocs[scope->n_allocs] = rfbuf;
  scope->allocs = allocs;
  scope->n_allocs++;
  *out = sched_new_rv(s, MLC_RV_BLOCK, rb, NULL, 0);
  mlc_operand in = MLC_OP_RV(lrv);
  mlc_attr at = sched_attr_int("factor_axis", factor_axis);
  sched_record(s, MLC_INST_RFACTOR, 1, &in, 1, &at, 1, out);
  return true;
}
