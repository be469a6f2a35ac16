/* Tests of tuner/: design-space samples and mutants compute what the
 * unscheduled program computes (reference interpreter on small shapes, and
 * a few through LLVM + JIT), mutants stay replayable, the search
 * deduplicates, ends on an exhausted space and is deterministic. */
#include "tuner/tuner_internal.h" /* the search and design spaces */
#include "db/db.h"
#include "measure/measure.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/test.h"

#include <pthread.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------- */

static mlc_prim_func *task(mlc_arena *a, const char *name, const char *shape) {
  const mlc_task_def *d = mlc_task_find(name);
  int64_t sh[MLC_TASK_MAX_DIMS];
  mlc_error e;
  if (!d || !mlc_task_parse_shape(d, shape, sh, &e)) return NULL;
  return mlc_task_build(a, d, sh);
}

static void small_opts(mlc_tuner_opts *o, uint64_t seed) {
  mlc_tuner_opts_default(o);
  o->num_cores = 2;
  o->seed = seed;
  o->population = 24;
  o->generations = 2;
  o->min_parallel_work = 0; /* the small shapes here start parallel like big ones */
}

/* Run f and g on the same random inputs; outputs must agree. */
static bool same_results(const mlc_prim_func *f, const mlc_prim_func *g, char *why, size_t n_why) {
  int n = f->n_params;
  mlc_array **x = mlc_xmalloc(sizeof(*x) * (size_t)n), **y = mlc_xmalloc(sizeof(*y) * (size_t)n);
  mlc_array *xs = mlc_xmalloc(sizeof(*xs) * (size_t)n), *ys = mlc_xmalloc(sizeof(*ys) * (size_t)n);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 99, 1);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    x[i] = mlc_array_for_buffer(f->params[i]);
    y[i] = mlc_array_for_buffer(g->params[i]);
    mlc_array_fill_random(x[i], &rng);
    for (int64_t k = 0; k < mlc_array_numel(x[i]); k++) mlc_array_set(y[i], k, mlc_array_get(x[i], k));
    xs[i] = *x[i];
    ys[i] = *y[i];
  }
  mlc_error e;
  if (!mlc_interp_run(f, xs, &e) || !mlc_interp_run(g, ys, &e)) {
    snprintf(why, n_why, "interp: %.300s", e.msg);
    ok = false;
  }
  for (int i = 0; ok && i < n; i++) {
    double m;
    if (!mlc_array_allclose(y[i], x[i], 1e-4, 1e-4, &m)) {
      snprintf(why, n_why, "param %d differs by %g", i, m);
      ok = false;
    }
  }
  for (int i = 0; i < n; i++) mlc_array_free(x[i]), mlc_array_free(y[i]);
  mlc_free(x), mlc_free(y), mlc_free(xs), mlc_free(ys);
  return ok;
}

/* The full trace survives JSON and replays (no decision resampled) onto a
 * fresh copy of f giving the same program. */
static bool replays_same(const mlc_prim_func *f, const mlc_sched *c, char *why, size_t n_why) {
  mlc_str js = {0};
  mlc_trace_to_json(&js, mlc_sched_trace(c));
  mlc_arena *a = mlc_arena_new();
  mlc_error e;
  bool ok = false;
  mlc_trace *t = mlc_trace_from_json(a, js.data, js.len, &e);
  mlc_sched *r = t ? mlc_sched_new(f, 5) : NULL;
  mlc_replay_report rep;
  if (!t) snprintf(why, n_why, "json: %.300s", e.msg);
  else if (!mlc_sched_replay(r, t, NULL, &rep, &e)) snprintf(why, n_why, "replay: %.300s", e.msg);
  else if (rep.n_resampled) snprintf(why, n_why, "replay resampled %d decisions", rep.n_resampled);
  else if (!mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(c)))
    snprintf(why, n_why, "replayed program differs");
  else if (mlc_trace_hash(mlc_sched_trace(r)) != mlc_trace_hash(mlc_sched_trace(c)))
    snprintf(why, n_why, "replayed trace hashes differently");
  else ok = true;
  mlc_sched_free(r);
  mlc_arena_free(a);
  mlc_str_free(&js);
  return ok;
}

static void print_trace_on_failure(const mlc_sched *c) {
  mlc_str s = {0};
  mlc_trace_print(&s, mlc_sched_trace(c));
  fprintf(stderr, "%s\n", mlc_str_cstr(&s));
  mlc_str_free(&s);
}

/* Whether the sketch part of t unrolls loops: only the register tile's
 * sketches do (tuner/regtile.c; tests/test_tuner_regtile.c checks them). */
static bool is_register_sketch(const mlc_trace *t) {
  for (int i = 0; i < t->insts.len; i++) {
    if (t->insts.data[i].kind == MLC_INST_ENTER_POSTPROC) return false;
    if (t->insts.data[i].kind == MLC_INST_UNROLL) return true;
  }
  return false;
}

/* ---- design space and mutants per task -------------------------------------------- */

typedef struct task_case {
  const char *name, *shape;
  int samples, mutants;
} task_case;

static const task_case CASES[] = {
    {"matmul", "16,16,16", 12, 12},
    {"batch_matmul", "2,8,8,8", 8, 8},
    {"dense_bias_relu", "8,16,16", 8, 8},
    {"conv2d_nchw", "1,4,6,6,4,3,3", 6, 6},
    {"softmax", "4,16", 6, 6},
    {"reduce_sum", "4,64", 6, 6},     /* add-rfactor sketches */
    {"layernorm", "4,16", 6, 6},
    {"matmul_relu", "8,8,8", 6, 6},
    {"conv2d_nchwc", "1,8,5,5,16,3,3", 6, 6}, /* blocked layout: vector over k */
};

static long g_samples, g_mutants;

/* The sanitizer build checks half as many samples (it runs ~3x slower). */
#ifdef __SANITIZE_ADDRESS__
enum { SAMPLE_DIV = 2 };
#else
enum { SAMPLE_DIV = 1 };
#endif

static void check_task(const task_case *tc) {
  char why[512] = "";
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, tc->name, tc->shape);
  CHECK_MSG(f != NULL, "task %s", tc->name);
  if (!f) goto done;
  mlc_tuner_opts o;
  small_opts(&o, 7);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  CHECK_MSG(sp != NULL, "%s: space: %s", tc->name, e.msg);
  if (!sp) goto done;
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 3, 4);
  for (int i = 0; i < mlc_tuner_space_count(sp); i++) {
    int ok_samples = 0;
    for (int k = 0; k < (tc->samples + 1) / SAMPLE_DIV && !test_case_failed_; k++) {
      mlc_sched *c = mlc_tuner_space_sample(sp, i, 1000 + (uint64_t)k, &e);
      if (!c) continue; /* a rejected sample is allowed, a wrong one is not */
      ok_samples++;
      g_samples++;
      bool same = same_results(f, mlc_sched_func(c), why, sizeof why);
      CHECK_MSG(same, "%s space %d sample %d: %s", tc->name, i, k, why);
      bool rep = replays_same(f, c, why, sizeof why);
      CHECK_MSG(rep, "%s space %d sample %d: %s", tc->name, i, k, why);
      if (!same || !rep) print_trace_on_failure(c);
      /* mutants of this sample, each mutator in turn and by probability */
      for (int m = 0; m < tc->mutants / tc->samples + 1 && !test_case_failed_; m++) {
        int which = k % 2 ? -1 : (k / 2) % MLC_MUTATOR_COUNT;
        mlc_sched *mu = mlc_tuner_mutate(f, c, which, &rng, &o, &e);
        if (!mu) continue;
        g_mutants++;
        same = same_results(f, mlc_sched_func(mu), why, sizeof why);
        CHECK_MSG(same, "%s mutant (%d) of sample %d: %s", tc->name, which, k, why);
        rep = replays_same(f, mu, why, sizeof why);
        CHECK_MSG(rep, "%s mutant (%d) of sample %d: %s", tc->name, which, k, why);
        if (!same || !rep) print_trace_on_failure(mu);
        mlc_sched_free(mu);
      }
      mlc_sched_free(c);
    }
    CHECK_MSG(ok_samples > 0, "%s: space %d gave no valid sample (last: %s)", tc->name, i, e.msg);
  }
  mlc_tuner_space_free(sp);
done:
  mlc_arena_free(a);
}

static void test_space_matmul(void) { check_task(&CASES[0]); }
static void test_space_batch_matmul(void) { check_task(&CASES[1]); }
static void test_space_dense_bias_relu(void) { check_task(&CASES[2]); }
static void test_space_conv2d(void) { check_task(&CASES[3]); }
static void test_space_softmax(void) { check_task(&CASES[4]); }
static void test_space_others(void) {
  for (int i = 5; i < MLC_COUNTOF(CASES); i++) check_task(&CASES[i]);
}

/* reduce_sum with little spatial parallelism gets rfactor sketches;
 * softmax's reductions get sampled compute locations, and the
 * compute-location mutator moves them. */
static void test_rfactor_and_location(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "reduce_sum", "4,64");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  int rf = 0;
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++) {
    const mlc_trace *t = mlc_tuner_space_trace(sp, k);
    for (int i = 0; i < t->insts.len; i++) rf += t->insts.data[i].kind == MLC_INST_RFACTOR;
  }
  CHECK_MSG(sp && mlc_tuner_space_count(sp) == 3 && rf == 2, "%d spaces, %d rfactor",
            sp ? mlc_tuner_space_count(sp) : -1, rf);
  mlc_tuner_space_free(sp);

  char why[512];
  mlc_prim_func *g = task(a, "softmax", "4,16");
  sp = mlc_tuner_space_new(g, &o, &e);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 8, 8);
  int moved = 0;
  for (int k = 0; sp && k < 12; k++) {
    /* the last sketch: no rfactor, reductions at sampled locations */
    mlc_sched *c = mlc_tuner_space_sample(sp, mlc_tuner_space_count(sp) - 1, (uint64_t)k, &e);
    mlc_sched *m = c ? mlc_tuner_mutate(g, c, MLC_MUTATE_COMPUTE_LOCATION, &rng, &o, &e) : NULL;
    CHECK_MSG(m != NULL, "mutate: %s", e.msg);
    if (m) {
      const mlc_trace *tc = mlc_sched_trace(c), *tm = mlc_sched_trace(m);
      int diff = 0;
      for (int i = 0; i < tc->insts.len && i < tm->insts.len; i++)
        if (tc->insts.data[i].kind == MLC_INST_SAMPLE_COMPUTE_LOCATION)
          diff += tc->insts.data[i].decision.v[0] != tm->insts.data[i].decision.v[0];
      moved += diff > 0;
      CHECK_MSG(same_results(g, mlc_sched_func(m), why, sizeof why), "%s", why);
    }
    mlc_sched_free(m);
    mlc_sched_free(c);
  }
  CHECK_MSG(moved >= 6, "%d of 12 mutants moved a block", moved);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

static int count_kind(const mlc_trace *t, mlc_inst_kind k);

/* softmax's max and sum reduce along rows: the vector_rfactor rule gives
 * each a sketch whose reduce loop is split by a lane count and rfactored
 * there (64 rows: more than add_rfactor takes; 4 sketches: either, both,
 * neither); samples of the one with both
 * vectorize the lanes of both rf blocks (the postprocessor finds them
 * spatial and contiguous) and the write-backs' loops over those lanes,
 * and compute what the unscheduled kernel does.
 * reduce_sum over 64 with 4 rows is add_rfactor's, not this rule's. */
static int count_vectorized(const char *s) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, "T.vectorized(")) != NULL; p++) n++;
  return n;
}

