/* Tests of the register-blocked micro-kernel (tuner/regtile.c): the
 * design space's register-tile sketches and the CPU default schedule of
 * GEMM-like blocks compute what the unscheduled program computes (the
 * reference interpreter, and LLVM + JIT), and their accumulator is a
 * small buffer that every access inside the reduction indexes by
 * constants only (unrolled rows, vector lanes): what lets LLVM keep it in
 * registers across the reduction. */
#include "tuner/tuner_internal.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/test.h"

#include <ctype.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mlc_prim_func *task(mlc_arena *a, const char *name, const char *shape) {
  const mlc_task_def *d = mlc_task_find(name);
  int64_t sh[MLC_TASK_MAX_DIMS];
  mlc_error e;
  if (!d || !mlc_task_parse_shape(d, shape, sh, &e)) return NULL;
  return mlc_task_build(a, d, sh);
}

static void small_opts(mlc_tuner_opts *o) {
  mlc_tuner_opts_default(o);
  o->num_cores = 2;
  o->seed = 3;
  o->min_parallel_work = 0;
}

/* Inputs from one seed; the last parameter (the output) compared. */
static bool same_results(const mlc_prim_func *f, const mlc_prim_func *g, bool jit, char *why,
                         size_t n_why) {
  int n = f->n_params;
  mlc_array *x[8], *y[8], xs[8], ys[8];
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 11, 2);
  for (int i = 0; i < n; i++) {
    x[i] = mlc_array_for_buffer(f->params[i]);
    y[i] = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(x[i], &rng);
    memcpy(y[i]->data, x[i]->data, (size_t)mlc_array_numel(x[i]) * 4);
    xs[i] = *x[i], ys[i] = *y[i];
  }
  mlc_error e;
  bool ok = mlc_interp_run(f, xs, &e);
  if (!ok) snprintf(why, n_why, "interp: %.300s", e.msg);
  mlc_object obj = {0};
  mlc_jit_lib *lib = NULL;
  mlc_kernel_fn fn = NULL;
  if (ok && jit) {
    mlc_target tgt;
    mlc_target_host(&tgt);
    ok = mlc_target_build(&tgt, 1, &g, (const char *const[]){"rt_k"}, NULL, &obj, &e) &&
         (lib = mlc_jit_load(&obj, &e)) && (fn = mlc_jit_lookup(lib, "rt_k", &e)) &&
         mlc_kernel_call(fn, n, ys) == 0;
    if (!ok) snprintf(why, n_why, "build/run: %.300s", e.msg);
  } else if (ok) {
    ok = mlc_interp_run(g, ys, &e);
    if (!ok) snprintf(why, n_why, "interp (scheduled): %.300s", e.msg);
  }
  double m = 0;
  if (ok && !mlc_array_allclose(y[n - 1], x[n - 1], 1e-4, 1e-4, &m)) {
    snprintf(why, n_why, "output differs by %g", m);
    ok = false;
  }
  if (lib) mlc_jit_unload(lib);
  mlc_object_free(&obj);
  for (int i = 0; i < n; i++) mlc_array_free(x[i]), mlc_array_free(y[i]);
  return ok;
}

/* ---- the accumulator check on lowered IR ---- */

typedef struct acc_walk {
  const char *name;       /* the write cache's (the output's name + "_global") */
  const mlc_buffer *buf;  /* the accumulator, once its ALLOCATE is found */
  int64_t size;           /* its elements */
  mlc_var *vars[64];      /* serial/parallel loops inside its ALLOCATE */
  int n_vars;
  int deepest;            /* most such loops around one of its accesses */
  int n_access, bad;      /* accesses; those indexed by a serial loop var */
} acc_walk;

static void check_index(acc_walk *w, mlc_expr *const *idx, int n) {
  w->n_access++;
  if (w->n_vars > w->deepest) w->deepest = w->n_vars;
  for (int d = 0; d < n; d++)
    for (int v = 0; v < w->n_vars; v++)
      if (mlc_expr_uses_var(idx[d], w->vars[v])) w->bad++;
}

static void visit_load(const mlc_expr *e, void *ud) {
  acc_walk *w = ud;
  if (e->kind == MLC_EXPR_LOAD && w->buf && e->load.buf == w->buf)
    check_index(w, e->load.indices, e->load.buf->ndim);
}

static void walk(const mlc_stmt *st, acc_walk *w) {
  if (!st) return;
  switch (st->kind) {
  case MLC_STMT_FOR: {
    bool counted = w->buf && (st->loop.kind == MLC_FOR_SERIAL || st->loop.kind == MLC_FOR_PARALLEL);
    if (counted) w->vars[w->n_vars++] = st->loop.var;
    walk(st->loop.body, w);
    if (counted) w->n_vars--;
    return;
  }
  case MLC_STMT_BLOCK_REALIZE: walk(st->realize.block->body, w); return;
  case MLC_STMT_SEQ:
    for (int i = 0; i < st->seq.n; i++) walk(st->seq.stmts[i], w);
    return;
  case MLC_STMT_IF:
    mlc_expr_visit(st->if_.cond, visit_load, w);
    walk(st->if_.then_s, w);
    walk(st->if_.else_s, w);
    return;
  case MLC_STMT_ALLOCATE: {
    bool mine = !w->buf && strcmp(st->alloc.buf->name, w->name) == 0;
    if (mine) {
      w->buf = st->alloc.buf;
      w->size = 1;
      for (int d = 0; d < st->alloc.buf->ndim; d++) w->size *= st->alloc.buf->shape[d];
    }
    walk(st->alloc.body, w);
    return;
  }
  case MLC_STMT_STORE:
    if (w->buf && st->store.buf == w->buf) check_index(w, st->store.indices, st->store.buf->ndim);
    for (int d = 0; w->buf && d < st->store.buf->ndim; d++)
      mlc_expr_visit(st->store.indices[d], visit_load, w);
    mlc_expr_visit(st->store.value, visit_load, w);
    return;
  case MLC_STMT_EVALUATE: mlc_expr_visit(st->eval.value, visit_load, w); return;
  }
  mlc_unreachable();
}

