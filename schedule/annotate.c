/* Loop kinds (parallel, vectorize, unroll, bind) and annotations. */
#include "schedule/sched_impl.h"

#include <string.h>

/* ---- the TensorIR parallelizability rule -------------------------------- */

typedef struct par_ctx {
  const mlc_var *var;
  bool allow_reduce; /* threadIdx: cross-thread reduction */
  const mlc_block *bad;
  const char *bad_iter;
} par_ctx;

/* A block realize under the loop must bind the loop only to spatial iters. */
static void check_realize(mlc_stmt *r, void *ctx_) {
  par_ctx *ctx = ctx_;
  const mlc_block *b = r->realize.block;
  for (int i = 0; i < b->n_iters && !ctx->bad; i++)
    if (b->iters[i].kind == MLC_ITER_REDUCE && !ctx->allow_reduce &&
        mlc_expr_uses_var(r->realize.values[i], ctx->var)) {
      ctx->bad = b;
      ctx->bad_iter = b->iters[i].var->name;
    }
}

/* Checks shared by parallel, vectorize, bind and unroll. */
static bool loop_kind_check(mlc_sched *s, const char *prim, mlc_rv rv, bool check_reduce,
                            bool allow_reduce, mlc_error *err) {
  char d[96];
  if (!sched_check_loop(s, prim, rv, err)) return false;
  mlc_stmt *l = s->rvs.data[rv].loop;
  if (l->loop.kind == MLC_FOR_THREAD_BINDING)
    return mlc_error_set(err, "%s: %s is already bound to %s", prim, sched_rv_desc(s, rv, d),
                         l->loop.thread);
  int64_t ext;
  if (!mlc_expr_is_const_int(l->loop.extent, &ext))
    return mlc_error_set(err, "%s: %s: the loop's extent is not constant", prim,
                         sched_rv_desc(s, rv, d));
  if (!check_reduce) return true;
  par_ctx ctx = {l->loop.var, allow_reduce, NULL, NULL};
  sched_each_realize(l->loop.body, check_realize, &ctx);
  if (ctx.bad)
    return mlc_error_set(err,
                         "%s: %s: block \"%s\" binds its reduce iter %s to this loop; only "
                         "spatial iters may depend on it",
                         prim, sched_rv_desc(s, rv, d), ctx.bad->name, ctx.bad_iter);
  return true;
}

/* ---- dependences carried by a loop ------------------------------------------- */

/* One block's access to a buffer, per iteration of the loop being checked:
 * iter vars replaced by their bindings, loops inside that loop relaxed. */
typedef struct access {
  mlc_region r;
  const mlc_block *blk;
  bool write;
} access;

typedef struct dep_ctx {
  mlc_sched *s;
  mlc_stmt *loop;
  MLC_VEC(access) acc;
} dep_ctx;

static void add_accesses(dep_ctx *c, mlc_stmt *realize, int n, const mlc_region *rs, bool write,
                         int nl, mlc_var **lv, const int64_t *mins, const int64_t *exts) {
  mlc_arena *a = c->s->arena;
  const mlc_block *b = realize->realize.block;
  mlc_var *iv[64];
  int ni = b->n_iters < 64 ? b->n_iters : 64;
  for (int i = 0; i < ni; i++) iv[i] = b->iters[i].var;
  for (int k = 0; k < n; k++) {
    mlc_region r = {rs[k].buf, MLC_NEW_ARRAY(a, mlc_range, rs[k].buf->ndim + 1)};
    for (int d = 0; d < r.buf->ndim; d++) {
      r.ranges[d].min = mlc_expr_subst(a, rs[k].ranges[d].min, ni, iv, realize->realize.values);
      r.ranges[d].extent = mlc_expr_subst(a, rs[k].ranges[d].extent, ni, iv, realize->realize.values);
    }
    access x = {mlc_region_relax(a, r, nl, lv, mins, exts), b, write};
    MLC_VEC_APUSH(a, c->acc, x);
  }
}