static void test_vector_rfactor(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "softmax", "64,32");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  CHECK_MSG(sp != NULL, "%s", e.msg);
  int both = -1, per[3] = {0, 0, 0};
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++) {
    int rf = count_kind(mlc_tuner_space_trace(sp, k), MLC_INST_RFACTOR);
    if (rf <= 2) per[rf]++;
    if (rf == 2) both = k;
  }
  CHECK_MSG(sp && mlc_tuner_space_count(sp) == 4 && per[0] == 1 && per[1] == 2 && per[2] == 1,
            "%d sketches: %d, %d, %d with 0, 1, 2 rfactors", sp ? mlc_tuner_space_count(sp) : -1,
            per[0], per[1], per[2]);
  char why[512];
  mlc_str out = {0};
  int lanes = 0;
  for (int k = 0; both >= 0 && k < 6; k++) {
    mlc_sched *c = mlc_tuner_space_sample(sp, both, (uint64_t)k, &e);
    CHECK_MSG(c != NULL, "sample: %s", e.msg);
    if (!c) continue;
    CHECK_MSG(same_results(f, mlc_sched_func(c), why, sizeof why), "%s", why);
    mlc_str_clear(&out);
    mlc_print_func(&out, mlc_sched_func(c));
    /* the rf blocks' lanes, their write-backs (a tree over the lanes),
     * exp and norm (spatial anyway) */
    lanes += count_vectorized(mlc_str_cstr(&out)) >= 6;
    if (k == 0 && count_vectorized(mlc_str_cstr(&out)) < 6) fprintf(stderr, "%s\n", mlc_str_cstr(&out));
    mlc_sched_free(c);
  }
  CHECK_MSG(lanes == 6, "%d of 6 samples vectorize both rf blocks and their write-backs", lanes);
  mlc_str_free(&out);
  mlc_tuner_space_free(sp);
  mlc_prim_func *g = task(a, "reduce_sum", "4,64");
  sp = mlc_tuner_space_new(g, &o, &e);
  CHECK_MSG(sp && mlc_tuner_space_count(sp) == 3, "reduce_sum: %d sketches",
            sp ? mlc_tuner_space_count(sp) : -1);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* The sketch of matmul is tiled SSRSRS and annotated for the postprocessor;
 * a sample has parallel and vectorized loops. */
static void test_matmul_sketch_shape(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "64,64,64");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  /* no write cache, a write cache at tile levels 1 and 2, and the level-2
   * one with B packed per outer tile (cache_read computed at it); the
   * register tile, without and with B packed */
  CHECK_MSG(sp && mlc_tuner_space_count(sp) == 6, "%d spaces", sp ? mlc_tuner_space_count(sp) : -1);
  if (!sp) goto done;
  int plain = -1, cached = 0, packed = 0, reg = 0;
  for (int k = 0; k < mlc_tuner_space_count(sp); k++) {
    const mlc_trace *t = mlc_tuner_space_trace(sp, k);
    if (is_register_sketch(t)) {
      reg++;
      continue;
    }
    int tiles = 0, cats = 0, reorders = 0, cw = 0, rca = 0, cr = 0, ca = 0;
    for (int i = 0; i < t->insts.len; i++) {
      tiles += t->insts.data[i].kind == MLC_INST_SAMPLE_PERFECT_TILE;
      cats += t->insts.data[i].kind == MLC_INST_SAMPLE_CATEGORICAL;
      reorders += t->insts.data[i].kind == MLC_INST_REORDER;
      cw += t->insts.data[i].kind == MLC_INST_CACHE_WRITE;
      rca += t->insts.data[i].kind == MLC_INST_REVERSE_COMPUTE_AT;
      cr += t->insts.data[i].kind == MLC_INST_CACHE_READ;
      ca += t->insts.data[i].kind == MLC_INST_COMPUTE_AT;
    }
    /* tiles of i, of j's outer part, of k; j's vector tile and the unroll step */
    CHECK_MSG(tiles == 3 && cats == 2 && reorders == 1 && cw == rca && cw <= 1 && cr == ca &&
                  cr <= cw,
              "space %d: tiles %d cats %d reorders %d cache_write %d cache_read %d", k, tiles,
              cats, reorders, cw, cr);
    if (cw) cached++;
    else plain = k;
    packed += cr;
  }
  CHECK(cached == 3 && packed == 1 && reg == 2 && plain == mlc_tuner_space_count(sp) - 1);
  if (plain < 0) goto done;
  mlc_str out = {0};
  int par = 0, vec = 0;
  for (int k = 0; k < 8; k++) {
    mlc_sched *c = mlc_tuner_space_sample(sp, plain, (uint64_t)k, &e);
    CHECK_MSG(c != NULL, "sample: %s", e.msg);
    if (!c) continue;
    mlc_str_clear(&out);
    mlc_print_func(&out, mlc_sched_func(c));
    par += strstr(mlc_str_cstr(&out), "T.parallel(") != NULL;
    vec += strstr(mlc_str_cstr(&out), "T.vectorized(") != NULL;
    mlc_sched_free(c);
  }
  CHECK_MSG(par == 8, "%d of 8 samples have a parallel loop", par);
  CHECK_MSG(vec >= 4, "%d of 8 samples have a vectorized loop", vec);
  mlc_str_free(&out);
  mlc_tuner_space_free(sp);
done:
  mlc_arena_free(a);
}

/* conv2d_nchwc's weight comes packed ([.., c, k], rows of one vector): no
 * sketch copies it per outer tile, as matmul's B is (above). Write caches:
 * tile levels 1 and 2, and the register tile's. */
static void test_blocked_weight_not_repacked(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "conv2d_nchwc", "1,16,6,6,32,3,3");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  CHECK_MSG(sp != NULL, "%s", e.msg);
  int cached = 0, packed = 0;
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++) {
    const mlc_trace *t = mlc_tuner_space_trace(sp, k);
    for (int i = 0; i < t->insts.len; i++) {
      cached += t->insts.data[i].kind == MLC_INST_CACHE_WRITE;
      packed += t->insts.data[i].kind == MLC_INST_CACHE_READ;
    }
  }
  CHECK_MSG(cached == 3 && packed == 0, "%d write caches, %d packed reads", cached, packed);
  if (sp) mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* The hand-written kernel of bench/kernels/matmul_1024.py (minus its
 * packing of B) in the sketch's terms, scaled to 64^3: i tiles [1, 16, 1,
 * 4], j's vector tile 16 and outer tiles [4, 1, 1], k tiles [64, 1], the
 * write cache at tile level 2, unroll step 64. The sketch must replay these
 * decisions as they are and give the hand kernel's structure: outer loops
 * fused and parallel, a 4 x 16 accumulator (compacted to 64 floats by
 * lowering) initialized, updated over all of k and written back under one
 * loop, rows unrolled, columns vectorized 16 wide; and compute the same. */
static int count_kind(const mlc_trace *t, mlc_inst_kind k) {
  int n = 0;
  for (int i = 0; i < t->insts.len; i++) n += t->insts.data[i].kind == k;
  return n;
}

static mlc_sched *with_hand_decisions(const mlc_prim_func *f, const mlc_trace *t,
                                      const mlc_tuner_opts *o, int *resampled, mlc_error *e) {
  static const int64_t TILES[3][4] = {{1, 16, 1, 4}, {4, 1, 1}, {64, 1}};
  static const int64_t CATS[2] = {16, 64}; /* vector tile, unroll step */
  int idx[8], n = 0, nt = 0, nc = 0;
  mlc_decision d[8];
  for (int i = 0; i < t->insts.len && n < 8; i++) {
    const mlc_inst *in = &t->insts.data[i];
    mlc_decision x = {0};
    if (in->kind == MLC_INST_SAMPLE_PERFECT_TILE && nt < 3) {
      x.n = in->decision.n;
      for (int k = 0; k < x.n; k++) x.v[k] = TILES[nt][k];
      nt++;
    } else if (in->kind == MLC_INST_SAMPLE_CATEGORICAL && nc < 2) {
      x.n = 1;
      x.v[0] = -1;
      for (int a = 0; a < in->n_attrs; a++)
        if (strcmp(in->attrs[a].key, "candidates") == 0)
          for (int k = 0; k < in->attrs[a].n; k++)
            if (in->attrs[a].ints[k] == CATS[nc]) x.v[0] = k;
      nc++;
    } else {
      continue;
    }
    idx[n] = i;
    d[n++] = x;
  }
  mlc_replay_opts ro = {.n_overrides = n, .override_insts = idx, .override_decisions = d,
                        .stop_at_postproc = true};
  mlc_replay_report rep = {0};
  mlc_sched *s = mlc_sched_new(f, 1);
  if (!mlc_sched_replay(s, t, &ro, &rep, e) || !mlc_tuner_postproc(s, o, e)) {
    mlc_sched_free(s);
    return NULL;
  }
  *resampled = rep.n_resampled;
  return s;
}

/* A loop whose body is three nests: the accumulator's init, its update
 * over k and its write-back (the write cache at tile level 2). */
static bool has_three_part_loop(const mlc_stmt *st) {
  if (!st) return false;
  switch (st->kind) {
  case MLC_STMT_FOR:
    if (st->loop.body->kind == MLC_STMT_SEQ && st->loop.body->seq.n == 3) return true;
    return has_three_part_loop(st->loop.body);
  case MLC_STMT_BLOCK_REALIZE: return has_three_part_loop(st->realize.block->body);
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++)
      if (has_three_part_loop(st->seq.stmts[i])) return true;
    return false;
  case MLC_STMT_IF: return has_three_part_loop(st->if_.then_s) || has_three_part_loop(st->if_.else_s);
  case MLC_STMT_ALLOCATE: return has_three_part_loop(st->alloc.body);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return false;
  }
  mlc_unreachable();
}

static void test_matmul_hand_trace(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "64,64,64");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  int found = 0, packed = 0;
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++) {
    const mlc_trace *t = mlc_tuner_space_trace(sp, k);
    if (count_kind(t, MLC_INST_CACHE_WRITE) != 1 || is_register_sketch(t)) continue;
    int resampled = -1;
    mlc_sched *c = with_hand_decisions(f, t, &o, &resampled, &e);
    CHECK_MSG(c != NULL, "sketch %d: %s", k, e.msg);
    if (!c) continue;
    if (has_three_part_loop(mlc_sched_func(c)->body)) {
      found++;
      CHECK_MSG(resampled == 0, "%d hand decisions did not fit", resampled);
      mlc_str out = {0};
      mlc_print_func(&out, mlc_sched_func(c));
      const char *ir = mlc_str_cstr(&out);
      CHECK_MSG(strstr(ir, "T.parallel(") && strstr(ir, "T.vectorized(16)") &&
                    strstr(ir, "T.unroll(4)") && strstr(ir, "C_global"),
                "structure:\n%s", ir);
      mlc_prim_func *low = mlc_target_lower(a, mlc_sched_func(c), &e);
      mlc_str_clear(&out);
      if (low) mlc_print_func(&out, low);
      CHECK_MSG(low && strstr(mlc_str_cstr(&out), "C_global = T.decl_buffer((64,)"),
                "accumulator not compacted to 4 x 16:\n%s", low ? mlc_str_cstr(&out) : e.msg);
      if (count_kind(mlc_sched_trace(c), MLC_INST_CACHE_READ) == 1) {
        /* B's panel of the 64 x 16 outer tile: all 64 k by 16 columns */
        packed++;
        CHECK_MSG(low && strstr(mlc_str_cstr(&out), "B_global = T.decl_buffer((1024,)"),
                  "B not packed per outer tile:\n%s", low ? mlc_str_cstr(&out) : e.msg);
      }
      char why[400];
      CHECK_MSG(same_results(f, mlc_sched_func(c), why, sizeof why), "%s", why);
      mlc_str_free(&out);
    }
    mlc_sched_free(c);
  }
  /* the level-2 write cache, without and with B packed per outer tile */
  CHECK_MSG(found == 2 && packed == 1, "%d sketches give the hand kernel's structure, %d packed",
            found, packed);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* The whole-vector tile goes only on an output dimension that every read
 * walks contiguously (or not at all): batch_matmul's j (B[b, k, j]), not
 * dense's j, which indexes W[j, k] by rows (a vector of it would be a
 * gather). */
static int vector_tiles(const mlc_trace *t) {
  int n = 0;
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    if (in->kind != MLC_INST_SAMPLE_CATEGORICAL) continue;
    for (int a = 0; a < in->n_attrs; a++)
      if (strcmp(in->attrs[a].key, "candidates") == 0 && in->attrs[a].n > 0 &&
          in->attrs[a].ints[0] != 0) /* the unroll steps start with 0 */
        n++;
  }
  return n;
}

