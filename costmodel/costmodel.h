/* costmodel: features of scheduled programs and the learned cost model
 * that ranks candidates before they are measured.
 *
 *   mlc_costmodel *m = mlc_costmodel_new(MLC_COSTMODEL_XGB_AGG_RANK, 42);
 *   // each round: score candidates (states of one workload), measure the best
 *   double scores[n];
 *   mlc_costmodel_predict_funcs(m, n, funcs, scores, &err);    // higher = faster
 *   ...measure...
 *   mlc_costmodel_update_funcs(m, k, funcs, workload_keys, mean_secs, &err);
 *   // persist (db models table), and reload in the next run
 *   uint8_t *blob; size_t len;
 *   mlc_costmodel_save(m, &blob, &len, &err);  ...  mlc_free(blob);
 *   mlc_costmodel *m2 = mlc_costmodel_load_opts(blob, len, 42, NULL, &err); // NULL: damaged
 *   mlc_costmodel_free(m);
 *
 * Features (features.c, documented one by one in costmodel/FEATURES.md):
 * the scheduled prim_func is lowered (mlc_target_lower: flat buffers,
 * plain loops) and every buffer store gets MLC_FEATURE_DIM floats in the
 * spirit of meta-schedule's per-store features: arithmetic counts, loop
 * kinds, up to 5 buffer accesses (bytes, lines, reuse, stride), an
 * arithmetic-intensity curve, allocation and loop-nest sizes, GPU thread
 * extents (zero on CPU). Values are log2(1 + x) scaled. The layout is
 * MLC_FEATURE_VERSION; any change to it bumps the version, and stored
 * models of another version are refused.
 *
 * Model (model.c, xgb.c): XGBoost gradient-boosted trees through its C API,
 * opened with dlopen at first use (libxgboost.so.0), so nothing links
 * against it and a machine without it gets an error, not a link failure.
 * Labels are normalized throughput: best time seen for the workload / time
 * (1 for the best, 0 for failed candidates), so workloads of different sizes
 * train together. The model keeps every sample it was given and retrains
 * (from scratch) once `min_samples` (at most MLC_COSTMODEL_MIN_SAMPLES) are
 * there and again each time `retrain_every` more have arrived; until its
 * first training it scores with seeded PCG32 noise.
 *
 * Which kind. bench/bench_costmodel.c measured 2,000 random schedules of 5
 * workloads (2-core machine, quiet); held-out pairwise accuracy: xgb-rank
 * 0.80, xgb-reg 0.77, xgb-sum 0.75, random 0.50 (timing the same candidates
 * twice agrees on 0.94 of pairs); on a workload not trained on: 0.74,
 * 0.68, 0.65; on the tuner's own candidates (matmul 256^3): 0.77. The same
 * run on a busy machine (load 12) gave 0.71, 0.69, 0.65 with a re-timing
 * ceiling of 0.62-0.80; a dataset measured into a database at load 7
 * (bench_costmodel's default since) gave 0.66, 0.64, 0.61, random 0.49,
 * with a re-timing ceiling of 0.54: the model averages out noise that a
 * single re-timing does not. Use MLC_COSTMODEL_XGB_AGG_RANK: a pairwise
 * objective learns only the order within each workload, which is what the
 * search uses, and ignores the scale of noisy labels; the per-store sum
 * must fit absolute normalized throughput as a sum of store terms.
 *
 * Thread safety: one model is used by one thread at a time; feature
 * extraction of a batch runs on OpenMP threads inside the call.
 */
#ifndef MLC_COSTMODEL_H
#define MLC_COSTMODEL_H

#include "ir/ir.h"
#include "schedule/schedule.h"

/* ---- features ----------------------------------------------------------- */

/* Layout version of the feature vectors; stored with models. */
#define MLC_FEATURE_VERSION 2
/* Floats per buffer store (group sizes in FEATURES.md). */
#define MLC_FEATURE_DIM 164
/* Buffers described per store (more are dropped, fewer are zero-filled). */
#define MLC_FEATURE_MAX_BUFFERS 5
/* Floats of the per-program aggregate vector: the per-store maximum and
 * mean of each feature, then log2(1 + number of stores). */
#define MLC_FEATURE_AGG_DIM (2 * MLC_FEATURE_DIM + 1)

/* Features of one program: one row of MLC_FEATURE_DIM floats per store, in
 * program order. n_stores == 0 for a program without stores (or one that
 * failed to lower, where `ok` is false). */
typedef struct mlc_features {
  int n_stores;
  float *rows; /* n_stores * MLC_FEATURE_DIM, heap (mlc_features_free) */
  bool ok;     /* false when extraction failed */
} mlc_features;

/* The per-store features of an already lowered function (mlc_target_lower's
 * result). Extraction from a scheduled function, batches and feature names
 * are in costmodel_internal.h (tests and benchmarks). */
bool mlc_features_extract_lowered(const mlc_prim_func *lowered, mlc_features *out,
                                  mlc_error *err);

/* ---- cost model ---------------------------------------------------------- */

