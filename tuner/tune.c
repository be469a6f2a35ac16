/* The tuning loop: search -> measure -> database -> cost model, round
 * after round, until the workload's budget of records for the target is
 * in the database. Resume comes from the database: its records are never
 * proposed again, its best traces seed the population and train the
 * model. */
#include "tuner/tuner_internal.h"
#include "costmodel/costmodel.h"
#include "db/db.h"
#include "measure/measure.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

void mlc_tuner_tune_opts_default(mlc_tuner_tune_opts *o) {
  *o = (mlc_tuner_tune_opts){
      .task = "main", .shape = "", .target = "llvm", .trials = 64, .remeasure_top = 3,
      .cost_model = "xgb-rank",
  };
  mlc_tuner_opts_default(&o->search);
}

/* Everything one run holds. */
typedef struct tune_run {
  mlc_db *db;
  const mlc_prim_func *f;
  const mlc_tuner_tune_opts *o;
  mlc_tuner_tune_result *res;
  char target[512];
  bool on_gpu;              /* a GPU target: kernels timed with CUDA events */
  mlc_tuner_opts search_opts; /* o->search with the design space of the target's kind */
  char *workload_text;      /* TVMScript the workers replay on */
  char *cpu_features;       /* the target CPU's, search_opts.cpu_features points here */
  uint64_t workload_key;    /* the cost model's workload key */
  mlc_tuner_search *search;
  mlc_costmodel *model;
  mlc_tuner_model model_if;
  int model_saved;          /* the model's n_trainings when last saved (costmodel) */
  mlc_measure *pool;        /* NULL with a custom measure function */
  int have;                 /* records of (workload, target) */
  bool have_library;        /* one of them calls o->library */
  mlc_sched *default_cand;  /* the space's default schedule; NULL: none, or not wanted */
  uint64_t default_hash;    /* its trace's hash */
  bool have_default;        /* one of the records is it */
  bool default_due;         /* it is still to measure (a session's caller measures it) */
  int64_t next_round;
  double best_sec;
  double t0;
  MLC_VEC(double) commit_ms; /* each commit's wall time (commit_latency) */
  double search_sec_est;     /* overlap: what learning and searching a batch takes */
} tune_run;

static bool cm_predict(void *ctx, int n, const mlc_prim_func *const *funcs, double *scores,
                       mlc_error *err) {
  return mlc_costmodel_predict_funcs(ctx, n, funcs, scores, err);
}

static bool pool_measure(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                         mlc_error *err) {
  return mlc_measure_run_batch(ud, n, c, out, NULL, NULL, err);
}

static bool do_measure(tune_run *r, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                       mlc_error *err) {
  if (r->o->measure) return r->o->measure(r->o->measure_ud, n, c, out, err);
  return pool_measure(r->pool, n, c, out, err);
}

/* mlc_db_commit, timed, and what it stored counted in res->stored. */
static bool commit(tune_run *r, int n, const mlc_db_record *recs, int *added, mlc_error *err) {
  double t = mlc_now_sec();
  bool ok = mlc_db_commit(r->db, n, recs, added, err);
  MLC_VEC_PUSH(r->commit_ms, (mlc_now_sec() - t) * 1e3);
  if (ok) r->res->stored += *added;
  return ok;
}

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The commits' latency percentiles into res (nearest rank). */
static void commit_latency(tune_run *r) {
  int n = r->commit_ms.len;
  r->res->commits = n;
  if (n == 0) return;
  qsort(r->commit_ms.data, (size_t)n, sizeof(double), by_value);
  r->res->commit_ms_p50 = r->commit_ms.data[(n - 1) / 2];
  r->res->commit_ms_p95 = r->commit_ms.data[(int)(0.95 * (n - 1) + 0.5)];
  r->res->commit_ms_max = r->commit_ms.data[n - 1];
}

static double gflops(const tune_run *r, double sec) {
  return sec > 0 ? (r->o->flops > 0 ? r->o->flops : mlc_func_flops(r->f)) / sec * 1e-9 : 0;
}

static uint64_t parse_hex(const char *s) {
  return s ? strtoull(s, NULL, 16) : 0;
}

/* ---- setup --------------------------------------------------------------------- */

/* (costmodel) The target's latest stored model of the same kind replaces
 * the fresh one: it scores the first round, before this workload has
 * records to train on. A damaged blob (the database's checksum or the
 * blob's own, checked before XGBoost reads a byte) is refused and the run
 * goes on with the fresh model, saying so. */
static void load_stored_model(tune_run *r, const mlc_costmodel_opts *co) {
  mlc_costmodel_kind want = mlc_costmodel_get_kind(r->model), kind;
  if (want == MLC_COSTMODEL_RANDOM) return;
  void *blob = NULL;
  size_t len = 0;
  mlc_error e;
  int found = mlc_db_load_model(r->db, r->target, MLC_FEATURE_VERSION, &blob, &len, NULL, &e);
  mlc_costmodel *m = NULL;
  if (found == 1 && !mlc_costmodel_blob_check(blob, len, &kind, NULL, NULL, &e)) found = -1;
  else if (found == 1 && kind == want &&
           !(m = mlc_costmodel_load_opts(blob, len, r->o->search.seed, co, &e)))
    found = -1;
  mlc_free(blob);
  if (found < 0)
    snprintf(r->res->message, sizeof r->res->message,
             "warning: the stored cost model is unusable (%.300s); starting a fresh model",
             e.msg);
  if (!m) return;
  mlc_costmodel_free(r->model);
  r->model = m;
  r->model_if.ctx = m;
}

/* (costmodel) After every training the model goes to the models table,
 * for the next run of any workload on this target. */
static void save_model(tune_run *r) {
  int t = mlc_costmodel_n_trainings(r->model);
  if (t == r->model_saved || mlc_costmodel_get_kind(r->model) == MLC_COSTMODEL_RANDOM) return;
  uint8_t *blob;
  size_t len;
  mlc_error e;
  if (mlc_costmodel_save(r->model, &blob, &len, &e)) {
    if (mlc_db_save_model(r->db, r->target, MLC_FEATURE_VERSION, mlc_costmodel_n_trained(r->model),
                          blob, len, &e) < 0)
      snprintf(r->res->message, sizeof r->res->message,
               "warning: cannot store the cost model (%.300s)", e.msg);
    mlc_free(blob);
  }
  r->model_saved = t;
}

static bool open_model(tune_run *r, mlc_error *err) {
  mlc_costmodel_kind kind = MLC_COSTMODEL_XGB_AGG_RANK;
  const char *name = r->o->cost_model ? r->o->cost_model : "xgb-rank";
  if (!mlc_costmodel_kind_from_name(name, &kind))
    return mlc_error_set(err, "unknown cost model \"%s\" (random, xgb-rank, xgb-reg, xgb-sum)",
                         name);
  /* Train after the first round and again after each: a 64-trial budget
   * is four rounds of 16, and a model that waits for 64 samples would
   * never guide one of them. */
  mlc_costmodel_opts co = {.min_samples = 16, .retrain_every = 16};
  r->model = mlc_costmodel_new_opts(kind, r->o->search.seed, &co);
  r->model_if = (mlc_tuner_model){cm_predict, r->model};
  mlc_tuner_search_set_model(r->search, &r->model_if);
  load_stored_model(r, &co);
  return true;
}

/* The cost model could not learn (XGBoost missing): go on with random
 * scores and say so. */
static void model_fallback(tune_run *r, const char *why) {
  if (mlc_costmodel_get_kind(r->model) == MLC_COSTMODEL_RANDOM) return;
  mlc_costmodel_free(r->model);
  r->model = mlc_costmodel_new(MLC_COSTMODEL_RANDOM, r->o->search.seed);
  r->model_if.ctx = r->model;
  snprintf(r->res->message, sizeof r->res->message,
           "warning: the cost model cannot learn (%.300s); searching with random scores", why);
}

/* keys NULL: every func is a candidate of this run's workload. */
static void learn_keyed(tune_run *r, int n, const mlc_prim_func *const *funcs, const uint64_t *keys,
                        const double *secs) {
  uint64_t *own = NULL;
  if (!keys) {
    own = mlc_xmalloc(sizeof(uint64_t) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) own[i] = r->workload_key;
    keys = own;
  }
  mlc_error e;
  if (!mlc_costmodel_update_funcs(r->model, n, funcs, keys, secs, &e)) model_fallback(r, e.msg);
  else save_model(r);
  mlc_free(own);
}

