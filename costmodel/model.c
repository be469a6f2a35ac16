/* The cost model: samples, labels, XGBoost training and prediction, and
 * the byte format models are stored in. */
#include "costmodel/costmodel_internal.h"
#include "costmodel/xgb_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mlc_costmodel {
  mlc_costmodel_kind kind;
  mlc_costmodel_opts o;
  mlc_pcg32 rng; /* scores of an untrained model */
  /* Samples. Aggregate kinds: one row of MLC_FEATURE_AGG_DIM per sample;
   * the store-sum kind: the sample's store rows, from row_start[i] to
   * row_start[i + 1]. */
  MLC_VEC(float) x;
  MLC_VEC(int) row_start;
  MLC_VEC(uint64_t) group;
  MLC_VEC(double) secs;
  int n_at_training; /* samples held at the last training */
  int rounds_done;   /* boosting rounds in the booster */
  int64_t n_trained; /* samples the booster was trained on (kept by save/load) */
  int n_trainings;   /* trainings since made or loaded */
  BoosterHandle booster; /* NULL until trained or loaded */
};

static const char *const kind_names[MLC_COSTMODEL_KIND_COUNT] = {"random", "xgb-rank", "xgb-reg",
                                                                 "xgb-sum"};

const char *mlc_costmodel_kind_name(mlc_costmodel_kind k) {
  switch (k) {
  case MLC_COSTMODEL_RANDOM: case MLC_COSTMODEL_XGB_AGG_RANK: case MLC_COSTMODEL_XGB_AGG_REG:
  case MLC_COSTMODEL_XGB_STORE_SUM:
    return kind_names[k];
  }
  mlc_unreachable();
}

bool mlc_costmodel_kind_from_name(const char *s, mlc_costmodel_kind *out) {
  for (int i = 0; i < MLC_COSTMODEL_KIND_COUNT; i++)
    if (strcmp(s, kind_names[i]) == 0) {
      *out = (mlc_costmodel_kind)i;
      return true;
    }
  return false;
}

/* ---- lifetime ------------------------------------------------------------------ */

mlc_costmodel *mlc_costmodel_new_opts(mlc_costmodel_kind kind, uint64_t seed,
                                      const mlc_costmodel_opts *opts) {
  mlc_costmodel *m = mlc_xmalloc(sizeof *m);
  m->kind = kind;
  if (opts) m->o = *opts;
  if (m->o.min_samples <= 0 || m->o.min_samples > MLC_COSTMODEL_MIN_SAMPLES)
    m->o.min_samples = MLC_COSTMODEL_MIN_SAMPLES;
  if (m->o.retrain_every <= 0) m->o.retrain_every = 32;
  if (m->o.rounds <= 0) m->o.rounds = 50;
  if (m->o.max_depth <= 0) m->o.max_depth = 6;
  if (m->o.eta <= 0) m->o.eta = 0.2;
  if (m->o.nthread < 0) m->o.nthread = 0;
  mlc_pcg32_seed(&m->rng, seed, 0x636f73746d6f64ULL);
  MLC_VEC_PUSH(m->row_start, 0);
  return m;
}

mlc_costmodel *mlc_costmodel_new(mlc_costmodel_kind kind, uint64_t seed) {
  return mlc_costmodel_new_opts(kind, seed, NULL);
}

void mlc_costmodel_free(mlc_costmodel *m) {
  if (!m) return;
  if (m->booster) {
    const xgb_api *x = xgb_get(NULL);
    if (x) x->booster_free(m->booster);
  }
  MLC_VEC_FREE(m->x);
  MLC_VEC_FREE(m->row_start);
  MLC_VEC_FREE(m->group);
  MLC_VEC_FREE(m->secs);
  mlc_free(m);
}

mlc_costmodel_kind mlc_costmodel_get_kind(const mlc_costmodel *m) { return m->kind; }
int mlc_costmodel_n_samples(const mlc_costmodel *m) { return m->secs.len; }
bool mlc_costmodel_is_trained(const mlc_costmodel *m) { return m->booster != NULL; }
int64_t mlc_costmodel_n_trained(const mlc_costmodel *m) { return m->n_trained; }
int mlc_costmodel_n_trainings(const mlc_costmodel *m) { return m->n_trainings; }

/* ---- XGBoost plumbing -------------------------------------------------------------- */

