/* The in-process runner (mlc_graph_runner_*): compiled models run from raw
 * pointers match the reference outputs kept with the test models (a CNN,
 * a GPT-2 with int64 token ids), repeated runs give the same result (the
 * workspace is reused), a token id outside the embedding is refused by
 * name before any kernel runs, and an uncompiled module is refused. */
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "targets/targets.h"
#include "tests/test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct loaded {
  mlc_gmodule *m;
  mlc_gcompiled c;
  mlc_grunner *r;
} loaded;

static bool load(const char *path, const char *const *shapes, loaded *l) {
  mlc_error err;
  mlc_target t;
  *l = (loaded){0};
  l->m = mlc_graph_load_any(path, NULL, shapes, &err);
  bool ok = l->m && mlc_graph_run_pipeline(l->m, NULL, NULL, NULL, &err) &&
            mlc_target_parse("llvm", &t, &err) &&
            mlc_graph_compile(l->m, &t, &(mlc_gcompile_options){.db_path = "/nonexistent/none.db"},
                              &l->c, &err) &&
            (l->r = mlc_graph_runner_new(l->m, &l->c, &err)) != NULL;
  CHECK_MSG(ok, "%s: %s", path, err.msg);
  return ok;
}

static void unload(loaded *l) {
  mlc_graph_runner_free(l->r);
  mlc_gcompiled_free(&l->c);
  mlc_graph_free(l->m);
}

static double max_rel_err(const float *got, const float *want, int64_t n) {
  double scale = 0, e = 0;
  for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
  for (int64_t i = 0; i < n; i++) e = fmax(e, fabs(got[i] - want[i]) / fmax(scale, 1e-30));
  return e;
}

/* path's model on in_npy, twice, against out_npy. */
static void check_model(const char *path, const char *const *shapes, const char *in_npy,
                        const char *out_npy) {
  loaded l;
  if (!load(path, shapes, &l)) return unload(&l);
  mlc_error err;
  mlc_gtype ti, to;
  void *x = mlc_npy_read(in_npy, &ti, &err);
  float *want = mlc_npy_read(out_npy, &to, &err);
  CHECK(x && want);
  const mlc_gvar *y = mlc_graph_main(l.m)->outputs[0];
  int64_t n = mlc_gtype_numel(&y->type);
  CHECK(n == mlc_gtype_numel(&to));
  float *got = calloc((size_t)n, sizeof(float));
  for (int k = 0; k < 2 && x && want; k++) {
    memset(got, 0, sizeof(float) * (size_t)n);
    CHECK_MSG(mlc_graph_runner_run(l.r, (void *[]){x}, (void *[]){got}, &err), "%s", err.msg);
    double e = max_rel_err(got, want, n);
    CHECK_MSG(e < 1e-4, "%s run %d: max relative error %.3g", path, k, e);
  }
  free(got);
  mlc_free(x);
  mlc_free(want);
  unload(&l);
}

static void test_cnn(void) {
  check_model("tests/onnx/tiny_cnn.onnx", NULL, "tests/onnx/tiny_cnn_input.npy",
              "tests/onnx/tiny_cnn_output.npy");
}

static void test_gpt2_token_ids(void) {
  const char *shapes[] = {"input_ids=1,5", NULL};
  check_model("tests/onnx/lm/gpt2_tiny.onnx", shapes, "tests/onnx/lm/gpt2_s5_input_ids.npy",
              "tests/onnx/lm/gpt2_s5_logits.npy");
}

static void test_bad_token_id(void) {
  const char *shapes[] = {"input_ids=1,5", NULL};
  loaded l;
  if (!load("tests/onnx/lm/gpt2_tiny.onnx", shapes, &l)) return unload(&l);
  int64_t ids[5] = {1, 2, 3, 1000000, 4};
  const mlc_gvar *y = mlc_graph_main(l.m)->outputs[0];
  float *out = calloc((size_t)mlc_gtype_numel(&y->type), sizeof(float));
  mlc_error err;
  CHECK(!mlc_graph_runner_run(l.r, (void *[]){ids}, (void *[]){out}, &err));
  CHECK_MSG(strstr(err.msg, "input 'input_ids': element 3 is 1000000"), "%s", err.msg);
  free(out);
  unload(&l);
}