static void learn(tune_run *r, int n, const mlc_prim_func *const *funcs, const double *secs) {
  learn_keyed(r, n, funcs, NULL, secs);
}

bool tuner_record_trusted(mlc_arena *a, const mlc_prim_func *f, const mlc_db_record *rec,
                          mlc_error *why) {
  char hash[17];
  if (!rec->sched_hash)
    return mlc_error_set(why, "warning: record %" PRId64 " has no scheduled-function hash "
                              "(written outside mlc-tune?); it is not used", rec->id);
  if (mlc_db_replay_trace(a, f, rec->trace, NULL, hash, why) &&
      strcmp(hash, rec->sched_hash) == 0)
    return true;
  return mlc_error_set(why, "warning: record %" PRId64 " does not replay to its stored hash %s "
                            "(another version, or a tampered record); it is not used",
                       rec->id, rec->sched_hash);
}

/* A record that is not trusted (tuner_record_trusted) is still never
 * proposed again, but it neither seeds the search nor trains the model nor
 * counts as the best; the first such record of a run is named in the
 * result's message. */
static bool record_trusted(tune_run *r, mlc_arena *a, const mlc_db_record *rec, int *n_bad) {
  mlc_error why;
  if (tuner_record_trusted(a, r->f, rec, &why)) return true;
  char *msg = r->res->message;
  size_t len = strlen(msg);
  if ((*n_bad)++ == 0 && !strstr(msg, why.msg) && len + 1 < sizeof r->res->message)
    snprintf(msg + len, sizeof r->res->message - len, "%s%.300s", len ? "; " : "", why.msg);
  return false;
}

static bool same_hash(const mlc_sched *c, const char *sched_hash) {
  char hash[17];
  if (!sched_hash) return false;
  mlc_func_hash_hex(mlc_sched_func(c), hash);
  return strcmp(hash, sched_hash) == 0;
}

/* (costmodel) Learning across workloads: the records of the target's
 * other workloads in the database train the model with this workload's
 * own (features are workload-independent and labels normalized by each
 * workload's own best), so a new workload's first round is ranked by what
 * tuning the others learned, and the samples stay in the model's set when
 * it retrains. At most TRANSFER_PER_WORKLOAD records of a workload, spread
 * over its history, and TRANSFER_MAX in all: the pairwise objective draws
 * pairs per record, so many transferred records can drown a new
 * workload's own (bench_search, 13 workloads, 160 trials, 2 seeds a run:
 * about 1,900 transferred took 1.26x and 0.61x the cold start's trials to
 * 95% of the best in two runs, 384 took 0.51x in one; more seeds must
 * settle the cap). A
 * workload with TRANSFER_UNTIL_OWN records of its own learns from them
 * alone (the task scheduler tunes a kernel in many short runs, each of
 * which would replay the others again). Records that do not replay to
 * their stored hash, and library calls, are skipped. */
#define TRANSFER_PER_WORKLOAD 32
#define TRANSFER_MAX 512
#define TRANSFER_UNTIL_OWN 256

typedef struct train_set { /* scheduled functions, their workloads' keys, their times */
  MLC_VEC(mlc_sched *) scheds;
  MLC_VEC(uint64_t) keys;
  MLC_VEC(double) secs;
} train_set;

static void transfer_workload(tune_run *r, mlc_arena *a, const mlc_db_workload *w, train_set *ts,
                              int *n_workloads) {
  mlc_error e;
  mlc_db_record *recs;
  /* its IR is parsed only when it has records for this target */
  int n = w->ir ? mlc_db_records(r->db, w->id, r->target, a, &recs, &e) : 0;
  mlc_module *m = n > 0 ? mlc_parse_module(a, "workload", w->ir, &e) : NULL;
  if (!m || m->n_funcs != 1) return;
  const mlc_prim_func *f = m->funcs[0];
  uint64_t key = mlc_func_struct_hash(f);
  int room = TRANSFER_MAX - ts->scheds.len, want = n < TRANSFER_PER_WORKLOAD ? n : TRANSFER_PER_WORKLOAD;
  if (want > room) want = room;
  int taken = 0;
  for (int k = 0; k < want; k++) {
    const mlc_db_record *rec = &recs[(int64_t)k * n / want];
    mlc_trace *t = mlc_trace_from_json(a, rec->trace, strlen(rec->trace), &e);
    if (!t || mlc_trace_library(t)) continue;
    mlc_sched *c = mlc_tuner_apply_trace(f, t, &r->search_opts, &e);
    if (!c) continue;
    if (!same_hash(c, rec->sched_hash)) {
      mlc_sched_free(c);
      continue;
    }
    MLC_VEC_PUSH(ts->scheds, c);
    MLC_VEC_PUSH(ts->keys, key);
    MLC_VEC_PUSH(ts->secs, rec->error ? 0 : rec->mean_sec);
    taken++;
  }
  *n_workloads += taken > 0;
}

/* The other workloads' records into ts, when this workload has fewer
 * than TRANSFER_UNTIL_OWN of its own. */
static void transfer_from_others(tune_run *r, mlc_arena *a, int n_own, train_set *ts) {
  if (r->o->cold_start || n_own >= TRANSFER_UNTIL_OWN ||
      mlc_costmodel_get_kind(r->model) == MLC_COSTMODEL_RANDOM)
    return;
  mlc_db_workload *ws;
  mlc_error e;
  int n = mlc_db_list_workloads(r->db, NULL, NULL, a, &ws, &e);
  int n_workloads = 0;
  for (int i = 0; i < n && ts->scheds.len < TRANSFER_MAX; i++)
    if (ws[i].id != r->res->workload_id) transfer_workload(r, a, &ws[i], ts, &n_workloads);
  r->res->transfer_records = ts->scheds.len;
  r->res->transfer_workloads = n_workloads;
}

/* One training on everything ts holds (the model retrains once). */
static void learn_set(tune_run *r, train_set *ts) {
  if (ts->scheds.len) {
    const mlc_prim_func **funcs = mlc_xmalloc(sizeof(*funcs) * (size_t)ts->scheds.len);
    for (int i = 0; i < ts->scheds.len; i++) funcs[i] = mlc_sched_func(ts->scheds.data[i]);
    learn_keyed(r, ts->scheds.len, funcs, ts->keys.data, ts->secs.data);
    mlc_free(funcs);
  }
  for (int i = 0; i < ts->scheds.len; i++) mlc_sched_free(ts->scheds.data[i]);
  MLC_VEC_FREE(ts->scheds);
  MLC_VEC_FREE(ts->keys);
  MLC_VEC_FREE(ts->secs);
}

/* Database records of the workload: dedup, seeds, training data. */
static bool load_history(tune_run *r, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_db_record *recs;
  int n = mlc_db_records(r->db, r->res->workload_id, r->target, a, &recs, err);
  if (n < 0) {
    mlc_arena_free(a);
    return false;
  }
  r->have = n;
  train_set ts = {0};
  transfer_from_others(r, a, n, &ts);
  int n_bad = 0;
  for (int i = 0; i < n; i++) {
    uint64_t th = parse_hex(recs[i].trace_hash);
    bool is_default = r->default_cand && th == r->default_hash;
    mlc_tuner_search_add_measured_hash(r->search, th);
    r->have_default |= is_default;
    if (recs[i].round >= r->next_round) r->next_round = recs[i].round + 1;
    /* One replay per record: the candidate as the search rebuilds it,
     * which is trusted when it hashes to the stored sched_hash; only
     * otherwise is the stored trace replayed as it is (a record of an
     * older postprocessor can still be trusted that way). */
    mlc_error e;
    mlc_trace *t = mlc_trace_from_json(a, recs[i].trace, strlen(recs[i].trace), &e);
    mlc_sched *c = t ? mlc_tuner_apply_trace(r->f, t, &r->search_opts, &e) : NULL;
    if (!(c && same_hash(c, recs[i].sched_hash)) && !record_trusted(r, a, &recs[i], &n_bad)) {
      if (c) mlc_sched_free(c);
      continue;
    }
    double sec = recs[i].error ? 0 : recs[i].mean_sec;
    /* A library call's time says nothing the model could carry over to
     * loop nests, it has no decisions to mutate, and it does not set the
     * early-abort limit of the tuned candidates (best_sec): a library far
     * faster than the first tuned kernels would abort them all. */
    const char *lib = t ? mlc_trace_library(t) : NULL;
    if (lib) {
      r->have_library |= r->o->library && strcmp(lib, r->o->library) == 0;
      if (c) mlc_sched_free(c);
      continue;
    }
    if (sec > 0 && (r->best_sec == 0 || sec < r->best_sec)) r->best_sec = sec;
    if (!c) continue; /* a record this build cannot rebuild still deduplicates */
    if (!is_default) mlc_tuner_search_commit(r->search, c, sec); /* it has nothing to mutate */
    MLC_VEC_PUSH(ts.scheds, c);
    MLC_VEC_PUSH(ts.keys, r->workload_key);
    MLC_VEC_PUSH(ts.secs, sec);
  }
  learn_set(r, &ts);
  mlc_arena_free(a);
  return true;
}

