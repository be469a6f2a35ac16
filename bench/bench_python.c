/* What a call from Python costs: examples/mlp.json compiled, run through
 * mlc_tune's m(x) (bench/python_call.py: ctypes into build/libmlc.so,
 * output array allocated per call) against mlc_model_run called from C on
 * the same runner. The difference is the Python side's overhead (the
 * issue's limit: 10 us). Skipped without python3 and NumPy. */
#include "bench/results.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>

#define MODEL "examples/mlp.json"

typedef struct call_ctx {
  mlc_model *m;
  void *in[1], *out[1];
} call_ctx;

static void run_c(void *p) {
  call_ctx *c = p;
  mlc_error err;
  if (!mlc_model_run(c->m, c->in, c->out, &err)) fprintf(stderr, "bench_python: %s\n", err.msg), exit(1);
}

/* The median microseconds python_call.py printed, or -1. */
static double python_us(const char *build) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "PYTHONPATH=python MLC_LIB=%s/libmlc.so /usr/bin/python3 bench/python_call.py %s 2>&1",
           build, MODEL);
  FILE *f = popen(cmd, "r");
  double us = -1;
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    char *end;
    double v = strtod(line, &end);
    if (end != line) us = v;
    else fprintf(stderr, "bench_python: %s", line);
  }
  if (f && pclose(f) != 0) us = -1;
  return us;
}

int main(void) {
  if (system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    printf("bench_python: SKIP: python3 with NumPy is not installed\n");
    return 0;
  }
  const char *build = getenv("MLC_BUILD") ? getenv("MLC_BUILD") : "build";
  mlc_error err;
  mlc_model *m = mlc_model_load(MODEL, NULL, NULL, &err);
  if (!m || !mlc_model_compile(m, NULL, NULL, &err)) return fprintf(stderr, "bench_python: %s\n", err.msg), 1;
  int64_t nin = 1, nout = 1;
  for (int a = 0; a < mlc_model_io_ndim(m, false, 0); a++) nin *= mlc_model_io_dim(m, false, 0, a);
  for (int a = 0; a < mlc_model_io_ndim(m, true, 0); a++) nout *= mlc_model_io_dim(m, true, 0, a);
  float *x = calloc((size_t)nin, sizeof(float)), *y = calloc((size_t)nout, sizeof(float));
  for (int64_t i = 0; i < nin; i++) x[i] = (float)(i % 17) / 17;
  call_ctx c = {m, {x}, {y}};
  /* C, Python, C again: both C figures bracket the Python run's load. */
  double c0 = bench_time_ms(run_c, &c, 21, 5) * 1e3;
  double py = python_us(build);
  double c1 = bench_time_ms(run_c, &c, 21, 5) * 1e3;
  double c_us = c0 < c1 ? c0 : c1;
  if (py < 0) return fprintf(stderr, "bench_python: the Python run failed\n"), 1;
  char notes[256];
  snprintf(notes, sizeof notes, "m(x) from Python (ctypes, a new output array per call) vs "
           "mlc_model_run from C on the same runner: +%.2f us per call (limit 10)", py - c_us);
  bench_case cases[1] = {{"python_call_mlp", py, "us", "c_model_run", c_us, notes}};
  bench_print(&cases[0]);
  printf("  Python overhead: %.2f us per call (C: %.2f and %.2f us)\n", py - c_us, c0, c1);
  free(x), free(y);
  mlc_model_free(m);
  if (!bench_write_results("bench/results.json", 1, cases, &err))
    return fprintf(stderr, "bench_python: %s\n", err.msg), 1;
  return 0;
}
