/* costmodel: per-store features checked against values worked out by hand
 * on small loop nests, determinism, the random schedules used for datasets
 * (results unchanged), models that learn a ranking and beat random scoring
 * on held-out pairs, save/load round trips, damaged blobs refused, and the
 * tuner storing its model in the database, reloading it, and falling back
 * to a fresh model with a warning when the stored one is damaged. */
#include "costmodel/costmodel_internal.h" /* features, training, datasets */
#include "db/db.h"
#include "measure/measure.h"
#include "tasks/tasks.h"
#include "tests/test.h"
#include "tuner/tuner.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static double slog(double x) { return log2(x + 1); }

static bool near(double got, double want) { return fabs(got - want) < 1e-4; }

#define CHECK_FEAT(row, name, want)                                                        \
  do {                                                                                     \
    int i_ = mlc_feature_index(name);                                                      \
    CHECK_MSG(i_ >= 0, "no feature %s", name);                                             \
    if (i_ >= 0)                                                                           \
      CHECK_MSG(near((row)[i_], (want)), "%s = %g, want %g", name, (double)(row)[i_],      \
                (double)(want));                                                           \
  } while (0)

static mlc_prim_func *parse_func(mlc_arena *a, const char *text) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "test.py", text, &err);
  if (!m) fprintf(stderr, "parse: %s\n", err.msg);
  MLC_ASSERT(m && m->n_funcs == 1);
  return m->funcs[0];
}

static mlc_prim_func *task(mlc_arena *a, const char *name, const char *shape) {
  const mlc_task_def *d = mlc_task_find(name);
  MLC_ASSERT(d);
  int64_t dims[MLC_TASK_MAX_DIMS];
  mlc_error err;
  MLC_ASSERT(mlc_task_parse_shape(d, shape, dims, &err));
  return mlc_task_build(a, d, dims);
}

/* ---- names ---------------------------------------------------------------- */

static void test_feature_names(void) {
  for (int i = 0; i < MLC_FEATURE_DIM; i++) {
    const char *n = mlc_feature_name(i);
    CHECK(n && *n);
    CHECK_MSG(mlc_feature_index(n) == i, "%s is not unique", n);
  }
  CHECK(mlc_feature_name(MLC_FEATURE_DIM) == NULL);
  CHECK_STREQ(mlc_feature_name(0), "float_mad");
  CHECK_STREQ(mlc_feature_name(MLC_FEATURE_DIM - 1), "auto_unroll_max_step");
  CHECK(mlc_feature_index("b4_stride") == 57 + 4 * 18 + 17);
}

/* ---- hand-computed values ----------------------------------------------------- */

/* C = A + B over 64 floats: 8 outer iterations of an 8-lane vector loop. */
static const char *VECADD =
    "@T.prim_func\n"
    "def main(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\"),"
    " C: T.Buffer((64,), \"float32\")):\n"
    "    for i0 in range(8):\n"
    "        for i1 in T.vectorized(8):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(64, i0 * 8 + i1)\n"
    "                C[vi] = A[vi] + B[vi]\n";

static void test_vecadd_features(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_features f;
  mlc_error err;
  CHECK(mlc_features_extract(parse_func(a, VECADD), &f, &err));
  CHECK(f.ok && f.n_stores == 1);
  if (f.n_stores == 1) {
    const float *r = f.rows;
    CHECK_FEAT(r, "float_add_sub", slog(64));
    CHECK_FEAT(r, "float_mad", 0);
    CHECK_FEAT(r, "vec_num", slog(1));
    CHECK_FEAT(r, "vec_len", slog(8));
    CHECK_FEAT(r, "vec_prod", slog(8));
    CHECK_FEAT(r, "vec_pos_inner_spatial", 1);
    CHECK_FEAT(r, "vec_pos_none", 0);
    CHECK_FEAT(r, "parallel_pos_none", 1);
    CHECK_FEAT(r, "parallel_len", 0);
    CHECK_FEAT(r, "is_gpu", 0);
    CHECK_FEAT(r, "threadIdx_x_len", 0);
    /* every buffer: 64 floats = 256 bytes, 4 cache lines, unit stride */
    for (int b = 0; b < 3; b++) {
      char n[64];
      snprintf(n, sizeof n, "b%d_bytes", b);
      CHECK_FEAT(r, n, slog(256));
      snprintf(n, sizeof n, "b%d_unique_bytes", b);
      CHECK_FEAT(r, n, slog(256));
      snprintf(n, sizeof n, "b%d_lines", b);
      CHECK_FEAT(r, n, slog(4));
      snprintf(n, sizeof n, "b%d_unique_lines", b);
      CHECK_FEAT(r, n, slog(4));
      snprintf(n, sizeof n, "b%d_stride", b);
      CHECK_FEAT(r, n, slog(1));
      snprintf(n, sizeof n, "b%d_reuse_none", b);
      CHECK_FEAT(r, n, 1);
    }
    /* sorted by lines, bytes, then name: A, B, C (the write) */
    CHECK_FEAT(r, "b0_acc_read", 1);
    CHECK_FEAT(r, "b2_acc_write", 1);
    CHECK_FEAT(r, "b3_bytes", 0);
    CHECK_FEAT(r, "outer_prod", slog(64));
    CHECK_FEAT(r, "num_loops", slog(2));
    CHECK_FEAT(r, "alloc_size", 0);
  }
  mlc_features_free(&f);
  mlc_arena_free(a);
}

/* The hand-scheduled 64^3 matmul of tests/kernels/mm_tiled.py: a 4 x 8
 * accumulator tile per (i0, j0), k outside the unrolled i1 and the
 * vectorized j1. */