static void test_vector_tile_only_contiguous(void) {
  static const char *const cases[][3] = {
      {"batch_matmul", "2,16,16,16", "1"}, {"dense_bias_relu", "8,16,16", "0"}};
  for (int c = 0; c < MLC_COUNTOF(cases); c++) {
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = task(a, cases[c][0], cases[c][1]);
    mlc_tuner_opts o;
    small_opts(&o, 1);
    mlc_error e;
    mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
    CHECK_MSG(sp != NULL, "%s: %s", cases[c][0], e.msg);
    int want = atoi(cases[c][2]);
    for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++)
      CHECK_MSG(is_register_sketch(mlc_tuner_space_trace(sp, k)) ||
                    vector_tiles(mlc_tuner_space_trace(sp, k)) == want, "%s sketch %d: %d vector tiles",
                cases[c][0], k, vector_tiles(mlc_tuner_space_trace(sp, k)));
    mlc_tuner_space_free(sp);
    mlc_arena_free(a);
  }
}

/* Tile-size mutation keeps the product of the factors and changes one
 * tile decision; or it changes j's vector tile (a categorical feeding a
 * split), and then j's outer tile may be drawn again for the new width. */
static void test_mutate_tile_keeps_product(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "64,64,64");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 11, 0);
  int changed = 0;
  for (int k = 0; k < 20 && sp; k++) {
    mlc_sched *c = mlc_tuner_space_sample(sp, 0, (uint64_t)k, &e);
    mlc_sched *m = c ? mlc_tuner_mutate(f, c, MLC_MUTATE_TILE_SIZE, &rng, &o, &e) : NULL;
    CHECK_MSG(m != NULL, "mutate: %s", e.msg);
    if (m) {
      const mlc_trace *tc = mlc_sched_trace(c), *tm = mlc_sched_trace(m);
      int diff = 0, vec_diff = 0, cats = 0;
      for (int i = 0; i < tc->insts.len && i < tm->insts.len; i++) {
        const mlc_inst *x = &tc->insts.data[i], *y = &tm->insts.data[i];
        if (x->kind == MLC_INST_ENTER_POSTPROC) break;
        if (x->kind == MLC_INST_SAMPLE_CATEGORICAL) {
          /* the first is j's vector tile, the second the unroll step */
          if (cats++ == 0) vec_diff = x->decision.v[0] != y->decision.v[0];
          else CHECK(x->decision.v[0] == y->decision.v[0]);
        }
        if (x->kind != MLC_INST_SAMPLE_PERFECT_TILE) continue;
        int64_t px = 1, py = 1;
        for (int j = 0; j < x->decision.n; j++) px *= x->decision.v[j], py *= y->decision.v[j];
        CHECK_MSG(vec_diff ? 64 % py == 0 : px == py, "products %lld, %lld", (long long)px,
                  (long long)py);
        CHECK(y->decision.v[y->decision.n - 1] <= 64);
        diff += memcmp(x->decision.v, y->decision.v, sizeof(int64_t) * (size_t)x->decision.n) != 0;
      }
      CHECK_MSG(vec_diff ? diff <= 1 : diff == 1, "%d tile decisions changed (vector tile %s)",
                diff, vec_diff ? "changed" : "kept");
      changed += diff + vec_diff > 0;
    }
    mlc_sched_free(m);
    mlc_sched_free(c);
  }
  CHECK(changed == 20);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* A decided mutation's key names its mutant's sketch: the same after the
 * trace's JSON round trip, the same from a parent that reaches the same
 * decisions another way, different for another decision; and applying it
 * twice gives the same function. */
static void test_mutation_key(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "64,64,64");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 5, 0);
  int checked = 0;
  for (int k = 0; k < 12 && sp; k++) {
    mlc_sched *c = mlc_tuner_space_sample(sp, 0, (uint64_t)k, &e);
    MLC_ASSERT(c);
    const mlc_trace *tc = mlc_sched_trace(c);
    tuner_mutation m;
    CHECK_MSG(mlc_tuner_draw_mutation(tc, MLC_MUTATE_TILE_SIZE, &rng, &o, &m, &e), "draw: %s", e.msg);
    CHECK(m.decided);
    uint64_t key = tuner_mutation_key(tc, &m);
    mlc_str js = {0};
    mlc_trace_to_json(&js, tc);
    mlc_trace *back = mlc_trace_from_json(a, mlc_str_cstr(&js), js.len, &e);
    mlc_str_free(&js);
    CHECK_MSG(back && tuner_mutation_key(back, &m) == key, "the key changed by JSON");
    mlc_sched *m1 = mlc_tuner_apply_mutation(f, tc, &m, &rng, &o, &e);
    mlc_sched *m2 = mlc_tuner_apply_mutation(f, tc, &m, &rng, &o, &e);
    CHECK_MSG(m1 && m2, "apply: %s", e.msg);
    if (m1 && m2) {
      CHECK(mlc_func_struct_equal(mlc_sched_func(m1), mlc_sched_func(m2)));
      /* back from the mutant: the parent's decision on the mutant's trace
       * names the parent's sketch (where nothing later was resampled) */
      const mlc_trace *t1 = mlc_sched_trace(m1);
      tuner_mutation undo = m;
      undo.decision = tc->insts.data[m.inst].decision;
      bool same_rest = t1->insts.len == tc->insts.len;
      for (int i = 0; same_rest && i < tc->insts.len; i++)
        same_rest = i == m.inst || memcmp(&t1->insts.data[i].decision, &tc->insts.data[i].decision,
                                          sizeof(mlc_decision)) == 0;
      if (same_rest) {
        CHECK(tuner_mutation_key(t1, &undo) == tuner_mutation_key(tc, &undo));
        CHECK(tuner_mutation_key(t1, &undo) != key);
        checked++;
      }
    }
    mlc_sched_free(m1);
    mlc_sched_free(m2);
    mlc_sched_free(c);
  }
  CHECK_MSG(checked >= 6, "only %d mutants kept the other decisions", checked);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* The unroll and parallel mutators change only their own knob. */
static bool has_parallel_loop(const mlc_stmt *st) {
  if (!st) return false;
  switch (st->kind) {
  case MLC_STMT_FOR: return st->loop.kind == MLC_FOR_PARALLEL || has_parallel_loop(st->loop.body);
  case MLC_STMT_BLOCK_REALIZE:
    return has_parallel_loop(st->realize.block->body) || has_parallel_loop(st->realize.block->init);
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++)
      if (has_parallel_loop(st->seq.stmts[i])) return true;
    return false;
  case MLC_STMT_IF: return has_parallel_loop(st->if_.then_s) || has_parallel_loop(st->if_.else_s);
  case MLC_STMT_ALLOCATE: return has_parallel_loop(st->alloc.body);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE: return false;
  }
  mlc_unreachable();
}

/* Kernels under min_parallel_work iterations start serial and the parallel
 * mutator gives them threads; bigger ones start parallel and may go serial. */
static void test_small_kernels_start_serial(void) {
  mlc_arena *a = mlc_arena_new();
  static const struct {
    const char *shape;
    bool small;
  } cases[] = {{"32,32,32", true}, {"128,128,128", false}};
  for (int c = 0; c < MLC_COUNTOF(cases); c++) {
    mlc_prim_func *f = task(a, "matmul", cases[c].shape);
    mlc_tuner_opts o;
    small_opts(&o, 3);
    o.min_parallel_work = (int64_t)1 << 18;
    mlc_error e;
    mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
    mlc_pcg32 rng;
    mlc_pcg32_seed(&rng, 7, 0);
    for (int i = 0; sp && i < mlc_tuner_space_count(sp); i++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, i, 11, &e);
      CHECK_MSG(s != NULL, "%s", e.msg);
      if (!s) continue;
      CHECK_MSG(has_parallel_loop(mlc_sched_func(s)->body) != cases[c].small, "%s sketch %d",
                cases[c].shape, i);
      /* the mutator reaches the other plan: serial <-> threads */
      bool other = false;
      for (int k = 0; k < 8 && !other; k++) {
        mlc_sched *m = mlc_tuner_mutate(f, s, MLC_MUTATE_PARALLEL, &rng, &o, &e);
        if (m) other = has_parallel_loop(mlc_sched_func(m)->body) == cases[c].small;
        mlc_sched_free(m);
      }
      CHECK_MSG(other, "%s sketch %d: no mutation to the other plan", cases[c].shape, i);
      mlc_sched_free(s);
    }
    CHECK(sp != NULL);
    mlc_tuner_space_free(sp);
  }
  mlc_arena_free(a);
}

/* The auto-inline rule leaves exp alone on the CPU (meta-schedule's
 * disallow_op): no softmax sketch inlines its exp block, while
 * dense_bias_relu's bias add is inlined. (Sampled compute locations may
 * still choose to inline exp; that is a measured decision.) */
static void test_auto_inline_keeps_exp(void) {
  static const struct {
    const char *task, *shape;
    bool inlines;
  } cases[] = {{"softmax", "4,32", false}, {"dense_bias_relu", "8,16,16", true}};
  mlc_arena *a = mlc_arena_new();
  for (int c = 0; c < MLC_COUNTOF(cases); c++) {
    mlc_prim_func *f = task(a, cases[c].task, cases[c].shape);
    mlc_tuner_opts o;
    small_opts(&o, 5);
    mlc_error e;
    mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
    CHECK_MSG(sp != NULL, "%s", e.msg);
    for (int i = 0; sp && i < mlc_tuner_space_count(sp); i++) {
      mlc_str t = {0};
      mlc_trace_print(&t, mlc_tuner_space_trace(sp, i));
      bool inlines = strstr(mlc_str_cstr(&t), "sch.compute_inline(") != NULL;
      CHECK_MSG(inlines == cases[c].inlines, "%s sketch %d:\n%s", cases[c].task, i, mlc_str_cstr(&t));
      mlc_str_free(&t);
    }
    mlc_tuner_space_free(sp);
  }
  mlc_arena_free(a);
}

static void test_mutate_unroll_and_parallel(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "64,64,64");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 12, 0);
  /* the sketch without a write cache: its outer loops can always fuse */
  mlc_sched *c = sp ? mlc_tuner_space_sample(sp, mlc_tuner_space_count(sp) - 1, 5, &e) : NULL;
  CHECK(c != NULL);
  for (int k = 0; c && k < 6; k++) {
    mlc_sched *u = mlc_tuner_mutate(f, c, MLC_MUTATE_UNROLL, &rng, &o, &e);
    mlc_sched *p = mlc_tuner_mutate(f, c, MLC_MUTATE_PARALLEL, &rng, &o, &e);
    CHECK_MSG(u && p, "mutate: %s", e.msg);
    if (u && p) {
      const mlc_trace *tc = mlc_sched_trace(c), *tu = mlc_sched_trace(u), *tp = mlc_sched_trace(p);
      int cats = 0;
      for (int i = 0; i < tc->insts.len; i++) {
        const mlc_inst *x = &tc->insts.data[i];
        if (x->kind == MLC_INST_ENTER_POSTPROC) break;
        if (x->kind == MLC_INST_SAMPLE_CATEGORICAL) {
          /* j's vector tile (first) is the tile mutator's, the unroll step ours */
          bool unroll = cats++ == 1;
          CHECK(unroll == (tu->insts.data[i].decision.v[0] != x->decision.v[0]));
          CHECK(tp->insts.data[i].decision.v[0] == x->decision.v[0]);
        }
        if (x->kind == MLC_INST_SAMPLE_PERFECT_TILE) {
          CHECK(memcmp(&tu->insts.data[i].decision, &x->decision, sizeof x->decision) == 0);
          CHECK(memcmp(&tp->insts.data[i].decision, &x->decision, sizeof x->decision) == 0);
        }
      }
      CHECK(mlc_trace_hash(tp) != mlc_trace_hash(tc));
    }
    mlc_sched_free(u);
    mlc_sched_free(p);
  }
  /* compute location: no such decision in these sketches */
  mlc_sched *l = c ? mlc_tuner_mutate(f, c, MLC_MUTATE_COMPUTE_LOCATION, &rng, &o, &e) : NULL;
  CHECK(l == NULL);
  mlc_sched_free(c);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* A few samples through LLVM and the JIT equal the interpreter. */
