/* Postprocessors (meta-schedule's CPU list): rewrite the root block's
 * parallel / vectorize / unroll annotations into loop kinds, decompose
 * reductions, verify. They run after EnterPostproc, so what they do is
 * recorded in the candidate's trace and never rerun at compile time. */
#include "tuner/tuner_internal.h"

#include <stdio.h>
#include <string.h>

/* The three bounds the parallel-vectorize-unroll rule left on the root;
 * -1 where absent. */
typedef struct pvu_plan {
  int64_t parallel, vectorize, unroll;
} pvu_plan;

static int64_t root_ann(const mlc_block *root, const char *key) {
  const mlc_ann *a = mlc_ann_find(root->n_anns, root->anns, key);
  return a && (a->kind == MLC_ANN_INT || a->kind == MLC_ANN_BOOL) ? a->i : -1;
}

/* Read and remove the annotations (the unannotate calls are recorded). */
static bool take_plan(mlc_sched *s, pvu_plan *p, mlc_error *err) {
  const mlc_block *root = mlc_func_root(mlc_sched_func(s));
  p->parallel = root_ann(root, TUNER_ANN_PARALLEL);
  p->vectorize = root_ann(root, TUNER_ANN_VECTORIZE);
  p->unroll = root_ann(root, TUNER_ANN_UNROLL);
  if (p->parallel < 0 && p->vectorize < 0 && p->unroll < 0) return true;
  static const char *const keys[] = {TUNER_ANN_PARALLEL, TUNER_ANN_VECTORIZE, TUNER_ANN_UNROLL};
  mlc_rv rv;
  if (!mlc_sched_get_block(s, "root", NULL, &rv, err)) return false;
  for (int k = 0; k < MLC_COUNTOF(keys); k++)
    if (mlc_ann_find(root->n_anns, root->anns, keys[k]) &&
        !mlc_sched_unannotate(s, rv, keys[k], err))
      return false;
  return true;
}

/* The first block realize under st (program order), or NULL. */
static bool is_realize(const mlc_stmt *st, void *ud) {
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return false;
  *(const mlc_block **)ud = st->realize.block;
  return true;
}

/* The first block realize under st (program order), or NULL. */
static const mlc_block *first_block(const mlc_stmt *st) {
  const mlc_block *b = NULL;
  mlc_stmt_any(st, is_realize, &b);
  return b;
}

/* Fuse loops [from, from + n) of the block's nest into one; *out is it. */
static bool fuse_loops(mlc_sched *s, mlc_rv brv, int from, int n, mlc_rv *out) {
  mlc_rv *loops;
  mlc_error e;
  int nl = mlc_sched_get_loops(s, brv, &loops, &e);
  if (nl < from + n) return false;
  if (n == 1) {
    *out = loops[from];
    return true;
  }
  return mlc_sched_fuse(s, n, loops + from, true, out, &e);
}

/* ---- parallel --------------------------------------------------------------------- */

/* How many outer loops to fuse for a bound: loops join until their product
 * exceeds it (the one crossing it included), as meta-schedule does. */
static int parallel_count(const int64_t *prods, int n, int64_t bound) {
  int k = 0;
  while (k < n) {
    k++;
    if (prods[k - 1] > bound) break;
  }
  return k;
}

static void rewrite_parallel(mlc_sched *s, int64_t bound) {
  mlc_arena *a = mlc_arena_new();
  mlc_stmt **tops;
  int nt = tuner_root_children(mlc_sched_func(s), &tops, a);
  /* the statements move as loops fuse: collect their first blocks first */
  const mlc_block **firsts = MLC_NEW_ARRAY(a, const mlc_block *, nt + 1);
  int64_t (*prods)[TUNER_MAX_LOOPS] = mlc_arena_alloc(a, sizeof(*prods) * (size_t)(nt + 1));
  int *np = MLC_NEW_ARRAY(a, int, nt + 1);
  for (int t = 0; t < nt; t++) {
    firsts[t] = first_block(tops[t]);
    np[t] = tuner_parallel_prefix(tops[t], prods[t], TUNER_MAX_LOOPS);
  }
  for (int t = 0; t < nt; t++) {
    if (!firsts[t] || np[t] == 0) continue;
    int k = parallel_count(prods[t], np[t], bound);
    if (prods[t][k - 1] < 2) continue; /* nothing to share out */
    mlc_rv fused, brv;
    mlc_error e;
    /* names are unique in our workloads; a duplicate makes get_block
     * refuse, and the nest stays serial */
    if (mlc_sched_get_block(s, firsts[t]->name, NULL, &brv, &e) &&
        fuse_loops(s, brv, 0, k, &fused))
      mlc_sched_parallel(s, fused, &e);
  }
  mlc_arena_free(a);
}