static const char *MM_TILED =
    "@T.prim_func\n"
    "def mm_tiled(A: T.Buffer((64, 64), \"float32\"), B: T.Buffer((64, 64), \"float32\"),"
    " C: T.Buffer((64, 64), \"float32\")):\n"
    "    C_local = T.alloc_buffer((64, 64), scope=\"local\")\n"
    "    for i0 in T.parallel(16):\n"
    "        for j0 in range(8):\n"
    "            for i1 in T.unroll(4):\n"
    "                for j1 in T.vectorized(8):\n"
    "                    with T.block(\"C_init\"):\n"
    "                        vi = T.axis.spatial(64, i0 * 4 + i1)\n"
    "                        vj = T.axis.spatial(64, j0 * 8 + j1)\n"
    "                        C_local[vi, vj] = T.float32(0)\n"
    "            for k in range(64):\n"
    "                for i1 in T.unroll(4):\n"
    "                    for j1 in T.vectorized(8):\n"
    "                        with T.block(\"C_update\"):\n"
    "                            vi = T.axis.spatial(64, i0 * 4 + i1)\n"
    "                            vj = T.axis.spatial(64, j0 * 8 + j1)\n"
    "                            vk = T.axis.reduce(64, k)\n"
    "                            C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    "            for i1 in range(4):\n"
    "                for j1 in T.vectorized(8):\n"
    "                    with T.block(\"C_local\"):\n"
    "                        vi = T.axis.spatial(64, i0 * 4 + i1)\n"
    "                        vj = T.axis.spatial(64, j0 * 8 + j1)\n"
    "                        C[vi, vj] = C_local[vi, vj]\n";

static void test_tiled_matmul_features(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_features f;
  mlc_error err;
  CHECK(mlc_features_extract(parse_func(a, MM_TILED), &f, &err));
  CHECK_MSG(f.n_stores == 3, "%d stores", f.n_stores);
  if (f.n_stores == 3) {
    const float *init = f.rows, *upd = f.rows + MLC_FEATURE_DIM,
                *wb = f.rows + 2 * MLC_FEATURE_DIM;
    /* update: 64^3 multiply-adds; loops i0 j0 k i1 j1 */
    CHECK_FEAT(upd, "float_mad", slog(262144));
    CHECK_FEAT(upd, "float_add_sub", 0);
    CHECK_FEAT(upd, "float_mul", 0);
    CHECK_FEAT(upd, "num_loops", slog(5));
    CHECK_FEAT(upd, "parallel_len", slog(16));
    CHECK_FEAT(upd, "parallel_pos_outer_spatial", 1);
    CHECK_FEAT(upd, "unroll_len", slog(4));
    CHECK_FEAT(upd, "unroll_pos_inner_spatial", 0);
    CHECK_FEAT(upd, "unroll_pos_middle_spatial", 1);
    CHECK_FEAT(upd, "vec_len", slog(8));
    CHECK_FEAT(upd, "vec_pos_inner_spatial", 1);
    /* b0 = A (most lines: i1 strides 64 floats, 8 j1 iterations share a
     * line): 262144 / 8 lines; all of A touched: 16 KiB; reused by j1
     * (8 times, one iteration apart, 3 x 4 bytes in between). */
    CHECK_FEAT(upd, "b0_acc_read", 1);
    CHECK_FEAT(upd, "b0_lines", slog(32768));
    CHECK_FEAT(upd, "b0_unique_bytes", slog(16384));
    CHECK_FEAT(upd, "b0_reuse_loop_multiple_read", 1);
    CHECK_FEAT(upd, "b0_reuse_ct", slog(8));
    CHECK_FEAT(upd, "b0_reuse_dis_iter", slog(1));
    CHECK_FEAT(upd, "b0_reuse_dis_bytes", slog(12));
    CHECK_FEAT(upd, "b0_stride", 0); /* j1 does not move A */
    /* b1 = B: reused across i1; between two uses one j1 sweep touches
     * 8 C_local + 1 A + 8 B floats = 68 bytes */
    CHECK_FEAT(upd, "b1_reuse_loop_multiple_read", 1);
    CHECK_FEAT(upd, "b1_reuse_ct", slog(4));
    CHECK_FEAT(upd, "b1_reuse_dis_iter", slog(8));
    CHECK_FEAT(upd, "b1_reuse_dis_bytes", slog(68));
    CHECK_FEAT(upd, "b1_stride", slog(1));
    /* b2 = C_local (read and written): reused across k; one k iteration
     * touches the 4 x 8 tile, 4 floats of A and 8 of B: 44 floats */
    CHECK_FEAT(upd, "b2_acc_readwrite", 1);
    CHECK_FEAT(upd, "b2_reuse_ct", slog(64));
    CHECK_FEAT(upd, "b2_reuse_dis_iter", slog(32));
    CHECK_FEAT(upd, "b2_reuse_dis_bytes", slog(176));
    CHECK_FEAT(upd, "b2_unique_bytes", slog(128));
    /* the accumulator is allocated per (i0, j0): 32 floats */
    CHECK_FEAT(upd, "alloc_size", slog(128));
    CHECK_FEAT(upd, "alloc_outer_prod", slog(128));
    CHECK_FEAT(upd, "alloc_inner_prod", slog(2048));
    /* init: writes the tile once per (i0, j0) */
    CHECK_FEAT(init, "outer_prod", slog(4096));
    CHECK_FEAT(init, "b0_acc_write", 1);
    /* write-back: C_local was written by the two stores before, under the
     * same j0 loop: serial reuse (count 2: init and update came first) */
    CHECK_FEAT(wb, "outer_prod", slog(4096));
    CHECK_FEAT(wb, "float_add_sub", 0);
    int cl = near(wb[mlc_feature_index("b0_acc_read")], 1) ? 0 : 1;
    char n[64];
    snprintf(n, sizeof n, "b%d_reuse_serial_multiple_read_write", cl);
    CHECK_FEAT(wb, n, 1);
    snprintf(n, sizeof n, "b%d_reuse_ct", cl);
    CHECK_FEAT(wb, n, slog(2));
  }
  mlc_features_free(&f);
  mlc_arena_free(a);
}