/* A model JSON with an int64 input (token ids) gathering rows of a table. */
static void test_json_token_ids(void) {
  const char *text =
      "{\"name\": \"emb\", \"inputs\": [{\"name\": \"ids\", \"shape\": [1, 3], \"dtype\": \"int64\"}],"
      " \"weights\": [{\"name\": \"table\", \"shape\": [4, 2], \"values\": [0, 1, 2, 3, 4, 5, 6, 7]}],"
      " \"nodes\": [{\"name\": \"rows\", \"op\": \"gather\", \"inputs\": [\"table\", \"ids\"]},"
      " {\"name\": \"out\", \"op\": \"relu\", \"inputs\": [\"rows\"]}], \"outputs\": [\"out\"]}";
  mlc_error err;
  mlc_target t;
  loaded l = {0};
  l.m = mlc_graph_parse("emb.json", text, strlen(text), NULL, &err);
  bool ok = l.m && mlc_graph_run_pipeline(l.m, NULL, NULL, NULL, &err) &&
            mlc_target_parse("llvm", &t, &err) &&
            mlc_graph_compile(l.m, &t, &(mlc_gcompile_options){0}, &l.c, &err) &&
            (l.r = mlc_graph_runner_new(l.m, &l.c, &err)) != NULL;
  CHECK_MSG(ok, "%s", err.msg);
  if (ok) {
    int64_t ids[3] = {3, 0, 2}, bad[3] = {0, 9, 0};
    float y[6] = {0}, want[6] = {6, 7, 0, 1, 4, 5};
    CHECK(mlc_graph_main(l.m)->params[0]->type.dtype == MLC_INT64);
    CHECK_MSG(mlc_graph_runner_run(l.r, (void *[]){ids}, (void *[]){y}, &err), "%s", err.msg);
    CHECK(memcmp(y, want, sizeof y) == 0);
    CHECK(!mlc_graph_runner_run(l.r, (void *[]){bad}, (void *[]){y}, &err) &&
          strstr(err.msg, "element 1 is 9"));
  }
  unload(&l);
}

static void test_not_compiled(void) {
  mlc_error err;
  mlc_gmodule *m = mlc_graph_load_any("tests/onnx/tiny_cnn.onnx", NULL, NULL, &err);
  mlc_gcompiled c = {0};
  CHECK(m && !mlc_graph_runner_new(m, &c, &err) && strstr(err.msg, "not compiled"));
  mlc_graph_free(m);
}

/* ---- a module built for every size --------------------------------------------------- */

/* One small model at size S: x [1, S] plus a constant of S values, the
 * constant's element k being k * 0.5 + shift * S (shift 0: the leading
 * block of its value at the bound); op "add", or another op at the
 * bound; with shrink, x [1, 100 - S] (an extent that shrinks as S grows)
 * plus one value. */
typedef struct tiny_spec {
  int shift;
  bool other_op_at_bound, shrink;
  int64_t bound;
} tiny_spec;

static mlc_gmodule *tiny_at(void *ud, const int64_t *values, mlc_error *err) {
  const tiny_spec *t = ud;
  int64_t S = values[0], w = t->shrink ? 100 - S : S, cw = t->shrink ? 1 : w;
  mlc_str j = {0};
  mlc_str_printf(&j, "{\"inputs\": [{\"name\": \"x\", \"shape\": [1, %lld]}], \"weights\": "
                     "[{\"name\": \"c\", \"shape\": [1, %lld], \"values\": [",
                 (long long)w, (long long)cw);
  for (int64_t k = 0; k < cw; k++)
    mlc_str_printf(&j, "%s%g", k ? ", " : "", (double)k * 0.5 + (double)(t->shift * S));
  const char *op = t->other_op_at_bound && S == t->bound ? "multiply" : "add";
  mlc_str_printf(&j, "]}], \"nodes\": [{\"name\": \"y\", \"op\": \"%s\", \"inputs\": [\"x\", \"c\"]}, "
                     "{\"name\": \"z\", \"op\": \"relu\", \"inputs\": [\"y\"]}], \"outputs\": [\"z\"]}",
                 op);
  mlc_gmodule *m = mlc_graph_parse("tiny.json", j.data, j.len, NULL, err);
  mlc_str_free(&j);
  if (m && !mlc_graph_run_pipeline(m, NULL, NULL, NULL, err)) {
    mlc_graph_free(m);
    return NULL;
  }
  return m;
}