typedef enum mlc_costmodel_kind {
  MLC_COSTMODEL_RANDOM,        /* seeded PCG32 noise; never learns */
  MLC_COSTMODEL_XGB_AGG_RANK,  /* aggregate vector per program, rank:pairwise
                                * within each workload */
  MLC_COSTMODEL_XGB_AGG_REG,   /* aggregate vector, reg:squarederror on the
                                * normalized throughput */
  MLC_COSTMODEL_XGB_STORE_SUM, /* one row per store; a program's score is the
                                * sum of its stores' predictions, trained with
                                * a custom objective (XGBoosterBoostOneIter) */
} mlc_costmodel_kind;
enum { MLC_COSTMODEL_KIND_COUNT = 4 };

bool mlc_costmodel_kind_from_name(const char *s, mlc_costmodel_kind *out);

/* Samples below which a model that never trained scores randomly. */
#define MLC_COSTMODEL_MIN_SAMPLES 64

typedef struct mlc_costmodel_opts {
  int min_samples;   /* first training; <= MLC_COSTMODEL_MIN_SAMPLES (default) */
  int retrain_every; /* new samples that trigger the next training (32) */
  int rounds;        /* boosting rounds per training (50) */
  int max_depth;     /* tree depth (6) */
  double eta;        /* learning rate (0.2) */
  int warm_rounds;   /* > 0: later trainings of the aggregate kinds keep the
                      * booster and add this many rounds on all samples
                      * (warm start); 0: every training starts afresh.
                      * Measured in bench_costmodel's replayed search
                      * (busy-machine dataset, retraining every 16
                      * samples): 10 warm rounds
                      * train 2.8x faster but need 115 trials to 90% of
                      * the best instead of 109, so the default is 0 */
  int nthread;       /* XGBoost threads; 0: one below 4,096 rows, else
                      * the cores the 1-minute load average leaves idle
                      * (at least one; see model.c) */
} mlc_costmodel_opts;

typedef struct mlc_costmodel mlc_costmodel;

/* A model with default options; XGBoost kinds load the library lazily, at
 * the first training or load (errors are reported there). */
mlc_costmodel *mlc_costmodel_new(mlc_costmodel_kind kind, uint64_t seed);
/* opts == NULL: defaults. Zero fields take their defaults. */
mlc_costmodel *mlc_costmodel_new_opts(mlc_costmodel_kind kind, uint64_t seed,
                                      const mlc_costmodel_opts *opts);
void mlc_costmodel_free(mlc_costmodel *m);
mlc_costmodel_kind mlc_costmodel_get_kind(const mlc_costmodel *m);
/* Samples the current booster was trained on (kept across save/load; the
 * models table's n_samples). */
int64_t mlc_costmodel_n_trained(const mlc_costmodel *m);
/* Trainings since this model was made or loaded: a caller that persists
 * the model saves it when this count moved. */
int mlc_costmodel_n_trainings(const mlc_costmodel *m);

/* Add n measured programs given as scheduled prim_funcs (features
 * extracted in parallel) that ran run_secs[i] seconds per call (<= 0, inf
 * or NaN: failed) for workload keys workloads[i]; retrains when due. */
bool mlc_costmodel_update_funcs(mlc_costmodel *m, int n, const mlc_prim_func *const *funcs,
                                const uint64_t *workloads, const double *run_secs,
                                mlc_error *err);

/* Fast path: extract features of n scheduled funcs in parallel, then
 * predict in one call. */
bool mlc_costmodel_predict_funcs(mlc_costmodel *m, int n, const mlc_prim_func *const *funcs,
                                 double *scores, mlc_error *err);

/* ---- persistence ----------------------------------------------------------- */

/* The tuner (tuner/tune.c) stores its model in the database's models table
 * after every training (mlc_costmodel_n_trainings moved) and the next run
 * for the same target starts from the latest stored model of its kind; a
 * blob refused by mlc_costmodel_load leaves it with a fresh model and a
 * warning in the run's message.
 *
 * The model as bytes (heap; free with mlc_free): a header (magic, format,
 * kind, MLC_FEATURE_VERSION, samples trained on, 64-bit checksum of the
 * rest) and XGBoost's own UBJSON model. Training samples are not included:
 * a reloaded model predicts with its booster and retrains only on samples
 * given to it afterwards (feed it the database's records to continue). */
bool mlc_costmodel_save(const mlc_costmodel *m, uint8_t **bytes, size_t *len, mlc_error *err);
/* A saved model (header and checksum checked before XGBoost sees a byte:
 * a damaged or other-version blob is refused with a message), with options
 * (NULL: defaults) for the trainings that follow,
 * e.g. the tuner's smaller min_samples. */
mlc_costmodel *mlc_costmodel_load_opts(const void *bytes, size_t len, uint64_t seed,
                                       const mlc_costmodel_opts *opts, mlc_error *err);
/* Header check alone; fills the blob's kind, feature version and sample
 * count (any may be NULL). */
bool mlc_costmodel_blob_check(const void *bytes, size_t len, mlc_costmodel_kind *kind,
                              int *feature_version, int64_t *n_samples, mlc_error *err);

/* ---- datasets for tests and benchmarks ------------------------------------------ */


#endif