static void test_jit_samples(void) {
  static const char *const tasks[][2] = {
      {"matmul", "16,16,16"}, {"dense_bias_relu", "8,16,16"}, {"softmax", "4,32"},
      {"conv2d_nchwc", "1,16,6,6,32,3,3"}};
  mlc_target tgt;
  mlc_target_host(&tgt);
  for (int ti = 0; ti < MLC_COUNTOF(tasks); ti++) {
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = task(a, tasks[ti][0], tasks[ti][1]);
    mlc_tuner_opts o;
    small_opts(&o, 1);
    mlc_error e;
    mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
    for (int k = 0; sp && k < mlc_tuner_space_count(sp) + 1 && !test_case_failed_; k++) {
      mlc_sched *c = mlc_tuner_space_sample(sp, k % mlc_tuner_space_count(sp), 77 + (uint64_t)k, &e);
      if (!c) continue;
      const mlc_prim_func *g = mlc_sched_func(c);
      mlc_object obj = {0};
      mlc_jit_lib *lib = NULL;
      mlc_kernel_fn fn = NULL;
      bool built = mlc_target_build(&tgt, 1, &g, (const char *const[]){"tuner_k"}, NULL, &obj, &e) &&
                   (lib = mlc_jit_load(&obj, &e)) && (fn = mlc_jit_lookup(lib, "tuner_k", &e));
      CHECK_MSG(built, "%s sample %d: %s", tasks[ti][0], k, e.msg);
      if (built) {
        int n = f->n_params;
        mlc_array *x[8], *y[8], xs[8];
        mlc_pcg32 rng;
        mlc_pcg32_seed(&rng, 5, 5);
        for (int i = 0; i < n; i++) {
          x[i] = mlc_array_for_buffer(f->params[i]);
          y[i] = mlc_array_for_buffer(f->params[i]);
          mlc_array_fill_random(x[i], &rng);
          memcpy(y[i]->data, x[i]->data, (size_t)mlc_array_numel(x[i]) * 4);
          xs[i] = *x[i];
        }
        CHECK(mlc_interp_run(f, xs, &e));
        for (int i = 0; i < n; i++) xs[i] = *y[i];
        CHECK(mlc_kernel_call(fn, n, xs) == 0);
        double m;
        CHECK_MSG(mlc_array_allclose(y[n - 1], x[n - 1], 1e-4, 1e-4, &m), "%s sample %d: err %g",
                  tasks[ti][0], k, m);
        for (int i = 0; i < n; i++) mlc_array_free(x[i]), mlc_array_free(y[i]);
      }
      if (lib) mlc_jit_unload(lib);
      mlc_object_free(&obj);
      mlc_sched_free(c);
    }
    mlc_tuner_space_free(sp);
    mlc_arena_free(a);
  }
}

/* ---- search ------------------------------------------------------------------------ */

/* Batches never repeat a trace, nor one added as measured. */
static void test_search_dedup(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_tuner_opts o;
  small_opts(&o, 21);
  mlc_error e;
  mlc_tuner_search *s = mlc_tuner_search_new(f, &o, &e);
  CHECK(s != NULL);
  /* one sample measured before the search starts */
  mlc_sched *pre = mlc_tuner_space_sample(mlc_tuner_search_space(s), 0, 4242, &e);
  uint64_t pre_h = mlc_trace_hash(mlc_sched_trace(pre));
  mlc_tuner_search_add_measured(s, mlc_sched_trace(pre), 1e-3);
  uint64_t seen[256];
  int n_seen = 0;
  for (int r = 0; r < 4; r++) {
    mlc_tuner_cand *b;
    int n = mlc_tuner_search_next_batch(s, 16, &b, &e);
    CHECK_MSG(n == 16, "round %d: %d (%s)", r, n, mlc_tuner_search_message(s));
    for (int i = 0; i < n; i++) {
      CHECK(b[i].hash == mlc_trace_hash(mlc_sched_trace(b[i].sched)));
      CHECK(b[i].hash != pre_h);
      for (int j = 0; j < n_seen; j++) CHECK_MSG(seen[j] != b[i].hash, "round %d: repeat", r);
      if (n_seen < 256) seen[n_seen++] = b[i].hash;
      if (i > 0 && !b[i].random && !b[i - 1].random) CHECK(b[i - 1].score >= b[i].score);
      mlc_tuner_search_commit(s, b[i].sched, 1e-3 * (1 + i));
    }
  }
  mlc_sched_free(pre);
  mlc_tuner_search_free(s);
  mlc_arena_free(a);
}

/* The postprocessors end by verifying the IR unless verify_later (the
 * search's: it verifies what it hands out); tuner_postproc_verify does
 * that check alone. A block whose iter domain is smaller than its loop
 * passes every rewrite and fails the check. */
static void test_postproc_verify_later(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "vecadd", "4");
  mlc_tuner_opts o;
  small_opts(&o, 1);
  for (int later = 0; later < 2; later++) {
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_rv b;
    mlc_error e = {{0}};
    CHECK_MSG(mlc_sched_get_block(s, "C", NULL, &b, &e), "%s", e.msg);
    mlc_block *blk = (mlc_block *)mlc_sched_rv_block(s, b);
    blk->iters[0].dom.extent = mlc_int(mlc_sched_arena(s), 2); /* the loop runs to 4 */
    o.verify_later = later;
    bool ok = tuner_postproc_cpu(s, &o, &e);
    CHECK_MSG(ok == (bool)later, "verify_later %d: postproc returned %d (%s)", later, ok, e.msg);
    if (!later) CHECK_MSG(strstr(e.msg, "postproc: verify") != NULL, "%s", e.msg);
    CHECK(!tuner_postproc_verify(s, &e) && strstr(e.msg, "postproc: verify") != NULL);
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* vecadd of 4 elements has 8 points (4 unroll steps, its loop serial or
 * parallel): the search proposes each once and then ends with a message. */
static void test_search_exhausts(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "vecadd", "4");
  mlc_tuner_opts o;
  small_opts(&o, 3);
  mlc_error e;
  mlc_tuner_search *s = mlc_tuner_search_new(f, &o, &e);
  CHECK_MSG(s != NULL, "%s", e.msg);
  int total = 0, rounds = 0, n;
  do {
    mlc_tuner_cand *b;
    n = mlc_tuner_search_next_batch(s, 3, &b, &e);
    CHECK(n >= 0);
    total += n > 0 ? n : 0;
    rounds++;
    if (n < 3) CHECK(mlc_tuner_search_message(s)[0] != 0);
  } while (n > 0 && rounds < 20);
  CHECK_MSG(total == 8 && rounds <= 4, "total %d rounds %d", total, rounds);
  CHECK(strstr(mlc_tuner_search_message(s), "exhausted") != NULL);
  mlc_tuner_search_free(s);
  mlc_arena_free(a);
}

static void run_search(uint64_t seed, uint64_t *hashes, int n_max, int *count) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "dense_bias_relu", "8,16,16");
  mlc_tuner_opts o;
  small_opts(&o, seed);
  mlc_error e;
  mlc_tuner_search *s = mlc_tuner_search_new(f, &o, &e);
  *count = 0;
  for (int r = 0; s && r < 3; r++) {
    mlc_tuner_cand *b;
    int n = mlc_tuner_search_next_batch(s, 8, &b, &e);
    for (int i = 0; i < n && *count < n_max; i++) {
      hashes[(*count)++] = b[i].hash;
      /* fake runner: a fixed time from the trace hash */
      mlc_tuner_search_commit(s, b[i].sched, 1e-3 * (double)(1 + b[i].hash % 97));
    }
  }
  mlc_tuner_search_free(s);
  mlc_arena_free(a);
}

static void test_search_deterministic(void) {
  uint64_t h1[64], h2[64], h3[64];
  int n1, n2, n3;
  run_search(5, h1, 64, &n1);
  run_search(5, h2, 64, &n2);
  run_search(6, h3, 64, &n3);
  CHECK(n1 == 24 && n2 == n1);
  CHECK(memcmp(h1, h2, sizeof(uint64_t) * (size_t)n1) == 0);
  CHECK(n3 != n1 || memcmp(h1, h3, sizeof(uint64_t) * (size_t)n1) != 0);
}

/* A model through the interface: it is called, and its favourites lead
 * the batch. This one likes a large innermost tile of the j loop. */
typedef struct fake_model {
  int calls;
} fake_model;

static int64_t innermost_extent(const mlc_stmt *st) {
  while (st && st->kind == MLC_STMT_FOR) {
    if (st->loop.body->kind != MLC_STMT_FOR) {
      int64_t e = 0;
      mlc_expr_is_const_int(st->loop.extent, &e);
      return e;
    }
    st = st->loop.body;
  }
  return 0;
}

static bool fake_predict(void *ctx, int n, const mlc_prim_func *const *funcs, double *scores,
                         mlc_error *err) {
  MLC_UNUSED(err);
  ((fake_model *)ctx)->calls++;
  for (int i = 0; i < n; i++) {
    const mlc_stmt *b = mlc_func_root(funcs[i])->body;
    scores[i] = (double)innermost_extent(b);
  }
  return true;
}

/* A search of f scored by the fake model (fm and model outlive it). */
static mlc_tuner_search *fake_model_search(const mlc_prim_func *f, const mlc_tuner_opts *o,
                                           fake_model *fm, mlc_tuner_model *model, mlc_error *e) {
  mlc_tuner_search *s = mlc_tuner_search_new(f, o, e);
  MLC_ASSERT(s);
  *model = (mlc_tuner_model){fake_predict, fm};
  mlc_tuner_search_set_model(s, model);
  return s;
}

static void test_search_uses_model(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "32,32,32");
  mlc_tuner_opts o;
  small_opts(&o, 9);
  o.eps_greedy = 0.25;
  mlc_error e;
  fake_model fm = {0};
  mlc_tuner_model model;
  mlc_tuner_search *s = fake_model_search(f, &o, &fm, &model, &e);
  mlc_tuner_cand *b;
  int n = mlc_tuner_search_next_batch(s, 8, &b, &e);
  CHECK(n == 8);
  CHECK_MSG(fm.calls == o.generations + 1, "model called %d times", fm.calls);
  int n_rand = 0;
  for (int i = 0; i < n; i++) n_rand += b[i].random;
  CHECK_MSG(n_rand == 2, "%d random", n_rand);
  CHECK(!b[0].random && b[0].score >= 16);
  mlc_tuner_search_free(s);
  mlc_arena_free(a);
}

/* In a small space many children of a generation repeat a mutant made
 * before: the round takes it (and its score) instead of replaying it, and
 * every candidate's score is still its own program's. */
static void test_search_reuses_mutants(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "softmax", "4,8");
  mlc_tuner_opts o;
  small_opts(&o, 3);
  o.population = 64;
  o.generations = 3;
  mlc_error e;
  fake_model fm = {0};
  mlc_tuner_model model;
  mlc_tuner_search *s = fake_model_search(f, &o, &fm, &model, &e);
  mlc_tuner_cand *b;
  int n = mlc_tuner_search_next_batch(s, 8, &b, &e);
  CHECK_MSG(n > 0, "%s", n < 0 ? e.msg : mlc_tuner_search_message(s));
  for (int i = 0; i < n; i++) {
    double own;
    const mlc_prim_func *g = mlc_sched_func(b[i].sched);
    fake_predict(&(fake_model){0}, 1, &g, &own, &e);
    CHECK_MSG(b[i].random || b[i].score == own, "candidate %d scored %g, its program %g", i,
              b[i].score, own);
  }
  mlc_tuner_stats st;
  mlc_tuner_search_stats_get(s, &st);
  CHECK_MSG(st.mutations_reused > st.mutations / 10, "%ld of %ld mutants reused",
            st.mutations_reused, st.mutations);
  printf("# tuner: softmax 4x8, population %d, %d generations: %ld of %ld mutants were repeats\n",
         o.population, o.generations, st.mutations_reused, st.mutations);
  mlc_tuner_search_free(s);
  mlc_arena_free(a);
}

/* ---- the tuning loop with a fake runner ------------------------------------------ */