/* The lowered g holds an accumulator (the write cache `name`) of at most
 * max_elems elements, accessed inside at least min_loops serial loops (the
 * reduction) and only at constant indices plus vector lanes. */
static bool acc_in_registers(const mlc_prim_func *g, const char *name, int64_t max_elems, int min_loops, char *why,
                             size_t n_why) {
  mlc_arena *a = mlc_arena_new();
  mlc_error e;
  mlc_prim_func *low = mlc_target_lower(a, g, &e);
  acc_walk w = {.name = name};
  if (low) walk(low->body, &w);
  bool ok = low && w.buf && w.size <= max_elems && w.bad == 0 && w.deepest >= min_loops;
  if (!low) snprintf(why, n_why, "lower: %.300s", e.msg);
  else if (!ok)
    snprintf(why, n_why, "accumulator %s: %lld elements, %d of %d accesses at a loop index, "
                         "deepest in %d loops", w.buf ? w.buf->name : "(none)", (long long)w.size,
             w.bad, w.n_access, w.deepest);
  mlc_arena_free(a);
  return ok;
}

/* ---- design-space sketches ---- */

/* Whether the sketch part of t unrolls loops: only the register tile's
 * sketches do (other sketches leave unrolling to the postprocessor). */
static bool is_register_sketch(const mlc_trace *t) {
  for (int i = 0; i < t->insts.len; i++) {
    if (t->insts.data[i].kind == MLC_INST_ENTER_POSTPROC) return false;
    if (t->insts.data[i].kind == MLC_INST_UNROLL) return true;
  }
  return false;
}

typedef struct sketch_case {
  const char *task, *shape, *acc;
  int want;    /* register sketches: 1, 2 with the streamed operand packed */
  int64_t max; /* accumulator elements: (32 - 4) registers of 16 lanes with AVX-512 */
  int min_loops;
} sketch_case;

static void check_sketches(const sketch_case *c) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, c->task, c->shape);
  mlc_tuner_opts o;
  small_opts(&o);
  mlc_error e;
  mlc_tuner_space *sp = f ? mlc_tuner_space_new(f, &o, &e) : NULL;
  CHECK_MSG(sp != NULL, "%s: %s", c->task, f ? e.msg : "no task");
  int found = 0;
  char why[512];
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++) {
    if (!is_register_sketch(mlc_tuner_space_trace(sp, k))) continue;
    found++;
    int ok_samples = 0;
    for (int i = 0; i < 6 && !test_case_failed_; i++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, k, 100 + (uint64_t)i, &e);
      if (!s) continue;
      ok_samples++;
      const mlc_prim_func *g = mlc_sched_func(s);
      CHECK_MSG(same_results(f, g, i < 2, why, sizeof why), "%s sketch %d sample %d: %s", c->task, k,
                i, why);
      CHECK_MSG(acc_in_registers(g, c->acc, c->max, c->min_loops, why, sizeof why),
                "%s sketch %d sample %d: %s", c->task, k, i, why);
      mlc_sched_free(s);
    }
    CHECK_MSG(ok_samples > 0, "%s sketch %d: no valid sample (%s)", c->task, k, e.msg);
  }
  CHECK_MSG(found == c->want, "%s: %d register-tile sketches, want %d", c->task, found, c->want);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* conv2d_nchwc: rows of x by 16 output-channel lanes (times 2 blocks);
 * its weight is already blocked, so no packed variant. matmul: rows of i
 * by one or two vectors of j, and the variant with B packed. */
static void test_sketches_conv(void) {
  check_sketches(&(sketch_case){"conv2d_nchwc", "1,16,6,14,32,3,3", "conv2d_nchwc_global", 1, 28 * 16, 2});
}

static void test_sketches_matmul(void) {
  check_sketches(&(sketch_case){"matmul", "32,64,48", "C_global", 2, 28 * 16, 1});
  check_sketches(&(sketch_case){"batch_matmul", "2,8,32,16", "C_global", 2, 28 * 16, 1});
}

/* The kernel of a one-dense model y = x . w^T, x [M, K], w [N, K] a
 * weight, through the graph passes: the layout pass packs w to
 * [N/n, K, n] and the kernel's T_dense reads it (graph/lower.c). */
static mlc_prim_func *packed_dense(mlc_arena *a, int M, int N, int K) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"inputs\": [{\"name\": \"x\", \"shape\": [%d, %d]}],"
           " \"weights\": [{\"name\": \"w\", \"shape\": [%d, %d]}],"
           " \"nodes\": [{\"name\": \"y\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"]}],"
           " \"outputs\": [\"y\"]}",
           M, K, N, K);
  mlc_error e;
  mlc_gmodule *m = mlc_graph_parse("dense.json", json, strlen(json), NULL, &e);
  mlc_gtask *ts = NULL;
  bool ok = m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &e) && mlc_graph_extract_tasks(m, &ts) == 1;
  CHECK_MSG(ok, "%s", e.msg);
  mlc_prim_func *f = ok ? mlc_graph_task_func(a, &ts[0]) : NULL;
  CHECK_MSG(!f || f->params[1]->ndim == 3, "weight not packed: %d dims", f->params[1]->ndim);
  mlc_free(ts);
  if (m) mlc_graph_free(m);
  return f;
}

