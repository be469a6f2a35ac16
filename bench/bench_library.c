/* Library offload against compiled kernels, timed side by side:
 *
 *   library_<task>_<shape>   the kernel with its matmul handed to OpenBLAS
 *                            (library_call: libmlcrt's mlc_rt_sgemm), GFLOP/s
 *   compiled_<task>_<shape>  the best tuned record of a database (--db), else
 *                            the default schedule (the baseline of ratios)
 *
 * for matmul 1024^3 and the shapes of the encoder model's matmuls
 * (models/encoder.onnx: 128x768x256, 128x1024x256, 128x256x1024 and the
 * attention's 4x128x128x64 batch matmul), and a dense layer with bias and
 * relu (128x256x256: transposed weights, epilogue left to the compiled
 * loops, like the encoder's fused_dense_add0). Each pair alternates rounds in
 * one process, so both see the same machine; the results are checked
 * against each other. OpenBLAS and the compiled kernels run on the same
 * number of threads (--threads, default the host's cores).
 */
#include "bench/results.h"
#include "schedule/schedule.h"
#include "targets/runtime/mlcrt.h"
#include "tasks/tasks.h"
#include "tuner/tuner.h"
#include "measure/measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 5

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_library: error: %s: %s\n", what, msg);
  exit(1);
}

typedef struct kernel {
  mlc_object obj;
  mlc_jit_lib *lib;
  mlc_kernel_fn fn;
  int n;
  mlc_array *args;
} kernel;

static void run(void *ctx) {
  kernel *k = ctx;
  mlc_kernel_call(k->fn, k->n, k->args);
}

static kernel load(const mlc_target *t, const mlc_prim_func *f, const char *sym) {
  kernel k = {.n = f->n_params};
  mlc_error err;
  if (!mlc_target_build(t, 1, &f, &sym, NULL, &k.obj, &err)) die(sym, err.msg);
  k.lib = mlc_jit_load(&k.obj, &err);
  k.fn = k.lib ? mlc_jit_lookup(k.lib, sym, &err) : NULL;
  if (!k.fn) die(sym, err.msg);
  k.args = mlc_xmalloc(sizeof(mlc_array) * (size_t)k.n);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 3, 1);
  for (int i = 0; i < k.n; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(x, &rng);
    k.args[i] = *x;
    mlc_free(x);
  }
  return k;
}

static void unload(kernel *k) {
  for (int i = 0; i < k->n; i++) mlc_free(k->args[i].data);
  mlc_free(k->args);
  mlc_jit_unload(k->lib);
  mlc_object_free(&k->obj);
}

/* The library kernel: library_call on the task's matmul block. */
static mlc_prim_func *library_kernel(mlc_arena *a, const mlc_prim_func *f, const char *block) {
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b;
  mlc_error err;
  if (!mlc_sched_get_block(s, block, NULL, &b, &err) ||
      !mlc_sched_library_call(s, b, "openblas", &err))
    die("library_call", err.msg);
  mlc_prim_func *g = mlc_func_copy(a, mlc_sched_func(s));
  mlc_sched_free(s);
  return g;
}

/* The best tuned record's schedule, or the default schedule; *what says
 * which. */
static const mlc_prim_func *compiled_kernel(mlc_arena *a, mlc_db *db, const char *target,
                                            const mlc_prim_func *f, const char **what) {
  mlc_error err;
  int64_t wid;
  mlc_tuner_library_cmp cmp;
  mlc_db_record rec;
  mlc_prim_func *s;
  char hash[17];
  if (db && mlc_db_find_workload(db, f, &wid, &err) == 1 &&
      mlc_tuner_library_compare(db, wid, target, &cmp, &err) >= 0 && cmp.tuned_id > 0 &&
      mlc_db_get_record(db, cmp.tuned_id, a, &rec, &err) == 1 &&
      mlc_db_replay_trace(a, f, rec.trace, &s, hash, &err)) {
    *what = mlc_arena_printf(a, "tuned record %lld", (long long)cmp.tuned_id);
    return s;
  }
  *what = "default schedule";
  return mlc_tuner_cpu_default_schedule(a, f);
}