/* o->seed_traces that replay on the workload, proposed to the search. */
static void propose_seeds(tune_run *r) {
  mlc_arena *a = mlc_arena_new();
  for (int i = 0; i < r->o->n_seed_traces; i++) {
    mlc_error e;
    const char *js = r->o->seed_traces[i];
    mlc_trace *t = mlc_trace_from_json(a, js, strlen(js), &e);
    mlc_sched *c = t ? tuner_carry_trace(r->f, t, &r->search_opts, true, &e) : NULL;
    if (c) mlc_tuner_search_propose(r->search, c);
  }
  mlc_arena_free(a);
}

/* Where a successful candidate's reference came from. */
static void count_reference(mlc_tuner_tune_result *res, const mlc_measure_result *m) {
  if (m->status != MLC_MEASURE_OK) return;
  res->refs_computed += m->ref == MLC_MEASURE_REF_COMPUTED || m->ref == MLC_MEASURE_REF_RECOMPUTED;
  res->refs_cached += m->ref == MLC_MEASURE_REF_CACHED;
  res->refs_refused += m->ref == MLC_MEASURE_REF_RECOMPUTED;
}

static mlc_device_kind target_device(const char *target) {
  mlc_target t;
  return mlc_target_parse(target, &t, NULL) ? mlc_target_device(&t) : MLC_DEVICE_CPU;
}

void mlc_tuner_pool_opts(const mlc_tuner_tune_opts *o, mlc_measure_opts *out) {
  mlc_measure_opts mo = mlc_measure_defaults_for(o->target);
  mo.n_builders = o->n_builders;
  mo.worker_path = o->worker_path;
  mo.n_intrin_files = o->n_intrin_files;
  mo.intrin_files = o->intrin_files;
  mo.ref_cache_dir = o->ref_cache_dir;
  mo.flush_cache = !o->warm_cache;
  if (o->timeout_s > 0) mo.build_timeout_s = mo.run_timeout_s = o->timeout_s;
  *out = mo;
}

/* The target's runner must work here (cuda: the driver and a device)
 * before the first round: a run without it would record every candidate
 * as failed. */
static bool open_pool(tune_run *r, mlc_error *err) {
  if (r->o->measure) return true;
  if (!mlc_measure_runner_check(r->target, err)) return false;
  mlc_measure_opts mo;
  mlc_tuner_pool_opts(r->o, &mo);
  r->pool = mlc_measure_new(&mo, err);
  return r->pool != NULL;
}

/* ---- one round ---------------------------------------------------------------------- */

/* The next batch's size, with in_flight candidates being measured. */
static int round_size(const tune_run *r, int in_flight) {
  int have = r->have + in_flight;
  int n = r->o->trials_per_round > 0 ? r->o->trials_per_round : have < 128 ? 16 : 64;
  int left = r->o->trials - have;
  return n < left ? n : left;
}

/* sched_hash: the hash of the function the trace produced, which the
 * workers measured (they replay the same trace on the same workload). */
static void fill_record(tune_run *r, const mlc_measure_result *m, const char *trace,
                        const char *trace_hash, const char *sched_hash, mlc_db_record *rec) {
  *rec = (mlc_db_record){
      .workload_id = r->res->workload_id, .target = r->target, .trace = trace,
      .trace_hash = trace_hash, .round = r->next_round, .sched_hash = sched_hash,
  };
  if (m->status == MLC_MEASURE_OK) {
    rec->n_secs = m->n_secs;
    rec->secs = m->secs;
    rec->disturbed = m->disturbed;
  } else {
    rec->error = m->error[0] ? m->error : mlc_measure_status_name(m->status);
    if (!r->res->first_error[0])
      snprintf(r->res->first_error, sizeof r->res->first_error, "%s", rec->error);
  }
}

static void report(tune_run *r, int batch, int batch_disturbed) {
  if (!r->o->progress) return;
  mlc_tuner_progress p = {
      .round = r->res->rounds, .trials_done = r->have, .trials_total = r->o->trials,
      .errors = r->res->errors, .batch = batch, .best_sec = r->best_sec,
      .best_gflops = gflops(r, r->best_sec), .elapsed_s = mlc_now_sec() - r->t0,
      .retimed = r->res->retimed, .disturbed = r->res->disturbed,
      .batch_disturbed = batch_disturbed,
  };
  int left = r->o->trials - r->have;
  if (r->res->measured > 0) p.eta_s = p.elapsed_s / r->res->measured * (left > 0 ? left : 0);
  if (r->o->time_budget_s > 0 && r->o->time_budget_s - p.elapsed_s < p.eta_s)
    p.eta_s = r->o->time_budget_s - p.elapsed_s > 0 ? r->o->time_budget_s - p.elapsed_s : 0;
  r->o->progress(r->o->progress_ud, &p);
}

/* The early-abort limits for this round's candidates (see slow_factor):
 * a call slower than *max_call is stopped after the check, and the run
 * (load, check, warm-up, repeats) gets a timeout of a few such calls. */
static void slow_limits(const tune_run *r, double *max_call, double *run_timeout) {
  double factor = r->o->slow_factor == 0 ? 20 : r->o->slow_factor;
  *max_call = *run_timeout = 0;
  /* On a GPU the checked call's time is mostly copying the arguments to
   * the device and back, not the kernel: it bounds nothing. */
  if (factor < 0 || r->on_gpu) return;
  if (r->best_sec > 0) *max_call = factor * r->best_sec;
  else if (r->res->baseline_sec > 0) *max_call = 2 * r->res->baseline_sec;
  /* below a few milliseconds the check call's noise dominates */
  if (*max_call > 0 && *max_call < 0.005) *max_call = 0.005;
  if (*max_call > 0) *run_timeout = 2.0 + 6 * *max_call;
}

static bool is_too_slow(const mlc_measure_result *m) {
  return m->status == MLC_MEASURE_TIMEOUT && strstr(m->error, "too slow") != NULL;
}

/* The measure function failed part way (a measurement host died; added
 * by mpi): the results it did return (index == i) are committed, so that
 * a rerun measures only the rest. err gets a note of what was stored. */
static void commit_partial(tune_run *r, int n, const mlc_tuner_cand *batch, const mlc_str *js,
                           const mlc_measure_result *mr, mlc_error *err) {
  mlc_db_record *recs = mlc_xmalloc(sizeof(*recs) * (size_t)(n + 1));
  char (*hashes)[17] = mlc_xmalloc(sizeof(*hashes) * (size_t)(n + 1));
  char (*trace_hashes)[17] = mlc_xmalloc(sizeof(*trace_hashes) * (size_t)(n + 1));
  int k = 0, added = 0;
  for (int i = 0; i < n; i++) {
    if (mr[i].index != i) continue;
    mlc_func_hash_hex(mlc_sched_func(batch[i].sched), hashes[k]);
    snprintf(trace_hashes[k], 17, "%016llx", (unsigned long long)batch[i].hash);
    fill_record(r, &mr[i], js[i].data, trace_hashes[k], hashes[k], &recs[k]);
    k++;
  }
  char why[sizeof err->msg];
  snprintf(why, sizeof why, "%s", err ? err->msg : "");
  mlc_error e;
  if (k > 0 && !commit(r, k, recs, &added, &e)) {
    mlc_error_set(err, "%.500s; the %d results of the batch received before could not be "
                       "stored: %.300s", why, k, e.msg);
  } else if (k > 0) {
    r->have += added;
    r->res->measured += k;
    mlc_error_set(err, "%.700s; the %d results of the last batch received before were stored",
                  why, k);
  }
  mlc_free(recs);
  mlc_free(hashes);
  mlc_free(trace_hashes);
}

