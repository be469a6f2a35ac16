/* model: a model loaded, compiled, called, exported and tuned through
 * plain C types and one opaque handle: the API for programs that do not
 * want the graph's structures, and for foreign callers (python/mlc_tune
 * calls it through ctypes in build/libmlc.so).
 *
 *   mlc_error err;
 *   mlc_model *m = mlc_model_load("resnet18.onnx", NULL, NULL, &err);
 *   if (!m || !mlc_model_compile(m, "llvm", "mlc.db", &err)) ...
 *   void *in[1] = {x}, *out[1] = {y};     // contiguous, of the dtypes and shapes below
 *   if (!mlc_model_run(m, in, out, &err)) ...
 *   mlc_model_export(m, "resnet18.o", "resnet18.h", &err);
 *   mlc_model_free(m);
 *
 * Inputs and outputs are numbered as main's params and outputs; their
 * dtypes are NumPy's names ("float32", "int64", "int32", "bool", "uint8",
 * "int8"). A run reads and writes the caller's memory directly (no copy):
 * one run at a time per model.
 */
#ifndef MLC_MODEL_H
#define MLC_MODEL_H

#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct mlc_model mlc_model;

/* path: an ONNX file (.onnx) or our JSON graph (weights: its directory of
 * .npy files, NULL: the path without .json); input_shapes: entries
 * "name=1,3,224,224" separated by ';' for inputs with symbolic dimensions
 * (NULL or "": none). The graph passes run here. */
mlc_model *mlc_model_load(const char *path, const char *weights, const char *input_shapes,
                          mlc_error *err);
void mlc_model_free(mlc_model *m);

const char *mlc_model_name(const mlc_model *m);
int mlc_model_num_inputs(const mlc_model *m);
int mlc_model_num_outputs(const mlc_model *m);
/* Input i (output false) or output i (true); NULL / -1 out of range. */
const char *mlc_model_io_name(const mlc_model *m, bool output, int i);
const char *mlc_model_io_dtype(const mlc_model *m, bool output, int i);
int mlc_model_io_ndim(const mlc_model *m, bool output, int i);
int64_t mlc_model_io_dim(const mlc_model *m, bool output, int i, int axis);
/* The distinct kernels (tuning tasks) of the model. */
int mlc_model_num_kernels(const mlc_model *m);

/* Compiles every kernel for target (NULL: "llvm", the host CPU) with
 * the best record of db (a file or a postgresql:// URL; NULL or "": none,
 * every kernel its default schedule) and loads it for mlc_model_run.
 * Again: compiles anew (after tuning, say). CPU targets only. */
bool mlc_model_compile(mlc_model *m, const char *target, const char *db, mlc_error *err);
/* Kernel i's symbol ("<model>_<func>"), its workload hash (16 hex
 * digits: the database's key of its records, the same for the same
 * kernel whichever file or frontend it came from) and, after compile,
 * how it was compiled ("record 12 (1080 us)", "default schedule", ...);
 * NULL out of range (schedule: before compile). */
const char *mlc_model_kernel_symbol(const mlc_model *m, int i);
const char *mlc_model_kernel_workload(const mlc_model *m, int i);
const char *mlc_model_kernel_schedule(const mlc_model *m, int i);
/* Runs the compiled model: inputs[i] and outputs[i] point to contiguous
 * data of each one's dtype and shape. False with the reason: not
 * compiled, a token id outside its embedding, a kernel that failed. */
bool mlc_model_run(mlc_model *m, void *const *inputs, void *const *outputs, mlc_error *err);
/* The object and C header mlc-compile -o/--header writes (weights in the
 * object), for the target and database of the last compile (or the
 * default ones); header_path may be NULL. */
bool mlc_model_export(mlc_model *m, const char *object_path, const char *header_path,
                      mlc_error *err);

/* Tuning every kernel under one budget (mlc-tune --model). */
typedef struct mlc_model_tune_opts {
  int trials;              /* records wanted over all kernels (a rerun tops them up); 0: 64 */
  const char *db;          /* NULL: $MLC_DB, else "mlc.db" */
  const char *target;      /* NULL: "llvm" */
  /* Called after each round; may be NULL. est_sec: the model's estimate
   * (calls x best time; 0 until every kernel has one). */
  void (*progress)(void *ud, int trials_done, int trials_total, double est_sec, double elapsed_s);
  void *progress_ud;
  const volatile int *stop; /* non-zero: stop after the current round (what it measured is kept) */
} mlc_model_tune_opts;

typedef struct mlc_model_tune_result {
  int measured, errors; /* candidates of this run */
  bool stopped;         /* *stop ended it */
  double est_sec;       /* the tuned model's estimate */
  double est_default_sec; /* the same with every kernel's default schedule */
  double total_sec;
} mlc_model_tune_result;

bool mlc_model_tune(mlc_model *m, const mlc_model_tune_opts *o, mlc_model_tune_result *r,
                    mlc_error *err);

#endif