/* Times from the trace text; remembers every trace it was given. */
typedef struct fake_runner {
  uint64_t seen[512];
  int n_seen, repeats, calls;
  bool fail_all;
  int stop_after; /* set *stop after this many calls (0: never) */
  volatile int *stop;
  double max_call[64], run_timeout[64]; /* per call: the early-abort limits given */
  double best_before[64];               /* per call: the best time returned before it */
  double best;                          /* fastest time returned */
  int too_slow;                         /* answered "too slow" */
  int disturb_every;                    /* every k-th OK result stays disturbed (0: none) */
  int n_ok, n_disturbed;                /* OK results returned, of those marked disturbed */
  double base_sec;                      /* the unscheduled kernel's time (0: from the hash) */
  int n_base;                           /* unscheduled kernels timed */
  double first_sec;                     /* the first call's first candidate's time
                                           (0: from the hash) */
  bool wide;                            /* times from 1 us to 1 s (the product of two
                                           hashed factors), not 1 to 997 ms: some
                                           candidate is then 20x slower than the best
                                           whatever traces the space gives */
} fake_runner;

static bool fake_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                         mlc_error *err) {
  MLC_UNUSED(err);
  fake_runner *fr = ud;
  if (fr->calls < 64 && n > 0) {
    fr->max_call[fr->calls] = c[0].max_call_sec;
    fr->run_timeout[fr->calls] = c[0].run_timeout_s;
    fr->best_before[fr->calls] = fr->best;
  }
  fr->calls++;
  for (int i = 0; i < n; i++) {
    mlc_measure_result x = {0}; /* published whole: the tuner may read it at once */
    uint64_t h = mlc_hash_str(c[i].trace ? c[i].trace : "", 0);
    for (int j = 0; j < fr->n_seen; j++) fr->repeats += fr->seen[j] == h;
    if (fr->n_seen < 512) fr->seen[fr->n_seen++] = h;
    if (fr->fail_all) {
      x.status = MLC_MEASURE_BUILD_ERROR;
      snprintf(x.error, sizeof x.error, "build_error: fake");
      mlc_measure_result_publish(&out[i], &x, i);
      continue;
    }
    double sec = fr->wide ? 1e-6 * (double)(1 + h % 997) * (double)(1 + h / 997 % 1000)
                          : 1e-3 * (double)(1 + h % 997);
    if (c[i].max_call_sec > 0 && sec > c[i].max_call_sec) { /* what the runner does */
      x.status = MLC_MEASURE_TIMEOUT;
      snprintf(x.error, sizeof x.error, "timeout: too slow: the checked call took %g s",
               sec);
      fr->too_slow++;
      mlc_measure_result_publish(&out[i], &x, i);
      continue;
    }
    bool base = !c[i].trace || !*c[i].trace;
    if (base && fr->base_sec > 0) sec = fr->base_sec;
    if (fr->calls == 1 && i == 0 && fr->first_sec > 0) sec = fr->first_sec;
    fr->n_base += base;
    x.status = MLC_MEASURE_OK;
    x.n_secs = 1;
    x.secs[0] = x.mean_sec = sec;
    if (!base && (fr->best == 0 || sec < fr->best)) fr->best = sec;
    if (!base && fr->disturb_every && ++fr->n_ok % fr->disturb_every == 0) {
      x.disturbed = true; /* what the runner says after its two retimes */
      x.retimes = 2;
      fr->n_disturbed++;
    }
    mlc_measure_result_publish(&out[i], &x, i);
  }
  if (fr->stop_after && fr->calls >= fr->stop_after) *fr->stop = 1;
  return true;
}

static char g_db_path[64];

static mlc_db *fresh_db(void) {
  snprintf(g_db_path, sizeof g_db_path, "/tmp/mlc_test_tuner_%d.db", (int)getpid());
  unlink(g_db_path);
  char wal[80];
  snprintf(wal, sizeof wal, "%s-wal", g_db_path);
  unlink(wal);
  snprintf(wal, sizeof wal, "%s-shm", g_db_path);
  unlink(wal);
  mlc_error e;
  return mlc_db_open(g_db_path, MLC_DB_CREATE, &e);
}

static void loop_opts(mlc_tuner_tune_opts *o, fake_runner *fr, const char *task_name, int trials) {
  mlc_tuner_tune_opts_default(o);
  o->task = task_name;
  o->shape = "";
  o->trials = trials;
  o->trials_per_round = 8;
  o->cost_model = "random";
  o->measure = fake_measure;
  o->measure_ud = fr;
  o->remeasure_top = 0;
  o->no_default_candidate = true; /* the search's own mechanics (test_loop_default_candidate) */
  small_opts(&o->search, 5);
}

/* fake_measure, noting which candidates are GPU kernels for a cuda target. */
typedef struct gpu_probe {
  fake_runner fr;
  int n, bound;
} gpu_probe;

static bool gpu_probe_measure(void *ud, int n, const mlc_measure_cand *c,
                              mlc_measure_result *out, mlc_error *err) {
  gpu_probe *g = ud;
  for (int i = 0; i < n; i++) {
    g->n++;
    g->bound += c[i].trace && strstr(c[i].trace, "threadIdx.x") && c[i].target &&
                strncmp(c[i].target, "cuda", 4) == 0;
  }
  return fake_measure(&g->fr, n, c, out, err);
}

/* A cuda target goes through the same loop and database as the CPU, with
 * the GPU design space chosen by the target's kind; without a CUDA driver
 * or device the real runner stops it before the first round. */
static void test_loop_cuda_target(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "64,64,64");
  mlc_db *db = fresh_db();
  CHECK(db != NULL);
  gpu_probe g;
  memset(&g, 0, sizeof g);
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &g.fr, "matmul", 8);
  o.target = "cuda -arch=sm_80";
  o.measure = gpu_probe_measure;
  o.measure_ud = &g;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK_MSG(g.n == 8 && g.bound == g.n, "%d of %d candidates bound to GPU threads", g.bound, g.n);
  CHECK(r.measured == 8 && r.best_sec > 0);
  mlc_error ce;
  if (!mlc_measure_runner_check(o.target, &ce)) {
    CHECK_MSG(strncmp(ce.msg, "no CUDA device: ", 16) == 0, "%s", ce.msg);
    o.measure = NULL;
    o.trials = 16;
    bool ok = mlc_tuner_tune(db, f, &o, &r, &e);
    CHECK_MSG(!ok && strncmp(e.msg, "no CUDA device: ", 16) == 0, "%s", ok ? "ran" : e.msg);
    CHECK(r.rounds == 0 && r.measured == 0);
    printf("# cuda target without a device: %s\n", e.msg);
  }
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

static void test_loop_resume(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_db *db = fresh_db();
  CHECK(db != NULL);
  fake_runner fr = {0};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r1, r2, r3;
  mlc_error e;
  loop_opts(&o, &fr, "matmul", 32);
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r1, &e), "%s", e.msg);
  CHECK(r1.measured == 32 && r1.measured_before == 0 && r1.rounds == 4 && r1.best_sec > 0);
  o.trials = 64;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r2, &e), "%s", e.msg);
  CHECK(r2.measured_before == 32 && r2.measured == 32);
  CHECK(r2.best_sec > 0 && r2.best_sec <= r1.best_sec);
  CHECK_MSG(fr.repeats == 0, "%d traces measured twice", fr.repeats);
  CHECK(mlc_tuner_tune(db, f, &o, &r3, &e));
  CHECK(r3.nothing_to_do && r3.measured == 0 && strstr(r3.message, "nothing to do"));
  CHECK(r3.best_record_id > 0 && r3.best_sec == r2.best_sec);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* fake_measure, with library candidates (LibraryCall traces) counted and
 * given lib_sec (0: fake_measure's time). */
typedef struct lib_probe {
  fake_runner fr;
  int n_lib;
  double lib_sec;
} lib_probe;

static bool lib_probe_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                              mlc_error *err) {
  lib_probe *p = ud;
  bool ok = fake_measure(&p->fr, n, c, out, err);
  for (int i = 0; i < n; i++) {
    if (!c[i].trace || !strstr(c[i].trace, "\"LibraryCall\"")) continue;
    p->n_lib++;
    if (p->lib_sec > 0) out[i].secs[0] = out[i].mean_sec = p->lib_sec;
  }
  return ok;
}

/* --library: the library candidate is measured once, first, recorded like
 * any other, and chosen as the best when it is fastest; a rerun does not
 * measure it again; a kernel without a matmul gets a note; without the
 * option no candidate calls a library. */
static void test_loop_library(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "dense_bias_relu", "16,16,16");
  mlc_db *db = fresh_db();
  CHECK(db != NULL);
  lib_probe p = {.lib_sec = 1e-6};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &p.fr, "dense_bias_relu", 8);
  o.measure = lib_probe_measure;
  o.measure_ud = &p;
  o.library = "openblas";
  /* every tuned candidate is far slower than the library, yet none is
   * stopped early: the early abort follows the best tuned time */
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK_MSG(p.n_lib == 1 && r.library_sec == 1e-6, "%d library candidates, %g s", p.n_lib,
            r.library_sec);
  CHECK_MSG(r.measured == 8 && r.rounds == 1, "%d measured in %d rounds", r.measured, r.rounds);
  CHECK_MSG(p.fr.too_slow == 0 && p.fr.max_call[1] == 0, "%d stopped as too slow, limit %g s",
            p.fr.too_slow, p.fr.max_call[1]);
  mlc_tuner_library_cmp cmp;
  CHECK(mlc_tuner_library_compare(db, r.workload_id, o.target, &cmp, &e) == 1);
  CHECK_STREQ(cmp.library, "openblas");
  CHECK_MSG(fabs(cmp.library_sec - 1e-6) < 1e-12 && cmp.tuned_sec > cmp.library_sec && cmp.tuned_id > 0,
            "library %g, tuned %g (record %lld)", cmp.library_sec, cmp.tuned_sec, (long long)cmp.tuned_id);
  CHECK_MSG(r.best_record_id == cmp.library_id, "best %lld, library %lld",
            (long long)r.best_record_id, (long long)cmp.library_id);
  /* its record replays to the function that was measured */
  mlc_db_record rec;
  if (mlc_db_get_record(db, cmp.library_id, a, &rec, &e) == 1) {
    CHECK(strstr(rec.trace, "[\"LibraryCall\",[\"b0\"],{\"library\":\"openblas\"},[]]") != NULL);
    CHECK_MSG(tuner_record_trusted(a, f, &rec, &e), "%s", e.msg);
  }
  o.trials = 16;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK(p.n_lib == 1 && r.library_sec == 0 && r.measured == 8);
  CHECK_MSG(strstr(r.library_note, "already holds its openblas record"), "%s", r.library_note);
  CHECK_MSG(p.fr.repeats == 0, "%d traces measured twice", p.fr.repeats);
  /* a kernel with no matmul: a note, the search as usual */
  mlc_prim_func *v = task(a, "vecadd", "64");
  loop_opts(&o, &p.fr, "vecadd", 8);
  o.measure = lib_probe_measure;
  o.measure_ud = &p;
  o.library = "openblas";
  CHECK_MSG(mlc_tuner_tune(db, v, &o, &r, &e), "%s", e.msg);
  CHECK(p.n_lib == 1 && r.measured == 8);
  CHECK_MSG(strstr(r.library_note, "not applicable: library_call: b0 (block C) with openblas"),
            "%s", r.library_note);
  /* without --library */
  mlc_prim_func *g = task(a, "matmul", "16,16,16");
  loop_opts(&o, &p.fr, "matmul", 8);
  o.measure = lib_probe_measure;
  o.measure_ud = &p;
  CHECK_MSG(mlc_tuner_tune(db, g, &o, &r, &e), "%s", e.msg);
  CHECK(p.n_lib == 1 && r.library_note[0] == 0);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* (mpi) A measure function that fails part way: on its die_on-th call it
 * returns results for the first three candidates, then false (a
 * measurement host died). */
typedef struct dying_runner {
  fake_runner fr;
  int calls, die_on;
} dying_runner;

static bool dying_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                          mlc_error *err) {
  dying_runner *d = ud;
  if (++d->calls != d->die_on) return fake_measure(&d->fr, n, c, out, err);
  fake_measure(&d->fr, n < 3 ? n : 3, c, out, err);
  return mlc_error_set(err, "measurement host died");
}