/* Threads for XGBoost. Small data trains faster on one thread: every
 * boosting step runs many short parallel regions, and on a busy machine
 * each one waits for a descheduled worker (measured: 10 s instead of 0.1 s
 * for 70 samples under load 12 on 2 cores). Large data gets the cores the
 * load average leaves idle, at least one: retraining on 5,000 records
 * under load 7 on 2 cores took 4.8-6.7 s with 2 threads, 0.7-0.8 s with
 * one. */
static int threads_for(const mlc_costmodel *m, int rows) {
  if (m->o.nthread > 0) return m->o.nthread;
  if (rows < 4096) return 1;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  double load;
  if (n > 1 && getloadavg(&load, 1) == 1) n -= (long)(load + 0.5);
  return n > 0 ? (int)n : 1;
}

static bool set_params(const xgb_api *x, const mlc_costmodel *m, BoosterHandle b, int rows,
                       mlc_error *err) {
  char v[64];
  const char *objective = m->kind == MLC_COSTMODEL_XGB_AGG_RANK  ? "rank:pairwise"
                          : m->kind == MLC_COSTMODEL_XGB_AGG_REG ? "reg:squarederror"
                                                                 : "reg:squarederror";
  struct {
    const char *k;
    const char *v;
  } ps[] = {{"objective", objective}, {"tree_method", "hist"}, {"verbosity", "0"},
            {"min_child_weight", "0"}, {"gamma", "0.001"},    {"eval_metric", "rmse"}};
  for (int i = 0; i < MLC_COUNTOF(ps); i++)
    if (x->booster_set_param(b, ps[i].k, ps[i].v) != 0) return xgb_fail(x, err, ps[i].k);
  if (m->kind == MLC_COSTMODEL_XGB_STORE_SUM && x->booster_set_param(b, "base_score", "0") != 0)
    return xgb_fail(x, err, "base_score");
  snprintf(v, sizeof v, "%d", m->o.max_depth);
  if (x->booster_set_param(b, "max_depth", v) != 0) return xgb_fail(x, err, "max_depth");
  snprintf(v, sizeof v, "%g", m->o.eta);
  if (x->booster_set_param(b, "eta", v) != 0) return xgb_fail(x, err, "eta");
  snprintf(v, sizeof v, "%d", threads_for(m, rows));
  if (x->booster_set_param(b, "nthread", v) != 0) return xgb_fail(x, err, "nthread");
  if (x->booster_set_param(b, "seed", "1") != 0) return xgb_fail(x, err, "seed");
  return true;
}

static DMatrixHandle make_dmatrix(const xgb_api *x, const float *rows, int n, int dim,
                                  mlc_error *err) {
  DMatrixHandle d = NULL;
  if (x->dmatrix_from_mat(rows, (bst_ulong)n, (bst_ulong)dim, NAN, &d) != 0) {
    xgb_fail(x, err, "XGDMatrixCreateFromMat");
    return NULL;
  }
  return d;
}

/* Normalized throughput: best time of the sample's workload / its time;
 * 0 for failures. */
static void labels(const mlc_costmodel *m, float *y) {
  int n = m->secs.len;
  for (int i = 0; i < n; i++) {
    double best = INFINITY;
    for (int j = 0; j < n; j++) {
      double s = m->secs.data[j];
      if (m->group.data[j] == m->group.data[i] && s > 0 && isfinite(s) && s < best) best = s;
    }
    double s = m->secs.data[i];
    y[i] = (s > 0 && isfinite(s)) ? (float)(best / s) : 0.0f;
  }
}

typedef struct group_idx {
  uint64_t g;
  int i;
} group_idx;

