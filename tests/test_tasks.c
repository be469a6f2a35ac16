/* The task library: every task built at a small shape, verified, run in the
 * interpreter on seeded random inputs and compared with a plain C loop
 * reference; --shape parsing; FLOP counts. */
#include "tasks/tasks.h"
#include "tests/test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- references (double precision, independent of the IR) ---------------- */

/* in[i]: the inputs as float data; out: the expected output. */
typedef void (*ref_fn)(const int64_t *s, float **in, double *out);

static void ref_matmul(const int64_t *s, float **in, double *out) {
  int64_t M = s[0], N = s[1], K = s[2];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (double)in[0][i * K + k] * in[1][k * N + j];
      out[i * N + j] = acc;
    }
}

static void ref_batch_matmul(const int64_t *s, float **in, double *out) {
  int64_t B = s[0], M = s[1], N = s[2], K = s[3];
  for (int64_t b = 0; b < B; b++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += (double)in[0][(b * M + i) * K + k] * in[1][(b * K + k) * N + j];
        out[(b * M + i) * N + j] = acc;
      }
}

static void ref_dense_bias_relu(const int64_t *s, float **in, double *out) {
  int64_t M = s[0], N = s[1], K = s[2];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = in[2][j];
      for (int64_t k = 0; k < K; k++) acc += (double)in[0][i * K + k] * in[1][j * K + k];
      out[i * N + j] = acc > 0 ? acc : 0;
    }
}

static void ref_matmul_relu(const int64_t *s, float **in, double *out) {
  ref_matmul(s, in, out);
  for (int64_t i = 0; i < s[0] * s[1]; i++)
    if (out[i] < 0) out[i] = 0;
}

/* Direct convolution with bounds tests instead of a padded copy. */
static void conv_ref(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
                     int64_t st, int64_t pad, bool depthwise, float **in, double *out) {
  int64_t OH = (H + 2 * pad - R) / st + 1, OW = (W + 2 * pad - S) / st + 1;
  for (int64_t n = 0; n < N; n++)
    for (int64_t f = 0; f < K; f++)
      for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
          double acc = 0;
          for (int64_t c = depthwise ? f : 0; c < (depthwise ? f + 1 : C); c++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t q = 0; q < S; q++) {
                int64_t h = y * st + r - pad, w = x * st + q - pad;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                double d = in[0][((n * C + c) * H + h) * W + w];
                double wt = depthwise ? in[1][(f * R + r) * S + q]
                                      : in[1][((f * C + c) * R + r) * S + q];
                acc += d * wt;
              }
          out[((n * K + f) * OH + y) * OW + x] = acc;
        }
}

static void ref_conv2d(const int64_t *s, float **in, double *out) {
  conv_ref(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], false, in, out);
}

/* conv2d_nchwc: its weight param is packed [K/k, C/c, R, S, c, k]; unpack
 * it to KCRS and run the NCHW reference. */
static void ref_conv2d_nchwc(const int64_t *s, float **in, double *out) {
  int64_t C = s[1], K = s[4], R = s[5], S = s[6];
  int64_t cc = mlc_task_conv_block(C, false), kk = mlc_task_conv_block(K, true);
  float *w = malloc(sizeof(float) * (size_t)(K * C * R * S));
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t r = 0; r < R; r++)
        for (int64_t q = 0; q < S; q++)
          w[((k * C + c) * R + r) * S + q] =
              in[1][((((k / kk) * (C / cc) + c / cc) * R + r) * S + q) * cc * kk +
                    (c % cc) * kk + k % kk];
  float *args[2] = {in[0], w};
  conv_ref(s[0], C, s[2], s[3], K, R, S, s[7], s[8], false, args, out);
  free(w);
}

static void ref_depthwise(const int64_t *s, float **in, double *out) {
  conv_ref(s[0], s[1], s[2], s[3], s[1], s[4], s[5], s[6], s[7], true, in, out);
}

static void ref_softmax(const int64_t *s, float **in, double *out) {
  int64_t R = s[0], C = s[1];
  for (int64_t i = 0; i < R; i++) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < C; j++) mx = fmax(mx, in[0][i * C + j]);
    for (int64_t j = 0; j < C; j++) sum += exp(in[0][i * C + j] - mx);
    for (int64_t j = 0; j < C; j++) out[i * C + j] = exp(in[0][i * C + j] - mx) / sum;
  }
}