/* A dense layer over a packed weight (the layout pass) writes
 * T_dense[i, jb * n + jl] and reads W[jb, k, jl]: the register tile takes
 * jl as the lanes, i as rows and jb as a second weight vector, in the
 * sketches (and their samples compute what the plain kernel does) and in
 * the default schedule. */
static void check_packed_dense_sketches(int M, int N, int K) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = packed_dense(a, M, N, K);
  mlc_tuner_opts o;
  small_opts(&o);
  mlc_error e;
  mlc_tuner_space *sp = f ? mlc_tuner_space_new(f, &o, &e) : NULL;
  CHECK_MSG(sp != NULL, "%s", f ? e.msg : "no kernel");
  int found = 0;
  char why[512];
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++) {
    if (!is_register_sketch(mlc_tuner_space_trace(sp, k))) continue;
    found++;
    for (int i = 0; i < 4 && !test_case_failed_; i++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, k, 100 + (uint64_t)i, &e);
      if (!s) continue;
      CHECK_MSG(same_results(f, mlc_sched_func(s), i < 2, why, sizeof why), "%dx%dx%d sketch %d sample %d: %s",
                M, N, K, k, i, why);
      CHECK_MSG(acc_in_registers(mlc_sched_func(s), "T_dense_global", 28 * 16, 1, why, sizeof why),
                "%dx%dx%d sketch %d sample %d: %s", M, N, K, k, i, why);
      mlc_sched_free(s);
    }
  }
  CHECK_MSG(found == 1, "%dx%dx%d: %d register-tile sketches, want 1", M, N, K, found);
  if (sp) mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

static bool vector_wider(const mlc_stmt *st, void *max) {
  int64_t e;
  return st->kind == MLC_STMT_FOR && st->loop.kind == MLC_FOR_VECTORIZED &&
         mlc_expr_is_const_int(st->loop.extent, &e) && e > *(const int64_t *)max;
}

/* Every vector of g at most `lanes` wide: a write-back or epilogue wider
 * than the update's vectors (five weight blocks of 8 lanes written back
 * 40 wide) had LLVM keep the accumulators in scalars. */
static void check_vectors_at_most(const mlc_prim_func *g, int64_t lanes, const char *what) {
  CHECK_MSG(!mlc_stmt_any(g->body, vector_wider, &lanes), "%s: a vectorized loop wider than %lld",
            what, (long long)lanes);
}

/* Also one row (ResNet-18's classifier): N = 1000 packed by 8, no rows,
 * several weight blocks per tile, whose default schedule and samples
 * keep to vectors of 8. */
static void test_packed_dense(void) {
  check_packed_dense_sketches(32, 64, 48);
  check_packed_dense_sketches(1, 1000, 1024);
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = packed_dense(a, 1, 1000, 1024);
  mlc_tuner_opts o;
  small_opts(&o);
  mlc_error e;
  mlc_tuner_space *sp = f ? mlc_tuner_space_new(f, &o, &e) : NULL;
  if (f) check_vectors_at_most(mlc_tuner_cpu_default_schedule(a, f), 8, "default");
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++) {
    if (!is_register_sketch(mlc_tuner_space_trace(sp, k))) continue;
    mlc_sched *s = mlc_tuner_space_sample(sp, k, 7, &e);
    if (s) check_vectors_at_most(mlc_sched_func(s), 8, "sample");
    mlc_sched_free(s);
  }
  if (sp) mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* Attention's scores: the keys transposed by a copy in front of a
 * batched matmul. Every sketch keeps that copy a block of its own (auto-
 * inlined, the matmul would gather its vector operand) in 16 x 16 tiles,
 * and its samples compute what the kernel does. */
static void test_transposed_operand(void) {
  static const char src[] =
      "@T.prim_func\n"
      "def main(Q: T.Buffer((2, 32, 16), \"float32\"), K: T.Buffer((32, 2, 16), \"float32\"),"
      " C: T.Buffer((2, 32, 32), \"float32\")):\n"
      "    KT = T.alloc_buffer((2, 16, 32))\n"
      "    for b, k, j in T.grid(2, 16, 32):\n"
      "        with T.block(\"KT\"):\n"
      "            vb, vk, vj = T.axis.remap(\"SSS\", [b, k, j])\n"
      "            KT[vb, vk, vj] = K[vj, vb, vk]\n"
      "    for b, i, j, k in T.grid(2, 32, 32, 16):\n"
      "        with T.block(\"C\"):\n"
      "            vb, vi, vj, vk = T.axis.remap(\"SSSR\", [b, i, j, k])\n"
      "            with T.init():\n"
      "                C[vb, vi, vj] = T.float32(0)\n"
      "            C[vb, vi, vj] = C[vb, vi, vj] + Q[vb, vi, vk] * KT[vb, vk, vj]\n";
  mlc_arena *a = mlc_arena_new();
  mlc_error e;
  mlc_module *m = mlc_parse_module(a, "scores.py", src, &e);
  CHECK_MSG(m, "%s", e.msg);
  mlc_tuner_opts o;
  small_opts(&o);
  mlc_tuner_space *sp = m ? mlc_tuner_space_new(m->funcs[0], &o, &e) : NULL;
  CHECK_MSG(!m || sp, "%s", e.msg);
  char why[512];
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++)
    for (uint64_t seed = 1; seed <= 2; seed++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, k, seed, &e);
      if (!s) continue;
      const mlc_block *kt = tuner_find_block(mlc_sched_func(s), "KT");
      tuner_site site;
      /* the innermost loop a tile's 16 along the read (the parallel
       * postprocessor may fuse the loops outside it) */
      bool tiled = kt && tuner_find_site(mlc_sched_func(s), kt, &site) && site.n_loops >= 2 &&
                   tuner_loop_extent(site.loops[site.n_loops - 1]) == 16 &&
                   site.loops[site.n_loops - 1]->loop.kind != MLC_FOR_VECTORIZED &&
                   mlc_expr_uses_var(site.realize->realize.values[1], site.loops[site.n_loops - 1]->loop.var);
      CHECK_MSG(tiled, "sketch %d seed %d: the copy is %s", k, (int)seed, kt ? "not in 16 x 16 tiles" : "inlined");
      CHECK_MSG(same_results(m->funcs[0], mlc_sched_func(s), seed == 1, why, sizeof why), "sketch %d: %s", k, why);
      mlc_sched_free(s);
    }
  if (sp) mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