static void collect_accesses(mlc_stmt *realize, void *ctx_) {
  dep_ctx *c = ctx_;
  mlc_stmt *path[SCHED_MAX_DEPTH];
  mlc_var *lv[SCHED_MAX_DEPTH];
  int64_t mins[SCHED_MAX_DEPTH], exts[SCHED_MAX_DEPTH];
  int n = sched_path_to(c->s, realize, path), nl = 0, start = 0;
  while (start < n && path[start] != c->loop) start++;
  for (int i = start + 1; i < n - 1; i++)
    if (path[i]->kind == MLC_STMT_FOR && mlc_expr_is_const_int(path[i]->loop.min, &mins[nl]) &&
        mlc_expr_is_const_int(path[i]->loop.extent, &exts[nl]))
      lv[nl++] = path[i]->loop.var;
  const mlc_block *b = realize->realize.block;
  add_accesses(c, realize, b->n_reads, b->reads, false, nl, lv, mins, exts);
  add_accesses(c, realize, b->n_writes, b->writes, true, nl, lv, mins, exts);
}

static bool same_region(mlc_arena *a, const mlc_region *x, const mlc_region *y) {
  for (int d = 0; d < x->buf->ndim; d++) {
    int64_t dm, de;
    if (!mlc_expr_const_diff(a, x->ranges[d].min, y->ranges[d].min, &dm) || dm != 0 ||
        !mlc_expr_const_diff(a, x->ranges[d].extent, y->ranges[d].extent, &de) || de != 0)
      return false;
  }
  return true;
}

/* Blocks under the loop that share a buffer, one writing it, must touch
 * the same part of it in each iteration; otherwise an iteration reads or
 * overwrites what another one writes, and running them concurrently races. */
static bool carried_dependence_check(mlc_sched *s, const char *prim, mlc_rv rv, mlc_error *err) {
  char d[96];
  dep_ctx c = {s, s->rvs.data[rv].loop, {0}};
  sched_each_realize(c.loop->loop.body, collect_accesses, &c);
  for (int i = 0; i < c.acc.len; i++) {
    const access *w = &c.acc.data[i];
    if (!w->write) continue;
    for (int j = 0; j < c.acc.len; j++) {
      const access *x = &c.acc.data[j];
      if (x->blk == w->blk || x->r.buf != w->r.buf || same_region(s->arena, &w->r, &x->r)) continue;
      return mlc_error_set(err,
                           "%s: %s: block \"%s\" %s buffer %s where block \"%s\" writes it in "
                           "other iterations of this loop",
                           prim, sched_rv_desc(s, rv, d), x->blk->name,
                           x->write ? "writes" : "reads", x->r.buf->name, w->blk->name);
    }
  }
  return true;
}

static void record_loop(mlc_sched *s, mlc_inst_kind k, mlc_rv rv) {
  mlc_operand in = MLC_OP_RV(rv);
  sched_record(s, k, 1, &in, 0, NULL, 0, NULL);
}

bool mlc_sched_parallel(mlc_sched *s, mlc_rv rv, mlc_error *err) {
  if (!loop_kind_check(s, "parallel", rv, true, false, err) ||
      !carried_dependence_check(s, "parallel", rv, err))
    return false;
  s->rvs.data[rv].loop->loop.kind = MLC_FOR_PARALLEL;
  record_loop(s, MLC_INST_PARALLEL, rv);
  return true;
}

bool mlc_sched_vectorize(mlc_sched *s, mlc_rv rv, mlc_error *err) {
  if (!loop_kind_check(s, "vectorize", rv, true, false, err) ||
      !carried_dependence_check(s, "vectorize", rv, err))
    return false;
  s->rvs.data[rv].loop->loop.kind = MLC_FOR_VECTORIZED;
  record_loop(s, MLC_INST_VECTORIZE, rv);
  return true;
}

bool mlc_sched_unroll(mlc_sched *s, mlc_rv rv, mlc_error *err) {
  if (!loop_kind_check(s, "unroll", rv, false, false, err)) return false;
  s->rvs.data[rv].loop->loop.kind = MLC_FOR_UNROLLED;
  record_loop(s, MLC_INST_UNROLL, rv);
  return true;
}

static bool valid_thread_tag(const char *t) {
  static const char *const tags[] = {
      "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
      "vthread",    "vthread.x",  "vthread.y",  "vthread.z",
  };
  for (int i = 0; i < MLC_COUNTOF(tags); i++)
    if (strcmp(t, tags[i]) == 0) return true;
  return false;
}