static void ref_layernorm(const int64_t *s, float **in, double *out) {
  int64_t R = s[0], C = s[1];
  for (int64_t i = 0; i < R; i++) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < C; j++) mean += in[0][i * C + j];
    mean /= (double)C;
    for (int64_t j = 0; j < C; j++) var += (in[0][i * C + j] - mean) * (in[0][i * C + j] - mean);
    var /= (double)C;
    for (int64_t j = 0; j < C; j++)
      out[i * C + j] = (in[0][i * C + j] - mean) / sqrt(var + 1e-5) * in[1][j] + in[2][j];
  }
}

static void ref_vecadd(const int64_t *s, float **in, double *out) {
  for (int64_t i = 0; i < s[0]; i++) out[i] = (double)in[0][i] + in[1][i];
}

static void ref_window_sum(const int64_t *s, float **in, double *out) {
  for (int64_t i = 0; i < s[0]; i++) out[i] = (double)in[0][i] + in[0][i + 1] + in[0][i + 2];
}

static void ref_transpose(const int64_t *s, float **in, double *out) {
  int64_t M = s[0], N = s[1];
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < M; j++) out[i * M + j] = in[0][j * N + i];
}

static void ref_reduce_sum(const int64_t *s, float **in, double *out) {
  for (int64_t i = 0; i < s[0]; i++) {
    double acc = 0;
    for (int64_t k = 0; k < s[1]; k++) acc += in[0][i * s[1] + k];
    out[i] = acc;
  }
}

/* The inputs are the arrays' raw data whatever their dtype (uint8, int8). */
static void ref_dense_int8(const int64_t *s, float **in, double *out) {
  int64_t M = s[0], N = s[1], K = s[2];
  const uint8_t *a = (const uint8_t *)in[0];
  const int8_t *b = (const int8_t *)in[1];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += (double)a[i * K + k] * b[(j / 16 * (K / 4) + k / 4) * 64 + j % 16 * 4 + k % 4];
      out[i * N + j] = acc;
    }
}

static void ref_matmul_bf16(const int64_t *s, float **in, double *out) {
  int64_t M = s[0], N = s[1], K = s[2];
  const uint16_t *a = (const uint16_t *)in[0], *b = (const uint16_t *)in[1];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += (double)mlc_bf16_to_float(a[i * K + k]) *
               mlc_bf16_to_float(b[(j / 16 * (K / 2) + k / 2) * 32 + j % 16 * 2 + k % 2]);
      out[i * N + j] = acc;
    }
}

/* data [N, C/cb, H, W, cb] uint8, weight [K/16, C/cb, R, S, cb/4, 16, 4]
 * int8, out [N, K/16, OH, OW, 16], cb = 16, 8 or 4. */
static void ref_conv_int8(const int64_t *s, float **in, double *out) {
  int64_t N = s[0], C = s[1], H = s[2], W = s[3], K = s[4], R = s[5], S = s[6];
  int64_t st = s[7], pad = s[8], cb = C % 16 == 0 ? 16 : C % 8 == 0 ? 8 : 4;
  int64_t OH = (H + 2 * pad - R) / st + 1, OW = (W + 2 * pad - S) / st + 1;
  const uint8_t *d = (const uint8_t *)in[0];
  const int8_t *w = (const int8_t *)in[1];
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
          double acc = 0;
          for (int64_t c = 0; c < C; c++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t q = 0; q < S; q++) {
                int64_t iy = y * st + r - pad, ix = x * st + q - pad;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += (double)d[(((n * (C / cb) + c / cb) * H + iy) * W + ix) * cb + c % cb] *
                       w[(((((k / 16 * (C / cb) + c / cb) * R + r) * S + q) * (cb / 4) + c % cb / 4) * 16 +
                          k % 16) * 4 + c % 4];
              }
          out[(((n * (K / 16) + k / 16) * OH + y) * OW + x) * 16 + k % 16] = acc;
        }
}

/* ---- one numeric case per task and shape ----------------------------------- */

typedef struct num_case {
  const char *task;
  const char *shape;
  ref_fn ref;
  int n_blocks; /* blocks under the root the task should have */
} num_case;