int main(int argc, char **argv) {
  const char *results = "bench/results.json", *db_path = NULL;
  int threads = mlc_target_host_cores();
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) db_path = argv[++i];
    else {
      fprintf(stderr, "usage: bench_library [--results FILE] [--threads T] [--db PATH]\n");
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  bench_openblas_coretype(argv);
  char n[16];
  snprintf(n, sizeof n, "%d", threads);
  setenv("MLC_NUM_THREADS", n, 1); /* OpenBLAS's threads, as mlc_rt_sgemm sets them */
  if (mlc_rt_blas_error()[0]) die("OpenBLAS", mlc_rt_blas_error());
  mlc_error err;
  mlc_target t;
  char tstr[64];
  snprintf(tstr, sizeof tstr, "llvm -num-cores=%d", threads);
  if (!mlc_target_parse(tstr, &t, &err)) die("target", err.msg);
  char target[512];
  mlc_db_normalize_target(tstr, target, sizeof target);
  mlc_db *db = db_path ? mlc_db_open(db_path, MLC_DB_EXISTING, &err) : NULL;
  if (db_path && !db) die(db_path, err.msg);

  static const struct {
    const char *task, *shape, *block;
  } cases[] = {
      {"matmul", "1024,1024,1024", "C"},     {"matmul", "128,768,256", "C"},
      {"matmul", "128,1024,256", "C"},       {"matmul", "128,256,1024", "C"},
      {"batch_matmul", "4,128,128,64", "C"}, {"dense_bias_relu", "128,256,256", "Y"},
  };
  MLC_VEC(bench_case) out = {0};
  mlc_arena *a = mlc_arena_new();
  for (int c = 0; c < MLC_COUNTOF(cases); c++) {
    const mlc_task_def *d = mlc_task_find(cases[c].task);
    int64_t shape[MLC_TASK_MAX_DIMS];
    if (!mlc_task_parse_shape(d, cases[c].shape, shape, &err)) die(cases[c].shape, err.msg);
    mlc_prim_func *f = mlc_task_build(a, d, shape);
    double flops = mlc_task_flops(d, shape);
    const char *what;
    kernel lib = load(&t, library_kernel(a, f, cases[c].block), mlc_arena_printf(a, "lib_%d", c));
    kernel cmp = load(&t, compiled_kernel(a, db, target, f, &what), mlc_arena_printf(a, "cmp_%d", c));
    run(&lib);
    run(&cmp);
    double me;
    int o = lib.n - 1;
    if (!mlc_check_close(&lib.args[o], &cmp.args[o], 1e-3, 1e-3, &me)) {
      char msg[128];
      snprintf(msg, sizeof msg, "library and compiled results differ (max error %g)", me);
      die(cases[c].shape, msg);
    }
    double tl[ROUNDS], tc[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
      tl[r] = bench_time_ms(run, &lib, 1, 200);
      usleep(100000); /* the other's threads stop spinning */
      tc[r] = bench_time_ms(run, &cmp, 1, 200);
      usleep(100000);
    }
    double ml = bench_median(tl, ROUNDS), mc = bench_median(tc, ROUNDS);
    const char *tag = mlc_arena_printf(a, "%s_%s", cases[c].task, cases[c].shape);
    for (char *p = (char *)tag; *p; p++)
      if (*p == ',') *p = 'x';
    const char *base = mlc_arena_printf(a, "compiled_%s", tag);
    bench_case bc = {base, flops / (mc * 1e6), "GFLOP/s", NULL, 0,
                     mlc_arena_printf(a, "%s, %d threads; median of %d rounds alternating with "
                                      "the library kernel", what, threads, ROUNDS)};
    bench_case bl = {mlc_arena_printf(a, "library_openblas_%s", tag), flops / (ml * 1e6),
                     "GFLOP/s", base, bc.value,
                     mlc_arena_printf(a, "library_call -> mlc_rt_sgemm -> cblas_sgemm (%s "
                                      "kernels), %d threads; median of %d rounds",
                                      mlc_rt_blas_corename(), threads, ROUNDS)};
    bench_print(&bc);
    bench_print(&bl);
    MLC_VEC_PUSH(out, bc);
    MLC_VEC_PUSH(out, bl);
    unload(&lib);
    unload(&cmp);
  }
  if (!bench_write_results(results, out.len, out.data, &err)) die(results, err.msg);
  MLC_VEC_FREE(out);
  if (db) mlc_db_close(db);
  mlc_arena_free(a);
  return 0;
}