/* One batch from its search to its commit. Measuring may run on a thread
 * of its own (tune_overlapped) while the next batch is searched. */
typedef struct flight {
  tune_run *r;
  int n;
  mlc_tuner_cand *batch; /* the search's, or detached (owned) */
  bool owned;
  mlc_measure_cand *mc;
  mlc_measure_result *mr;
  mlc_str *js;
  bool measured;          /* the measure function's answer */
  mlc_error err;          /* ... its error */
  double measure_sec;     /* wall time it took */
  bool threaded;          /* measured on the measuring thread */
  int finished;           /* the measure function returned (atomic) */
  double launched;        /* when measuring began */
  bool *learned;          /* results the search and model took before the batch landed */
} flight;

/* Searches up to `want` candidates into fl. Returns the count, 0 when the
 * search is over (res says why), -1 on error. */
static int propose(tune_run *r, int want, bool detach, flight *fl, mlc_error *err) {
  *fl = (flight){.r = r};
  int n = mlc_tuner_search_next_batch(r->search, want, &fl->batch, err);
  if (n <= 0) {
    if (n == 0) {
      r->res->exhausted = true;
      snprintf(r->res->message, sizeof r->res->message, "%s", mlc_tuner_search_message(r->search));
    }
    fl->batch = NULL;
    return n;
  }
  if (detach) fl->batch = mlc_tuner_search_detach_batch(r->search, &n), fl->owned = true;
  fl->n = n;
  fl->mc = mlc_xmalloc(sizeof(*fl->mc) * (size_t)n);
  fl->mr = mlc_xmalloc(sizeof(*fl->mr) * (size_t)n);
  fl->js = mlc_xmalloc(sizeof(*fl->js) * (size_t)n);
  fl->learned = mlc_xmalloc(sizeof(bool) * (size_t)n);
  double max_call, run_timeout;
  slow_limits(r, &max_call, &run_timeout);
  for (int i = 0; i < n; i++) {
    mlc_trace_to_json(&fl->js[i], mlc_sched_trace(fl->batch[i].sched));
    fl->mc[i] = (mlc_measure_cand){.workload = r->workload_text, .trace = fl->js[i].data,
                                   .target = r->target, .max_call_sec = max_call,
                                   .run_timeout_s = run_timeout};
    fl->mr[i].index = -1;
  }
  return n;
}

static void flight_free(flight *fl) {
  for (int i = 0; i < fl->n; i++) mlc_str_free(&fl->js[i]);
  if (fl->owned)
    for (int i = 0; i < fl->n; i++) mlc_sched_free(fl->batch[i].sched);
  if (fl->owned) mlc_free(fl->batch);
  mlc_free(fl->js), mlc_free(fl->mc), mlc_free(fl->mr), mlc_free(fl->learned);
  *fl = (flight){0};
}

static void measure_flight(flight *fl) {
  double t = mlc_now_sec();
  fl->measured = do_measure(fl->r, fl->n, fl->mc, fl->mr, &fl->err);
  fl->measure_sec = mlc_now_sec() - t;
  __atomic_store_n(&fl->finished, 1, __ATOMIC_RELEASE);
}

/* Overlapped measuring runs on one long-lived thread of the process, one
 * flight at a time: a worker process dies with the thread that started
 * it (PR_SET_PDEATHSIG), and a pool starts its workers on whichever
 * thread measures, so a thread per batch killed them at every batch's
 * end. */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  flight *job; /* being measured; NULL: idle */
  bool started;
} measurer = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, false};

static void *measuring_thread(void *arg) {
  MLC_UNUSED(arg);
  pthread_mutex_lock(&measurer.lock);
  for (;;) {
    while (!measurer.job) pthread_cond_wait(&measurer.cond, &measurer.lock);
    flight *fl = measurer.job;
    pthread_mutex_unlock(&measurer.lock);
    measure_flight(fl);
    pthread_mutex_lock(&measurer.lock);
    measurer.job = NULL;
    pthread_cond_broadcast(&measurer.cond);
  }
  return NULL;
}

/* A forked child has no such thread: it starts its own when it needs one. */
static void measurer_after_fork(void) {
  pthread_mutex_init(&measurer.lock, NULL);
  pthread_cond_init(&measurer.cond, NULL);
  measurer.job = NULL;
  measurer.started = false;
}

static bool start_measurer(void) {
  static bool at_fork;
  if (!at_fork) at_fork = pthread_atfork(NULL, NULL, measurer_after_fork) == 0;
  pthread_t t;
  measurer.started = pthread_create(&t, NULL, measuring_thread, NULL) == 0;
  if (measurer.started) pthread_detach(t);
  return measurer.started;
}

/* Measuring fl on the measuring thread (after the flight it may hold for
 * another tuner of the process); measured there and then when no thread
 * starts. */
static void launch(flight *fl) {
  fl->launched = mlc_now_sec();
  pthread_mutex_lock(&measurer.lock);
  fl->threaded = measurer.started || start_measurer();
  if (fl->threaded) {
    while (measurer.job) pthread_cond_wait(&measurer.cond, &measurer.lock);
    measurer.job = fl;
    pthread_cond_broadcast(&measurer.cond);
  }
  pthread_mutex_unlock(&measurer.lock);
  if (!fl->threaded) measure_flight(fl);
}

static void land(flight *fl) {
  if (!fl->threaded) return;
  pthread_mutex_lock(&measurer.lock);
  while (!__atomic_load_n(&fl->finished, __ATOMIC_ACQUIRE) || measurer.job == fl)
    pthread_cond_wait(&measurer.cond, &measurer.lock);
  pthread_mutex_unlock(&measurer.lock);
  fl->threaded = false;
}

/* A measured batch into the database, the search and the cost model.
 * 1: committed, 0: stopped (an interrupted batch is not trusted) or the
 * database held it all already, -1: error (what the measure function
 * did return is committed). */