/* dense's W[j, k] is read by rows of j: no contiguous output dimension,
 * no register tile; the refusal names the block. */
static void test_refused(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, "dense_bias_relu", "8,16,16");
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error e = {0};
  const char *name = NULL;
  mlc_arena *na = mlc_arena_new();
  const char **names;
  int nb = tuner_blocks_post_order(na, f, &names);
  for (int i = 0; i < nb; i++)
    if (tuner_block_is_reduction(tuner_find_block(f, names[i]))) name = names[i];
  CHECK(name != NULL);
  bool ok = name && mlc_tuner_cpu_register_tile(s, name, true, &e);
  CHECK_MSG(!ok && strstr(e.msg, "is not a reduction into a contiguous output dimension") &&
                strstr(e.msg, name),
            "%s", e.msg);
  CHECK(mlc_func_struct_equal(mlc_sched_func(s), f));
  mlc_sched_free(s);
  mlc_arena_free(na);
  mlc_arena_free(a);
}

/* ---- the default schedule ---- */

static void check_default_func(const mlc_prim_func *f, const char *name, const char *acc,
                               int64_t acc_elems) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *g = mlc_tuner_cpu_default_schedule(a, f);
  CHECK_MSG(g != NULL, "%s", name);
  if (!g) goto done;
  char why[512];
  mlc_str out = {0};
  mlc_print_func(&out, g);
  const char *ir = mlc_str_cstr(&out);
  if (getenv("RT_DEBUG")) fprintf(stderr, "%s\n", ir);
  CHECK_MSG(strstr(ir, "T.parallel(") && strstr(ir, "T.unroll(") && strstr(ir, "T.vectorized(") &&
                strstr(ir, "_global"),
            "%s: not register-tiled:\n%s", name, ir);
  CHECK_MSG(acc_in_registers(g, acc, acc_elems, 1, why, sizeof why), "%s: %s", name, why);
  /* exactly the tile: acc_elems is the most the budget allows */
  mlc_error e;
  mlc_prim_func *low = mlc_target_lower(a, g, &e);
  acc_walk w = {.name = acc};
  if (low) walk(low->body, &w);
  CHECK_MSG(w.size == acc_elems, "%s: accumulator of %lld elements, want %lld", name,
            (long long)w.size, (long long)acc_elems);
  CHECK_MSG(same_results(f, g, true, why, sizeof why), "%s: %s", name, why);
  mlc_str_free(&out);
done:
  mlc_arena_free(a);
}

static void check_default(const char *name, const char *shape, const char *acc, int64_t acc_elems) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = task(a, name, shape);
  CHECK_MSG(f != NULL, "%s", name);
  if (f) check_default_func(f, name, acc, acc_elems);
  mlc_arena_free(a);
}

static int64_t host_lanes(void) {
  mlc_target t;
  mlc_target_host(&t);
  return mlc_target_has_feature(&t, "avx512f") ? 16 : mlc_target_has_feature(&t, "avx") ? 8 : 4;
}

/* Three weight blocks (an odd count, a multiple of 3: GPT-2's output
 * layer has 3141): with AVX-512, 8 rows x 3 vectors, where one vector a
 * row made 16 rows x 1. */
static void test_default_three_vectors(void) {
  if (host_lanes() != 16) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = packed_dense(a, 256, 48, 512);
  if (f) check_default_func(f, "dense 256x48x512", "T_dense_global", 8 * 48);
  mlc_arena_free(a);
}

/* With AVX-512: conv 14 columns x 2 channel blocks of 16 lanes (K = 64:
 * four blocks, two per tile); matmul 8 rows (the largest divisor of 64 up
 * to 14) x 32 columns. The AVX2 budget gives 6 rows of two vectors. */
static void test_default_schedule(void) {
  int64_t l = host_lanes();
  int64_t rows = l == 16 ? 14 : 6;
  check_default("conv2d_nchwc", l == 16 ? "1,16,4,28,64,3,3" : "1,16,4,12,64,3,3", "conv2d_nchwc_global",
                rows * 2 * l);
  check_default("matmul", "64,64,64", "C_global", (l == 16 ? 8 : 4) * 2 * l);
  /* dense 64 x 64 x 64 over its packed weight: as matmul, the two
   * vectors from two weight blocks */
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = packed_dense(a, 64, 64, 64);
  if (f) check_default_func(f, "dense", "T_dense_global", (l == 16 ? 8 : 4) * 2 * l);
  /* one row, 125 blocks of 8 columns: 5 blocks per tile (5 FMA chains) */
  f = packed_dense(a, 1, 1000, 512);
  if (f) check_default_func(f, "dense 1x1000x512", "T_dense_global", 5 * 8);
  /* one row, 48 blocks of 16 columns: 8 blocks per tile, written back as
   * 8 vectors (one 128-lane loop is more than codegen takes) */
  f = packed_dense(a, 1, 768, 768);
  if (f) check_default_func(f, "dense 1x768x768", "T_dense_global", 8 * l);
  mlc_arena_free(a);
}