/* Whether two bounds fuse the same loops in every nest (bound 0: none,
 * every nest serial). */
static bool same_plan(int nt, int64_t (*prods)[TUNER_MAX_LOOPS], const int *np, int64_t x,
                      int64_t y) {
  if (x == 0 || y == 0) return x == y;
  for (int t = 0; t < nt; t++)
    if (np[t] > 0 && parallel_count(prods[t], np[t], x) != parallel_count(prods[t], np[t], y))
      return false;
  return true;
}

/* Adds v to out unless its plan is current's or already there. */
static int add_plan(int nt, int64_t (*prods)[TUNER_MAX_LOOPS], const int *np, int64_t current,
                    int64_t v, int64_t *out, int n, int max) {
  bool seen = same_plan(nt, prods, np, v, current);
  for (int j = 0; j < n && !seen; j++) seen = same_plan(nt, prods, np, v, out[j]);
  if (!seen && n < max) out[n++] = v;
  return n;
}

int tuner_parallel_choices(const mlc_prim_func *f, int64_t current, int64_t preferred,
                           int64_t *out, int max) {
  mlc_arena *a = mlc_arena_new();
  mlc_stmt **tops;
  int nt = tuner_root_children(f, &tops, a), n = 0;
  int64_t (*prods)[TUNER_MAX_LOOPS] = mlc_arena_alloc(a, sizeof(*prods) * (size_t)(nt + 1));
  int *np = MLC_NEW_ARRAY(a, int, nt + 1);
  bool any = false;
  for (int t = 0; t < nt; t++) {
    np[t] = tuner_parallel_prefix(tops[t], prods[t], TUNER_MAX_LOOPS);
    any = any || np[t] > 0;
  }
  /* serial is a plan too: on small kernels threads cost more than they
   * give. The preferred bound goes before the others, so that its plan
   * keeps the value sampling gives it and one program keeps one trace. */
  if (any) n = add_plan(nt, prods, np, current, 0, out, n, max);
  if (any && preferred > 0) n = add_plan(nt, prods, np, current, preferred, out, n, max);
  for (int t = 0; t < nt; t++) /* bound prods[i] fuses i + 2 loops; bound 1 fuses one */
    for (int i = -1; i < np[t] - 1; i++)
      n = add_plan(nt, prods, np, current, i < 0 ? 1 : prods[t][i], out, n, max);
  mlc_arena_free(a);
  for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
    for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
      int64_t x = out[j];
      out[j] = out[j - 1];
      out[j - 1] = x;
    }
  return n;
}

/* ---- vectorize ---------------------------------------------------------------- */

static bool is_loop_or_block(const mlc_stmt *st, void *ud) {
  MLC_UNUSED(ud);
  return st->kind == MLC_STMT_FOR || st->kind == MLC_STMT_BLOCK_REALIZE;
}

static bool has_loop_or_block(const mlc_stmt *st) {
  return mlc_stmt_any(st, is_loop_or_block, NULL);
}

static bool is_leaf_block(const mlc_block *b) {
  return !has_loop_or_block(b->body) && !has_loop_or_block(b->init);
}

/* How far one more iteration of `loop` moves index expression idx of the
 * block (its iters replaced by their bindings); false when not by a
 * constant. */
static bool index_step(mlc_arena *a, const mlc_block *b, const mlc_stmt *realize, const mlc_stmt *loop,
                       const mlc_expr *idx, int64_t *step) {
  mlc_var *iv[TUNER_MAX_LOOPS], *x = loop->loop.var;
  for (int i = 0; i < b->n_iters; i++) iv[i] = b->iters[i].var;
  mlc_expr *x1 = mlc_add(a, mlc_ref(a, x), mlc_int_t(a, x->dtype, 1));
  mlc_expr *at = mlc_expr_subst(a, (mlc_expr *)idx, b->n_iters, iv, realize->realize.values);
  return mlc_expr_const_diff(a, mlc_expr_subst(a, at, 1, &x, &x1), at, step);
}

/* Whether one more iteration of `loop` moves the block's first write by
 * exactly `step` elements of its last dimension and leaves the others:
 * lanes of a vector then store to consecutive addresses (strided lanes
 * would be done one by one, slower than a scalar loop). */