static int settle(tune_run *r, flight *fl, mlc_error *err) {
  int n = fl->n;
  const mlc_tuner_cand *batch = fl->batch;
  const mlc_measure_result *mr = fl->mr;
  int rc = 1;
  if (!fl->measured) {
    *err = fl->err;
    commit_partial(r, n, batch, fl->js, mr, err);
    return -1;
  }
  if (r->o->stop && *r->o->stop) { /* results of an interrupted batch are not trusted */
    r->res->stopped = true;
    return 0;
  }
  mlc_db_record *recs = mlc_xmalloc(sizeof(*recs) * (size_t)n);
  const mlc_prim_func **funcs = mlc_xmalloc(sizeof(*funcs) * (size_t)n);
  double *secs = mlc_xmalloc(sizeof(double) * (size_t)n);
  char (*hashes)[17] = mlc_xmalloc(sizeof(*hashes) * (size_t)n);
  char (*trace_hashes)[17] = mlc_xmalloc(sizeof(*trace_hashes) * (size_t)n);
  for (int i = 0; i < n; i++) {
    mlc_func_hash_hex(mlc_sched_func(batch[i].sched), hashes[i]);
    /* js[i] is the canonical text and batch[i].hash its hash: the
     * database takes them as they are */
    snprintf(trace_hashes[i], 17, "%016llx", (unsigned long long)batch[i].hash);
    fill_record(r, &mr[i], fl->js[i].data, trace_hashes[i], hashes[i], &recs[i]);
    funcs[i] = mlc_sched_func(batch[i].sched);
    secs[i] = mr[i].status == MLC_MEASURE_OK ? mr[i].mean_sec : 0;
    r->res->build_sec += mr[i].build_sec;
    r->res->run_sec += mr[i].run_sec;
  }
  int added = 0;
  if (!commit(r, n, recs, &added, err)) rc = -1;
  if (rc == 1) {
    int batch_disturbed = 0;
    for (int i = 0; i < n; i++) {
      bool ok = mr[i].status == MLC_MEASURE_OK;
      count_reference(r->res, &mr[i]);
      r->res->retimed += ok && mr[i].retimes > 0;
      batch_disturbed += ok && mr[i].disturbed;
    }
    r->res->disturbed += batch_disturbed;
    r->res->disturbed_rounds += batch_disturbed > 0;
    int m = 0; /* the results not yet learned, first */
    for (int i = 0; i < n; i++) {
      if (!fl->learned[i]) mlc_tuner_search_commit(r->search, batch[i].sched, secs[i]);
      if (secs[i] > 0 && (r->best_sec == 0 || secs[i] < r->best_sec)) r->best_sec = secs[i];
      r->res->errors += secs[i] <= 0;
      r->res->too_slow += is_too_slow(&mr[i]);
      if (!fl->learned[i]) funcs[m] = funcs[i], secs[m++] = secs[i];
    }
    if (m > 0) learn(r, m, funcs, secs);
    r->have += added;
    r->res->measured += n;
    r->res->rounds++;
    r->next_round++;
    report(r, n, batch_disturbed);
    if (added < n && added == 0) { /* another tuner measured the same: avoid spinning */
      snprintf(r->res->message, sizeof r->res->message,
               "the database already held every candidate of the last batch");
      rc = 0;
    }
  }
  mlc_free(recs), mlc_free(funcs), mlc_free(secs);
  mlc_free(hashes);
  mlc_free(trace_hashes);
  return rc;
}

/* 1: measured a batch, 0: nothing left to propose or stopped, -1: error. */
static int one_round(tune_run *r, mlc_error *err) {
  double t = mlc_now_sec();
  flight fl;
  int n = propose(r, round_size(r, 0), false, &fl, err);
  if (n <= 0) return n;
  measure_flight(&fl);
  int rc = settle(r, &fl, err);
  r->res->serial_sec += mlc_now_sec() - t - fl.measure_sec;
  flight_free(&fl);
  return rc;
}

/* Whether another round may start: not stopped, within the time budget. */
static bool may_go_on(tune_run *r) {
  if (r->o->stop && *r->o->stop) {
    r->res->stopped = true;
    return false;
  }
  if (r->o->time_budget_s > 0 && mlc_now_sec() - r->t0 >= r->o->time_budget_s) {
    snprintf(r->res->message, sizeof r->res->message, "the time budget (%g s) is spent",
             r->o->time_budget_s);
    return false;
  }
  return true;
}

/* Waits while the batch in flight has more left to measure than learning
 * from what it returned and searching the next batch take (as the last
 * batches did), judging from the pace of its results so far; not past
 * its end. The next batch then knows nearly all of this one, and the
 * hosts still do not wait for the search. */