/* A transpose B[j, i] = A[i, j] of 16 x 32 floats, the outer loop
 * parallel. Flat indices: A 32 i + j, B 16 j + i; j innermost. */
static const char *TRANSPOSE =
    "@T.prim_func\n"
    "def main(A: T.Buffer((16, 32), \"float32\"), B: T.Buffer((32, 16), \"float32\")):\n"
    "    for i in T.parallel(16):\n"
    "        for j in range(32):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(16, i)\n"
    "                vj = T.axis.spatial(32, j)\n"
    "                B[vj, vi] = A[vi, vj]\n";

static void test_transpose_features(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_features f;
  mlc_error err;
  CHECK(mlc_features_extract(parse_func(a, TRANSPOSE), &f, &err));
  CHECK(f.ok && f.n_stores == 1);
  if (f.n_stores == 1) {
    const float *r = f.rows;
    CHECK_FEAT(r, "outer_prod", slog(512));
    CHECK_FEAT(r, "num_loops", slog(2));
    CHECK_FEAT(r, "float_add_sub", 0); /* a copy: no arithmetic */
    CHECK_FEAT(r, "float_mad", 0);
    CHECK_FEAT(r, "parallel_num", slog(1));
    CHECK_FEAT(r, "parallel_len", slog(16));
    CHECK_FEAT(r, "parallel_pos_outer_spatial", 1);
    CHECK_FEAT(r, "vec_pos_none", 1);
    CHECK_FEAT(r, "ai_curve_5", 0);
    /* b0 = B, the write: j strides 16 floats = 64 bytes, a new line every
     * iteration: 512 lines; 512 x 4 bytes, all distinct; the 16 i values
     * are contiguous, then j continues the run: 2048 contiguous bytes,
     * 32 distinct lines */
    CHECK_FEAT(r, "b0_acc_write", 1);
    CHECK_FEAT(r, "b0_stride", slog(16));
    CHECK_FEAT(r, "b0_bytes", slog(2048));
    CHECK_FEAT(r, "b0_unique_bytes", slog(2048));
    CHECK_FEAT(r, "b0_lines", slog(512));
    CHECK_FEAT(r, "b0_unique_lines", slog(32));
    CHECK_FEAT(r, "b0_reuse_none", 1);
    CHECK_FEAT(r, "b0_reuse_ct", 0);
    /* no reuse counts as 0.5: bytes / 0.5 */
    CHECK_FEAT(r, "b0_bytes_d_reuse_ct", slog(4096));
    /* b1 = A, the read: unit stride, 16 floats a line: 512 / 16 lines */
    CHECK_FEAT(r, "b1_acc_read", 1);
    CHECK_FEAT(r, "b1_stride", slog(1));
    CHECK_FEAT(r, "b1_bytes", slog(2048));
    CHECK_FEAT(r, "b1_lines", slog(32));
    CHECK_FEAT(r, "b1_unique_lines", slog(32));
    CHECK_FEAT(r, "b1_reuse_none", 1);
    CHECK_FEAT(r, "b2_bytes", 0);
  }
  mlc_features_free(&f);
  mlc_arena_free(a);
}

/* A lowered reduction init runs under `if k == 0`: its nest leaves k out. */
static void test_reduction_init_nest(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_features f;
  mlc_error err;
  CHECK(mlc_features_extract(task(a, "matmul", "8,12,16"), &f, &err));
  CHECK_MSG(f.n_stores == 2, "%d stores", f.n_stores);
  if (f.n_stores == 2) {
    CHECK_FEAT(f.rows, "outer_prod", slog(96));
    CHECK_FEAT(f.rows, "num_loops", slog(2));
    CHECK_FEAT(f.rows + MLC_FEATURE_DIM, "outer_prod", slog(8 * 12 * 16));
    CHECK_FEAT(f.rows + MLC_FEATURE_DIM, "float_mad", slog(8 * 12 * 16));
    /* the unscheduled conv-free matmul: k innermost reads A with stride 1 */
    CHECK_FEAT(f.rows + MLC_FEATURE_DIM, "vec_pos_none", 1);
  }
  mlc_features_free(&f);
  /* a lowering failure is reported, not crashed on */
  mlc_arena_free(a);
}

/* ---- random schedules and determinism ------------------------------------------ */

typedef struct dataset {
  int n;
  mlc_features *f;
  uint64_t *group;
  double *secs;
} dataset;

static mlc_sched *random_sched(const mlc_prim_func *w, uint64_t seed) {
  mlc_sched *s = mlc_sched_new(w, seed);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 99);
  mlc_error err;
  MLC_ASSERT(mlc_costmodel_random_schedule(s, &rng, &err));
  return s;
}

static bool same_results(const mlc_prim_func *f, const mlc_prim_func *g, uint64_t seed) {
  int np = f->n_params;
  mlc_array *x[8], *y[8];
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 3);
  for (int i = 0; i < np; i++) {
    x[i] = mlc_array_for_buffer(f->params[i]);
    y[i] = mlc_array_for_buffer(g->params[i]);
    mlc_array_fill_random(x[i], &rng);
    memcpy(y[i]->data, x[i]->data,
           (size_t)mlc_array_numel(x[i]) * (size_t)mlc_dtype_bytes(x[i]->dtype));
  }
  mlc_array xs[8], ys[8];
  for (int i = 0; i < np; i++) xs[i] = *x[i], ys[i] = *y[i];
  mlc_error err;
  bool ok = mlc_interp_run(f, xs, &err) && mlc_interp_run(g, ys, &err);
  for (int i = 0; i < np && ok; i++) {
    double me;
    ok = mlc_array_allclose(&ys[i], &xs[i], 1e-4, 1e-4, &me);
  }
  for (int i = 0; i < np; i++) {
    mlc_array_free(x[i]);
    mlc_array_free(y[i]);
  }
  return ok;
}