/* A loop bound to `tag` with another extent, above or below l: one thread
 * axis has one extent (nesting with the same extent is cooperative
 * fetching). NULL if none. */
static const mlc_stmt *find_same_tag(const mlc_stmt *st, const char *tag, int64_t ext) {
  if (!st) return NULL;
  int64_t e;
  switch (st->kind) {
  case MLC_STMT_FOR:
    if (st->loop.kind == MLC_FOR_THREAD_BINDING && strcmp(st->loop.thread, tag) == 0 &&
        (!mlc_expr_is_const_int(st->loop.extent, &e) || e != ext))
      return st;
    return find_same_tag(st->loop.body, tag, ext);
  case MLC_STMT_BLOCK_REALIZE: {
    const mlc_stmt *r = find_same_tag(st->realize.block->init, tag, ext);
    return r ? r : find_same_tag(st->realize.block->body, tag, ext);
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) {
      const mlc_stmt *r = find_same_tag(st->seq.stmts[i], tag, ext);
      if (r) return r;
    }
    return NULL;
  case MLC_STMT_IF: {
    const mlc_stmt *r = find_same_tag(st->if_.then_s, tag, ext);
    return r ? r : find_same_tag(st->if_.else_s, tag, ext);
  }
  case MLC_STMT_ALLOCATE: return find_same_tag(st->alloc.body, tag, ext);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return NULL;
  }
  mlc_unreachable();
}

static bool thread_extent_check(mlc_sched *s, mlc_rv rv, const char *tag, mlc_error *err) {
  char d[96];
  mlc_stmt *l = s->rvs.data[rv].loop, *path[SCHED_MAX_DEPTH];
  int64_t ext = 0;
  mlc_expr_is_const_int(l->loop.extent, &ext);
  int n = sched_path_to(s, l, path);
  const mlc_stmt *other = NULL;
  for (int i = 0; i < n - 1 && !other; i++) {
    const mlc_stmt *p = path[i];
    int64_t e;
    if (p->kind == MLC_STMT_FOR && p->loop.kind == MLC_FOR_THREAD_BINDING &&
        strcmp(p->loop.thread, tag) == 0 && (!mlc_expr_is_const_int(p->loop.extent, &e) || e != ext))
      other = p;
  }
  if (!other) other = find_same_tag(l->loop.body, tag, ext);
  if (!other) return true;
  int64_t oe = 0;
  mlc_expr_is_const_int(other->loop.extent, &oe);
  return mlc_error_set(err,
                       "bind: %s: loop %s is bound to %s with extent %lld; this loop's extent "
                       "%lld differs (one thread axis has one extent)",
                       sched_rv_desc(s, rv, d), other->loop.var->name, tag, (long long)oe,
                       (long long)ext);
}

bool mlc_sched_bind(mlc_sched *s, mlc_rv rv, const char *thread, mlc_error *err) {
  char d[96];
  if (!thread || !valid_thread_tag(thread))
    return mlc_error_set(err,
                         "bind: %s: unknown thread axis \"%s\" (expected blockIdx.x/y/z, "
                         "threadIdx.x/y/z or vthread.x/y/z)",
                         sched_rv_desc(s, rv, d), thread ? thread : "(null)");
  bool thread_idx = strncmp(thread, "threadIdx.", 10) == 0;
  if (!loop_kind_check(s, "bind", rv, true, thread_idx, err) ||
      !thread_extent_check(s, rv, thread, err) ||
      (strncmp(thread, "blockIdx.", 9) == 0 && !carried_dependence_check(s, "bind", rv, err)))
    return false;
  mlc_stmt *l = s->rvs.data[rv].loop;
  l->loop.kind = MLC_FOR_THREAD_BINDING;
  l->loop.thread = mlc_arena_strdup(s->arena, thread);
  mlc_operand in = MLC_OP_RV(rv);
  mlc_attr at = sched_attr_str("thread_axis", thread);
  sched_record(s, MLC_INST_BIND, 1, &in, 1, &at, 0, NULL);
  return true;
}

/* ---- annotations --------------------------------------------------------------- */

