/* bench/: benchmark programs and their shared report (DESIGN.md section 6).
 *
 * Each program measures a few cases, prints one line per case and merges
 * them into bench/results.json by name, so several programs add to one
 * file:
 *   {"machine": {"cpu": ..., "cores": ..., "date": ...},
 *    "cases": [{"name": "matmul_1024_openblas_2t", "value": 182.1,
 *               "unit": "GFLOP/s", "baseline": "openblas_2t",
 *               "baseline_value": 182.1, "ratio": 1.0, "notes": "..."}]}
 * Timings are medians over repeats: the machine is shared and noisy.
 */
#ifndef MLC_BENCH_RESULTS_H
#define MLC_BENCH_RESULTS_H

#include "base/base.h"
#include "db/db.h"
#include "graph/graph.h"
#include "targets/targets.h"

#include <stdio.h>

typedef struct bench_case {
  const char *name;
  double value;
  const char *unit;     /* "GFLOP/s", "ms", "us", "replays/s" */
  const char *baseline; /* NULL: none */
  double baseline_value;
  const char *notes;    /* may be NULL */
} bench_case;

/* Print "name: value unit (ratio x baseline)" on stdout. */
void bench_print(const bench_case *c);
/* Merge cases into the results file (replacing cases of the same names);
 * false with err set when the file cannot be read or written. */
bool bench_write_results(const char *path, int n, const bench_case *cases, mlc_error *err);

/* Wall-clock milliseconds (mlc_now_sec). */
double bench_now_ms(void);
/* Median of n values (mlc_median: sorts them). */
double bench_median(double *v, int n);
/* Median milliseconds per call of fn(ctx) (measure's mlc_time_calls): a
 * warm-up call, then `repeat` repeats of enough calls to last min_ms each. */
double bench_time_ms(void (*fn)(void *ctx), void *ctx, int repeat, double min_ms);
/* Ours against a baseline on a shared machine: `rounds` rounds, each
 * bench_time_ms(f0, c0, repeat, min_ms) then the same of f1 (NULL: none),
 * so both see the same spells of load. ms[0], ms[1]: the medians of the
 * rounds; ms[2], ms[3]: their minima (the steadier figure under load);
 * f1's -1 without f1. */
void bench_time_pair(void (*f0)(void *), void *c0, void (*f1)(void *), void *c1, int rounds, int repeat,
                     double min_ms, double ms[4]);

/* ---- a model compiled and run in process (bench_model, bench_contention) ----
 *
 *   bench_tune_model(path, m, &t, trials, "bench_x", &err);  // optional
 *   bench_variant v = {.name = "tuned", .m = m};            // m after the pipeline
 *   bench_variant_build(a, &v, &t, db, true, "bench_x", &err);
 *   bench_model_io io;  bench_model_io_new(a, m, ref, &io, &err);
 *   bench_variant_check(&v, &io, &err);
 *   bench_time_ms(bench_variant_run, &v, ...);  then v.failed?
 */

/* One compiled variant of a model: each kernel scheduled, all built into
 * one object and loaded into the process's JIT. */
typedef struct bench_variant {
  const char *name;     /* prefixes the kernels' symbols: one JIT namespace holds every variant */
  const mlc_gmodule *m; /* after mlc_graph_run_pipeline */
  int n;
  const mlc_prim_func **src, **sched;
  const char **symbols;
  int n_tuned;          /* kernels replayed from a record */
  mlc_gcompiled compiled; /* mlc_graph_compile's: n, src, sched and symbols point into it */
  mlc_jit_lib *lib;
  mlc_kernel_fn *fns;
  mlc_array **in, **out; /* the run's arrays (bench_variant_check sets them) */
  bool failed;          /* a bench_variant_run failed: err says why */
  mlc_error err;
} bench_variant;

/* Schedule every kernel of v->m: from db's best record (mlc-compile's
 * choice), else the default schedule (db NULL: the default schedule, or
 * with schedule false none), then build and load. Kernels db had no usable
 * record for are named on stderr after "<prog>: ". mlc_graph_compile, as
 * mlc-compile builds (a schedule that does not build falls back). */
bool bench_variant_build(mlc_arena *a, bench_variant *v, const mlc_target *t, mlc_db *db,
                         bool schedule, const char *prog, mlc_error *err);
void bench_variant_free(bench_variant *v);
/* One model run (mlc_graph_execute over the kernels) from v->in into
 * v->out; for bench_time_ms: a failure sets v->failed and v->err. */
void bench_variant_run(void *v);

/* A model's inputs (seeded), outputs and the expected outputs (the plain
 * C evaluation of ref, the same model before the pipeline). */
typedef struct bench_model_io {
  int n_in, n_out;
  mlc_array **in, **out, **want;
} bench_model_io;
bool bench_model_io_new(mlc_arena *a, const mlc_gmodule *m, const mlc_gmodule *ref,
                        bench_model_io *io, mlc_error *err);
void bench_model_io_free(bench_model_io *io);
/* io->out against io->want (measure's mlc_check_close with MLC_CHECK_RTOL/ATOL). */
bool bench_model_io_check(const bench_model_io *io, mlc_error *err);
/* Run v once on io's arrays (kept for later runs) and check the result. */
bool bench_variant_check(bench_variant *v, bench_model_io *io, mlc_error *err);

/* Tune every kernel of m (after the pipeline) into the database at path
 * (created), as `mlc-tune --model` does: the gradient task scheduler,
 * `trials` over all tasks, for target t; progress lines on stderr after
 * "<prog>: ". */
bool bench_tune_model(const char *path, const mlc_gmodule *m, const mlc_target *t, int trials,
                      const char *prog, mlc_error *err);
/* OpenBLAS picks its kernels from the CPU when the program loads, and the
 * Debian build takes a CPU it does not know (this Xeon, family 6 model
 * 207) for a generic SSE3 "Prescott": about 5x slower. A bench that times
 * OpenBLAS calls this first in main: unless OPENBLAS_CORETYPE is set, it
 * sets the core type this CPU's features suit (mlc_rt_blas_coretype) and
 * runs the program again, so the baseline is OpenBLAS at its best. */
void bench_openblas_coretype(char **argv);
/* Remove a temporary database with its -wal and -shm files. */
void bench_remove_db(const char *path);
/* The build directory of this bench program (<build>/bench/<name>: its
 * tools are in <build>/bin) into out; false when /proc/self/exe does not
 * say. */
bool bench_build_dir(char *out, size_t size);
/* The number at key of the JSON object text (one tool's --json summary);
 * -1 when the text does not parse or holds no such number. */
double bench_json_number(const char *text, const char *key);

/* A baseline's coprocess (a Python script of bench/) driven line by line: argv (argv[0]
 * the program's path, NULL-terminated) run with its stdin and stdout as
 * pipes, env_name=env_value set in it when env_name is not NULL. Its first
 * line (ready) goes into line; false when it fails to start or ends
 * first (its PyTorch or venv missing). */
typedef struct bench_coprocess {
  int pid;
  FILE *to, *from;
} bench_coprocess;
bool bench_coprocess_start(bench_coprocess *c, char *const *argv, const char *env_name,
                           const char *env_value, char *line, int n);
/* "quit" to it, then waits for it to end. */
void bench_coprocess_stop(bench_coprocess *c);

#endif
