/* primfunc/primfunc.h: a task's workload printed and parsed back to the
 * same hash, scheduled by a trace to a new function (the original kept),
 * compiled and checked against the interpreter; refusals named. */
#include "primfunc/primfunc.h"
#include "targets/targets.h"
#include "tests/test.h"

#include <stdio.h>
#include <stdlib.h>

/* Split matmul's j loop by 4 (tests/test_report.c's trace). */
static const char *split_trace =
    "{\"insts\":[[\"GetBlock\",[],{\"name\":\"C\",\"func_name\":\"main\"},[\"b0\"]],"
    "[\"GetLoops\",[\"b0\"],{},[\"l1\",\"l2\",\"l3\"]],[\"Split\",[\"l2\",null,4],"
    "{\"preserve_unit_iters\":true},[\"l4\",\"l5\"]]],\"decisions\":{},\"version\":1}";

static void test_task_script_parse(void) {
  mlc_error err;
  mlc_primfunc *f = mlc_primfunc_task("matmul", "16,16,16", &err);
  CHECK_MSG(f, "%s", err.msg);
  if (!f) return;
  char *text = mlc_primfunc_script(f);
  mlc_primfunc *g = mlc_primfunc_parse(text, NULL, &err);
  CHECK_MSG(g && strcmp(mlc_primfunc_hash(g), mlc_primfunc_hash(f)) == 0, "%s", err.msg);
  CHECK_STREQ(mlc_primfunc_name(f), "main");
  mlc_free(text);
  mlc_primfunc_free(g);
  mlc_primfunc_free(f);
}

static void test_apply_and_check(void) {
  mlc_error err;
  mlc_primfunc *f = mlc_primfunc_task("matmul", "16,16,16", &err);
  mlc_primfunc *s = f ? mlc_primfunc_apply_trace(f, split_trace, &err) : NULL;
  CHECK_MSG(s, "%s", err.msg);
  if (s) {
    CHECK(strcmp(mlc_primfunc_hash(s), mlc_primfunc_hash(f)) != 0);
    char *text = mlc_primfunc_script(s);
    CHECK(strstr(text, "T.grid") || strstr(text, "for "));
    mlc_free(text);
    double sec = 0;
    CHECK_MSG(mlc_primfunc_check(s, NULL, 1, &sec, &err) && sec > 0, "%s", err.msg);
    CHECK(!mlc_primfunc_check(s, "cuda -arch=sm_80", 1, NULL, &err) && strstr(err.msg, "CPU only"));
  }
  CHECK(!mlc_primfunc_apply_trace(f, "{not json", &err));
  mlc_primfunc_free(s);
  mlc_primfunc_free(f);
}

static void test_refusals(void) {
  mlc_error err;
  CHECK(!mlc_primfunc_task("nosuch", NULL, &err) && strstr(err.msg, "unknown task 'nosuch'"));
  CHECK(!mlc_primfunc_task("matmul", "1,x", &err));
  CHECK(!mlc_primfunc_parse("@T.prim_func\ndef main(:\n", NULL, &err));
  mlc_primfunc *f = mlc_primfunc_task("softmax", "4,8", &err);
  char *text = f ? mlc_primfunc_script(f) : NULL;
  CHECK(text && !mlc_primfunc_parse(text, "other", &err) && strstr(err.msg, "no function 'other'"));
  mlc_free(text);
  mlc_primfunc_free(f);
}

/* A few trials into a fresh database, then a rerun with nothing left. */
static void test_tune(void) {
  char dir[] = "/tmp/test_primfunc_XXXXXX";
  if (!mkdtemp(dir)) return (void)CHECK(!"mkdtemp");
  char db[300];
  snprintf(db, sizeof db, "%s/k.db", dir);
  mlc_error err;
  mlc_primfunc *f = mlc_primfunc_task("softmax", "8,32", &err);
  mlc_primfunc_tune_opts o = {.task = "sm", .trials = 4, .db = db};
  mlc_primfunc_tune_result r;
  CHECK_MSG(f && mlc_primfunc_tune(f, &o, &r, &err), "%s", err.msg);
  CHECK(r.measured == 4 && r.errors == 0 && r.best_sec > 0 && r.best_record_id > 0);
  CHECK(mlc_primfunc_tune(f, &o, &r, &err) && r.measured == 0);
  o.target = "nonsense";
  CHECK(!mlc_primfunc_tune(f, &o, &r, &err));
  mlc_primfunc_free(f);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) printf("# could not remove %s\n", dir);
}

int main(void) {
  RUN(test_task_script_parse);
  RUN(test_apply_and_check);
  RUN(test_refusals);
  RUN(test_tune);
  mlc_jit_shutdown();
  return test_summary();
}