/* The annotation list of a live block or loop handle. */
static bool ann_target(mlc_sched *s, const char *prim, mlc_rv rv, int **n, mlc_ann ***anns,
                       mlc_error *err) {
  char d[96];
  if (rv < 0 || rv >= s->rvs.len || s->rvs.data[rv].kind == MLC_RV_VALUE)
    return mlc_error_set(err, "%s: %s is not a block or loop", prim, sched_rv_desc(s, rv, d));
  if (!mlc_sched_rv_alive(s, rv))
    return mlc_error_set(err, "%s: %s is no longer in the function", prim, sched_rv_desc(s, rv, d));
  rv_entry *e = &s->rvs.data[rv];
  if (e->kind == MLC_RV_LOOP) {
    *n = &e->loop->loop.n_anns;
    *anns = &e->loop->loop.anns;
  } else {
    *n = &e->block->n_anns;
    *anns = &e->block->anns;
  }
  return true;
}

bool mlc_sched_annotate(mlc_sched *s, mlc_rv rv, const char *key, mlc_operand value,
                        mlc_error *err) {
  char d[96];
  int *n;
  mlc_ann **anns;
  if (!ann_target(s, "annotate", rv, &n, &anns, err)) return false;
  if (!key || !*key)
    return mlc_error_set(err, "annotate: %s: empty annotation key", sched_rv_desc(s, rv, d));
  mlc_ann ann = {.key = mlc_arena_strdup(s->arena, key)};
  switch (value.kind) {
  case MLC_OPERAND_INT: ann.kind = MLC_ANN_INT, ann.i = value.i; break;
  case MLC_OPERAND_FLOAT: ann.kind = MLC_ANN_FLOAT, ann.f = value.f; break;
  case MLC_OPERAND_STR:
    if (!value.s) return mlc_error_set(err, "annotate: %s: NULL string value", sched_rv_desc(s, rv, d));
    ann.kind = MLC_ANN_STRING, ann.s = mlc_arena_strdup(s->arena, value.s);
    break;
  case MLC_OPERAND_RV:
    if (!sched_check_value(s, "annotate", value.rv, err)) return false;
    ann.kind = MLC_ANN_INT, ann.i = s->rvs.data[value.rv].value;
    break;
  case MLC_OPERAND_NONE:
    return mlc_error_set(err, "annotate: %s: key \"%s\" needs a value", sched_rv_desc(s, rv, d), key);
  }
  /* A fresh array: the old one may be shared with nothing, but arrays are
   * never resized in place in the arena. */
  mlc_ann *na = MLC_NEW_ARRAY(s->arena, mlc_ann, *n + 1);
  int m = 0;
  bool replaced = false;
  for (int i = 0; i < *n; i++) {
    if (strcmp((*anns)[i].key, key) == 0) na[m++] = ann, replaced = true;
    else na[m++] = (*anns)[i];
  }
  if (!replaced) na[m++] = ann;
  *anns = na;
  *n = m;
  mlc_operand in[2] = {MLC_OP_RV(rv), value};
  mlc_attr at = sched_attr_str("ann_key", key);
  sched_record(s, MLC_INST_ANNOTATE, 2, in, 1, &at, 0, NULL);
  return true;
}

bool mlc_sched_unannotate(mlc_sched *s, mlc_rv rv, const char *key, mlc_error *err) {
  char d[96];
  int *n;
  mlc_ann **anns;
  if (!ann_target(s, "unannotate", rv, &n, &anns, err)) return false;
  if (!key || !mlc_ann_find(*n, *anns, key))
    return mlc_error_set(err, "unannotate: %s has no annotation \"%s\"", sched_rv_desc(s, rv, d),
                         key ? key : "(null)");
  mlc_ann *na = MLC_NEW_ARRAY(s->arena, mlc_ann, *n + 1);
  int m = 0;
  for (int i = 0; i < *n; i++)
    if (strcmp((*anns)[i].key, key) != 0) na[m++] = (*anns)[i];
  *anns = na;
  *n = m;
  mlc_operand in = MLC_OP_RV(rv);
  mlc_attr at = sched_attr_str("ann_key", key);
  sched_record(s, MLC_INST_UNANNOTATE, 1, &in, 1, &at, 0, NULL);
  return true;
}