static void await_results(tune_run *r, flight *fl) {
  while (!__atomic_load_n(&fl->finished, __ATOMIC_ACQUIRE) && !(r->o->stop && *r->o->stop)) {
    int done = 0;
    for (int i = 0; i < fl->n; i++) done += mlc_measure_result_ready(&fl->mr[i], i);
    double spent = mlc_now_sec() - fl->launched;
    if (done > 0 && (fl->n - done) * spent / done <= 1.5 * r->search_sec_est) return;
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
}

/* The results of the batch in flight that came back: into the search
 * (measured, seeds) and the cost model now, before the next batch is
 * searched; settle commits them with the rest. */
static void learn_arrived(tune_run *r, flight *fl) {
  const mlc_prim_func **funcs = mlc_xmalloc(sizeof(*funcs) * (size_t)fl->n);
  double *secs = mlc_xmalloc(sizeof(double) * (size_t)fl->n);
  int m = 0;
  for (int i = 0; i < fl->n; i++) {
    if (fl->learned[i] || !mlc_measure_result_ready(&fl->mr[i], i)) continue;
    const mlc_measure_result *x = &fl->mr[i];
    double sec = x->status == MLC_MEASURE_OK ? x->mean_sec : 0;
    mlc_tuner_search_commit(r->search, fl->batch[i].sched, sec);
    funcs[m] = mlc_sched_func(fl->batch[i].sched);
    secs[m++] = sec;
    fl->learned[i] = true;
  }
  if (m > 0) learn(r, m, funcs, secs);
  r->res->learned_early += m;
  mlc_free(funcs);
  mlc_free(secs);
}

/* The rounds with the search of each batch overlapping the measuring of
 * the one before (o->overlap: measurement hosts elsewhere, so the search
 * takes nothing from their timings), and its commit the measuring of the
 * one after: the hosts wait only between one batch's end and the next
 * one's start. Results stream into the search and the cost model while a
 * batch is measured, and the next batch is searched as late as lets it
 * be ready when this one ends (await_results): each batch knows the
 * results up to most of the batch in flight. */
static bool tune_overlapped(tune_run *r, mlc_error *err) {
  double idle_from = mlc_now_sec(); /* no batch in flight since */
  flight fl[2] = {{0}, {0}};        /* a measuring thread writes into its own */
  flight *cur = &fl[0], *next = &fl[1];
  int n = propose(r, round_size(r, 0), true, cur, err);
  if (n <= 0) return n == 0;
  r->search_sec_est = mlc_now_sec() - idle_from;
  r->res->serial_sec += mlc_now_sec() - idle_from;
  launch(cur);
  int rc = 1;
  for (;;) {
    int want = may_go_on(r) ? round_size(r, cur->n) : 0;
    if (want > 0) await_results(r, cur);
    double searched_from = mlc_now_sec();
    if (want > 0) learn_arrived(r, cur);
    int nn = want > 0 ? propose(r, want, true, next, err) : 0;
    if (nn > 0) r->search_sec_est = 0.5 * r->search_sec_est + 0.5 * (mlc_now_sec() - searched_from);
    land(cur);
    idle_from = mlc_now_sec();
    bool go = nn > 0 && cur->measured && !(r->o->stop && *r->o->stop);
    if (go) {
      r->res->serial_sec += mlc_now_sec() - idle_from;
      launch(next);
    }
    rc = settle(r, cur, err);
    flight_free(cur);
    if (go && rc <= 0) { /* the batch measured meanwhile is kept unless the run failed */
      land(next);
      idle_from = mlc_now_sec();
      mlc_error e2;
      if (rc == 0 && settle(r, next, &e2) < 0 && !r->res->stopped) rc = -1, *err = e2;
    }
    if (nn < 0) rc = -1;
    if (!go || rc <= 0) break;
    flight *t = cur;
    cur = next, next = t;
  }
  if (next->n) flight_free(next);
  r->res->serial_sec += mlc_now_sec() - idle_from;
  return rc >= 0;
}

/* ---- the library candidate ------------------------------------------------------------ */

/* The library candidate goes first, so its runner computes the workload's
 * reference (the unscheduled kernel: seconds for a large convolution, more
 * on a busy machine) within its run: it gets a pool of its own whose run
 * timeout covers that, as the baseline's does. */
static bool measure_first(tune_run *r, const mlc_measure_cand *c, mlc_measure_result *m,
                          mlc_error *err) {
  if (r->o->measure) return r->o->measure(r->o->measure_ud, 1, c, m, err);
  mlc_measure_opts mo;
  mlc_tuner_pool_opts(r->o, &mo);
  mo.n_builders = 1;
  if (mo.run_timeout_s < 120) mo.run_timeout_s = 120;
  mlc_measure *pool = mlc_measure_new(&mo, err);
  bool ok = pool && mlc_measure_run_batch(pool, 1, c, m, NULL, NULL, err);
  if (pool) mlc_measure_free(pool);
  return ok;
}

/* A candidate without decisions (the default schedule, the library
 * call), measured once (own_pool: in a pool of its own, measure_first;
 * else in the run's pool, whose runner then holds the reference for the
 * search) and committed as a record. *sec: its time, 0 when it failed
 * (the error in buf). false: an error; *stopped: interrupted, nothing
 * committed. */
/* A candidate without decisions, ready to measure (fixed_begin) and to
 * commit (fixed_end). */
typedef struct fixed {
  mlc_str js;
  uint64_t th;
  char hash[17], trace_hash[17];
  mlc_measure_cand mc;
} fixed;

static void fixed_begin(tune_run *r, const mlc_sched *c, fixed *fx) {
  *fx = (fixed){0};
  mlc_trace_to_json(&fx->js, mlc_sched_trace(c));
  fx->th = mlc_trace_hash(mlc_sched_trace(c));
  mlc_func_hash_hex(mlc_sched_func(c), fx->hash);
  snprintf(fx->trace_hash, sizeof fx->trace_hash, "%016llx", (unsigned long long)fx->th);
  fx->mc = (mlc_measure_cand){.workload = r->workload_text, .trace = fx->js.data,
                              .target = r->target};
}

static bool fixed_end(tune_run *r, fixed *fx, const mlc_measure_result *m, double *sec, char *buf,
                      size_t len, bool *stopped, mlc_error *err);

static bool measure_fixed(tune_run *r, const mlc_sched *c, bool own_pool, double *sec, char *buf,
                          size_t len, bool *stopped, mlc_error *err) {
  fixed fx;
  fixed_begin(r, c, &fx);
  mlc_measure_result mr = {.index = -1};
  bool ok = own_pool ? measure_first(r, &fx.mc, &mr, err) : do_measure(r, 1, &fx.mc, &mr, err);
  if (!ok) {
    *sec = 0;
    *stopped = false;
    mlc_str_free(&fx.js);
    return false;
  }
  return fixed_end(r, &fx, &mr, sec, buf, len, stopped, err);
}

/* A fixed candidate's result committed as a record of its own round; *sec
 * its time (0: it failed, the error in buf); frees fx. */
static bool fixed_end(tune_run *r, fixed *fx, const mlc_measure_result *m, double *sec, char *buf,
                      size_t len, bool *stopped, mlc_error *err) {
  *sec = 0;
  *stopped = false;
  mlc_measure_result mr = *m;
  mlc_db_record rec;
  int added = 0;
  bool ok = true;
  if (r->o->stop && *r->o->stop) { /* an interrupted measurement is not trusted */
    *stopped = r->res->stopped = true;
    mlc_str_free(&fx->js);
    return true;
  }
  fill_record(r, &mr, fx->js.data, fx->trace_hash, fx->hash, &rec);
  ok = commit(r, 1, &rec, &added, err);
  if (ok && mr.status == MLC_MEASURE_OK) {
    *sec = mr.mean_sec;
    count_reference(r->res, &mr);
    r->res->retimed += mr.retimes > 0;
    r->res->disturbed += mr.disturbed;
    r->res->disturbed_rounds += mr.disturbed;
  } else if (ok) {
    snprintf(buf, len, "%.250s", mr.error[0] ? mr.error : mlc_measure_status_name(mr.status));
    r->res->errors++;
  }
  if (ok) {
    mlc_tuner_search_add_measured_hash(r->search, fx->th);
    r->have += added;
    r->res->measured++;
    r->next_round++; /* a round of its own: the search's rounds stay whole */
  }
  mlc_str_free(&fx->js);
  return ok;
}

/* o->library's candidate (the search goes on with the tuned ones; the
 * best record wins whichever it is). Not applicable is a note, not an
 * error. */
static bool measure_library(tune_run *r, mlc_error *err) {
  mlc_error why;
  if (r->have_library) {
    snprintf(r->res->library_note, sizeof r->res->library_note,
             "the database already holds its %s record", r->o->library);
    return true;
  }
  mlc_sched *c = tuner_library_candidate(r->f, r->o->library, &r->search_opts, &why);
  if (!c) {
    snprintf(r->res->library_note, sizeof r->res->library_note, "not applicable: %.490s",
             why.msg);
    return true;
  }
  bool stopped;
  bool ok = measure_fixed(r, c, true, &r->res->library_sec, r->res->library_error,
                          sizeof r->res->library_error, &stopped, err);
  r->have_library = ok && !stopped; /* library_sec is not best_sec: see load_history */
  mlc_sched_free(c);
  return ok;
}

/* The default schedule: what the kernel runs untuned. As the first
 * record it is the time to beat (best_sec, the early-abort limit) and the
 * model's first sample, and no record slower than it becomes the best. */
static void default_measured(tune_run *r);

static bool measure_default(tune_run *r, mlc_error *err) {
  bool stopped;
  bool ok = measure_fixed(r, r->default_cand, false, &r->res->default_sec, r->res->default_error,
                          sizeof r->res->default_error, &stopped, err);
  if (ok && !stopped) default_measured(r);
  return ok;
}

static void default_measured(tune_run *r) {
  double sec = r->res->default_sec;
  if (sec > 0 && (r->best_sec == 0 || sec < r->best_sec)) r->best_sec = sec;
  /* not a seed of the search: it has no decisions to mutate */
  const mlc_prim_func *f = mlc_sched_func(r->default_cand);
  learn(r, 1, &f, &sec);
  r->have_default = true;
}

/* The space's default schedule of the workload, unless the caller wants
 * the search alone or the space has none for it (a GPU kernel that cannot
 * run untuned: then the search alone, as without it). */
static void open_default(tune_run *r) {
  mlc_error why;
  if (r->o->no_default_candidate) return;
  r->default_cand = mlc_tuner_default_candidate(r->f, &r->search_opts, &why);
  if (r->default_cand) r->default_hash = mlc_trace_hash(mlc_sched_trace(r->default_cand));
}

/* ---- the end --------------------------------------------------------------------------- */

/* The best record; with `again`, the best few are measured again first and
 * the new run times join their records, so the best is chosen on more
 * measurements, and it is the record the database (mlc-compile) serves. */
/* The best k records that replay to their stored hash (record_trusted),
 * in order; a few more are fetched so that a skipped one does not leave
 * fewer than k. */
static int top_trusted(tune_run *r, int k, mlc_arena *a, mlc_db_record **out, mlc_error *err) {
  mlc_db_record *top;
  int n = mlc_db_top_k(r->db, r->res->workload_id, r->target, k + 8, a, &top, err), m = 0;
  int n_bad = 0;
  for (int i = 0; i < n && m < k; i++)
    if (record_trusted(r, a, &top[i], &n_bad)) top[m++] = top[i];
  *out = top;
  return n < 0 ? -1 : m;
}

/* The default schedule's successful record in the database (as it holds
 * it now, re-measures included) into *out; false when there is none. */
static bool find_default_record(tune_run *r, mlc_arena *a, mlc_db_record *out) {
  char hash[17];
  if (!r->default_cand || r->res->workload_id <= 0) return false;
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->default_hash);
  mlc_db_record *recs;
  mlc_error e;
  int n = mlc_db_records(r->db, r->res->workload_id, r->target, a, &recs, &e);
  for (int i = 0; i < n; i++)
    if (strcmp(recs[i].trace_hash, hash) == 0 && !recs[i].error) {
      *out = recs[i];
      return true;
    }
  return false;
}

/* The default schedule's record when it is not among (*top)[0, n):
 * appended (to a copy of *top), so that a best found by a lucky timing is
 * measured again next to what it replaces. Returns the new count. */
static int add_default_record(tune_run *r, mlc_arena *a, mlc_db_record **top, int n) {
  mlc_db_record d;
  if (!find_default_record(r, a, &d)) return n;
  for (int i = 0; i < n; i++)
    if (strcmp((*top)[i].trace_hash, d.trace_hash) == 0) return n;
  mlc_db_record *t = MLC_NEW_ARRAY(a, mlc_db_record, n + 1);
  memcpy(t, *top, sizeof *t * (size_t)n);
  t[n] = d;
  *top = t;
  return n + 1;
}

/* The default schedule's record's mean time; 0 when it has none. */
static double default_record_sec(tune_run *r) {
  mlc_arena *a = mlc_arena_new();
  mlc_db_record d;
  double sec = find_default_record(r, a, &d) ? d.mean_sec : 0;
  mlc_arena_free(a);
  return sec;
}