static void test_random_schedules_valid(void) {
  static const char *const cases[][2] = {
      {"matmul", "12,16,8"}, {"conv2d_nchw", "1,3,9,9,4,3,3,1,1"},
      {"dense_bias_relu", "6,10,9"}, {"softmax", "5,17"}};
  mlc_arena *a = mlc_arena_new();
  int changed = 0;
  for (int c = 0; c < MLC_COUNTOF(cases); c++) {
    mlc_prim_func *w = task(a, cases[c][0], cases[c][1]);
    for (uint64_t seed = 1; seed <= 6; seed++) {
      mlc_sched *s = random_sched(w, seed);
      changed += mlc_sched_trace(s)->insts.len > 3;
      CHECK_MSG(same_results(w, mlc_sched_func(s), seed), "%s seed %d changed results",
                cases[c][0], (int)seed);
      mlc_sched_free(s);
    }
  }
  CHECK(changed > 12);
  mlc_arena_free(a);
}

static void test_deterministic(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *w = task(a, "conv2d_nchw", "1,4,10,10,8,3,3,1,1");
  enum { N = 12 };
  mlc_sched *s[N];
  const mlc_prim_func *fs[N];
  for (int i = 0; i < N; i++) {
    s[i] = random_sched(w, 100 + (uint64_t)i);
    fs[i] = mlc_sched_func(s[i]);
  }
  mlc_features batch[N];
  mlc_error err;
  CHECK(mlc_features_extract_batch(N, fs, batch, &err));
  for (int i = 0; i < N; i++) {
    mlc_features one;
    CHECK(mlc_features_extract(fs[i], &one, &err));
    CHECK(one.n_stores == batch[i].n_stores && one.n_stores > 0);
    if (one.n_stores == batch[i].n_stores)
      CHECK(memcmp(one.rows, batch[i].rows,
                   sizeof(float) * (size_t)one.n_stores * MLC_FEATURE_DIM) == 0);
    for (int k = 0; k < one.n_stores * MLC_FEATURE_DIM; k++)
      CHECK_MSG(isfinite(one.rows[k]) && one.rows[k] >= 0, "feature %s = %g",
                mlc_feature_name(k % MLC_FEATURE_DIM), (double)one.rows[k]);
    mlc_features_free(&one);
    mlc_features_free(&batch[i]);
    mlc_sched_free(s[i]);
  }
  mlc_arena_free(a);
}

/* ---- learning ------------------------------------------------------------------- */

static double feat(const float *r, const char *name) {
  return exp2(r[mlc_feature_index(name)]) - 1;
}

/* A made-up machine: a store costs its iterations divided by the vector
 * length and by the parallel extent (up to 8 cores), plus a penalty per
 * cache line its buffers touch. Models must learn this from the features
 * of the programs alone. */
static double synthetic_secs(const mlc_features *f) {
  double t = 0;
  for (int s = 0; s < f->n_stores; s++) {
    const float *r = f->rows + (size_t)s * MLC_FEATURE_DIM;
    double iters = feat(r, "outer_prod");
    double vec = fmax(1, feat(r, "vec_len")), par = fmin(8, fmax(1, feat(r, "parallel_prod")));
    double lines = feat(r, "b0_lines") + feat(r, "b1_lines") + feat(r, "b2_lines");
    t += (iters / vec + 3 * lines) / par;
  }
  return t * 1e-9;
}

static void make_dataset(dataset *d, int n, uint64_t seed0) {
  static const char *const shapes[] = {"32,32,32", "16,64,48", "64,8,32"};
  mlc_arena *a = mlc_arena_new();
  d->n = n;
  d->f = mlc_xmalloc(sizeof(mlc_features) * (size_t)n);
  d->group = mlc_xmalloc(sizeof(uint64_t) * (size_t)n);
  d->secs = mlc_xmalloc(sizeof(double) * (size_t)n);
  mlc_prim_func *w[3];
  for (int k = 0; k < 3; k++) w[k] = task(a, "matmul", shapes[k]);
  mlc_sched **s = mlc_xmalloc(sizeof(mlc_sched *) * (size_t)n);
  const mlc_prim_func **fs = mlc_xmalloc(sizeof(*fs) * (size_t)n);
  for (int i = 0; i < n; i++) {
    s[i] = random_sched(w[i % 3], seed0 + (uint64_t)i);
    fs[i] = mlc_sched_func(s[i]);
    d->group[i] = (uint64_t)(i % 3) + 1;
  }
  mlc_error err;
  MLC_ASSERT(mlc_features_extract_batch(n, fs, d->f, &err));
  for (int i = 0; i < n; i++) {
    d->secs[i] = synthetic_secs(&d->f[i]);
    mlc_sched_free(s[i]);
  }
  mlc_free(s);
  mlc_free(fs);
  mlc_arena_free(a);
}

static void free_dataset(dataset *d) {
  for (int i = 0; i < d->n; i++) mlc_features_free(&d->f[i]);
  mlc_free(d->f);
  mlc_free(d->group);
  mlc_free(d->secs);
}

/* Fraction of same-workload pairs with different times ordered right. */
static double pairwise_accuracy(const dataset *d, int from, const double *scores) {
  long right = 0, all = 0;
  for (int i = from; i < d->n; i++)
    for (int j = i + 1; j < d->n; j++) {
      if (d->group[i] != d->group[j] || d->secs[i] == d->secs[j]) continue;
      double si = scores[i - from], sj = scores[j - from];
      all++;
      right += (d->secs[i] < d->secs[j]) == (si > sj);
    }
  return all ? (double)right / (double)all : 0;
}