static bool write_stride_is(mlc_arena *a, const mlc_block *b, const mlc_stmt *realize,
                            const mlc_stmt *loop, int64_t step) {
  if (b->n_writes < 1 || b->n_iters > TUNER_MAX_LOOPS) return false;
  const mlc_region *w = &b->writes[0];
  for (int d = 0; d < w->buf->ndim; d++) {
    int64_t ext, diff;
    if (!mlc_expr_is_const_int(w->ranges[d].extent, &ext) || ext != 1) return false;
    if (!index_step(a, b, realize, loop, w->ranges[d].min, &diff)) return false;
    if (diff != (d == w->buf->ndim - 1 ? step : 0)) return false;
  }
  return true;
}

/* Innermost loops of a leaf block that vectorization may fuse: a chain
 * of serial spatial loops ending right at the block, product <= bound,
 * that write consecutive elements. */
static int vector_count(const mlc_block *b, const tuner_site *site, int64_t bound) {
  int k = 0;
  int64_t prod = 1;
  mlc_arena *a = mlc_arena_new();
  for (int i = site->n_loops - 1; i >= 0; i--) {
    const mlc_stmt *l = site->loops[i];
    const mlc_stmt *below = i + 1 < site->n_loops ? site->loops[i + 1] : site->realize;
    int64_t e = tuner_loop_extent(l), mn;
    if (l->loop.body != below || l->loop.kind != MLC_FOR_SERIAL || e < 1) break;
    if (!mlc_expr_is_const_int(l->loop.min, &mn) || mn != 0 || !tuner_loop_is_spatial(l)) break;
    if (prod * e > bound || !write_stride_is(a, b, site->realize, l, prod)) break;
    prod *= e;
    k++;
  }
  mlc_arena_free(a);
  return prod >= 2 ? k : 0;
}

/* Whether one more iteration of `loop` moves some read of the block one
 * element along its last dimension. */
static bool reads_along(mlc_arena *a, const mlc_block *b, const mlc_stmt *realize, const mlc_stmt *loop) {
  if (b->n_iters > TUNER_MAX_LOOPS) return false;
  for (int k = 0; k < b->n_reads; k++) {
    const mlc_region *r = &b->reads[k];
    int64_t diff;
    if (r->buf->ndim > 0 && index_step(a, b, realize, loop, r->ranges[r->buf->ndim - 1].min, &diff) && diff == 1)
      return true;
  }
  return false;
}

/* The loop right around a reduction block that reduces along a row of
 * at most `bound` elements (a write-back of lane partials, a short row):
 * vectorized, its lanes combined as a tree; NULL for any other. */
static const mlc_stmt *lane_reduce_loop(const mlc_block *b, const tuner_site *site, int64_t bound) {
  mlc_reducer r;
  if (site->n_loops < 1 || mlc_block_reducer(b, &r)) return NULL;
  const mlc_stmt *l = site->loops[site->n_loops - 1];
  int64_t e = tuner_loop_extent(l), mn;
  if (l->loop.body != site->realize || l->loop.kind != MLC_FOR_SERIAL || e < 2 || e > bound ||
      !mlc_expr_is_const_int(l->loop.min, &mn) || mn != 0 || tuner_loop_is_spatial(l))
    return NULL;
  mlc_arena *a = mlc_arena_new();
  bool along = reads_along(a, b, site->realize, l);
  mlc_arena_free(a);
  return along ? l : NULL;
}

static void rewrite_vectorize(mlc_sched *s, int64_t bound, int nb, const char **names) {
  for (int i = 0; i < nb; i++) {
    const mlc_block *b = tuner_find_block(mlc_sched_func(s), names[i]);
    tuner_site site;
    if (!b || !is_leaf_block(b) || !tuner_find_site(mlc_sched_func(s), b, &site)) continue;
    int k = vector_count(b, &site, bound);
    const mlc_stmt *lanes = k > 0 ? NULL : lane_reduce_loop(b, &site, bound);
    mlc_rv brv, fused, *loops;
    mlc_error e;
    if (k > 0 && mlc_sched_get_block(s, names[i], NULL, &brv, &e) &&
        fuse_loops(s, brv, site.n_loops - k, k, &fused))
      mlc_sched_vectorize(s, fused, &e);
    if (lanes && mlc_sched_get_block(s, names[i], NULL, &brv, &e) &&
        mlc_sched_get_loops(s, brv, &loops, &e) == site.n_loops)
      mlc_sched_vectorize(s, loops[site.n_loops - 1], &e);
  }
}

/* ---- unroll --------------------------------------------------------------------- */

/* Innermost iterations a statement runs. Vectorized loops count fully:
 * lanes of strided accesses are emitted one by one, and unrolling them
 * too makes code LLVM takes very long to compile. */