/* Kernels of size vars take the schedule the rules give their instance at
 * 128 rows (at most), replayed on them without the hints and fuses a
 * symbolic extent refuses: a dense layer over seq rows keeps its register
 * tile (its write-back guarded by seq), attention scores over a symbolic
 * inner extent keep theirs (a nest the instance fused to run it parallel
 * is parallel over its outer loop instead). Each computes what the unscheduled kernel does at 1, 7 and 64. */
static const char sym_dense_src[] =
    "@T.prim_func\n"
    "def main(a: T.handle, W: T.Buffer((4, 32, 16), \"float32\"), c: T.handle):\n"
    "    n = T.int32(min=1, max=64)\n"
    "    A = T.match_buffer(a, (n, 32))\n"
    "    C = T.match_buffer(c, (n, 64))\n"
    "    for i, jb, jl, k in T.grid(n, 4, 16, 32):\n"
    "        with T.block(\"T_dense\"):\n"
    "            vi, vj, vl, vk = T.axis.remap(\"SSSR\", [i, jb, jl, k])\n"
    "            with T.init():\n"
    "                C[vi, vj * 16 + vl] = T.float32(0)\n"
    "            C[vi, vj * 16 + vl] = C[vi, vj * 16 + vl] + A[vi, vk] * W[vj, vk, vl]\n";

static const char sym_scores_src[] =
    "@T.prim_func\n"
    "def main(q: T.handle, k: T.handle, s: T.handle):\n"
    "    n = T.int32(min=1, max=128)\n"
    "    Q = T.match_buffer(q, (4, n, 16))\n"
    "    K = T.match_buffer(k, (4, 16, n))\n"
    "    S = T.match_buffer(s, (4, n, n))\n"
    "    P = T.alloc_buffer((4, n, n))\n"
    "    for b, i, j, d in T.grid(4, n, n, 16):\n"
    "        with T.block(\"P\"):\n"
    "            vb, vi, vj, vd = T.axis.remap(\"SSSR\", [b, i, j, d])\n"
    "            with T.init():\n"
    "                P[vb, vi, vj] = T.float32(0)\n"
    "            P[vb, vi, vj] = P[vb, vi, vj] + Q[vb, vi, vd] * K[vb, vd, vj]\n"
    "    for b, i, j in T.grid(4, n, n):\n"
    "        with T.block(\"S\"):\n"
    "            vb, vi, vj = T.axis.remap(\"SSS\", [b, i, j])\n"
    "            S[vb, vi, vj] = P[vb, vi, vj] * T.float32(0.25)\n";

/* Softmax over a symbolic last axis (attention probabilities): its
 * instance's lane rfactor does not replay (a tail would leave partial
 * results uninitialised), so it takes its instance's rows computed
 * together without one: the rows in parallel, the last block's symbolic
 * inner loop split by 16 (the tail predicated) and vectorized. */
static const char sym_softmax_src[] =
    "@T.prim_func\n"
    "def main(x: T.handle, y: T.handle):\n"
    "    n = T.int32(min=1, max=384)\n"
    "    X = T.match_buffer(x, (4, n, n))\n"
    "    Y = T.match_buffer(y, (4, n, n))\n"
    "    mx = T.alloc_buffer((4, n))\n"
    "    sm = T.alloc_buffer((4, n))\n"
    "    for b, i, k in T.grid(4, n, n):\n"
    "        with T.block(\"mx\"):\n"
    "            vb, vi, vk = T.axis.remap(\"SSR\", [b, i, k])\n"
    "            with T.init():\n"
    "                mx[vb, vi] = T.float32(-3.4e38)\n"
    "            mx[vb, vi] = T.max(mx[vb, vi], X[vb, vi, vk])\n"
    "    for b, i, k in T.grid(4, n, n):\n"
    "        with T.block(\"sm\"):\n"
    "            vb, vi, vk = T.axis.remap(\"SSR\", [b, i, k])\n"
    "            with T.init():\n"
    "                sm[vb, vi] = T.float32(0)\n"
    "            sm[vb, vi] = sm[vb, vi] + T.exp(X[vb, vi, vk] - mx[vb, vi])\n"
    "    for b, i, k in T.grid(4, n, n):\n"
    "        with T.block(\"out\"):\n"
    "            vb, vi, vk = T.axis.remap(\"SSS\", [b, i, k])\n"
    "            Y[vb, vi, vk] = T.exp(X[vb, vi, vk] - mx[vb, vi]) / sm[vb, vi]\n";