static dataset DS;
enum { N_TRAIN = 300, N_ALL = 450 };

static double heldout_accuracy(mlc_costmodel *m, double *scores) {
  mlc_error err;
  bool ok = mlc_costmodel_predict(m, N_ALL - N_TRAIN, DS.f + N_TRAIN, scores, &err);
  CHECK_MSG(ok, "predict: %s", err.msg);
  return ok ? pairwise_accuracy(&DS, N_TRAIN, scores) : 0;
}

static void test_models_learn(void) {
  double scores[N_ALL - N_TRAIN];
  mlc_error err;
  mlc_costmodel *r = mlc_costmodel_new(MLC_COSTMODEL_RANDOM, 7);
  CHECK(mlc_costmodel_update(r, N_TRAIN, DS.f, DS.group, DS.secs, &err));
  double acc_random = heldout_accuracy(r, scores);
  CHECK_MSG(acc_random > 0.35 && acc_random < 0.65, "random scores %.3f", acc_random);
  mlc_costmodel_free(r);
  for (int k = MLC_COSTMODEL_XGB_AGG_RANK; k <= MLC_COSTMODEL_XGB_STORE_SUM; k++) {
    mlc_costmodel_opts o = {.rounds = 60, .nthread = 1};
    mlc_costmodel *m = mlc_costmodel_new_opts((mlc_costmodel_kind)k, 7, &o);
    bool ok = mlc_costmodel_update(m, N_TRAIN, DS.f, DS.group, DS.secs, &err);
    CHECK_MSG(ok, "%s: %s", mlc_costmodel_kind_name((mlc_costmodel_kind)k), err.msg);
    CHECK(mlc_costmodel_is_trained(m));
    double acc = heldout_accuracy(m, scores);
    printf("# %s held-out pairwise accuracy %.3f (random %.3f)\n",
           mlc_costmodel_kind_name((mlc_costmodel_kind)k), acc, acc_random);
    CHECK_MSG(acc > 0.8 && acc > acc_random + 0.2, "%s: accuracy %.3f",
              mlc_costmodel_kind_name((mlc_costmodel_kind)k), acc);
    mlc_costmodel_free(m);
  }
}

/* Warm start: the second training adds rounds to the first booster; the
 * model still ranks well and its blob still round-trips. */
static void test_warm_start(void) {
  double scores[N_ALL - N_TRAIN], before[N_ALL - N_TRAIN];
  mlc_error err;
  mlc_costmodel_opts o = {.rounds = 40, .warm_rounds = 10, .retrain_every = 100, .nthread = 1};
  mlc_costmodel *m = mlc_costmodel_new_opts(MLC_COSTMODEL_XGB_AGG_RANK, 7, &o);
  CHECK(mlc_costmodel_update(m, 150, DS.f, DS.group, DS.secs, &err));
  CHECK(mlc_costmodel_predict(m, N_ALL - N_TRAIN, DS.f + N_TRAIN, before, &err));
  CHECK(mlc_costmodel_update(m, 150, DS.f + 150, DS.group + 150, DS.secs + 150, &err));
  CHECK(mlc_costmodel_is_trained(m) && mlc_costmodel_n_trained(m) == 300);
  double acc = heldout_accuracy(m, scores);
  CHECK_MSG(acc > 0.8, "accuracy %.3f", acc);
  CHECK(memcmp(before, scores, sizeof scores) != 0);
  uint8_t *blob;
  size_t len;
  CHECK(mlc_costmodel_save(m, &blob, &len, &err));
  mlc_costmodel *l = mlc_costmodel_load(blob, len, 7, &err);
  CHECK(l != NULL);
  if (l) {
    double again[N_ALL - N_TRAIN];
    CHECK(mlc_costmodel_predict(l, N_ALL - N_TRAIN, DS.f + N_TRAIN, again, &err));
    CHECK(memcmp(again, scores, sizeof scores) == 0);
  }
  mlc_costmodel_free(l);
  mlc_free(blob);
  mlc_costmodel_free(m);
}

/* Below the minimum sample count the model scores with seeded noise; it
 * trains once enough samples arrived. */
static void test_min_samples(void) {
  double s1[10], s2[10];
  mlc_error err;
  mlc_costmodel *a = mlc_costmodel_new(MLC_COSTMODEL_XGB_AGG_RANK, 5);
  mlc_costmodel *b = mlc_costmodel_new(MLC_COSTMODEL_XGB_AGG_RANK, 5);
  CHECK(mlc_costmodel_update(a, 40, DS.f, DS.group, DS.secs, &err));
  CHECK(!mlc_costmodel_is_trained(a) && mlc_costmodel_n_samples(a) == 40);
  CHECK(mlc_costmodel_predict(a, 10, DS.f + 400, s1, &err));
  CHECK(mlc_costmodel_predict(b, 10, DS.f + 400, s2, &err));
  CHECK(memcmp(s1, s2, sizeof s1) == 0);
  CHECK(mlc_costmodel_update(a, 30, DS.f + 40, DS.group + 40, DS.secs + 40, &err));
  CHECK(mlc_costmodel_is_trained(a) && mlc_costmodel_n_samples(a) == 70);
  mlc_costmodel_free(a);
  mlc_costmodel_free(b);
}