static bool choose_best(tune_run *r, bool again, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_db_record *top;
  int k = r->o->remeasure_top > 0 ? r->o->remeasure_top : 1;
  int n = top_trusted(r, k, a, &top, err);
  bool ok = n >= 0;
  if (n > 0) {
    r->res->best_record_id = top[0].id;
    r->res->best_sec = top[0].mean_sec;
  }
  if (n > 0 && again && r->o->remeasure_top > 0) n = add_default_record(r, a, &top, n);
  if (n > 1 && again && r->o->remeasure_top > 0) {
    mlc_measure_cand *mc = mlc_xmalloc(sizeof(*mc) * (size_t)n);
    mlc_measure_result *mr = mlc_xmalloc(sizeof(*mr) * (size_t)n);
    for (int i = 0; i < n; i++)
      mc[i] = (mlc_measure_cand){.workload = r->workload_text, .trace = top[i].trace,
                                 .target = r->target};
    ok = do_measure(r, n, mc, mr, err);
    /* times the runner could not take clean would skew a record's mean */
    for (int i = 0; ok && i < n; i++)
      if (mr[i].status == MLC_MEASURE_OK && !mr[i].disturbed)
        ok = mlc_db_add_run_secs(r->db, top[i].id, mr[i].n_secs, mr[i].secs, err);
    mlc_free(mc), mlc_free(mr);
    int m = ok ? top_trusted(r, 1, a, &top, err) : 0;
    ok = ok && m >= 0;
    if (m == 1) {
      r->res->best_record_id = top[0].id;
      r->res->best_sec = top[0].mean_sec;
    }
  }
  r->res->best_gflops = gflops(r, r->res->best_sec);
  mlc_arena_free(a);
  return ok;
}

/* n candidates in a pool of their own with one repeat and a long timeout
 * (the unscheduled kernel can be slow: 1024^3 matmul takes seconds), or
 * the custom measure function. */
static bool measure_alone(tune_run *r, int n, const mlc_measure_cand *c, mlc_measure_result *m) {
  mlc_error e;
  if (r->o->measure) return r->o->measure(r->o->measure_ud, n, c, m, &e);
  mlc_measure_opts mo = mlc_measure_defaults();
  mo.n_builders = 1;
  mo.worker_path = r->o->worker_path;
  mo.repeat = 1;
  mo.run_timeout_s = r->o->timeout_s > 120 ? r->o->timeout_s : 120;
  mlc_measure *pool = mlc_measure_new(&mo, &e);
  bool ok = pool && mlc_measure_run_batch(pool, n, c, m, NULL, NULL, &e);
  if (pool) mlc_measure_free(pool);
  return ok;
}

/* The unscheduled kernel, timed once. */
static void measure_baseline(tune_run *r) {
  mlc_measure_cand c = {.workload = r->workload_text, .trace = "", .target = r->target};
  mlc_measure_result m;
  if (measure_alone(r, 1, &c, &m) && m.status == MLC_MEASURE_OK) r->res->baseline_sec = m.mean_sec;
}

/* Unscheduled kernels run at about a GFLOP/s: one of more work takes
 * over a tenth of a second a call, seconds for the timing and the end
 * check together. */
#define CHEAP_BASELINE_FLOPS 1e8

/* The unscheduled kernel is timed (measure_baseline) when asked and, with
 * the default schedule to compare with, only when that is cheap. */
static bool baseline_wanted(const tune_run *r) {
  if (!r->o->measure_baseline) return false;
  if (!r->default_cand || mlc_func_flops(r->f) <= CHEAP_BASELINE_FLOPS) return true;
  r->res->baseline_skipped = true;
  return false;
}

/* The end check: what the kernel runs otherwise (its default schedule, or
 * the unscheduled kernel without one) and the best, alternately, in one
 * runner, so that both see the same machine (a best found while the
 * machine was busy, or a baseline timed while it was, compare fairly).
 * A best that is not faster there is a warning, not a speed-up. */
#define CHECK_PAIRS 2

static void check_best(tune_run *r, mlc_arena *a) {
  mlc_db_record rec;
  mlc_error e;
  if (r->res->best_record_id <= 0 ||
      mlc_db_get_record(r->db, r->res->best_record_id, a, &rec, &e) != 1)
    return;
  mlc_str base = {0};
  if (r->default_cand && r->have_default) mlc_trace_to_json(&base, mlc_sched_trace(r->default_cand));
  r->res->check_base_default = base.len > 0;
  mlc_measure_cand c[2 * CHECK_PAIRS];
  mlc_measure_result m[2 * CHECK_PAIRS];
  for (int i = 0; i < 2 * CHECK_PAIRS; i++)
    c[i] = (mlc_measure_cand){.workload = r->workload_text,
                              .trace = i % 2 ? rec.trace : base.len ? base.data : "",
                              .target = r->target};
  /* the default schedule against the best: the run's runner, which holds
   * the reference (the unscheduled kernel may need a longer timeout) */
  mlc_error e2;
  bool measured = base.len && r->pool ? do_measure(r, 2 * CHECK_PAIRS, c, m, &e2)
                                      : measure_alone(r, 2 * CHECK_PAIRS, c, m);
  mlc_str_free(&base);
  if (!measured) return;
  double t[2] = {0, 0};
  bool disturbed = false;
  for (int i = 0; i < 2 * CHECK_PAIRS; i++) {
    if (m[i].status != MLC_MEASURE_OK) continue;
    if (t[i % 2] == 0 || m[i].mean_sec < t[i % 2]) t[i % 2] = m[i].mean_sec;
    disturbed |= m[i].disturbed;
  }
  if (t[0] <= 0 || t[1] <= 0) return;
  r->res->check_base_sec = t[0];
  r->res->check_best_sec = t[1];
  if (t[1] < t[0]) return;
  r->res->not_faster = true;
  snprintf(r->res->warning, sizeof r->res->warning,
           "WARNING: the best kernel found (record %" PRId64 ", %.4g ms) is not faster than the "
           "%s (%.4g ms) timed next to it: no speed-up%s%s",
           r->res->best_record_id, t[1] * 1e3,
           r->res->check_base_default ? "default schedule" : "unscheduled kernel", t[0] * 1e3,
           disturbed ? "; other work disturbed these timings" : "",
           rec.disturbed || r->res->disturbed > 0
               ? "; the tuning was measured under interference (tune again on a quieter machine)"
               : "");
}

/* The design space follows the target's kind (cuda: the GPU space)
 * unless the caller named one. */
static bool choose_space(tune_run *r, mlc_error *err) {
  r->search_opts = r->o->search;
  if (r->search_opts.space) return true;
  mlc_target t;
  if (!mlc_target_parse(r->target, &t, err)) return mlc_error_prefix(err, "target");
  r->search_opts.space = mlc_tuner_space_for_target(&t);
  mlc_target_gpu_limits(&t, &r->search_opts.gpu_limits); /* CPU targets: unused, kept */
  r->cpu_features = mlc_xstrdup(mlc_target_cpu_features(&t));
  r->search_opts.cpu_features = r->cpu_features;
  /* the CPU's dot-product intrinsics, then the user's, for the
   * tiling-with-intrinsic rule */
  if (!mlc_tensor_intrin_register_cpu(mlc_target_cpu_features(&t), NULL, err)) return false;
  for (int i = 0; i < r->o->n_intrin_files; i++)
    if (!mlc_tensor_intrin_register_file(r->o->intrin_files[i], NULL, err))
      return mlc_error_prefix(err, "--intrin %s", r->o->intrin_files[i]);
  return true;
}

static void tune_free(tune_run *r) {
  mlc_tuner_search_free(r->search);
  if (r->default_cand) mlc_sched_free(r->default_cand);
  if (r->model) mlc_costmodel_free(r->model);
  if (r->pool) mlc_measure_free(r->pool);
  mlc_free(r->workload_text);
  mlc_free(r->cpu_features);
  MLC_VEC_FREE(r->commit_ms);
}

/* Tuning measures one static function; one of size vars is tuned at
 * chosen sizes, each its specialization. */