static void check_sized_default(const char *src, const char *name, bool parallel, bool tiled) {
  mlc_arena *a = mlc_arena_new();
  mlc_error e;
  mlc_module *m = mlc_parse_module(a, name, src, &e);
  CHECK_MSG(m != NULL, "%s", e.msg);
  if (!m) return mlc_arena_free(a);
  const mlc_prim_func *f = m->funcs[0];
  mlc_prim_func *g = mlc_tuner_cpu_default_schedule(a, f);
  mlc_str out = {0};
  mlc_print_func(&out, g);
  const char *ir = mlc_str_cstr(&out);
  if (getenv("RT_DEBUG")) fprintf(stderr, "%s\n", ir);
  CHECK_MSG(g->n_sizes == 1 && strstr(ir, "T.vectorized(") && (!tiled || strstr(ir, "_global")) &&
                (!parallel || strstr(ir, "T.parallel(")),
            "%s: not register-tiled:\n%s", name, ir);
  CHECK_MSG(mlc_verify_func(g, &e), "%s: %s", name, e.msg);
  for (int64_t n = 1; n <= 64; n = n == 1 ? 7 : 64 + (n == 64)) {
    char why[512];
    mlc_prim_func *fs = mlc_func_specialize(a, f, &n, &e), *gs = mlc_func_specialize(a, g, &n, &e);
    CHECK_MSG(fs && gs, "%s: %s", name, e.msg);
    CHECK_MSG(fs && gs && same_results(fs, gs, true, why, sizeof why), "%s at %lld: %s", name,
              (long long)n, why);
  }
  mlc_str_free(&out);
  mlc_arena_free(a);
}

/* A dense layer of few rows and a large weight: its default at 16 rows
 * runs the rows inside the weight's column tiles, and on the function of
 * size vars the parallel loop stays over those tiles (a constant extent),
 * not fused under the rows: each tile of the weight is read by one
 * thread. */
static const char sym_wide_dense_src[] =
    "@T.prim_func\n"
    "def main(x: T.handle, W: T.Buffer((256, 640), \"float32\"), y: T.handle):\n"
    "    n = T.int64(min=1, max=384)\n"
    "    X = T.match_buffer(x, (n, 256))\n"
    "    Y = T.match_buffer(y, (n, 640))\n"
    "    for i, j, k in T.grid(n, 640, 256):\n"
    "        with T.block(\"Y\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            with T.init():\n"
    "                Y[vi, vj] = T.float32(0)\n"
    "            Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vk, vj]\n";

static void test_default_sized_keeps_weight_tiles_outer(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error e;
  mlc_module *m = mlc_parse_module(a, "sym_wide_dense.py", sym_wide_dense_src, &e);
  CHECK_MSG(m != NULL, "%s", e.msg);
  if (!m) return mlc_arena_free(a);
  const mlc_prim_func *f = m->funcs[0];
  int64_t at = 16;
  mlc_prim_func *g = mlc_tuner_cpu_default_schedule_at(a, f, &at);
  mlc_str out = {0};
  mlc_print_func(&out, g);
  const char *ir = mlc_str_cstr(&out), *par = strstr(ir, "T.parallel(");
  CHECK_MSG(par && isdigit((unsigned char)par[strlen("T.parallel(")]),
            "the parallel loop is not over the weight's tiles:\n%s", ir);
  CHECK_MSG(mlc_verify_func(g, &e), "%s", e.msg);
  for (int64_t n = 1; n <= 40; n += 13) {
    char why[512];
    mlc_prim_func *fs = mlc_func_specialize(a, f, &n, &e), *gs = mlc_func_specialize(a, g, &n, &e);
    CHECK_MSG(fs && gs && same_results(fs, gs, true, why, sizeof why), "at %lld: %s",
              (long long)n, why);
  }
  mlc_str_free(&out);
  mlc_arena_free(a);
}

static void test_default_schedule_sized(void) {
  check_sized_default(sym_dense_src, "sym_dense.py", false, true);
  check_sized_default(sym_scores_src, "sym_scores.py", true, true);
  check_sized_default(sym_softmax_src, "sym_softmax.py", true, false);
}

/* ---- attention as one kernel (tuner/attention.c) ---- */

/* Scores of 2 heads, 32 query rows and 48 keys from K [keys, heads, 16]
 * (transposed by a copy), scaled, softmax, and the sum weighted over V
 * [keys, heads, 16] (its heads gathered by a copy): graph/fuse.c's
 * attention group, as fuse_tir lowers it. With `independent` the second
 * product reads V twice instead of the probabilities: two contractions
 * with nothing between them. */
