/* primfunc: one TensorIR function behind a handle, for foreign callers
 * (python/mlc_tune's PrimFunc) and small C programs: parse TVMScript or
 * build a task's workload, print it, schedule it with a trace as the
 * database stores traces, compile it and check it against the reference
 * interpreter.
 *
 *   mlc_error err;
 *   mlc_primfunc *f = mlc_primfunc_task("matmul", "64,64,64", &err);
 *   mlc_primfunc *s = mlc_primfunc_apply_trace(f, trace_json, &err);  // f unchanged
 *   char *text = mlc_primfunc_script(s);                               // mlc_free
 *   double sec;
 *   if (!mlc_primfunc_check(s, "llvm", 1, &sec, &err)) ...            // err: what differs
 *   mlc_primfunc_free(s), mlc_primfunc_free(f);
 */
#ifndef MLC_PRIMFUNC_H
#define MLC_PRIMFUNC_H

#include "base/base.h"

typedef struct mlc_primfunc mlc_primfunc;

/* TVMScript text: a module or a lone @T.prim_func; name picks a function
 * of a module (NULL: "main", else the only one). Errors are located
 * (line:column). */
mlc_primfunc *mlc_primfunc_parse(const char *text, const char *name, mlc_error *err);
/* A built-in task's workload ("matmul", "512,512,512"; shape NULL: the
 * task's default), named "main" as mlc-tune stores it. */
mlc_primfunc *mlc_primfunc_task(const char *task, const char *shape, mlc_error *err);
void mlc_primfunc_free(mlc_primfunc *f);

const char *mlc_primfunc_name(const mlc_primfunc *f);
/* The function as TVMScript (mlc_free). */
char *mlc_primfunc_script(const mlc_primfunc *f);
/* Its structural hash, 16 hex digits (the database's workload key). */
const char *mlc_primfunc_hash(const mlc_primfunc *f);

/* A new function: f scheduled by trace (JSON, as the database and
 * mlc-tune write it), replayed as mlc-compile replays records (a stored
 * decision that no longer fits is an error); the result verifies. */
mlc_primfunc *mlc_primfunc_apply_trace(const mlc_primfunc *f, const char *trace, mlc_error *err);

/* Compiles f for target (NULL: "llvm"; CPU targets), runs it on inputs
 * drawn from seed and runs the interpreter on the same; false naming the
 * buffer and the error when they differ (measure's tolerances). Then,
 * with sec non-NULL, times it (median seconds per call). The
 * interpreter takes about a second per 1e7 statements executed. */
bool mlc_primfunc_check(const mlc_primfunc *f, const char *target, uint64_t seed, double *sec,
                        mlc_error *err);

/* Tuning f alone (mlc-tune --task-file): trials records wanted for
 * (f, target) in db, a rerun topping them up. The progress callback has
 * the model tune's shape (model/model.h): est_sec is the best time so far. */
typedef struct mlc_primfunc_tune_opts {
  const char *task;        /* the name its workload is stored under; NULL: "main" */
  int trials;              /* 0: 64 */
  const char *db;          /* NULL: $MLC_DB, else "mlc.db" */
  const char *target;      /* NULL: "llvm" */
  void (*progress)(void *ud, int trials_done, int trials_total, double best_sec, double elapsed_s);
  void *progress_ud;
  const volatile int *stop; /* non-zero: stop after the current round (what it measured is kept) */
} mlc_primfunc_tune_opts;

typedef struct mlc_primfunc_tune_result {
  int measured, errors;    /* candidates of this run */
  bool stopped;
  double best_sec;         /* 0: none */
  int64_t best_record_id;
} mlc_primfunc_tune_result;

bool mlc_primfunc_tune(const mlc_primfunc *f, const mlc_primfunc_tune_opts *o,
                       mlc_primfunc_tune_result *r, mlc_error *err);

#endif
