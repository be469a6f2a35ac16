/* costmodel: what tests and benchmarks reach beyond the tuner's API
 * (features one by one, training and predicting on features, the random
 * schedules of the datasets). Private to costmodel/ and its tests. */
#ifndef MLC_COSTMODEL_INTERNAL_H
#define MLC_COSTMODEL_INTERNAL_H

#include "costmodel/costmodel.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* Lower a scheduled prim_func and extract its per-store features. */
bool mlc_features_extract(const mlc_prim_func *scheduled, mlc_features *out, mlc_error *err);

/* n programs on OpenMP threads; out[i].ok says whether program i lowered.
 * Fails only when every one failed (err: the first message). */
bool mlc_features_extract_batch(int n, const mlc_prim_func *const *funcs, mlc_features *out,
                                mlc_error *err);

void mlc_features_free(mlc_features *f);

/* The per-program aggregate vector (MLC_FEATURE_AGG_DIM floats). */
void mlc_features_aggregate(const mlc_features *f, float *out);

/* Name of feature i (0 <= i < MLC_FEATURE_DIM), e.g. "vec_len",
 * "b2_unique_lines", "ai_curve_3"; the names FEATURES.md uses. */
const char *mlc_feature_name(int i);

/* Index of a named feature, or -1. */
int mlc_feature_index(const char *name);

/* "random", "xgb-rank", "xgb-reg", "xgb-sum". */
const char *mlc_costmodel_kind_name(mlc_costmodel_kind k);

/* Samples held, and whether predictions come from a trained booster. */
int mlc_costmodel_n_samples(const mlc_costmodel *m);

bool mlc_costmodel_is_trained(const mlc_costmodel *m);

/* Add n measured programs: feats[i] of a program of workload workloads[i]
 * (any stable key, e.g. the workload's structural hash) that ran
 * run_secs[i] seconds per call (<= 0, inf or NaN: failed). Retrains when
 * due (see above). Features with ok == false are skipped. */
bool mlc_costmodel_update(mlc_costmodel *m, int n, const mlc_features *feats,
                          const uint64_t *workloads, const double *run_secs, mlc_error *err);

/* Force a training now on what the model holds (tests, benchmarks). */
bool mlc_costmodel_train(mlc_costmodel *m, mlc_error *err);

/* Scores of n programs, higher meaning faster; comparable among programs
 * of one workload. One XGBoost call for the batch. Programs whose features
 * failed (ok == false) score -INFINITY. */
bool mlc_costmodel_predict(mlc_costmodel *m, int n, const mlc_features *feats, double *scores,
                           mlc_error *err);

/* The same on candidate schedule states (their current functions). */
bool mlc_costmodel_predict_scheds(mlc_costmodel *m, int n, mlc_sched *const *states,
                                  double *scores, mlc_error *err);

/* Checks the header and checksum before XGBoost sees a byte (its loader can
 * crash on damaged input): a truncated, corrupted or other-version blob is
 * refused with a message. */
mlc_costmodel *mlc_costmodel_load(const void *bytes, size_t len, uint64_t seed,
                                  mlc_error *err);

/* A random loop-level schedule of every block of s's function: tile each
 * loop (sample_perfect_tile into 1-3 parts), reorder the tiles randomly,
 * parallelize an outer loop, vectorize and unroll inner ones when allowed.
 * Primitives whose preconditions fail are skipped, so this always yields a
 * valid schedule. For datasets until the tuner's design spaces exist. */
bool mlc_costmodel_random_schedule(mlc_sched *s, mlc_pcg32 *rng, mlc_error *err);

#pragma GCC visibility pop
#endif