static const char attention_fmt[] =
    "@T.prim_func\n"
    "def main(var_Q: T.handle, var_K: T.handle, var_V: T.handle, var_O: T.handle):\n"
    "    %s\n"
    "    Q = T.match_buffer(var_Q, (2, %s, 16))\n"
    "    K = T.match_buffer(var_K, (%s, 2, 16))\n"
    "    V = T.match_buffer(var_V, (%s, 2, 16))\n"
    "    O = T.match_buffer(var_O, (2, %s, 16))\n"
    "    Kt = T.alloc_buffer((2, 16, %s))\n"
    "    Vh = T.alloc_buffer((2, %s, 16))\n"
    "    S = T.alloc_buffer((2, %s, %s))\n"
    "    X = T.alloc_buffer((2, %s, %s))\n"
    "    M = T.alloc_buffer((2, %s))\n"
    "    E = T.alloc_buffer((2, %s, %s))\n"
    "    Z = T.alloc_buffer((2, %s))\n"
    "    P = T.alloc_buffer((2, %s, %s))\n"
    "    for h, d, j in T.grid(2, 16, %s):\n"
    "        with T.block(\"Kt\"):\n"
    "            vh, vd, vj = T.axis.remap(\"SSS\", [h, d, j])\n"
    "            Kt[vh, vd, vj] = K[vj, vh, vd]\n"
    "    for h, j, d in T.grid(2, %s, 16):\n"
    "        with T.block(\"Vh\"):\n"
    "            vh, vj, vd = T.axis.remap(\"SSS\", [h, j, d])\n"
    "            Vh[vh, vj, vd] = V[vj, vh, vd]\n"
    "    for h, i, j, d in T.grid(2, %s, %s, 16):\n"
    "        with T.block(\"S\"):\n"
    "            vh, vi, vj, vd = T.axis.remap(\"SSSR\", [h, i, j, d])\n"
    "            with T.init():\n"
    "                S[vh, vi, vj] = T.float32(0)\n"
    "            S[vh, vi, vj] = S[vh, vi, vj] + Q[vh, vi, vd] * Kt[vh, vd, vj]\n"
    "    for h, i, j in T.grid(2, %s, %s):\n"
    "        with T.block(\"X\"):\n"
    "            vh, vi, vj = T.axis.remap(\"SSS\", [h, i, j])\n"
    "            X[vh, vi, vj] = S[vh, vi, vj] * T.float32(0.25)\n"
    "    for h, i, k in T.grid(2, %s, %s):\n"
    "        with T.block(\"M\"):\n"
    "            vh, vi, vk = T.axis.remap(\"SSR\", [h, i, k])\n"
    "            with T.init():\n"
    "                M[vh, vi] = T.float32(-3.4028235e+38)\n"
    "            M[vh, vi] = T.max(M[vh, vi], X[vh, vi, vk])\n"
    "    for h, i, j in T.grid(2, %s, %s):\n"
    "        with T.block(\"E\"):\n"
    "            vh, vi, vj = T.axis.remap(\"SSS\", [h, i, j])\n"
    "            E[vh, vi, vj] = T.exp(X[vh, vi, vj] - M[vh, vi])\n"
    "    for h, i, k in T.grid(2, %s, %s):\n"
    "        with T.block(\"Z\"):\n"
    "            vh, vi, vk = T.axis.remap(\"SSR\", [h, i, k])\n"
    "            with T.init():\n"
    "                Z[vh, vi] = T.float32(0)\n"
    "            Z[vh, vi] = Z[vh, vi] + E[vh, vi, vk]\n"
    "    for h, i, j in T.grid(2, %s, %s):\n"
    "        with T.block(\"P\"):\n"
    "            vh, vi, vj = T.axis.remap(\"SSS\", [h, i, j])\n"
    "            P[vh, vi, vj] = E[vh, vi, vj] / Z[vh, vi]\n"
    "    for h, i, d, j in T.grid(2, %s, 16, %s):\n"
    "        with T.block(\"O\"):\n"
    "            vh, vi, vd, vj = T.axis.remap(\"SSSR\", [h, i, d, j])\n"
    "            with T.init():\n"
    "                O[vh, vi, vd] = T.float32(0)\n"
    "            O[vh, vi, vd] = O[vh, vi, vd] + %s * Vh[vh, vj, vd]\n";

/* attention's decl for a function of fixed sizes */
#define FIXED_SIZES "T.func_attr({\"global_symbol\": \"main\"})"

/* The attention function with `rows` query rows and `keys` keys (a size
 * var's name for both, declared by decl, or numbers). */
static mlc_prim_func *attention(mlc_arena *a, const char *decl, const char *rows, const char *keys,
                                bool independent) {
  const char *r = rows, *k = keys;
  char *src = mlc_arena_printf(a, attention_fmt, decl, r, k, k, r, k, k, /* buffers */
                               r, k, r, k, r, r, k, r, r, k, /* intermediates */
                               k, k, r, k, r, k, r, k, r, k, r, k, r, k, r, k, /* loops */
                               independent ? "Vh[vh, vj, vd]" : "P[vh, vi, vj]");
  mlc_error e;
  mlc_module *m = mlc_parse_module(a, "attention.py", src, &e);
  CHECK_MSG(m != NULL, "%s", e.msg);
  return m ? m->funcs[0] : NULL;
}

typedef struct find_block {
  const char *name;
  bool found;
} find_block;

static mlc_walk find_block_fn(const mlc_stmt *st, void *ud) {
  find_block *fb = ud;
  if (st->kind == MLC_STMT_BLOCK_REALIZE && strcmp(st->realize.block->name, fb->name) == 0) {
    fb->found = true;
    return MLC_WALK_STOP;
  }
  return MLC_WALK_INTO;
}

/* The statement under g's root that holds block `name`, or NULL. */
static const mlc_stmt *root_stmt_of(mlc_arena *a, const mlc_prim_func *g, const char *name) {
  mlc_stmt **kids;
  int n = tuner_root_children(g, &kids, a);
  for (int i = 0; i < n; i++) {
    find_block fb = {name, false};
    mlc_stmt_walk(kids[i], find_block_fn, &fb);
    if (fb.found) return kids[i];
  }
  return NULL;
}

/* The default schedule computes the scores, the scale, the softmax and
 * the weighted sum of each tile of query rows under one parallel loop
 * (the scores never whole in memory), the keys' transpose made once
 * before it, V read in place (its copy inlined), both products as
 * register tiles; the results those of the unscheduled function (JIT). */
static void test_default_attention(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = attention(a, FIXED_SIZES, "32", "48", false);
  if (!f) return mlc_arena_free(a);
  mlc_prim_func *g = mlc_tuner_cpu_default_schedule(a, f);
  mlc_str out = {0};
  mlc_print_func(&out, g);
  const char *ir = mlc_str_cstr(&out);
  if (getenv("RT_DEBUG")) fprintf(stderr, "%s\n", ir);
  const mlc_stmt *tile = root_stmt_of(a, g, "O_update");
  CHECK_MSG(tile && tile->kind == MLC_STMT_FOR && tile->loop.kind == MLC_FOR_PARALLEL,
            "the weighted sum is not under a parallel loop:\n%s", ir);
  const char *inside[] = {"S_update", "X", "M_rf_update", "M_update", "E", "Z_rf_update", "Z_update", "P", "S_global", "O_global"};
  for (int i = 0; i < MLC_COUNTOF(inside); i++)
    CHECK_MSG(tile && root_stmt_of(a, g, inside[i]) == tile, "block %s is not in the row tile:\n%s",
              inside[i], ir);
  CHECK_MSG(root_stmt_of(a, g, "Kt") && root_stmt_of(a, g, "Kt") != tile,
            "the keys' transpose is not made once, before the tiles:\n%s", ir);
  CHECK_MSG(!root_stmt_of(a, g, "Vh"), "V's copy is not inlined:\n%s", ir);
  char why[512];
  CHECK_MSG(same_results(f, g, true, why, sizeof why), "%s", why);
  mlc_str_free(&out);
  mlc_arena_free(a);
}