/* Built once for S in 1..40 and run at 1, 5 and 40 through the runner:
 * z = relu(x + k / 2) at every size; 0 and 41 refused with a message. */
static void test_sized_module(void) {
  mlc_error err;
  tiny_spec t = {0, false, false, 40};
  mlc_gsize s = {"seq", 1, 40};
  mlc_gmodule *m = mlc_graph_generalize(1, &s, tiny_at, &t, &err);
  CHECK_MSG(m != NULL, "%s", err.msg);
  if (!m) return;
  const mlc_gfunc *f = mlc_graph_main(m);
  CHECK(m->n_sizes == 1 && f->params[0]->dims && f->outputs[0]->dims);
  mlc_target tg;
  mlc_target_parse("llvm", &tg, &err);
  mlc_gcompile_options o = {0};
  mlc_gcompiled c;
  mlc_grunner *r = NULL;
  bool ok = mlc_graph_compile(m, &tg, &o, &c, &err) && (r = mlc_graph_runner_new(m, &c, &err));
  CHECK_MSG(ok, "%s", err.msg);
  float x[40], z[41];
  for (int64_t n = 1; ok && n <= 40; n = n == 1 ? 5 : n + 35) {
    for (int k = 0; k < n; k++) x[k] = (float)(k % 7) - 3.0f;
    z[n] = 12345.0f; /* past the output: must stay */
    void *in[1] = {x}, *out[1] = {z};
    CHECK_MSG(mlc_graph_runner_run_at(r, &n, in, out, &err), "n=%lld: %s", (long long)n, err.msg);
    bool same = z[n] == 12345.0f;
    for (int k = 0; k < n; k++) same = same && z[k] == fmaxf(x[k] + (float)k * 0.5f, 0.0f);
    CHECK_MSG(same, "n=%lld", (long long)n);
  }
  for (int64_t n = 0; ok && n <= 41; n += 41) {
    void *in[1] = {x}, *out[1] = {z};
    CHECK(!mlc_graph_runner_run_at(r, &n, in, out, &err));
    CHECK_MSG(strstr(err.msg, "outside its bounds 1..40"), "%s", err.msg);
  }
  mlc_graph_runner_free(r);
  mlc_gcompiled_free(&c);
  mlc_graph_free(m);
}

/* What must be refused: a constant that changes otherwise than by its
 * leading block, another graph at some size, an extent that shrinks as the
 * size grows, a name the entry uses, a range too small to fit. */
static void test_sized_refusals(void) {
  struct {
    tiny_spec t;
    mlc_gsize s;
    const char *want;
  } cases[] = {
      {{1, false, false, 40}, {"seq", 1, 40}, "constant c changes with the sizes other than by its leading block"},
      {{0, true, false, 40}, {"seq", 1, 40}, "is another loop nest at instance 1"},
      {{0, false, true, 40}, {"seq", 1, 40}, "shrinks as seq grows"},
      {{0, false, false, 40}, {"input", 1, 40}, "size name 'input' is taken"},
      {{0, false, false, 3}, {"seq", 1, 3}, "needs at least 3 values from 2 up"},
  };
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    mlc_error err;
    mlc_gmodule *m = mlc_graph_generalize(1, &cases[i].s, tiny_at, &cases[i].t, &err);
    CHECK_MSG(!m && strstr(err.msg, cases[i].want), "case %d: %s", i, m ? "accepted" : err.msg);
    mlc_graph_free(m);
  }
}

/* ---- a cache extended in place ----------------------------------------------------------- */

/* A decode step's cache at P positions of one 4 KiB page each: present =
 * concat(past, relu(x)) along the positions, present a model output. */
static mlc_gmodule *cache_step_at(void *ud, const int64_t *values, mlc_error *err) {
  (void)ud;
  mlc_str j = {0};
  mlc_str_printf(&j, "{\"inputs\": [{\"name\": \"past\", \"shape\": [1, %lld, 1024]}, "
                     "{\"name\": \"x\", \"shape\": [1, 1, 1024]}], \"nodes\": ["
                     "{\"name\": \"y\", \"op\": \"relu\", \"inputs\": [\"x\"]}, "
                     "{\"name\": \"present\", \"op\": \"concat\", \"axis\": 1, "
                     "\"inputs\": [\"past\", \"y\"]}], \"outputs\": [\"present\"]}",
                 (long long)values[0]);
  mlc_gmodule *m = mlc_graph_parse("step.json", j.data, j.len, NULL, err);
  mlc_str_free(&j);
  if (m && !mlc_graph_run_pipeline(m, NULL, NULL, NULL, err)) {
    mlc_graph_free(m);
    return NULL;
  }
  return m;
}