static void test_save_load(void) {
  mlc_error err;
  for (int k = 0; k < MLC_COSTMODEL_KIND_COUNT; k++) {
    mlc_costmodel_opts o = {.rounds = 20, .nthread = 1};
    mlc_costmodel *m = mlc_costmodel_new_opts((mlc_costmodel_kind)k, 3, &o);
    CHECK(mlc_costmodel_update(m, N_TRAIN, DS.f, DS.group, DS.secs, &err));
    uint8_t *blob;
    size_t len;
    CHECK_MSG(mlc_costmodel_save(m, &blob, &len, &err), "save: %s", err.msg);
    mlc_costmodel_kind kind;
    int fv;
    int64_t ns;
    CHECK(mlc_costmodel_blob_check(blob, len, &kind, &fv, &ns, &err));
    CHECK(kind == (mlc_costmodel_kind)k && fv == MLC_FEATURE_VERSION);
    mlc_costmodel *l = mlc_costmodel_load(blob, len, 3, &err);
    CHECK_MSG(l != NULL, "load: %s", err.msg);
    if (l && k != MLC_COSTMODEL_RANDOM) {
      double p1[50], p2[50];
      CHECK(ns == N_TRAIN && mlc_costmodel_n_trained(l) == N_TRAIN);
      CHECK(mlc_costmodel_is_trained(l));
      CHECK(mlc_costmodel_predict(m, 50, DS.f + 400, p1, &err));
      CHECK(mlc_costmodel_predict(l, 50, DS.f + 400, p2, &err));
      CHECK_MSG(memcmp(p1, p2, sizeof p1) == 0, "%s: predictions differ after load",
                mlc_costmodel_kind_name((mlc_costmodel_kind)k));
      /* and a second save gives the same bytes */
      uint8_t *blob2;
      size_t len2;
      CHECK(mlc_costmodel_save(l, &blob2, &len2, &err));
      CHECK(len2 == len && memcmp(blob, blob2, len) == 0);
      mlc_free(blob2);
    }
    mlc_costmodel_free(l);
    mlc_costmodel_free(m);
    mlc_free(blob);
  }
}

static void expect_refused(const uint8_t *blob, size_t len, const char *what, const char *want) {
  mlc_error err = {{0}};
  mlc_costmodel *l = mlc_costmodel_load(blob, len, 1, &err);
  CHECK_MSG(l == NULL, "%s accepted", what);
  CHECK_MSG(strstr(err.msg, want) != NULL, "%s: message \"%s\"", what, err.msg);
  mlc_costmodel_free(l);
}

static void test_corrupt_blob(void) {
  mlc_error err;
  mlc_costmodel_opts o = {.rounds = 10, .nthread = 1};
  mlc_costmodel *m = mlc_costmodel_new_opts(MLC_COSTMODEL_XGB_AGG_RANK, 3, &o);
  CHECK(mlc_costmodel_update(m, 100, DS.f, DS.group, DS.secs, &err));
  uint8_t *blob;
  size_t len;
  CHECK(mlc_costmodel_save(m, &blob, &len, &err));
  uint8_t *bad = mlc_xmalloc(len);
  /* a flipped bit anywhere in the payload, at several places */
  for (size_t pos = 48; pos < len; pos += len / 7 + 1) {
    memcpy(bad, blob, len);
    bad[pos] ^= 0x10;
    expect_refused(bad, len, "flipped payload bit", "checksum");
  }
  memcpy(bad, blob, len);
  bad[12] = 2; /* kind changed without fixing the checksum */
  expect_refused(bad, len, "changed header", "checksum");
  expect_refused(blob, len - 1, "truncated", "truncated");
  expect_refused(blob, 20, "short", "not a cost model");
  memcpy(bad, blob, len);
  bad[0] = 'X';
  expect_refused(bad, len, "bad magic", "not a cost model");
  mlc_free(bad);
  mlc_free(blob);
  mlc_costmodel_free(m);
}

/* The fast path (scheduled funcs, parallel extraction, one predict call)
 * agrees with extracting and predicting one by one. */
static void test_predict_funcs(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *w = task(a, "matmul", "32,32,32");
  enum { N = 16 };
  mlc_sched *s[N];
  const mlc_prim_func *fs[N];
  for (int i = 0; i < N; i++) {
    s[i] = random_sched(w, 500 + (uint64_t)i);
    fs[i] = mlc_sched_func(s[i]);
  }
  mlc_error err;
  mlc_costmodel_opts o = {.rounds = 20, .nthread = 1};
  mlc_costmodel *m = mlc_costmodel_new_opts(MLC_COSTMODEL_XGB_STORE_SUM, 1, &o);
  CHECK(mlc_costmodel_update(m, N_TRAIN, DS.f, DS.group, DS.secs, &err));
  double batch[N], sched[N];
  CHECK(mlc_costmodel_predict_funcs(m, N, fs, batch, &err));
  CHECK(mlc_costmodel_predict_scheds(m, N, s, sched, &err));
  CHECK(memcmp(batch, sched, sizeof batch) == 0);
  for (int i = 0; i < N; i++) {
    mlc_features f;
    double one;
    CHECK(mlc_features_extract(fs[i], &f, &err));
    CHECK(mlc_costmodel_predict(m, 1, &f, &one, &err));
    CHECK_MSG(fabs(one - batch[i]) < 1e-6, "candidate %d: %g vs %g", i, one, batch[i]);
    mlc_features_free(&f);
    mlc_sched_free(s[i]);
  }
  mlc_costmodel_free(m);
  mlc_arena_free(a);
}

/* Empty batches, a program without stores, a model with nothing to train
 * on: answers, not crashes. */