/* What the attention rule leaves to the others: two products with
 * nothing between them, and a product of fewer query rows than two
 * tiles (8 rows: the scores are a tile already); each keeps its own
 * nest and computes what the unscheduled function does. */
static void test_default_attention_refused(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *fs[] = {attention(a, FIXED_SIZES, "32", "48", true),
                               attention(a, FIXED_SIZES, "8", "48", false)};
  for (int i = 0; i < MLC_COUNTOF(fs); i++) {
    if (!fs[i]) continue;
    mlc_prim_func *g = mlc_tuner_cpu_default_schedule(a, fs[i]);
    const mlc_stmt *o = root_stmt_of(a, g, "O_update");
    CHECK_MSG(o && root_stmt_of(a, g, "S_update") != o, "case %d: the products share a nest", i);
    char why[512];
    CHECK_MSG(same_results(fs[i], g, true, why, sizeof why), "case %d: %s", i, why);
  }
  mlc_arena_free(a);
}

/* Attention over a symbolic sequence: the row tiles do not replay (the
 * scores' region over a symbolic key loop is not bounded), so the default
 * is its instance's schedule with every block in its own nest and no
 * lane partial sums (which do not replay over a tail): the products still
 * register tiles; right at 1, 7 and 64 tokens. */
static void test_default_attention_sized(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = attention(a, "n = T.int32(min=1, max=64)", "n", "n", false);
  if (!f) return mlc_arena_free(a);
  mlc_prim_func *g = mlc_tuner_cpu_default_schedule(a, f);
  mlc_str out = {0};
  mlc_print_func(&out, g);
  const char *ir = mlc_str_cstr(&out);
  mlc_error e;
  CHECK_MSG(mlc_verify_func(g, &e), "%s", e.msg);
  CHECK_MSG(strstr(ir, "S_global") && strstr(ir, "O_global"), "the products are not register-tiled:\n%s", ir);
  for (int64_t n = 1; n <= 64; n = n == 1 ? 7 : 64 + (n == 64)) {
    char why[512];
    mlc_prim_func *fs = mlc_func_specialize(a, f, &n, &e), *gs = mlc_func_specialize(a, g, &n, &e);
    CHECK_MSG(fs && gs && same_results(fs, gs, true, why, sizeof why), "at %lld: %s", (long long)n,
              fs && gs ? why : e.msg);
  }
  mlc_str_free(&out);
  mlc_arena_free(a);
}

/* The design space holds the default's row tiles as a sketch whose tile
 * sizes are drawn: its samples keep the scores and the weighted sum in
 * one parallel nest, differ from one another, and compute what the
 * unscheduled function does. */
static void test_attention_sketch(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = attention(a, FIXED_SIZES, "32", "48", false);
  mlc_tuner_opts o;
  small_opts(&o);
  mlc_error e;
  mlc_tuner_space *sp = f ? mlc_tuner_space_new(f, &o, &e) : NULL;
  CHECK_MSG(sp != NULL, "%s", f ? e.msg : "no function");
  int sketches = 0;
  for (int k = 0; sp && k < mlc_tuner_space_count(sp); k++) {
    char *first = NULL;
    bool differ = false, tiled = false;
    for (int i = 0; i < 8 && !test_case_failed_; i++) {
      mlc_sched *s = mlc_tuner_space_sample(sp, k, 200 + (uint64_t)i, &e);
      if (!s) continue;
      const mlc_prim_func *g = mlc_sched_func(s);
      const mlc_stmt *tile = root_stmt_of(a, g, "O_update");
      if (tile && tile == root_stmt_of(a, g, "S_update")) {
        tiled = true;
        char why[512];
        CHECK_MSG(same_results(f, g, i < 3, why, sizeof why), "sketch %d sample %d: %s", k, i, why);
        mlc_str text = {0};
        mlc_print_func(&text, g);
        if (!first) first = mlc_arena_printf(a, "%s", mlc_str_cstr(&text));
        else differ |= strcmp(first, mlc_str_cstr(&text)) != 0;
        mlc_str_free(&text);
      }
      mlc_sched_free(s);
    }
    if (tiled) {
      sketches++;
      CHECK_MSG(differ, "sketch %d: every sample the same", k);
    }
  }
  CHECK_MSG(sketches == 1, "%d sketches tile the query rows, want 1", sketches);
  mlc_tuner_space_free(sp);
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_sketches_conv);
  RUN(test_sketches_matmul);
  RUN(test_refused);
  RUN(test_packed_dense);
  RUN(test_transposed_operand);
  RUN(test_default_three_vectors);
  RUN(test_default_schedule);
  RUN(test_default_schedule_sized);
  RUN(test_default_sized_keeps_weight_tiles_outer);
  RUN(test_default_attention);
  RUN(test_default_attention_refused);
  RUN(test_default_attention_sized);
  RUN(test_attention_sketch);
  return test_summary();
}