/* The concat onto the input is an append; run with one buffer as past and
 * present, whose first P pages are read-only, it writes row P alone (a
 * copy of the cache would fault); with two buffers, present gets past's
 * rows copied in. */
static void test_cache_in_place(void) {
  mlc_error err;
  mlc_gsize s = {"past", 1, 16};
  mlc_gmodule *m = mlc_graph_generalize(1, &s, cache_step_at, NULL, &err);
  CHECK_MSG(m != NULL, "%s", err.msg);
  if (!m) return;
  const mlc_gfunc *f = mlc_graph_main(m);
  int appends = 0;
  for (int i = 0; i < f->n_bindings; i++) appends += mlc_gbinding_appends(&f->bindings[i]);
  CHECK(appends == 1);
  mlc_target tg;
  mlc_target_parse("llvm", &tg, &err);
  mlc_gcompiled c;
  mlc_grunner *r = NULL;
  bool ok = mlc_graph_compile(m, &tg, &(mlc_gcompile_options){0}, &c, &err) &&
            (r = mlc_graph_runner_new(m, &c, &err));
  CHECK_MSG(ok, "%s", err.msg);
  const size_t page = 4096;
  float *cache = aligned_alloc(page, 17 * page), *other = aligned_alloc(page, 17 * page);
  float x[1024];
  for (int k = 0; k < 1024; k++) x[k] = (float)(k % 5) - 2.0f;
  for (int64_t P = 1; ok && P <= 16; P += 15) {
    for (int64_t k = 0; k < P * 1024; k++) cache[k] = (float)k;
    CHECK(mprotect(cache, (size_t)P * page, PROT_READ) == 0);
    CHECK_MSG(mlc_graph_runner_run_at(r, &P, (void *[]){cache, x}, (void *[]){cache}, &err),
              "P=%lld: %s", (long long)P, err.msg);
    CHECK(mprotect(cache, (size_t)P * page, PROT_READ | PROT_WRITE) == 0);
    memset(other, 0, 17 * page);
    CHECK_MSG(mlc_graph_runner_run_at(r, &P, (void *[]){cache, x}, (void *[]){other}, &err),
              "P=%lld: %s", (long long)P, err.msg);
    bool same = true;
    for (int64_t k = 0; k < P * 1024; k++) same = same && cache[k] == (float)k && other[k] == (float)k;
    for (int k = 0; k < 1024; k++)
      same = same && cache[P * 1024 + k] == fmaxf(x[k], 0.0f) && other[P * 1024 + k] == cache[P * 1024 + k];
    CHECK_MSG(same, "P=%lld", (long long)P);
  }
  free(cache);
  free(other);
  mlc_graph_runner_free(r);
  mlc_gcompiled_free(&c);
  mlc_graph_free(m);
  /* An append whose operand 0 is not the result's leading block. */
  const char *bad = "{\"inputs\": [{\"name\": \"p\", \"shape\": [2, 3]}, {\"name\": \"x\", "
                    "\"shape\": [2, 1]}], \"nodes\": [{\"name\": \"o\", \"op\": \"append\", "
                    "\"axis\": 1, \"inputs\": [\"p\", \"x\"]}], \"outputs\": [\"o\"]}";
  m = mlc_graph_parse("bad.json", bad, strlen(bad), NULL, &err);
  CHECK_MSG(!m && strstr(err.msg, "node 'o': append: operand 0 has shape (2, 3), expected extents "
                                  "of 1 before the axis"), "%s", m ? "accepted" : err.msg);
  mlc_graph_free(m);
}

int main(void) {
  RUN(test_cnn);
  RUN(test_gpt2_token_ids);
  RUN(test_bad_token_id);
  RUN(test_json_token_ids);
  RUN(test_not_compiled);
  RUN(test_sized_module);
  RUN(test_sized_refusals);
  RUN(test_cache_in_place);
  mlc_jit_shutdown();
  return test_summary();
}