static int64_t volume(const mlc_stmt *st) {
  if (!st) return 0;
  int64_t v = 0;
  switch (st->kind) {
  case MLC_STMT_FOR: {
    int64_t e = tuner_loop_extent(st);
    if (e < 0) return INT64_MAX / 4;
    v = volume(st->loop.body);
    return v > (INT64_MAX / 4) / (e ? e : 1) ? INT64_MAX / 4 : v * e;
  }
  case MLC_STMT_BLOCK_REALIZE: {
    /* the init runs in a nest of its own once reductions are decomposed */
    int64_t b = volume(st->realize.block->body), i = volume(st->realize.block->init);
    return b > i ? b : i;
  }
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) v += volume(st->seq.stmts[i]);
    return v > INT64_MAX / 4 ? INT64_MAX / 4 : v;
  case MLC_STMT_IF: return volume(st->if_.then_s) + volume(st->if_.else_s);
  case MLC_STMT_ALLOCATE: return volume(st->alloc.body);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return 1;
  }
  mlc_unreachable();
}

/* Serial loops whose whole body runs at most `step` innermost iterations
 * are unrolled (meta-schedule's auto_unroll_max_step, applied here). */
static bool unrollable(const mlc_stmt *l, int64_t step) {
  return l->loop.kind == MLC_FOR_SERIAL && tuner_loop_extent(l) > 1 && volume(l) <= step;
}

static void rewrite_unroll(mlc_sched *s, int64_t step, int nb, const char **names) {
  if (step <= 0) return;
  for (int i = 0; i < nb; i++) {
    const mlc_block *b = tuner_find_block(mlc_sched_func(s), names[i]);
    tuner_site site;
    if (!b || !tuner_find_site(mlc_sched_func(s), b, &site)) continue;
    bool any = false;
    for (int j = 0; j < site.n_loops && !any; j++) any = unrollable(site.loops[j], step);
    mlc_rv brv, *loops;
    mlc_error e;
    if (!any || !mlc_sched_get_block(s, names[i], NULL, &brv, &e)) continue;
    int nl = mlc_sched_get_loops(s, brv, &loops, &e);
    for (int j = nl - 1; j >= 0; j--) {
      const mlc_stmt *l = mlc_sched_rv_loop(s, loops[j]);
      if (!l || l->loop.kind == MLC_FOR_VECTORIZED || l->loop.kind == MLC_FOR_UNROLLED) continue;
      if (l->loop.kind != MLC_FOR_SERIAL || volume(l) > step) break;
      if (tuner_loop_extent(l) > 1) mlc_sched_unroll(s, loops[j], &e);
    }
  }
}

/* ---- reductions ------------------------------------------------------------------- */

/* The outermost loop of the nest that a reduce iter of b depends on. */
static int first_reduce_loop(const mlc_block *b, const tuner_site *site) {
  for (int l = 0; l < site->n_loops; l++)
    for (int i = 0; i < b->n_iters; i++)
      if (b->iters[i].kind == MLC_ITER_REDUCE &&
          mlc_expr_uses_var(site->realize->realize.values[i], site->loops[l]->loop.var))
        return l;
  return -1;
}

/* meta-schedule's RewriteReductionBlock: a reduction's init moves before
 * its outermost reduce loop (decompose_reduction), so the update loop nest
 * carries no init guard. A refusal leaves the init in place (correct,
 * only slower). */
static void rewrite_reductions(mlc_sched *s, int nb, const char **names) {
  for (int i = 0; i < nb; i++) {
    const mlc_block *b = tuner_find_block(mlc_sched_func(s), names[i]);
    tuner_site site;
    if (!b || !b->init || !tuner_find_site(mlc_sched_func(s), b, &site)) continue;
    int l = first_reduce_loop(b, &site);
    mlc_rv brv, *loops, init;
    mlc_error e;
    if (l < 0 || !mlc_sched_get_block(s, names[i], NULL, &brv, &e)) continue;
    int nl = mlc_sched_get_loops(s, brv, &loops, &e);
    if (nl == site.n_loops) mlc_sched_decompose_reduction(s, brv, loops[l], &init, &e);
  }
}

/* ---- tensorize ------------------------------------------------------------------- */

/* The intrinsic an annotation names: itself when registered, else a
 * family's member of the tile b's body loops over (<name>_<R>x<C>x<K>). */
static const char *tensorize_intrin(const mlc_block *b, const char *ann, char *buf, size_t n) {
  if (mlc_tensor_intrin_exists(ann)) return ann;
  int64_t ext[3];
  const mlc_stmt *st = b->body;
  for (int d = 0; d < 3; d++) {
    if (!st || st->kind != MLC_STMT_FOR || !mlc_expr_is_const_int(st->loop.extent, &ext[d])) return ann;
    st = st->loop.body;
  }
  snprintf(buf, n, "%s_%lldx%lldx%lld", ann, (long long)ext[0], (long long)ext[1], (long long)ext[2]);
  return buf;
}