/* The results received before the failure are committed and the error
 * says so; a rerun measures only the rest, none twice. */
static void test_loop_partial_batch(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_db *db = fresh_db();
  CHECK(db != NULL);
  dying_runner d = {.die_on = 2};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r1, r2;
  mlc_error e;
  loop_opts(&o, &d.fr, "matmul", 32);
  o.measure = dying_measure;
  o.measure_ud = &d;
  bool ok = mlc_tuner_tune(db, f, &o, &r1, &e);
  CHECK_MSG(!ok && strstr(e.msg, "measurement host died") &&
                strstr(e.msg, "the 3 results of the last batch received before were stored"),
            "%s", ok ? "succeeded" : e.msg);
  CHECK_MSG(r1.measured == 11, "measured %d", r1.measured);
  d.die_on = 0;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r2, &e), "%s", e.msg);
  CHECK_MSG(r2.measured_before == 11 && r2.measured == 21, "%d before, %d now",
            r2.measured_before, r2.measured);
  CHECK_MSG(d.fr.repeats == 0, "%d traces measured twice", d.fr.repeats);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* fake_measure, noting whether it ran on a thread other than the tuner's. */
typedef struct thread_probe {
  dying_runner d;
  pthread_t tuner;
  int off_thread, calls;
} thread_probe;

static bool thread_probe_measure(void *ud, int n, const mlc_measure_cand *c,
                                 mlc_measure_result *out, mlc_error *err) {
  thread_probe *t = ud;
  t->calls++;
  t->off_thread += !pthread_equal(pthread_self(), t->tuner);
  return dying_measure(&t->d, n, c, out, err);
}

/* With overlap, each batch is measured on a thread of its own while the
 * next is searched: the same trials, none twice; a measure function that
 * fails part way commits what it returned and the batch searched
 * meanwhile is not measured, as without overlap. */
static void test_loop_overlap(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_db *db = fresh_db();
  CHECK(db != NULL);
  thread_probe t = {.tuner = pthread_self()};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r1, r2, r3;
  mlc_error e;
  loop_opts(&o, &t.d.fr, "matmul", 32);
  o.measure = thread_probe_measure;
  o.measure_ud = &t;
  o.overlap = true;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r1, &e), "%s", e.msg);
  CHECK_MSG(r1.measured == 32 && r1.rounds == 4 && r1.best_sec > 0, "%d measured in %d rounds",
            r1.measured, r1.rounds);
  CHECK_MSG(t.calls == 4 && t.off_thread == 4, "%d of %d calls on another thread", t.off_thread,
            t.calls);
  CHECK(r1.serial_sec >= 0 && r1.serial_sec <= r1.total_sec);
  CHECK_MSG(r1.stored == 32 && r1.commits == 4 && r1.commit_ms_p50 <= r1.commit_ms_p95 &&
                r1.commit_ms_p95 <= r1.commit_ms_max,
            "%d stored in %d commits", r1.stored, r1.commits);
  CHECK_MSG(t.d.fr.repeats == 0, "%d traces measured twice", t.d.fr.repeats);
  mlc_db_close(db);
  db = fresh_db();
  t.d = (dying_runner){.die_on = 2};
  t.calls = 0;
  bool ok = mlc_tuner_tune(db, f, &o, &r2, &e);
  CHECK_MSG(!ok && strstr(e.msg, "measurement host died") &&
                strstr(e.msg, "the 3 results of the last batch received before were stored"),
            "%s", ok ? "succeeded" : e.msg);
  CHECK_MSG(r2.measured == 11 && t.calls == 2, "measured %d in %d calls", r2.measured, t.calls);
  t.d.die_on = 0;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r3, &e), "%s", e.msg);
  CHECK_MSG(r3.measured_before == 11 && r3.measured == 21, "%d before, %d now", r3.measured_before,
            r3.measured);
  CHECK_MSG(t.d.fr.repeats == 0, "%d traces measured twice", t.d.fr.repeats);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* fake_measure's results published one by one, 5 ms apart, as a
 * measurement host returns them. */
static bool slow_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                         mlc_error *err) {
  mlc_measure_result *tmp = mlc_xmalloc(sizeof *tmp * (size_t)n);
  bool ok = fake_measure(ud, n, c, tmp, err);
  for (int i = 0; ok && i < n; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
    mlc_measure_result_publish(&out[i], &tmp[i], i);
  }
  mlc_free(tmp);
  return ok;
}

/* With overlap, results reach the search and the cost model while their
 * batch is still measured (the next batch is searched knowing most of
 * it); without, only when it lands. The same trials either way. */
static void test_loop_streamed(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  for (int overlap = 0; overlap < 2; overlap++) {
    mlc_db *db = fresh_db();
    fake_runner fr = {0};
    mlc_tuner_tune_opts o;
    mlc_tuner_tune_result r;
    mlc_error e;
    loop_opts(&o, &fr, "matmul", 32);
    o.measure = slow_measure;
    o.measure_ud = &fr;
    o.overlap = overlap;
    CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
    CHECK_MSG(r.measured == 32 && fr.repeats == 0, "%d measured, %d twice", r.measured, fr.repeats);
    /* 4 batches of 8: the last 3 are searched while one is in flight */
    if (overlap)
      CHECK_MSG(r.learned_early >= 3 && r.learned_early <= 24, "%d learned early", r.learned_early);
    else
      CHECK_MSG(r.learned_early == 0, "%d learned early without overlap", r.learned_early);
    mlc_db_close(db);
    unlink(g_db_path);
  }
  mlc_arena_free(a);
}

/* A child process started by the first call, as a pool starts its
 * workers, dying with the thread that started it (PR_SET_PDEATHSIG, as
 * the workers do); later calls see whether it still lives. */
typedef struct pdeath_probe {
  fake_runner fr;
  pid_t child;
  int calls, child_gone;
} pdeath_probe;

static bool pdeath_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                           mlc_error *err) {
  pdeath_probe *p = ud;
  if (p->calls++ == 0) {
    int fd[2];
    MLC_ASSERT(pipe(fd) == 0);
    p->child = fork();
    if (p->child == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      char ready = 1;
      if (write(fd[1], &ready, 1) != 1) _exit(1);
      for (;;) pause();
    }
    char ready; /* its death signal is set before this thread can end */
    MLC_ASSERT(read(fd[0], &ready, 1) == 1);
    close(fd[0]);
    close(fd[1]);
  } else {
    usleep(20000); /* a signal sent at the thread's end has arrived by now */
    p->child_gone += waitpid(p->child, NULL, WNOHANG) != 0;
  }
  return fake_measure(&p->fr, n, c, out, err);
}

/* Overlapped batches are measured on one thread that lives through the
 * run: the worker processes a pool starts there are not killed at each
 * batch's end (a thread per batch did that, and the next batch's
 * candidates came back as crashes). */
static void test_loop_overlap_one_thread(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_db *db = fresh_db();
  pdeath_probe p = {0};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &p.fr, "matmul", 24);
  o.measure = pdeath_measure;
  o.measure_ud = &p;
  o.overlap = true;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK_MSG(r.measured == 24 && p.calls == 3, "%d measured in %d calls", r.measured, p.calls);
  CHECK_MSG(p.child_gone == 0, "the first call's child died before %d of the later calls",
            p.child_gone);
  if (p.child > 0) {
    kill(p.child, SIGKILL);
    waitpid(p.child, NULL, 0);
  }
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* The task scheduler's rounds overlapped: measured on another thread,
 * (workload, trace) never twice, the task in flight never chosen next,
 * every trial counted where the database has it. */
typedef struct sched_probe {
  pthread_t tuner;
  int calls, off_thread, repeats, same_as_last, measured;
  int sizes[16]; /* candidates of each call */
  uint64_t seen[256], last_workload;
  int n_seen;
} sched_probe;

static bool sched_probe_measure(void *ud, int n, const mlc_measure_cand *c,
                                mlc_measure_result *out, mlc_error *err) {
  MLC_UNUSED(err);
  sched_probe *t = ud;
  if (t->calls < 16) t->sizes[t->calls] = n;
  t->calls++;
  t->off_thread += !pthread_equal(pthread_self(), t->tuner);
  uint64_t wl = n > 0 ? mlc_hash_str(c[0].workload, 0) : 0;
  t->same_as_last += t->calls > 1 && wl == t->last_workload;
  t->last_workload = wl;
  for (int i = 0; i < n; i++) {
    uint64_t h = mlc_hash_str(c[i].trace, mlc_hash_str(c[i].workload, 0));
    for (int j = 0; j < t->n_seen; j++) t->repeats += t->seen[j] == h;
    if (t->n_seen < 256) t->seen[t->n_seen++] = h;
    mlc_measure_result x = {.status = MLC_MEASURE_OK, .n_secs = 1};
    x.secs[0] = x.mean_sec = 1e-3 * (double)(1 + h % 997);
    mlc_measure_result_publish(&out[i], &x, i);
    t->measured++;
  }
  return true;
}