static const num_case cases[] = {
    {"matmul", "16,24,20", ref_matmul, 1},
    {"batch_matmul", "3,8,12,10", ref_batch_matmul, 1},
    {"dense_bias_relu", "10,12,14", ref_dense_bias_relu, 3},
    {"matmul_relu", "9,11,13", ref_matmul_relu, 2},
    {"conv2d_nchw", "1,3,8,8,4,3,3", ref_conv2d, 2},
    {"conv2d_nchw", "1,3,8,8,4,3,3,2,0", ref_conv2d, 2},
    {"conv2d_nchw", "2,3,9,7,5,3,2,2,1", ref_conv2d, 2},
    {"conv2d_nchwc", "1,16,6,6,32,3,3", ref_conv2d_nchwc, 3},
    {"conv2d_nchwc", "1,3,9,7,8,3,3,2,1", ref_conv2d_nchwc, 3},
    {"conv2d_nchwc", "2,24,5,5,40,1,1,1,0", ref_conv2d_nchwc, 3},
    {"depthwise_conv2d", "1,4,8,8,3,3", ref_depthwise, 2},
    {"depthwise_conv2d", "2,3,9,7,3,2,2,0", ref_depthwise, 2},
    {"softmax", "5,17", ref_softmax, 4},
    {"layernorm", "6,19", ref_layernorm, 3},
    {"vecadd", "37", ref_vecadd, 1},
    {"window_sum", "29", ref_window_sum, 1},
    {"transpose", "7,13", ref_transpose, 1},
    {"reduce_sum", "6,23", ref_reduce_sum, 1},
    {"dense_int8", "5,32,12", ref_dense_int8, 1},
    {"matmul_bf16", "5,32,12", ref_matmul_bf16, 1},
    {"conv2d_nchwc_int8", "1,8,6,5,32,3,3", ref_conv_int8, 2},
    {"conv2d_nchwc_int8", "2,12,7,6,16,3,2,2,0", ref_conv_int8, 1},
    {"conv2d_nchwc_int8", "1,32,5,5,16,1,1,1,0", ref_conv_int8, 1},
};

static int count_blocks(const mlc_stmt *s) {
  switch (s->kind) {
  case MLC_STMT_FOR:
    return count_blocks(s->loop.body);
  case MLC_STMT_BLOCK_REALIZE:
    return 1 + count_blocks(s->realize.block->body);
  case MLC_STMT_SEQ: {
    int n = 0;
    for (int i = 0; i < s->seq.n; i++) n += count_blocks(s->seq.stmts[i]);
    return n;
  }
  case MLC_STMT_IF:
    return count_blocks(s->if_.then_s) + (s->if_.else_s ? count_blocks(s->if_.else_s) : 0);
  case MLC_STMT_ALLOCATE:
    return count_blocks(s->alloc.body);
  case MLC_STMT_STORE:
  case MLC_STMT_EVALUATE:
    return 0;
  }
  return 0;
}

/* Build, verify, interpret, compare. Returns false with why filled. */
static bool run_case(const num_case *c, char *why, size_t n_why) {
  const mlc_task_def *d = mlc_task_find(c->task);
  if (!d) return snprintf(why, n_why, "unknown task"), false;
  int64_t s[MLC_TASK_MAX_DIMS];
  mlc_error err;
  if (!mlc_task_parse_shape(d, c->shape, s, &err))
    return snprintf(why, n_why, "parse: %s", err.msg), false;
  mlc_arena *a = mlc_arena_new();
  bool ok = false;
  mlc_array *arrs[8] = {0};
  double *want = NULL;
  mlc_prim_func *f = mlc_task_build(a, d, s);
  int np = f->n_params;
  if (strcmp(f->name, "main") != 0) {
    snprintf(why, n_why, "function named %s", f->name);
    goto out;
  }
  if (count_blocks(mlc_func_root(f)->body) != c->n_blocks) {
    snprintf(why, n_why, "%d blocks, want %d", count_blocks(mlc_func_root(f)->body), c->n_blocks);
    goto out;
  }
  if (!mlc_verify_func(f, &err)) {
    snprintf(why, n_why, "verify: %s", err.msg);
    goto out;
  }
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 42, 54);
  mlc_array args[8];
  float *in[8];
  for (int i = 0; i < np; i++) {
    arrs[i] = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(arrs[i], &rng); /* the output too: every element must be written */
    args[i] = *arrs[i];
    in[i] = arrs[i]->data;
  }
  if (!mlc_interp_run(f, args, &err)) {
    snprintf(why, n_why, "interp: %s", err.msg);
    goto out;
  }
  mlc_array *res = arrs[np - 1];
  int64_t n = mlc_array_numel(res);
  want = calloc((size_t)n, sizeof(double));
  c->ref(s, in, want);
  for (int64_t i = 0; i < n; i++) {
    double got = mlc_array_get(res, i);
    if (!(fabs(got - want[i]) <= 1e-4 * fabs(want[i]) + 1e-5)) {
      snprintf(why, n_why, "output[%lld] = %.9g, want %.9g", (long long)i, got, want[i]);
      goto out;
    }
  }
  ok = true;
