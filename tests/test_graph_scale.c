/* Scaling of whole pipelines: a model of 10,000 nodes
 * through every graph pass, a trace of 10,000 instructions read and
 * replayed, a TVMScript function of 10,000 statements parsed, verified,
 * printed and parsed again. Each must finish well within a generous bound
 * (30 s, enough under ASan on a shared machine; a quadratic pass took
 * minutes), and 10,000 must not cost more than about 40 times 1,000
 * (linear growth is 10 times; the bound only catches quadratic steps).
 * bench/bench_scale.c measures the same at 1k, 3k and 10k. */
#include "tests/scale_inputs.h"
#include "tests/test.h"

#define BOUND_SEC 30.0

typedef double (*scale_fn)(int n, mlc_error *err);

static void check_scaling(const char *what, scale_fn fn) {
  mlc_error err = {{0}};
  double t1 = fn(1000, &err);
  CHECK_MSG(t1 >= 0, "%s of 1,000: %s", what, err.msg);
  double t10 = fn(10000, &err);
  CHECK_MSG(t10 >= 0, "%s of 10,000: %s", what, err.msg);
  CHECK_MSG(t10 < BOUND_SEC, "%s of 10,000 took %.1f s", what, t10);
  /* Below 0.05 s at 1,000 the ratio is noise. */
  CHECK_MSG(t10 < 40 * (t1 > 0.05 ? t1 : 0.05), "%s: 1,000 took %.3f s, 10,000 %.3f s", what,
            t1, t10);
  printf("# %s: 1,000 in %.3f s, 10,000 in %.3f s\n", what, t1, t10);
}

static void test_model_10000_nodes(void) { check_scaling("model", scale_run_model); }
static void test_trace_10000_insts(void) { check_scaling("trace", scale_run_trace); }
static void test_script_10000_stmts(void) { check_scaling("script", scale_run_script); }

/* The names lowering gives a chain of relus: relu, relu1, relu2, ... as
 * before the name set, including names already taken by the module. */
static void test_lower_names(void) {
  mlc_error err = {{0}};
  const char *text =
      "{\"name\": \"m\", \"inputs\": [{\"name\": \"x\", \"shape\": [4]}],\n"
      " \"nodes\": [{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]},\n"
      "            {\"name\": \"b\", \"op\": \"relu\", \"inputs\": [\"a\"]},\n"
      "            {\"name\": \"c\", \"op\": \"exp\", \"inputs\": [\"b\"]},\n"
      "            {\"name\": \"d\", \"op\": \"relu\", \"inputs\": [\"c\"]}],\n"
      " \"outputs\": [\"d\"]}";
  mlc_gmodule *m = mlc_graph_parse("m.json", text, strlen(text), NULL, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK_MSG(mlc_graph_lower(m, &err), "%s", err.msg);
  const char *want[] = {"relu", "relu1", "exp", "relu2"};
  CHECK(m->tir->n_funcs == 4);
  for (int i = 0; i < 4 && i < m->tir->n_funcs; i++) CHECK_STREQ(m->tir->funcs[i]->name, want[i]);
  mlc_graph_free(m);
}

int main(void) {
  RUN(test_lower_names);
  RUN(test_model_10000_nodes);
  RUN(test_trace_10000_insts);
  RUN(test_script_10000_stmts);
  return test_summary();
}