static void test_edge_cases(void) {
  mlc_error err;
  mlc_costmodel *m = mlc_costmodel_new(MLC_COSTMODEL_XGB_AGG_REG, 1);
  double sc[1];
  CHECK(mlc_costmodel_predict(m, 0, NULL, sc, &err));
  CHECK(mlc_costmodel_update(m, 0, NULL, NULL, NULL, &err));
  CHECK(!mlc_costmodel_train(m, &err) && strstr(err.msg, "no samples"));
  mlc_features none = {0, NULL, true}, bad = {0, NULL, false};
  float agg[MLC_FEATURE_AGG_DIM];
  mlc_features_aggregate(&none, agg);
  CHECK(agg[0] == 0 && agg[MLC_FEATURE_AGG_DIM - 1] == 0);
  CHECK(mlc_costmodel_predict(m, 1, &bad, sc, &err) && isinf(sc[0]) && sc[0] < 0);
  mlc_costmodel_free(m);
  /* failed runs (infinite or zero seconds) train as label 0 */
  mlc_costmodel_opts o = {.rounds = 5, .nthread = 1};
  m = mlc_costmodel_new_opts(MLC_COSTMODEL_XGB_STORE_SUM, 1, &o);
  double *secs = mlc_xmalloc(sizeof(double) * 80);
  for (int i = 0; i < 80; i++) secs[i] = i % 5 == 0 ? INFINITY : i % 7 == 0 ? 0 : DS.secs[i];
  CHECK_MSG(mlc_costmodel_update(m, 80, DS.f, DS.group, secs, &err), "%s", err.msg);
  CHECK(mlc_costmodel_is_trained(m));
  mlc_free(secs);
  mlc_costmodel_free(m);
  /* a blob of an untrained model loads as an untrained model */
  m = mlc_costmodel_new(MLC_COSTMODEL_XGB_AGG_RANK, 1);
  uint8_t *blob;
  size_t len;
  CHECK(mlc_costmodel_save(m, &blob, &len, &err));
  mlc_costmodel *l = mlc_costmodel_load(blob, len, 1, &err);
  CHECK(l && !mlc_costmodel_is_trained(l) && mlc_costmodel_get_kind(l) == MLC_COSTMODEL_XGB_AGG_RANK);
  mlc_costmodel_free(l);
  mlc_costmodel_free(m);
  mlc_free(blob);
}

/* A database file and its WAL side files. */
static void remove_db(const char *path) {
  char side[PATH_MAX];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

/* Through the database's models table: saved after training, reloaded by
 * "the next run" with the same scores; a blob damaged before it was stored
 * (so the database's own checksum matches) is still refused on load. */
static void test_db_round_trip(void) {
  char path[] = "/tmp/mlc_test_costmodel_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  unlink(path);
  mlc_error err;
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, &err);
  CHECK_MSG(db != NULL, "%s", err.msg);
  if (!db) return;
  mlc_costmodel_opts o = {.rounds = 20, .nthread = 1};
  mlc_costmodel *m = mlc_costmodel_new_opts(MLC_COSTMODEL_XGB_AGG_RANK, 3, &o);
  CHECK(mlc_costmodel_update(m, N_TRAIN, DS.f, DS.group, DS.secs, &err));
  uint8_t *blob;
  size_t len;
  CHECK(mlc_costmodel_save(m, &blob, &len, &err));
  CHECK(mlc_db_save_model(db, "llvm", MLC_FEATURE_VERSION, mlc_costmodel_n_trained(m), blob, len,
                          &err) > 0);
  void *back = NULL;
  size_t blen = 0;
  int64_t ns = 0;
  CHECK(mlc_db_load_model(db, "llvm", MLC_FEATURE_VERSION, &back, &blen, &ns, &err) == 1);
  CHECK(ns == N_TRAIN);
  mlc_costmodel *l = back ? mlc_costmodel_load(back, blen, 3, &err) : NULL;
  CHECK_MSG(l != NULL, "%s", err.msg);
  if (l) {
    double p1[40], p2[40];
    CHECK(mlc_costmodel_predict(m, 40, DS.f + 410, p1, &err));
    CHECK(mlc_costmodel_predict(l, 40, DS.f + 410, p2, &err));
    CHECK(memcmp(p1, p2, sizeof p1) == 0);
  }
  mlc_costmodel_free(l);
  mlc_free(back);
  blob[len / 2] ^= 1;
  CHECK(mlc_db_save_model(db, "llvm", MLC_FEATURE_VERSION, N_TRAIN, blob, len, &err) > 0);
  back = NULL;
  CHECK(mlc_db_load_model(db, "llvm", MLC_FEATURE_VERSION, &back, &blen, NULL, &err) == 1);
  if (back) expect_refused(back, blen, "damaged before storing", "checksum");
  mlc_free(back);
  mlc_free(blob);
  mlc_costmodel_free(m);
  mlc_db_close(db);
  remove_db(path);
}

/* ---- the tuner keeps its model in the database --------------------------------- */

/* Times from the trace text's hash: a deterministic made-up machine. */
static bool fake_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                         mlc_error *err) {
  MLC_UNUSED(ud);
  MLC_UNUSED(err);
  for (int i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof out[i]);
    out[i].index = i;
    uint64_t h = mlc_hash_str(c[i].trace ? c[i].trace : "", 0);
    out[i].status = MLC_MEASURE_OK;
    out[i].n_secs = 1;
    out[i].secs[0] = out[i].mean_sec = 1e-3 * (double)(1 + h % 997);
  }
  return true;
}

static bool tune_small_opts(mlc_db *db, const mlc_prim_func *f, const char *name, int trials,
                            bool cold_start, mlc_tuner_tune_result *res) {
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_opts_default(&o);
  o.cold_start = cold_start;
  o.task = name;
  o.shape = "";
  o.trials = trials;
  o.trials_per_round = 16;
  o.cost_model = "xgb-rank";
  o.measure = fake_measure;
  o.remeasure_top = 0;
  o.no_default_candidate = true; /* rounds of 16 exactly: a training after each */
  o.search.num_cores = 2;
  o.search.population = 24;
  o.search.generations = 2;
  o.search.seed = 3;
  mlc_error err;
  bool ok = mlc_tuner_tune(db, f, &o, res, &err);
  CHECK_MSG(ok, "tune %s: %s", name, err.msg);
  return ok;
}