out:
  free(want);
  for (int i = 0; i < 8; i++)
    if (arrs[i]) mlc_array_free(arrs[i]);
  mlc_arena_free(a);
  return ok;
}

static void test_numeric(void) {
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    char name[96], why[1200] = "";
    snprintf(name, sizeof name, "numeric %s %s", cases[i].task, cases[i].shape);
    test_report(name, run_case(&cases[i], why, sizeof why), why);
  }
}

/* Every task appears in the numeric cases. */
static void test_all_tasks_covered(void) {
  CHECK(mlc_task_count() == 16);
  for (int t = 0; t < mlc_task_count(); t++) {
    bool found = false;
    for (int i = 0; i < MLC_COUNTOF(cases); i++)
      if (strcmp(cases[i].task, mlc_task_at(t)->name) == 0) found = true;
    CHECK_MSG(found, "no numeric case for %s", mlc_task_at(t)->name);
  }
}

/* Defaults parse, build and verify for every task (IR only: cheap). */
static void test_defaults(void) {
  for (int t = 0; t < mlc_task_count(); t++) {
    const mlc_task_def *d = mlc_task_at(t);
    int64_t s1[MLC_TASK_MAX_DIMS], s2[MLC_TASK_MAX_DIMS];
    mlc_error err;
    CHECK_MSG(mlc_task_parse_shape(d, NULL, s1, &err), "%s: %s", d->name, err.msg);
    CHECK_MSG(mlc_task_parse_shape(d, "", s2, &err), "%s: %s", d->name, err.msg);
    CHECK(memcmp(s1, s2, sizeof(int64_t) * (size_t)d->n_dims) == 0);
    CHECK(memcmp(s1, d->defaults, sizeof(int64_t) * (size_t)d->n_dims) == 0);
    CHECK(d->description && *d->description && d->shape_doc && *d->shape_doc);
    CHECK(mlc_task_find(d->name) == d);
    CHECK_MSG(strstr(mlc_task_names(), d->name), "%s not in names", d->name);
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = mlc_task_build(a, d, s1);
    CHECK_MSG(mlc_verify_func(f, &err), "%s: %s", d->name, err.msg);
    const mlc_ann *gs = mlc_ann_find(f->n_attrs, f->attrs, "global_symbol");
    CHECK(gs && gs->kind == MLC_ANN_STRING && strcmp(gs->s, "main") == 0);
    CHECK(mlc_task_flops(d, s1) > 0);
    /* shape text round trip */
    char buf[256];
    mlc_task_shape_str(d, s1, buf, sizeof buf);
    CHECK_MSG(mlc_task_parse_shape(d, buf, s2, &err), "%s: %s", buf, err.msg);
    CHECK(memcmp(s1, s2, sizeof(int64_t) * (size_t)d->n_dims) == 0);
    mlc_arena_free(a);
  }
  CHECK(mlc_task_find("nope") == NULL);
  CHECK(mlc_task_find("") == NULL);
  CHECK_STREQ(mlc_task_names(),
              "matmul, batch_matmul, dense_bias_relu, matmul_relu, conv2d_nchw, conv2d_nchwc, "
              "depthwise_conv2d, softmax, layernorm, vecadd, window_sum, transpose, reduce_sum, "
              "dense_int8, matmul_bf16, conv2d_nchwc_int8");
}

/* Each task's IR prints as TVMScript that parses back to the same text and
 * an equal function. */