static void test_sched_overlap(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_tuner_task tasks[2] = {
      {.name = "matmul", .shape = "16,16,16", .func = task(a, "matmul", "16,16,16"), .weight = 1},
      {.name = "matmul", .shape = "16,32,16", .func = task(a, "matmul", "16,32,16"), .weight = 1},
  };
  mlc_db *db = fresh_db();
  CHECK(db != NULL);
  sched_probe t = {.tuner = pthread_self()};
  fake_runner unused = {0};
  mlc_tuner_sched_opts so;
  mlc_tuner_sched_opts_default(&so);
  loop_opts(&so.tune, &unused, "matmul", 0);
  so.tune.measure = sched_probe_measure;
  so.tune.measure_ud = &t;
  so.tune.overlap = true;
  so.trials = 48;
  so.trials_per_round = 8;
  mlc_tuner_task_state st[2];
  mlc_tuner_sched_result sr;
  mlc_error e;
  CHECK_MSG(mlc_tuner_schedule_tasks(db, 2, tasks, &so, st, &sr, &e), "%s", e.msg);
  CHECK_MSG(sr.measured == 48 && t.measured == 48 && st[0].trials + st[1].trials == 48,
            "%d measured (%d by the probe), %d + %d trials", sr.measured, t.measured,
            st[0].trials, st[1].trials);
  CHECK_MSG(t.calls == 6 && t.off_thread == 6, "%d of %d calls on another thread", t.off_thread,
            t.calls);
  CHECK_MSG(t.repeats == 0 && t.same_as_last == 0, "%d repeats, %d rounds of the task in flight",
            t.repeats, t.same_as_last);
  for (int i = 0; i < 2; i++) {
    mlc_db_record *recs;
    int64_t id = mlc_db_add_workload(db, "matmul", tasks[i].shape, tasks[i].func, &e);
    int n = mlc_db_records(db, id, NULL, a, &recs, &e);
    CHECK_MSG(n == st[i].trials && st[i].best_sec > 0, "task %d: %d records, %d trials", i, n,
              st[i].trials);
  }
  /* one task: each round waits for the one before (the task in flight is
   * never chosen), and the rounds go on past it */
  so.trials = st[0].trials + 24; /* the budget counts the task's records */
  t.calls = t.off_thread = t.measured = 0;
  CHECK_MSG(mlc_tuner_schedule_tasks(db, 1, tasks, &so, st, &sr, &e), "%s", e.msg);
  CHECK_MSG(sr.measured == 24 && t.calls == 3 && t.off_thread == 3 && t.repeats == 0,
            "%d measured in %d calls (%d off the thread), %d repeats", sr.measured, t.calls,
            t.off_thread, t.repeats);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* The gradient's warm-up measures every kernel's default schedule in one
 * batch, each then counting as its kernel's warm-up round. */
static void test_sched_warm_up_one_batch(void) {
  mlc_arena *a = mlc_arena_new();
  const char *shapes[3] = {"16,16,16", "16,32,16", "32,16,16"};
  mlc_tuner_task tasks[3];
  for (int i = 0; i < 3; i++)
    tasks[i] = (mlc_tuner_task){.name = "matmul", .shape = shapes[i],
                                .func = task(a, "matmul", shapes[i]), .weight = 1};
  for (int overlap = 0; overlap < 2; overlap++) {
    mlc_db *db = fresh_db();
    sched_probe t = {.tuner = pthread_self()};
    fake_runner unused = {0};
    mlc_tuner_sched_opts so;
    mlc_tuner_sched_opts_default(&so);
    loop_opts(&so.tune, &unused, "matmul", 0);
    so.tune.no_default_candidate = false;
    so.tune.measure = sched_probe_measure;
    so.tune.measure_ud = &t;
    so.tune.overlap = overlap;
    so.trials = 3 + 16;
    so.trials_per_round = 8;
    mlc_tuner_task_state st[3];
    mlc_tuner_sched_result sr;
    mlc_error e;
    CHECK_MSG(mlc_tuner_schedule_tasks(db, 3, tasks, &so, st, &sr, &e), "%s", e.msg);
    CHECK_MSG(t.calls == 3 && t.sizes[0] == 3 && t.sizes[1] == 8 && t.sizes[2] == 8,
              "overlap %d: %d calls of %d, %d, %d", overlap, t.calls, t.sizes[0], t.sizes[1],
              t.sizes[2]);
    CHECK_MSG(sr.measured == 19 && t.repeats == 0, "%d measured, %d repeats", sr.measured,
              t.repeats);
    for (int i = 0; i < 3; i++)
      CHECK_MSG(st[i].default_sec > 0 && st[i].rounds >= 1, "task %d: default %g, %d rounds", i,
                st[i].default_sec, st[i].rounds);
    mlc_db_close(db);
    unlink(g_db_path);
  }
  mlc_arena_free(a);
}

/* Early abort: the first round runs without limits (no best yet, no
 * baseline); from the second on, a call over 20 times the best so far is
 * stopped (the run timeout a few such calls), and those candidates are
 * counted as too slow and recorded as failed. */
static void test_loop_slow_limit(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_db *db = fresh_db();
  fake_runner fr = {0};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &fr, "matmul", 24);
  fr.wide = true;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK(fr.calls == 3 && r.measured == 24);
  CHECK(fr.max_call[0] == 0 && fr.run_timeout[0] == 0);
  double best = fr.best_before[2], want = 20 * best < 0.005 ? 0.005 : 20 * best;
  CHECK_MSG(best > 0 && fabs(fr.max_call[2] - want) < 1e-12, "limit %g, best %g", fr.max_call[2],
            best);
  CHECK(fabs(fr.run_timeout[2] - (2 + 6 * fr.max_call[2])) < 1e-9);
  CHECK_MSG(r.too_slow == fr.too_slow && r.too_slow > 0 && r.errors >= r.too_slow,
            "too slow %d (runner %d), errors %d", r.too_slow, fr.too_slow, r.errors);
  mlc_db_close(db);
  unlink(g_db_path);
  /* off */
  memset(&fr, 0, sizeof fr);
  db = fresh_db();
  loop_opts(&o, &fr, "matmul", 16);
  o.slow_factor = -1;
  CHECK(mlc_tuner_tune(db, f, &o, &r, &e));
  CHECK(fr.max_call[1] == 0 && r.too_slow == 0);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* The runner's side of early abort (measure/ worker processes): a limit
 * below the kernel's time answers TIMEOUT "too slow" without timing runs,
 * and the runner is not restarted for it; no limit measures. */
static void test_runner_too_slow(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "64,64,64");
  mlc_str text = {0};
  mlc_print_func(&text, f);
  mlc_measure_opts mo = mlc_measure_defaults();
  mo.n_builders = 1;
  mlc_error e;
  mlc_measure *m = mlc_measure_new(&mo, &e);
  CHECK_MSG(m != NULL, "%s", e.msg);
  if (m) {
    mlc_measure_cand c[3] = {
        {.workload = text.data, .trace = ""},
        {.workload = text.data, .trace = "", .max_call_sec = 1e-9, .run_timeout_s = 5},
        {.workload = text.data, .trace = "", .max_call_sec = 100},
    };
    mlc_measure_result res[3];
    CHECK_MSG(mlc_measure_run_batch(m, 3, c, res, NULL, NULL, &e), "%s", e.msg);
    CHECK_MSG(res[0].status == MLC_MEASURE_OK && res[0].n_secs == 3, "%s", res[0].error);
    CHECK_MSG(res[1].status == MLC_MEASURE_TIMEOUT && strstr(res[1].error, "too slow"), "%s",
              res[1].error);
    CHECK_MSG(res[2].status == MLC_MEASURE_OK, "%s", res[2].error);
    /* one runner and one builder, never restarted */
    CHECK_MSG(mlc_measure_spawn_count(m) == 2, "%d spawns", mlc_measure_spawn_count(m));
    mlc_measure_free(m);
  }
  mlc_str_free(&text);
  mlc_arena_free(a);
}

/* Same seed, same fake times: the same traces in the same order. */
static void test_loop_deterministic(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "dense_bias_relu", "8,16,16");
  static fake_runner fr[2];
  memset(fr, 0, sizeof fr);
  for (int k = 0; k < 2; k++) {
    mlc_db *db = fresh_db();
    mlc_tuner_tune_opts o;
    mlc_tuner_tune_result r;
    mlc_error e;
    loop_opts(&o, &fr[k], "dense_bias_relu", 24);
    CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
    CHECK(r.measured == 24);
    mlc_db_close(db);
  }
  CHECK(fr[0].n_seen == 24 && fr[1].n_seen == 24);
  CHECK(memcmp(fr[0].seen, fr[1].seen, sizeof(uint64_t) * 24) == 0);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* The learning cost model trains from the second round on (or, without
 * XGBoost, the loop says it falls back to random scores) and the loop
 * still delivers its budget. */
static void test_loop_xgb(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_db *db = fresh_db();
  fake_runner fr = {0};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &fr, "matmul", 48);
  o.trials_per_round = 16;
  o.cost_model = "xgb-rank";
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK(r.measured == 48 && fr.repeats == 0);
  CHECK_MSG(r.message[0] == 0 || strstr(r.message, "random scores"), "%s", r.message);
  o.cost_model = "nosuch";
  CHECK(!mlc_tuner_tune(db, f, &o, &r, &e) && strstr(e.msg, "unknown cost model"));
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* A tiny space ends the loop with a message; failures are recorded as
 * errors; a stop request drops the batch in flight. */
static void test_loop_ends(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "vecadd", "4");
  mlc_db *db = fresh_db();
  fake_runner fr = {0};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &fr, "vecadd", 100);
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK_MSG(r.measured == 8 && r.exhausted && strstr(r.message, "exhausted"), "%d %s", r.measured,
            r.message);
  mlc_db_close(db);

  mlc_prim_func *g = task(a, "matmul", "8,8,8");
  db = fresh_db();
  fake_runner bad = {.fail_all = true};
  loop_opts(&o, &bad, "matmul", 16);
  CHECK(mlc_tuner_tune(db, g, &o, &r, &e));
  CHECK(r.measured == 16 && r.errors == 16 && r.best_sec == 0);
  CHECK(strstr(r.first_error, "fake") != NULL);
  mlc_db_close(db);

  db = fresh_db();
  volatile int stop = 0;
  fake_runner st = {.stop_after = 2, .stop = &stop};
  loop_opts(&o, &st, "matmul", 64);
  o.stop = &stop;
  CHECK(mlc_tuner_tune(db, g, &o, &r, &e));
  CHECK_MSG(r.stopped && r.measured == 8 && r.rounds == 1, "stopped %d measured %d", r.stopped,
            r.measured);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* The default schedule is the first candidate: measured alone before the
 * search and recorded (it counts as a trial); its record replays to what
 * an untuned build compiles; when every tuned candidate is slower it is
 * the best; a rerun does not measure it again; without it, the search
 * alone. */
static void test_loop_default_candidate(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_db *db = fresh_db();
  fake_runner fr = {.first_sec = 1e-9};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &fr, "matmul", 9);
  o.no_default_candidate = false;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK_MSG(r.measured == 9 && fr.calls == 2 && r.default_sec == 1e-9 && r.best_sec == 1e-9,
            "measured %d in %d calls, default %g, best %g", r.measured, fr.calls, r.default_sec,
            r.best_sec);
  mlc_db_record rec;
  char got[17] = "", want[17];
  mlc_func_hash_hex(mlc_tuner_cpu_default_schedule(a, f), want);
  CHECK(mlc_db_get_record(db, r.best_record_id, a, &rec, &e) == 1 &&
        mlc_db_replay_trace(a, f, rec.trace, NULL, got, &e));
  CHECK_MSG(strcmp(got, want) == 0, "the default record replays to %s, the default is %s", got,
            want);
  o.trials = 17;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK_MSG(r.measured_before == 9 && r.measured == 8 && r.default_sec == 0 && fr.repeats == 0,
            "%d before, %d now, default %g, %d measured twice", r.measured_before, r.measured,
            r.default_sec, fr.repeats);
  /* the end check times the default schedule next to the best; a kernel
   * this small has its unscheduled kernel timed too */
  o.trials = 25;
  o.measure_baseline = true;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK_MSG(r.check_base_default && r.check_base_sec > 0 && fr.n_base == 1 && !r.baseline_skipped,
            "check against the default %d (%g s), unscheduled timed %d", r.check_base_default,
            r.check_base_sec, fr.n_base);
  mlc_db_close(db);
  db = fresh_db();
  fake_runner alone = {.first_sec = 1e-9};
  loop_opts(&o, &alone, "matmul", 8);
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK(r.measured == 8 && alone.calls == 1 && r.default_sec == 0);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* ---- figures ----------------------------------------------------------------------- */

/* Samples/s and mutations/s on matmul 1024^3 (the IR does not grow with
 * the shape), and one default round (population 512, 4 generations). */
static void test_throughput(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "1024,1024,1024");
  mlc_tuner_opts o;
  mlc_tuner_opts_default(&o);
  o.num_cores = 2;
  mlc_error e;
  mlc_tuner_space *sp = mlc_tuner_space_new(f, &o, &e);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 1, 1);
  enum { N = 120 };
  mlc_sched *c[N];
  int ns = 0, nm = 0;
  double t0 = mlc_now_sec();
  for (int k = 0; k < N; k++) {
    c[k] = mlc_tuner_space_sample(sp, k % mlc_tuner_space_count(sp), (uint64_t)k, &e);
    ns += c[k] != NULL;
  }
  double t1 = mlc_now_sec();
  for (int k = 0; k < N; k++) {
    mlc_sched *m = c[k] ? mlc_tuner_mutate(f, c[k], -1, &rng, &o, &e) : NULL;
    nm += m != NULL;
    mlc_sched_free(m);
  }
  double t2 = mlc_now_sec();
  for (int k = 0; k < N; k++) mlc_sched_free(c[k]);
  CHECK(ns == N && nm > N * 3 / 4);
  printf("# tuner: matmul 1024^3, %d sketches: %.0f samples/s, %.0f mutations/s (one thread)\n",
         mlc_tuner_space_count(sp), N / (t1 - t0), N / (t2 - t1));
  mlc_tuner_space_free(sp);
#ifdef __SANITIZE_ADDRESS__
  o.population = 128; /* keep the sanitizer build's run short */
#endif
  mlc_tuner_search *s = mlc_tuner_search_new(f, &o, &e);
  mlc_tuner_cand *b;
  t0 = mlc_now_sec();
  int n = mlc_tuner_search_next_batch(s, 64, &b, &e);
  t1 = mlc_now_sec();
  mlc_tuner_stats st;
  mlc_tuner_search_stats_get(s, &st);
  CHECK(n == 64);
  printf("# tuner: one round (population %d, %d generations, batch 64): %.0f ms; %ld samples "
         "(%ld rejected), %ld mutations (%ld rejected)\n",
         o.population, o.generations, 1e3 * (t1 - t0), st.samples, st.samples_rejected,
         st.mutations, st.mutations_rejected);
  mlc_tuner_search_free(s);
  mlc_arena_free(a);
}

/* ---- interference ------------------------------------------------------------------ */

typedef struct progress_seen {
  int calls, last_disturbed, last_retimed, rounds_disturbed;
} progress_seen;