static bool static_only(const mlc_prim_func *f, mlc_error *err) {
  return mlc_error_set(err, "%s has size vars (%s%s): tune it at given sizes "
                            "(mlc_func_specialize, mlc-tune --size)",
                       f->name, f->sizes[0].var->name, f->n_sizes > 1 ? ", ..." : "");
}

bool mlc_tuner_remeasure(mlc_db *db, const mlc_prim_func *f, const mlc_tuner_tune_opts *o,
                         mlc_tuner_tune_result *res, mlc_error *err) {
  memset(res, 0, sizeof *res);
  if (f->n_sizes > 0) return static_only(f, err);
  tune_run r = {.db = db, .f = f, .o = o, .res = res, .t0 = mlc_now_sec()};
  mlc_db_normalize_target(o->target ? o->target : "llvm", r.target, sizeof r.target);
  mlc_str text = {0};
  mlc_print_func(&text, f);
  r.workload_text = mlc_str_take(&text);
  bool ok = (res->workload_id = mlc_db_add_workload(db, o->task, o->shape, f, err)) >= 0 &&
            choose_space(&r, err);
  if (ok) open_default(&r);
  ok = ok && open_pool(&r, err) && choose_best(&r, o->remeasure_top > 0, err);
  if (ok) res->default_record_sec = default_record_sec(&r);
  res->total_sec = mlc_now_sec() - r.t0;
  commit_latency(&r);
  tune_free(&r);
  return ok;
}

/* A run up to its rounds: the workload and its history, the search and
 * the model, the pool, the baseline, library and default candidates.
 * false: an error. */
static bool tune_begin(tune_run *r, mlc_db *db, const mlc_prim_func *f, const mlc_tuner_tune_opts *o,
                       bool defer_default, mlc_tuner_tune_result *res, mlc_error *err) {
  memset(res, 0, sizeof *res);
  *r = (tune_run){.db = db, .f = f, .o = o, .res = res, .next_round = 1, .t0 = mlc_now_sec()};
  mlc_db_normalize_target(o->target ? o->target : "llvm", r->target, sizeof r->target);
  r->on_gpu = target_device(r->target) != MLC_DEVICE_CPU;
  mlc_str text = {0};
  mlc_print_func(&text, f);
  r->workload_text = mlc_str_take(&text);
  r->workload_key = mlc_func_struct_hash(f);
  bool ok = (res->workload_id = mlc_db_add_workload(db, o->task, o->shape, f, err)) >= 0 &&
            choose_space(r, err) &&
            (r->search = mlc_tuner_search_new(f, &r->search_opts, err)) != NULL &&
            open_model(r, err);
  if (ok) open_default(r);
  ok = ok && load_history(r, err);
  if (ok) propose_seeds(r);
  if (ok) res->measured_before = r->have;
  if (ok && r->have >= o->trials) {
    res->nothing_to_do = true;
    snprintf(res->message, sizeof res->message,
             "nothing to do: the database already holds %d trials for this workload and "
             "target (budget %d)",
             r->have, o->trials);
    return true;
  }
  ok = ok && open_pool(r, err);
  if (ok && baseline_wanted(r)) measure_baseline(r);
  /* the library first: a budget of one trial is the user's ask for it */
  if (ok && o->library) ok = measure_library(r, err);
  r->default_due = ok && r->default_cand && !r->have_default && !res->stopped && r->have < o->trials;
  if (r->default_due && !defer_default) ok = measure_default(r, err), r->default_due = false;
  return ok;
}

/* Whether the rounds may go on. */
static bool rounds_left(tune_run *r) {
  return !r->res->nothing_to_do && !r->res->stopped && r->have < r->o->trials && may_go_on(r);
}

/* The run's end: its best chosen (measured again when rounds ran) and
 * checked, its figures, everything freed. */
static bool tune_end(tune_run *r, bool ok, mlc_error *err) {
  mlc_tuner_tune_result *res = r->res;
  if (ok && res->nothing_to_do) {
    ok = choose_best(r, false, err);
  } else if (ok) {
    ok = choose_best(r, !res->stopped && res->measured > 0, err);
    if (ok && r->o->measure_baseline && !res->stopped && res->best_record_id > 0) {
      mlc_arena *a = mlc_arena_new();
      check_best(r, a);
      mlc_arena_free(a);
    }
  }
  if (ok) res->default_record_sec = default_record_sec(r);
  if (r->search) {
    mlc_tuner_stats st;
    mlc_tuner_search_stats_get(r->search, &st);
    res->search_sec = st.search_sec;
  }
  res->total_sec = mlc_now_sec() - r->t0;
  commit_latency(r);
  tune_free(r);
  return ok;
}

bool mlc_tuner_tune(mlc_db *db, const mlc_prim_func *f, const mlc_tuner_tune_opts *o,
                    mlc_tuner_tune_result *res, mlc_error *err) {
  if (f->n_sizes > 0) return memset(res, 0, sizeof *res), static_only(f, err);
  tune_run r;
  bool ok = tune_begin(&r, db, f, o, false, res, err);
  if (ok && o->overlap && rounds_left(&r)) ok = tune_overlapped(&r, err);
  while (ok && !o->overlap && rounds_left(&r)) {
    int rc = one_round(&r, err);
    if (rc < 0) ok = false;
    if (rc <= 0) break;
  }
  return tune_end(&r, ok, err);
}

/* ---- one round at a time, measured while the caller goes on ---------------------------- */

struct tuner_session {
  tune_run r;
  mlc_tuner_tune_opts o;
  flight fl;
  bool ok;          /* no error so far */
  bool begun;       /* r holds a run (tune_begin) */
  bool launched;    /* fl is being measured */
  fixed fx;         /* the default candidate the caller measures (defer_default) */
  mlc_error err;    /* the first error */
};

tuner_session *tuner_session_open(mlc_db *db, const mlc_prim_func *f,
                                  const mlc_tuner_tune_opts *o, bool defer_default,
                                  mlc_tuner_tune_result *res) {
  tuner_session *s = mlc_xmalloc(sizeof *s);
  memset(s, 0, sizeof *s);
  s->o = *o;
  if (f->n_sizes > 0) {
    memset(res, 0, sizeof *res);
    s->ok = static_only(f, &s->err);
    return s;
  }
  s->begun = true;
  s->ok = tune_begin(&s->r, db, f, &s->o, defer_default, res, &s->err);
  return s;
}

bool tuner_session_default(tuner_session *s, mlc_measure_cand *mc) {
  if (!s->ok || !s->begun || !s->r.default_due) return false;
  fixed_begin(&s->r, s->r.default_cand, &s->fx);
  *mc = s->fx.mc;
  return true;
}

bool tuner_session_measure(tuner_session *s, int n, const mlc_measure_cand *c,
                           mlc_measure_result *out, mlc_error *err) {
  if (!s->ok || !s->begun) return mlc_error_set(err, "%s", s->ok ? "no run" : s->err.msg);
  return do_measure(&s->r, n, c, out, err);
}

void tuner_session_take_default(tuner_session *s, const mlc_measure_result *m) {
  tune_run *r = &s->r;
  if (!r->default_due) return;
  r->default_due = false;
  bool stopped;
  s->ok = fixed_end(r, &s->fx, m, &r->res->default_sec, r->res->default_error,
                    sizeof r->res->default_error, &stopped, &s->err);
  if (s->ok && !stopped) default_measured(r);
}

int tuner_session_launch(tuner_session *s) {
  if (!s->ok || !s->begun || !rounds_left(&s->r)) return 0;
  int n = propose(&s->r, round_size(&s->r, 0), true, &s->fl, &s->err);
  if (n < 0) s->ok = false;
  if (n <= 0) return n;
  launch(&s->fl);
  s->launched = true;
  return n;
}

bool tuner_session_close(tuner_session *s, mlc_error *err) {
  if (s->begun && s->r.default_due && s->fx.js.data) mlc_str_free(&s->fx.js); /* never measured */
  if (s->launched) {
    land(&s->fl);
    if (s->ok && settle(&s->r, &s->fl, &s->err) < 0) s->ok = false;
    flight_free(&s->fl);
  }
  bool ok = s->begun ? tune_end(&s->r, s->ok, &s->err) : s->ok;
  if (!ok) *err = s->err;
  mlc_free(s);
  return ok;
}