static void test_roundtrip(void) {
  for (int t = 0; t < mlc_task_count(); t++) {
    const mlc_task_def *d = mlc_task_at(t);
    int64_t s[MLC_TASK_MAX_DIMS];
    mlc_error err;
    CHECK(mlc_task_parse_shape(d, NULL, s, &err));
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = mlc_task_build(a, d, s);
    mlc_str p1 = {0}, p2 = {0};
    mlc_print_func(&p1, f);
    mlc_module *m = mlc_parse_module(a, d->name, mlc_str_cstr(&p1), &err);
    CHECK_MSG(m && m->n_funcs == 1, "%s: %s", d->name, m ? "funcs" : err.msg);
    if (m && m->n_funcs == 1) {
      mlc_print_func(&p2, m->funcs[0]);
      CHECK_MSG(strcmp(mlc_str_cstr(&p1), mlc_str_cstr(&p2)) == 0, "%s: reprint differs:\n%s\n%s",
                d->name, mlc_str_cstr(&p1), mlc_str_cstr(&p2));
      CHECK_MSG(mlc_func_struct_equal(f, m->funcs[0]), "%s: not struct-equal", d->name);
      CHECK(mlc_func_struct_hash(f) == mlc_func_struct_hash(m->funcs[0]));
    }
    mlc_str_free(&p1);
    mlc_str_free(&p2);
    mlc_arena_free(a);
  }
}

/* ---- --shape parsing ------------------------------------------------------- */

/* Parsing `text` for `task` fails with a message containing `want`. */
static void expect_error(const char *task, const char *text, const char *want) {
  const mlc_task_def *d = mlc_task_find(task);
  int64_t s[MLC_TASK_MAX_DIMS];
  mlc_error err = {{0}};
  bool ok = mlc_task_parse_shape(d, text, s, &err);
  CHECK_MSG(!ok, "%s \"%s\" parsed", task, text);
  CHECK_MSG(strstr(err.msg, want), "%s \"%s\": message \"%s\" lacks \"%s\"", task, text, err.msg,
            want);
  CHECK_MSG(strncmp(err.msg, task, strlen(task)) == 0, "message does not name the task: %s",
            err.msg);
}

static void test_parse_good(void) {
  const mlc_task_def *mm = mlc_task_find("matmul");
  int64_t s[MLC_TASK_MAX_DIMS];
  mlc_error err;
  CHECK(mlc_task_parse_shape(mm, "16,24,20", s, &err) && s[0] == 16 && s[1] == 24 && s[2] == 20);
  CHECK(mlc_task_parse_shape(mm, " 1 , 2,3 ", s, &err) && s[0] == 1 && s[1] == 2 && s[2] == 3);
  CHECK(mlc_task_parse_shape(mm, "+7,2,3", s, &err) && s[0] == 7);
  /* the largest buffers allowed: 2^31 - 1 elements, just under 16 GiB in all */
  CHECK_MSG(mlc_task_parse_shape(mm, "1,2147483647,1", s, &err) && s[1] == 2147483647, "%s",
            err.msg);
  CHECK(mlc_task_parse_shape(mm, NULL, s, &err) && s[0] == 1024 && s[1] == 1024 && s[2] == 1024);

  const mlc_task_def *cv = mlc_task_find("conv2d_nchw");
  CHECK(cv->n_dims == 9);
  CHECK(mlc_task_parse_shape(cv, "1,3,8,8,4,3,3", s, &err));
  CHECK(s[6] == 3 && s[7] == 1 && s[8] == 1); /* stride 1, pad 1 */
  CHECK(mlc_task_parse_shape(cv, "1,3,8,8,4,3,3,2,0", s, &err) && s[7] == 2 && s[8] == 0);
  CHECK(mlc_task_parse_shape(cv, "1,3,4,4,4,4,4,1,0", s, &err)); /* kernel = input: 1x1 out */
  char buf[64];
  mlc_task_shape_str(cv, s, buf, sizeof buf);
  CHECK_STREQ(buf, "1,3,4,4,4,4,4,1,0");
  mlc_task_shape_str(cv, s, buf, 8); /* truncated stays terminated */
  CHECK(strlen(buf) < 8);
  const mlc_task_def *dw = mlc_task_find("depthwise_conv2d");
  CHECK(mlc_task_parse_shape(dw, "1,4,8,8,3,3", s, &err) && s[6] == 1 && s[7] == 1);
  CHECK(mlc_task_parse_shape(mlc_task_find("vecadd"), "5", s, &err) && s[0] == 5);
}