static void on_progress(void *ud, const mlc_tuner_progress *p) {
  progress_seen *ps = ud;
  ps->calls++;
  ps->last_disturbed = p->disturbed;
  ps->last_retimed = p->retimed;
  ps->rounds_disturbed += p->batch_disturbed > 0;
}

/* Records marked disturbed; every record's trace hash (the tuner gives
 * the database its own) must be the one the database derives from the
 * stored text. */
static int db_disturbed(mlc_db *db, int64_t wid) {
  mlc_arena *a = mlc_arena_new();
  mlc_db_record *recs;
  mlc_error e;
  int n = mlc_db_records(db, wid, "llvm", a, &recs, &e), k = 0;
  for (int i = 0; i < n; i++) {
    char h[17];
    CHECK(mlc_db_trace_hash(recs[i].trace, h, NULL, &e) && strcmp(h, recs[i].trace_hash) == 0);
    k += recs[i].disturbed;
  }
  mlc_arena_free(a);
  return n < 0 ? -1 : k;
}

/* Results the runner marks disturbed reach the records (the disturbed
 * column), the counts and the progress callback; rounds with any are
 * counted. */
static void test_loop_disturbed_marked(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  mlc_db *db = fresh_db();
  fake_runner fr = {.disturb_every = 5};
  progress_seen ps = {0};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &fr, "matmul", 24);
  o.slow_factor = -1;
  o.progress = on_progress;
  o.progress_ud = &ps;
  CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
  CHECK(r.measured == 24 && fr.n_disturbed == 4);
  CHECK_MSG(r.disturbed == 4 && r.retimed == 4, "disturbed %d retimed %d", r.disturbed,
            r.retimed);
  CHECK_MSG(db_disturbed(db, r.workload_id) == 4, "%d records marked",
            db_disturbed(db, r.workload_id));
  /* OK results 5, 10 | 15 | 20: rounds of 8 hold 1, 1, 2 of them */
  CHECK_MSG(r.disturbed_rounds == 3 && ps.rounds_disturbed == 3, "rounds %d, seen %d",
            r.disturbed_rounds, ps.rounds_disturbed);
  CHECK(ps.calls == 3 && ps.last_disturbed == 4 && ps.last_retimed == 4);
  mlc_db_close(db);
  unlink(g_db_path);
  /* The best few measured again at the end: disturbed times do not join
   * their records (every result disturbed here), clean ones do. */
  for (int every = 1; every <= 2; every++) {
    db = fresh_db();
    fr = (fake_runner){.disturb_every = every == 1 ? 1 : 0};
    loop_opts(&o, &fr, "matmul", 8);
    o.slow_factor = -1;
    o.remeasure_top = 3;
    CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
    mlc_arena *ra = mlc_arena_new();
    mlc_db_record best;
    CHECK(mlc_db_get_record(db, r.best_record_id, ra, &best, &e) == 1);
    CHECK_MSG(best.n_secs == (every == 1 ? 1 : 2) && best.disturbed == (every == 1),
              "every %d: %d run times, disturbed %d", every, best.n_secs, best.disturbed);
    mlc_arena_free(ra);
    mlc_db_close(db);
    unlink(g_db_path);
  }
  mlc_arena_free(a);
}

/* The end check: the unscheduled kernel is timed next to the best (in one
 * batch, alternately); a best that is not faster gives the warning and
 * not_faster, a faster one neither. */
static void test_loop_best_not_faster(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "16,16,16");
  for (int slow_base = 0; slow_base < 2; slow_base++) {
    mlc_db *db = fresh_db();
    fake_runner fr = {.base_sec = slow_base ? 10.0 : 1e-6};
    mlc_tuner_tune_opts o;
    mlc_tuner_tune_result r;
    mlc_error e;
    loop_opts(&o, &fr, "matmul", 16);
    o.slow_factor = -1;
    o.measure_baseline = true;
    CHECK_MSG(mlc_tuner_tune(db, f, &o, &r, &e), "%s", e.msg);
    /* one at the start, then two pairs */
    CHECK_MSG(fr.n_base == 3, "%d unscheduled timings", fr.n_base);
    CHECK(r.best_sec > 0 && r.check_best_sec == fr.best);
    CHECK(r.check_base_sec == fr.base_sec);
    if (slow_base) {
      CHECK(!r.not_faster && r.warning[0] == 0);
    } else {
      CHECK(r.not_faster);
      CHECK_MSG(strstr(r.warning, "WARNING") && strstr(r.warning, "not faster than the "
                "unscheduled kernel"), "%s", r.warning);
    }
    mlc_db_close(db);
    unlink(g_db_path);
  }
  /* without measure_baseline (the task scheduler's rounds) there is no check */
  mlc_db *db = fresh_db();
  fake_runner fr = {.base_sec = 1e-6};
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  loop_opts(&o, &fr, "matmul", 8);
  CHECK(mlc_tuner_tune(db, f, &o, &r, &e));
  CHECK(fr.n_base == 0 && !r.not_faster && r.check_base_sec == 0);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* Busy processes that want every core several times over. */
static int start_spinners(int n, pid_t *pids) {
  int k = 0;
  for (; k < n; k++) {
    pids[k] = fork();
    if (pids[k] < 0) break;
    if (pids[k] == 0) {
      volatile unsigned long x = 0;
      for (;;) x++;
    }
  }
  return k;
}

static void stop_spinners(int n, const pid_t *pids) {
  for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
  for (int i = 0; i < n; i++) waitpid(pids[i], NULL, 0);
}

/* A real tuning (worker processes) with a busy neighbour started by the
 * test: the runner notices. Calls of milliseconds (256^3), so that the
 * neighbour takes the runner's core inside timed calls (a call of 0.1 ms
 * usually runs whole and is timed right). Some measurements were re-timed,
 * every one that stayed disturbed is marked in its record, and the counts
 * agree with the database. */
static void test_tune_busy_neighbour(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "matmul", "256,256,256");
  mlc_db *db = fresh_db();
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_result r;
  mlc_error e;
  mlc_tuner_tune_opts_default(&o);
  o.task = "matmul";
  o.shape = "256,256,256";
  o.trials = 6;
  o.trials_per_round = 6;
  o.cost_model = "random";
  o.remeasure_top = 0;
  o.n_builders = 1;
  small_opts(&o.search, 7);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  pid_t pids[64];
  int n = start_spinners(cores < 1 ? 4 : cores > 16 ? 64 : 4 * (int)cores, pids);
  CHECK(n > 0);
  bool ok = mlc_tuner_tune(db, f, &o, &r, &e);
  stop_spinners(n, pids);
  CHECK_MSG(ok, "%s", e.msg);
  int ok_results = r.measured - r.errors;
  CHECK_MSG(ok_results > 0, "no successful candidate: %s", r.first_error);
  CHECK_MSG(r.retimed > 0, "%d measured under a busy neighbour, none re-timed (%d disturbed)", ok_results, r.disturbed);
  CHECK(r.disturbed <= r.retimed && r.retimed <= ok_results);
  CHECK_MSG(db_disturbed(db, r.workload_id) == r.disturbed, "%d marked, %d counted",
            db_disturbed(db, r.workload_id), r.disturbed);
  /* two rounds: the default schedule's, then the search's */
  CHECK_MSG(r.disturbed_rounds <= 2 && (r.disturbed_rounds > 0) == (r.disturbed > 0),
            "%d disturbed in %d rounds", r.disturbed, r.disturbed_rounds);
  mlc_db_close(db);
  unlink(g_db_path);
  mlc_arena_free(a);
}

/* The default schedule of a dense over n rows (int64, as ONNX exports
 * write sizes) is the register tile its static instance gets, replayed:
 * a cache of Y, tails under T.where; it verifies and computes what the
 * unscheduled function does at sizes no tile divides. The static instance
 * itself (an int64 row loop fused with int32 column loops) gets it too. */
static void test_default_schedule_sizes(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char *text = mlc_read_file("tests/kernels/sym_dense.py", NULL, &err);
  mlc_module *m = text ? mlc_parse_module(a, "sym_dense.py", text, &err) : NULL;
  mlc_free(text);
  CHECK_MSG(m != NULL, "%s", err.msg);
  if (!m) return mlc_arena_free(a);
  const mlc_prim_func *f = m->funcs[0];
  int64_t n37 = 37;
  mlc_prim_func *inst = mlc_func_specialize(a, f, &n37, &err);
  const mlc_prim_func *fs[2] = {f, inst};
  for (int v = 0; v < 2; v++) {
    mlc_prim_func *g = mlc_tuner_cpu_default_schedule(a, fs[v]);
    mlc_str text_g = {0};
    mlc_print_func(&text_g, g);
    CHECK_MSG(strstr(mlc_str_cstr(&text_g), "Y_global = T.alloc_buffer") != NULL,
              "no register tile in the default schedule of %s:\n%s", v ? "n=37" : "n",
              mlc_str_cstr(&text_g));
    mlc_str_free(&text_g);
    CHECK_MSG(mlc_verify_func(g, &err), "%s", err.msg);
    for (int64_t n = 1; n <= 37; n += 36) {
      if (v == 1 && n != 37) continue;
      mlc_array *x[2][3];
      mlc_pcg32 rng;
      mlc_pcg32_seed(&rng, 3, (uint64_t)n);
      for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++) {
          int64_t shape[2];
          CHECK(mlc_buffer_extents(fs[v], fs[v]->params[i], &n, shape));
          x[k][i] = mlc_array_new(MLC_FLOAT32, 2, shape);
        }
      for (int i = 0; i < 2; i++) {
        mlc_array_fill_random(x[0][i], &rng);
        memcpy(x[1][i]->data, x[0][i]->data, (size_t)mlc_array_numel(x[0][i]) * 4);
      }
      mlc_array want[3] = {*x[0][0], *x[0][1], *x[0][2]}, got[3] = {*x[1][0], *x[1][1], *x[1][2]};
      double me = 0;
      CHECK(mlc_interp_run(fs[v], want, &err) && mlc_interp_run(g, got, &err));
      CHECK_MSG(mlc_array_allclose(x[1][2], x[0][2], 1e-4, 1e-4, &me), "n=%lld: max error %g",
                (long long)n, me);
      for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++) mlc_array_free(x[k][i]);
    }
  }
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_default_schedule_sizes);
  RUN(test_space_matmul);
  RUN(test_space_batch_matmul);
  RUN(test_space_dense_bias_relu);
  RUN(test_space_conv2d);
  RUN(test_space_softmax);
  RUN(test_space_others);
  RUN(test_rfactor_and_location);
  RUN(test_vector_rfactor);
  RUN(test_matmul_sketch_shape);
  RUN(test_blocked_weight_not_repacked);
  RUN(test_matmul_hand_trace);
  RUN(test_vector_tile_only_contiguous);
  RUN(test_mutate_tile_keeps_product);
  RUN(test_mutation_key);
  RUN(test_mutate_unroll_and_parallel);
  RUN(test_small_kernels_start_serial);
  RUN(test_auto_inline_keeps_exp);
  RUN(test_jit_samples);
  RUN(test_search_dedup);
  RUN(test_postproc_verify_later);
  RUN(test_search_exhausts);
  RUN(test_search_deterministic);
  RUN(test_search_uses_model);
  RUN(test_search_reuses_mutants);
  RUN(test_loop_resume);
  RUN(test_loop_library);
  RUN(test_loop_partial_batch);
  RUN(test_loop_overlap);
  RUN(test_loop_streamed);
  RUN(test_loop_overlap_one_thread);
  RUN(test_sched_overlap);
  RUN(test_sched_warm_up_one_batch);
  RUN(test_loop_cuda_target);
  RUN(test_loop_deterministic);
  RUN(test_loop_slow_limit);
  RUN(test_runner_too_slow);
  RUN(test_loop_disturbed_marked);
  RUN(test_loop_best_not_faster);
  RUN(test_tune_busy_neighbour);
  RUN(test_loop_ends);
  RUN(test_loop_default_candidate);
  RUN(test_loop_xgb);
  RUN(test_throughput);
  printf("# tuner: %ld samples and %ld mutants checked against the interpreter\n", g_samples,
         g_mutants);
  return test_summary();
}