/* Whether every reduce iter of b takes one value (the tile inside holds
 * the whole reduction). */
static bool whole_reduction_inside(const mlc_block *b) {
  for (int i = 0; i < b->n_iters; i++) {
    int64_t ext;
    if (b->iters[i].kind == MLC_ITER_REDUCE && !(mlc_expr_is_const_int(b->iters[i].dom.extent, &ext) && ext == 1))
      return false;
  }
  return true;
}

/* A block the tiling-with-intrinsic rule annotated with a family, whose
 * whole reduction is in the tile, is tensorized with its init by the
 * family's _init member (<name>_init_<R>x<C>x<K>: accumulators zeroed in
 * registers, C only written) before rewrite_reductions would move the
 * init out. A block that does not fit is left to the decomposed path. */
static void rewrite_tensorize_init(mlc_sched *s, int nb, const char **names) {
  for (int i = 0; i < nb; i++) {
    const mlc_block *b = tuner_find_block(mlc_sched_func(s), names[i]);
    const mlc_ann *an = b ? mlc_ann_find(b->n_anns, b->anns, TUNER_ANN_TENSORIZE) : NULL;
    if (!an || an->kind != MLC_ANN_STRING || !b->init || !whole_reduction_inside(b) ||
        mlc_tensor_intrin_exists(an->s))
      continue;
    char family[80], buf[112];
    snprintf(family, sizeof family, "%s_init", an->s);
    const char *intrin = tensorize_intrin(b, family, buf, sizeof buf);
    mlc_rv brv;
    mlc_error e;
    if (intrin == family || !mlc_tensor_intrin_exists(intrin) ||
        !mlc_sched_get_block(s, names[i], NULL, &brv, &e))
      continue;
    /* a refusal changes nothing; the annotation goes only when it fits */
    if (mlc_sched_tensorize(s, brv, intrin, &e)) mlc_sched_unannotate(s, brv, TUNER_ANN_TENSORIZE, &e);
  }
}

/* meta-schedule's RewriteTensorize: a block the tiling-with-intrinsic rule
 * annotated is tensorized with that intrinsic (after rewrite_reductions
 * moved its init out). A refusal leaves the block as computed loops. */
static void rewrite_tensorize(mlc_sched *s, int nb, const char **names) {
  for (int i = 0; i < nb; i++) {
    const mlc_block *b = tuner_find_block(mlc_sched_func(s), names[i]);
    const mlc_ann *an = b ? mlc_ann_find(b->n_anns, b->anns, TUNER_ANN_TENSORIZE) : NULL;
    if (!an || an->kind != MLC_ANN_STRING) continue;
    char buf[96];
    const char *intrin = tensorize_intrin(b, an->s, buf, sizeof buf);
    mlc_rv brv;
    mlc_error e;
    if (mlc_sched_get_block(s, names[i], NULL, &brv, &e) &&
        mlc_sched_unannotate(s, brv, TUNER_ANN_TENSORIZE, &e))
      mlc_sched_tensorize(s, brv, intrin, &e);
  }
}

/* ---- the pipeline ------------------------------------------------------------------ */

bool tuner_postproc_verify(const mlc_sched *s, mlc_error *err) {
  return mlc_verify_func(mlc_sched_func(s), err) || mlc_error_prefix(err, "postproc: verify");
}

bool tuner_postproc_cpu(mlc_sched *s, const mlc_tuner_opts *o, mlc_error *err) {
  mlc_sched_enter_postproc(s);
  pvu_plan p;
  if (!take_plan(s, &p, err)) return mlc_error_prefix(err, "postproc");
  mlc_arena *a = mlc_arena_new();
  const char **names;
  int nb = tuner_blocks_post_order(a, mlc_sched_func(s), &names);
  if (p.parallel > 0) rewrite_parallel(s, p.parallel);
  if (p.vectorize > 1) rewrite_vectorize(s, p.vectorize, nb, names);
  if (p.unroll > 0) rewrite_unroll(s, p.unroll, nb, names);
  rewrite_tensorize_init(s, nb, names);
  rewrite_reductions(s, nb, names);
  nb = tuner_blocks_post_order(a, mlc_sched_func(s), &names); /* decomposed: X_update, X_init */
  rewrite_tensorize(s, nb, names);
  mlc_arena_free(a);
  return o->verify_later || tuner_postproc_verify(s, err);
}