static void test_parse_bad(void) {
  expect_error("matmul", "16,24", "matmul: --shape expects M,N,K (3 numbers), got 2");
  expect_error("matmul", "1,2,3,4", "(3 numbers), got 4");
  expect_error("vecadd", "1,2", "vecadd: --shape expects N (1 number), got 2");
  expect_error("conv2d_nchw", "1,3,8,8,4,3,3,1",
               "--shape expects N,C,H,W,K,R,S[,stride,pad] (7 or 9 numbers), got 8");
  expect_error("conv2d_nchw", "1,3,8,8", "(7 or 9 numbers), got 4");
  expect_error("matmul", "0,2,3", "M must be at least 1, got 0");
  expect_error("matmul", "1,2,0", "K must be at least 1, got 0");
  expect_error("matmul", "-5,2,3", "M must be at least 1, got -5");
  expect_error("conv2d_nchw", "1,3,8,8,4,3,3,1,-1", "pad must be at least 0, got -1");
  expect_error("conv2d_nchw", "1,3,8,8,4,3,3,0,1", "stride must be at least 1, got 0");
  expect_error("matmul", "a,2,3", "\"a\" is not an integer");
  expect_error("matmul", "3x,2,3", "\"3x\" is not an integer");
  expect_error("matmul", "1.5,2,3", "\"1.5\" is not an integer");
  expect_error("matmul", "1,2,-", "\"-\" is not an integer");
  expect_error("matmul", "1,2,3,", "number 4 is empty");
  expect_error("matmul", ",1,2", "number 1 is empty");
  expect_error("matmul", "1,,2", "number 2 is empty");
  expect_error("matmul", "99999999999999999999,1,1", "too large");
  expect_error("matmul", "1,1,9223372036854775808", "too large");
  expect_error("matmul", "2147483648,1,1", "M = 2147483648 is too large (at most 2147483647)");
  expect_error("matmul", "100000,100000,1", "buffer C would have 10000000000 elements");
  expect_error("batch_matmul", "65536,65536,1,1", "buffer A would have 4294967296 elements");
  expect_error("matmul", "46000,46000,46000", "GiB in total (limit 16 GiB)");
  expect_error("vecadd", "2147483647", "GiB in total");
  expect_error("window_sum", "2147483647", "buffer A would have 2147483649 elements");
  expect_error("conv2d_nchw", "1,3,2,2,4,5,5,1,0", "kernel 5x5 does not fit the padded input 2x2");
  expect_error("depthwise_conv2d", "1,3,2,2,7,1,1",
               "--shape expects N,C,H,W,R,S[,stride,pad] (6 or 8 numbers), got 7");
  expect_error("depthwise_conv2d", "1,3,2,2,7,1", "kernel 7x1 does not fit");
}

/* ---- FLOP counts checked by hand ------------------------------------------- */

static double flops_of(const char *task, const char *shape) {
  const mlc_task_def *d = mlc_task_find(task);
  int64_t s[MLC_TASK_MAX_DIMS];
  mlc_error err;
  if (!mlc_task_parse_shape(d, shape, s, &err)) return -1;
  return mlc_task_flops(d, s);
}

static void test_flops(void) {
  CHECK(flops_of("matmul", "16,24,20") == 2.0 * 16 * 24 * 20);
  CHECK(flops_of("matmul", NULL) == 2147483648.0); /* 2 * 1024^3 */
  CHECK(flops_of("batch_matmul", "3,8,12,10") == 5760);
  /* 1x3x8x8 * 4x3x3x3, stride 1 pad 1: 8x8 outputs of 27 MACs per channel */
  CHECK(flops_of("conv2d_nchw", "1,3,8,8,4,3,3") == 2.0 * 4 * 8 * 8 * 27);
  /* stride 2 pad 0: (8 - 3) / 2 + 1 = 3 */
  CHECK(flops_of("conv2d_nchw", "1,3,8,8,4,3,3,2,0") == 2.0 * 4 * 3 * 3 * 27);
  CHECK(flops_of("conv2d_nchw", "1,64,56,56,64,3,3") == 231211008.0);
  CHECK(flops_of("conv2d_nchwc", "1,64,56,56,64,3,3") == 231211008.0);
  CHECK(flops_of("depthwise_conv2d", "1,4,8,8,3,3") == 2.0 * 4 * 8 * 8 * 9);
  CHECK(flops_of("vecadd", "37") == 37);
  CHECK(flops_of("window_sum", "29") == 58);
  CHECK(flops_of("matmul_relu", "2,3,4") == 2.0 * 24 + 6);
  CHECK(flops_of("dense_bias_relu", "2,3,4") == 2.0 * 24 + 12);
}

int main(void) {
  test_numeric();
  RUN(test_all_tasks_covered);
  RUN(test_defaults);
  RUN(test_roundtrip);
  RUN(test_parse_good);
  RUN(test_parse_bad);
  RUN(test_flops);
  return test_summary();
}