static int cmp_group_idx(const void *a, const void *b) {
  const group_idx *x = a, *y = b;
  if (x->g != y->g) return x->g < y->g ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Aggregate kinds: rows (sorted by workload for ranking groups). */
static bool new_booster(const xgb_api *x, const mlc_costmodel *m, DMatrixHandle d, int rows,
                        BoosterHandle *out, mlc_error *err);

static bool train_aggregate(const xgb_api *x, mlc_costmodel *m, BoosterHandle *bp,
                            const float *y, mlc_error *err) {
  int n = m->secs.len;
  group_idx *order = mlc_xmalloc(sizeof(group_idx) * (size_t)n);
  for (int i = 0; i < n; i++) order[i] = (group_idx){m->group.data[i], i};
  qsort(order, (size_t)n, sizeof *order, cmp_group_idx);
  float *rows = mlc_xmalloc(sizeof(float) * (size_t)n * MLC_FEATURE_AGG_DIM);
  float *ys = mlc_xmalloc(sizeof(float) * (size_t)n);
  unsigned *groups = mlc_xmalloc(sizeof(unsigned) * (size_t)n);
  int n_groups = 0;
  for (int r = 0; r < n; r++) {
    int i = order[r].i;
    memcpy(rows + (size_t)r * MLC_FEATURE_AGG_DIM, m->x.data + (size_t)i * MLC_FEATURE_AGG_DIM,
           sizeof(float) * MLC_FEATURE_AGG_DIM);
    ys[r] = y[i];
    if (r == 0 || order[r].g != order[r - 1].g) groups[n_groups++] = 0;
    groups[n_groups - 1]++;
  }
  bool ok = false;
  DMatrixHandle d = make_dmatrix(x, rows, n, MLC_FEATURE_AGG_DIM, err);
  if (d && x->dmatrix_set_float(d, "label", ys, (bst_ulong)n) != 0) {
    xgb_fail(x, err, "label");
  } else if (d && m->kind == MLC_COSTMODEL_XGB_AGG_RANK &&
             x->dmatrix_set_uint(d, "group", groups, (bst_ulong)n_groups) != 0) {
    xgb_fail(x, err, "group");
  } else if (d && (*bp || new_booster(x, m, d, n, bp, err))) {
    /* A booster passed in is warm-started: a few more rounds on all data. */
    int first = *bp == m->booster ? m->rounds_done : 0;
    int last = first ? first + m->o.warm_rounds : m->o.rounds;
    ok = true;
    for (int it = first; it < last && ok; it++)
      if (x->booster_update(*bp, it, d) != 0) ok = xgb_fail(x, err, "XGBoosterUpdateOneIter");
    if (ok) m->rounds_done = last;
  }
  if (d) x->dmatrix_free(d);
  mlc_free(order);
  mlc_free(rows);
  mlc_free(ys);
  mlc_free(groups);
  return ok;
}

/* Store-sum kind: a program's score is the sum of its stores' outputs;
 * squared error on that sum, weighted by the label (good programs matter
 * most, as meta-schedule's objective does). Every store of a program gets
 * the program's gradient. */
static bool train_store_sum(const xgb_api *x, mlc_costmodel *m, BoosterHandle *bp,
                            const float *y, mlc_error *err) {
  int n = m->secs.len, n_rows = m->row_start.data[n];
  if (n_rows == 0) return mlc_error_set(err, "costmodel: no stores to train on");
  DMatrixHandle d = make_dmatrix(x, m->x.data, n_rows, MLC_FEATURE_DIM, err);
  if (!d) return false;
  float *grad = mlc_xmalloc(sizeof(float) * (size_t)n_rows);
  float *hess = mlc_xmalloc(sizeof(float) * (size_t)n_rows);
  float *zero = mlc_xmalloc(sizeof(float) * (size_t)n_rows);
  bool ok = (x->dmatrix_set_float(d, "label", zero, (bst_ulong)n_rows) == 0 ||
             xgb_fail(x, err, "label")) &&
            new_booster(x, m, d, n_rows, bp, err);
  BoosterHandle b = ok ? *bp : NULL;
  for (int it = 0; it < m->o.rounds && ok; it++) {
    bst_ulong len = 0;
    const float *pred = NULL;
    if (x->booster_predict(b, d, 0, 0, 1, &len, &pred) != 0 || len != (bst_ulong)n_rows) {
      ok = xgb_fail(x, err, "XGBoosterPredict");
      break;
    }
    for (int i = 0; i < n; i++) {
      int r0 = m->row_start.data[i], r1 = m->row_start.data[i + 1];
      double sum = 0;
      for (int r = r0; r < r1; r++) sum += pred[r];
      double w = fmax(y[i], 0.01);
      for (int r = r0; r < r1; r++) {
        grad[r] = (float)((sum - y[i]) * w);
        hess[r] = (float)w;
      }
    }
    if (x->booster_boost(b, d, grad, hess, (bst_ulong)n_rows) != 0)
      ok = xgb_fail(x, err, "XGBoosterBoostOneIter");
  }
  x->dmatrix_free(d);
  mlc_free(grad);
  mlc_free(hess);
  mlc_free(zero);
  return ok;
}

/* A booster over the training matrix with the model's parameters. */
static bool new_booster(const xgb_api *x, const mlc_costmodel *m, DMatrixHandle d, int rows,
                        BoosterHandle *out, mlc_error *err) {
  if (x->booster_create(&d, 1, out) != 0) return xgb_fail(x, err, "XGBoosterCreate");
  return set_params(x, m, *out, rows, err);
}

bool mlc_costmodel_train(mlc_costmodel *m, mlc_error *err) {
  if (m->kind == MLC_COSTMODEL_RANDOM) return true;
  if (m->secs.len == 0) return mlc_error_set(err, "costmodel: no samples to train on");
  const xgb_api *x = xgb_get(err);
  if (!x) return false;
  bool sum = m->kind == MLC_COSTMODEL_XGB_STORE_SUM;
  /* Warm start (aggregate kinds): keep the trees, add warm_rounds more. */
  BoosterHandle b = !sum && m->o.warm_rounds > 0 && m->booster ? m->booster : NULL;
  float *y = mlc_xmalloc(sizeof(float) * (size_t)m->secs.len);
  labels(m, y);
  bool ok = sum ? train_store_sum(x, m, &b, y, err) : train_aggregate(x, m, &b, y, err);
  mlc_free(y);
  if (!ok) {
    if (b && b != m->booster) x->booster_free(b);
    return false;
  }
  if (m->booster && m->booster != b) x->booster_free(m->booster);
  m->booster = b;
  m->n_at_training = m->secs.len;
  m->n_trained = m->secs.len;
  m->n_trainings++;
  return true;
}

/* ---- samples ------------------------------------------------------------------------ */

static void add_sample(mlc_costmodel *m, const mlc_features *f, uint64_t group, double secs) {
  if (m->kind == MLC_COSTMODEL_XGB_STORE_SUM) {
    for (size_t k = 0; k < (size_t)f->n_stores * MLC_FEATURE_DIM; k++)
      MLC_VEC_PUSH(m->x, f->rows[k]);
    int end = m->row_start.data[m->row_start.len - 1] + f->n_stores;
    MLC_VEC_PUSH(m->row_start, end);
  } else if (m->kind != MLC_COSTMODEL_RANDOM) {
    float agg[MLC_FEATURE_AGG_DIM];
    mlc_features_aggregate(f, agg);
    for (int k = 0; k < MLC_FEATURE_AGG_DIM; k++) MLC_VEC_PUSH(m->x, agg[k]);
  }
  MLC_VEC_PUSH(m->group, group);
  MLC_VEC_PUSH(m->secs, secs);
}

bool mlc_costmodel_update(mlc_costmodel *m, int n, const mlc_features *feats,
                          const uint64_t *workloads, const double *run_secs, mlc_error *err) {
  for (int i = 0; i < n; i++)
    if (feats[i].ok) add_sample(m, &feats[i], workloads[i], run_secs[i]);
  if (m->kind == MLC_COSTMODEL_RANDOM || m->secs.len < m->o.min_samples) return true;
  bool due = m->n_at_training == 0 ? true : m->secs.len - m->n_at_training >= m->o.retrain_every;
  return due ? mlc_costmodel_train(m, err) : true;
}

static void free_feats(int n, mlc_features *f) {
  for (int i = 0; i < n; i++) mlc_features_free(&f[i]);
  mlc_free(f);
}

bool mlc_costmodel_update_funcs(mlc_costmodel *m, int n, const mlc_prim_func *const *funcs,
                                const uint64_t *workloads, const double *run_secs,
                                mlc_error *err) {
  mlc_features *f = mlc_xmalloc(sizeof(mlc_features) * (size_t)(n ? n : 1));
  bool ok = mlc_features_extract_batch(n, funcs, f, err) &&
            mlc_costmodel_update(m, n, f, workloads, run_secs, err);
  free_feats(n, f);
  return ok;
}

/* ---- prediction ------------------------------------------------------------------------ */

static bool predict_booster(mlc_costmodel *m, int n, const mlc_features *feats, double *scores,
                            mlc_error *err) {
  const xgb_api *x = xgb_get(err);
  if (!x) return false;
  bool sum = m->kind == MLC_COSTMODEL_XGB_STORE_SUM;
  int dim = sum ? MLC_FEATURE_DIM : MLC_FEATURE_AGG_DIM;
  int n_rows = 0;
  for (int i = 0; i < n; i++) n_rows += sum ? (feats[i].ok ? feats[i].n_stores : 0) : 1;
  float *rows = mlc_xmalloc(sizeof(float) * (size_t)(n_rows ? n_rows : 1) * (size_t)dim);
  for (int i = 0, r = 0; i < n; i++) {
    if (!sum) {
      mlc_features_aggregate(&feats[i], rows + (size_t)r++ * (size_t)dim);
    } else if (feats[i].ok && feats[i].n_stores) {
      memcpy(rows + (size_t)r * (size_t)dim, feats[i].rows,
             sizeof(float) * (size_t)feats[i].n_stores * MLC_FEATURE_DIM);
      r += feats[i].n_stores;
    }
  }
  bool ok = true;
  DMatrixHandle d = n_rows ? make_dmatrix(x, rows, n_rows, dim, err) : NULL;
  bst_ulong len = 0;
  const float *pred = NULL;
  if (n_rows && !d) ok = false;
  else if (d && (x->booster_predict(m->booster, d, 0, 0, 0, &len, &pred) != 0 ||
                 len != (bst_ulong)n_rows))
    ok = xgb_fail(x, err, "XGBoosterPredict");
  for (int i = 0, r = 0; i < n && ok; i++) {
    if (!feats[i].ok) {
      scores[i] = -INFINITY;
      r += sum ? 0 : 1;
      continue;
    }
    if (!sum) {
      scores[i] = pred[r++];
      continue;
    }
    double s = 0;
    for (int k = 0; k < feats[i].n_stores; k++) s += pred[r++];
    scores[i] = s;
  }
  if (d) x->dmatrix_free(d);
  mlc_free(rows);
  return ok;
}

bool mlc_costmodel_predict(mlc_costmodel *m, int n, const mlc_features *feats, double *scores,
                           mlc_error *err) {
  if (m->booster) return predict_booster(m, n, feats, scores, err);
  for (int i = 0; i < n; i++)
    scores[i] = feats[i].ok ? mlc_pcg32_double(&m->rng) : -INFINITY;
  return true;
}

bool mlc_costmodel_predict_funcs(mlc_costmodel *m, int n, const mlc_prim_func *const *funcs,
                                 double *scores, mlc_error *err) {
  mlc_features *f = mlc_xmalloc(sizeof(mlc_features) * (size_t)(n ? n : 1));
  mlc_error first;
  /* A batch where nothing lowers still gets scores (all -inf). */
  if (!mlc_features_extract_batch(n, funcs, f, &first))
    for (int i = 0; i < n; i++) f[i].ok = false;
  bool ok = mlc_costmodel_predict(m, n, f, scores, err);
  free_feats(n, f);
  return ok;
}

bool mlc_costmodel_predict_scheds(mlc_costmodel *m, int n, mlc_sched *const *states,
                                  double *scores, mlc_error *err) {
  const mlc_prim_func **funcs = mlc_xmalloc(sizeof(*funcs) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) funcs[i] = mlc_sched_func(states[i]);
  bool ok = mlc_costmodel_predict_funcs(m, n, funcs, scores, err);
  mlc_free(funcs);
  return ok;
}

/* ---- persistence ------------------------------------------------------------------------ */

/* Blob layout, little-endian:
 *   0  "MLCCOSTM"          8  u32 format (1)     12 u32 kind
 *   16 u32 feature version 20 u32 trained (0/1)  24 u64 samples trained on
 *   32 u64 payload length  40 u64 checksum of bytes 0..40 and the payload
 *   48 payload: XGBoost's UBJSON model (empty when untrained) */
#define BLOB_MAGIC "MLCCOSTM"
#define BLOB_FORMAT 1
#define BLOB_HEADER 48

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static uint64_t blob_checksum(const uint8_t *b, size_t payload_len) {
  uint64_t h = mlc_hash_bytes(b, 40, 0x6d6c63636f7374ULL);
  return mlc_hash_combine(h, mlc_hash_bytes(b + BLOB_HEADER, payload_len, h));
}

bool mlc_costmodel_save(const mlc_costmodel *m, uint8_t **bytes, size_t *len, mlc_error *err) {
  const char *payload = NULL;
  bst_ulong plen = 0;
  if (m->booster) {
    const xgb_api *x = xgb_get(err);
    if (!x) return false;
    if (x->booster_save(m->booster, "{\"format\": \"ubj\"}", &plen, &payload) != 0)
      return xgb_fail(x, err, "XGBoosterSaveModelToBuffer");
  }
  uint8_t *b = mlc_xmalloc(BLOB_HEADER + (size_t)plen);
  memcpy(b, BLOB_MAGIC, 8);
  put_u32(b + 8, BLOB_FORMAT);
  put_u32(b + 12, (uint32_t)m->kind);
  put_u32(b + 16, MLC_FEATURE_VERSION);
  put_u32(b + 20, m->booster != NULL);
  put_u64(b + 24, (uint64_t)m->n_trained);
  put_u64(b + 32, (uint64_t)plen);
  if (plen) memcpy(b + BLOB_HEADER, payload, (size_t)plen);
  put_u64(b + 40, blob_checksum(b, (size_t)plen));
  *bytes = b;
  *len = BLOB_HEADER + (size_t)plen;
  return true;
}

bool mlc_costmodel_blob_check(const void *bytes, size_t len, mlc_costmodel_kind *kind,
                              int *feature_version, int64_t *n_samples, mlc_error *err) {
  const uint8_t *b = bytes;
  if (!b || len < BLOB_HEADER || memcmp(b, BLOB_MAGIC, 8) != 0)
    return mlc_error_set(err, "cost model blob: not a cost model (bad magic or %zu bytes)", len);
  if (get_u32(b + 8) != BLOB_FORMAT)
    return mlc_error_set(err, "cost model blob: format %u, this build reads %d", get_u32(b + 8),
                         BLOB_FORMAT);
  uint64_t plen = get_u64(b + 32);
  if (plen != len - BLOB_HEADER)
    return mlc_error_set(err, "cost model blob: truncated (%zu payload bytes, header says %llu)",
                         len - BLOB_HEADER, (unsigned long long)plen);
  if (blob_checksum(b, (size_t)plen) != get_u64(b + 40))
    return mlc_error_set(err, "cost model blob: checksum mismatch (damaged)");
  uint32_t k = get_u32(b + 12);
  if (k >= MLC_COSTMODEL_KIND_COUNT)
    return mlc_error_set(err, "cost model blob: unknown model kind %u", k);
  if (get_u32(b + 16) != MLC_FEATURE_VERSION)
    return mlc_error_set(err, "cost model blob: feature version %u, this build extracts %d",
                         get_u32(b + 16), MLC_FEATURE_VERSION);
  if ((get_u32(b + 20) != 0) != (plen != 0))
    return mlc_error_set(err, "cost model blob: trained flag and payload disagree");
  if (kind) *kind = (mlc_costmodel_kind)k;
  if (feature_version) *feature_version = (int)get_u32(b + 16);
  if (n_samples) *n_samples = (int64_t)get_u64(b + 24);
  return true;
}

mlc_costmodel *mlc_costmodel_load(const void *bytes, size_t len, uint64_t seed,
                                  mlc_error *err) {
  return mlc_costmodel_load_opts(bytes, len, seed, NULL, err);
}

mlc_costmodel *mlc_costmodel_load_opts(const void *bytes, size_t len, uint64_t seed,
                                       const mlc_costmodel_opts *opts, mlc_error *err) {
  mlc_costmodel_kind kind;
  int64_t n;
  if (!mlc_costmodel_blob_check(bytes, len, &kind, NULL, &n, err)) return NULL;
  mlc_costmodel *m = mlc_costmodel_new_opts(kind, seed, opts);
  m->n_trained = n;
  size_t plen = len - BLOB_HEADER;
  if (plen == 0) return m;
  const xgb_api *x = xgb_get(err);
  BoosterHandle b = NULL;
  if (!x || x->booster_create(NULL, 0, &b) != 0) {
    if (x) xgb_fail(x, err, "XGBoosterCreate");
    mlc_costmodel_free(m);
    return NULL;
  }
  if (x->booster_load(b, (const uint8_t *)bytes + BLOB_HEADER, (bst_ulong)plen) != 0 ||
      !set_params(x, m, b, 0, err)) {
    xgb_fail(x, err, "XGBoosterLoadModelFromBuffer");
    x->booster_free(b);
    mlc_costmodel_free(m);
    return NULL;
  }
  m->booster = b;
  m->rounds_done = m->o.rounds;
  return m;
}