static bool tune_small(mlc_db *db, const mlc_prim_func *f, const char *name, int trials,
                       mlc_tuner_tune_result *res) {
  return tune_small_opts(db, f, name, trials, false, res);
}

/* A tuning run stores its trained model; the next run (another workload,
 * same target) reloads it; a blob damaged in the database is refused with
 * a warning and the run goes on with a fresh model, which it stores. The
 * other workloads' records train the model before a run's own (learning
 * across workloads), unless the run asks for a cold start. */
static void test_tuner_model_store(void) {
  char path[] = "/tmp/mlc_test_costmodel_tune_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  unlink(path);
  mlc_error err;
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, &err);
  CHECK_MSG(db != NULL, "%s", err.msg);
  if (!db) return;
  char target[512];
  mlc_db_normalize_target("llvm", target, sizeof target);
  mlc_arena *a = mlc_arena_new();
  mlc_tuner_tune_result res;
  void *blob = NULL;
  size_t len = 0;
  int64_t ns = 0;
  /* 1: nothing stored; trains after each round of 16 and stores */
  bool ok = tune_small(db, task(a, "matmul", "16,16,16"), "matmul", 32, &res);
  if (ok && strstr(res.message, "cannot learn")) {
    printf("# XGBoost missing (%s): model store not checked\n", res.message);
    goto done;
  }
  CHECK_MSG(ok && res.measured == 32 && !strstr(res.message, "warning"), "%s", res.message);
  CHECK(mlc_db_load_model(db, target, MLC_FEATURE_VERSION, &blob, &len, &ns, &err) == 1);
  CHECK_MSG(ns == 32, "stored model trained on %d", (int)ns);
  mlc_costmodel *m = blob ? mlc_costmodel_load(blob, len, 1, &err) : NULL;
  CHECK_MSG(m && mlc_costmodel_is_trained(m) &&
                mlc_costmodel_get_kind(m) == MLC_COSTMODEL_XGB_AGG_RANK,
            "%s", err.msg);
  mlc_costmodel_free(m);
  /* 2: the latest blob damaged (a payload bit; the database's own checksum
   * is of the damaged bytes, so only the blob's header catches it) */
  if (blob) {
    ((uint8_t *)blob)[len - 3] ^= 4;
    CHECK(mlc_db_save_model(db, target, MLC_FEATURE_VERSION, ns, blob, len, &err) > 0);
  }
  mlc_free(blob);
  blob = NULL;
  ok = tune_small(db, task(a, "matmul", "16,8,16"), "matmul", 32, &res);
  CHECK_MSG(ok && res.measured == 32, "measured %d", res.measured);
  CHECK_MSG(strstr(res.message, "warning") && strstr(res.message, "checksum") &&
                strstr(res.message, "fresh model"),
            "message \"%s\"", res.message);
  /* the fresh model learned the first workload's 32 records, then this
   * run's 32, and replaced it */
  CHECK_MSG(res.transfer_records == 32 && res.transfer_workloads == 1, "transfer %d of %d",
            res.transfer_records, res.transfer_workloads);
  CHECK(mlc_db_load_model(db, target, MLC_FEATURE_VERSION, &blob, &len, &ns, &err) == 1);
  m = blob ? mlc_costmodel_load(blob, len, 1, &err) : NULL;
  CHECK_MSG(m != NULL, "%s", err.msg);
  CHECK_MSG(ns == 64, "stored model trained on %d", (int)ns);
  mlc_costmodel_free(m);
  mlc_free(blob);
  /* 3: a good stored model loads without a word; both other workloads
   * train it first */
  ok = tune_small(db, task(a, "dense_bias_relu", "8,16,16"), "dense_bias_relu", 16, &res);
  CHECK_MSG(ok && res.measured == 16 && res.message[0] == 0, "message \"%s\"", res.message);
  CHECK_MSG(res.transfer_records == 64 && res.transfer_workloads == 2, "transfer %d of %d",
            res.transfer_records, res.transfer_workloads);
  /* 4: cold start: this workload's records only (none yet) */
  ok = tune_small_opts(db, task(a, "matmul", "8,8,8"), "matmul", 16, true, &res);
  CHECK_MSG(ok && res.measured == 16 && res.transfer_records == 0, "transfer %d",
            res.transfer_records);
  CHECK(mlc_db_load_model(db, target, MLC_FEATURE_VERSION, &blob, &len, &ns, &err) == 1);
  CHECK_MSG(ns == 16, "cold-start model trained on %d", (int)ns);
  mlc_free(blob);
  blob = NULL;
done:
  mlc_arena_free(a);
  mlc_db_close(db);
  remove_db(path);
}

static void test_kind_names(void) {
  for (int k = 0; k < MLC_COSTMODEL_KIND_COUNT; k++) {
    mlc_costmodel_kind got;
    CHECK(mlc_costmodel_kind_from_name(mlc_costmodel_kind_name((mlc_costmodel_kind)k), &got));
    CHECK(got == (mlc_costmodel_kind)k);
  }
  mlc_costmodel_kind got;
  CHECK(!mlc_costmodel_kind_from_name("xgb", &got));
}

int main(void) {
  RUN(test_feature_names);
  RUN(test_kind_names);
  RUN(test_vecadd_features);
  RUN(test_tiled_matmul_features);
  RUN(test_transpose_features);
  RUN(test_reduction_init_nest);
  RUN(test_random_schedules_valid);
  RUN(test_deterministic);
  make_dataset(&DS, N_ALL, 1000);
  RUN(test_models_learn);
  RUN(test_warm_start);
  RUN(test_min_samples);
  RUN(test_save_load);
  RUN(test_corrupt_blob);
  RUN(test_predict_funcs);
  RUN(test_edge_cases);
  RUN(test_db_round_trip);
  RUN(test_tuner_model_store);
  free_dataset(&DS);
  return test_summary();
}
