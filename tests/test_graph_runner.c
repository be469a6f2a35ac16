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

int main(void) {
  RUN(test_cnn);
  RUN(test_gpt2_token_ids);
  RUN(test_bad_token_id);
  RUN(test_json_token_ids);
  RUN(test_not_compiled);
  mlc_jit_shutdown();
  return test_summary();
}
