/* The task scheduler: one trial budget shared by the kernels of a model.
 *
 * Each round gives a batch of trials to one task through mlc_tuner_tune
 * (the database is the memory between rounds: its records are never
 * proposed again, seed the population and train the cost model). Which
 * task gets the round follows MetaSchedule's GradientBasedTaskScheduler:
 * after a round-robin warm-up, the task whose end-to-end gain promises
 * most, estimated as calls x (recent improvement per round, mixed with an
 * optimistic best/rounds term so that a slow kernel is never starved).
 * The warm-up measures each task's default schedule (one trial each), so
 * that the first search round goes to the task that takes most time. */
#include "measure/measure.h"
#include "tuner/tuner_internal.h"
#include "db/db.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void mlc_tuner_sched_opts_default(mlc_tuner_sched_opts *o) {
  memset(o, 0, sizeof *o);
  o->kind = MLC_TUNER_SCHED_GRADIENT;
  o->trials = 64;
  o->trials_per_round = 16;
  o->alpha = 0.2;
  o->window = 3;
  mlc_tuner_tune_opts_default(&o->tune);
}

const char *mlc_tuner_task_sched_name(mlc_tuner_task_sched k) {
  switch (k) {
  case MLC_TUNER_SCHED_GRADIENT: return "gradient";
  case MLC_TUNER_SCHED_ROUND_ROBIN: return "round-robin";
  }
  mlc_unreachable();
}

bool mlc_tuner_task_sched_from_name(const char *name, mlc_tuner_task_sched *out) {
  for (int k = 0; k <= MLC_TUNER_SCHED_ROUND_ROBIN; k++)
    if (strcmp(name, mlc_tuner_task_sched_name((mlc_tuner_task_sched)k)) == 0) {
      *out = (mlc_tuner_task_sched)k;
      return true;
    }
  return false;
}

typedef MLC_VEC(double) history; /* best time after each round (0: none) */

typedef struct sched_run {
  mlc_db *db;
  int n;
  const mlc_tuner_task *tasks;
  const mlc_tuner_sched_opts *o;
  mlc_tuner_task_state *st;
  history *best;
  char target[512];
  int cursor; /* round-robin: the next task to look at */
  int busy;   /* the task whose round is being measured (overlapped), else -1 */
  double t0;
} sched_run;

/* Records looked at for a task's best before this run: those that are
 * not trusted (tuner_record_trusted) are passed over. */
#define MAX_BEST_TRIED 9

/* Where task i stands in the database before this run: its record count
 * and best trusted record (history of one entry when it has a time). */
static bool load_state(sched_run *r, int i, mlc_error *err) {
  mlc_tuner_task_state *st = &r->st[i];
  memset(st, 0, sizeof *st);
  int64_t wid;
  int found = mlc_db_find_workload(r->db, r->tasks[i].func, &wid, err);
  if (found <= 0) return found == 0;
  mlc_arena *a = mlc_arena_new();
  mlc_db_record *recs;
  int n = mlc_db_records(r->db, wid, r->target, a, &recs, err);
  int k = n >= 0 ? mlc_db_top_k(r->db, wid, r->target, MAX_BEST_TRIED, a, &recs, err) : -1;
  if (n >= 0) st->trials = n;
  for (int j = 0; j < k; j++) {
    mlc_error why;
    if (!tuner_record_trusted(a, r->tasks[i].func, &recs[j], &why)) continue;
    st->best_sec = recs[j].mean_sec;
    st->best_record_id = recs[j].id;
    MLC_VEC_PUSH(r->best[i], st->best_sec);
    break;
  }
  mlc_arena_free(a);
  return k >= 0;
}

/* ---- families: the specializations of one kernel of size vars ---- */

static bool leads(const sched_run *r, int i) {
  int f = r->tasks[i].family;
  return f == 0 || i + 1 == r->n || r->tasks[i + 1].family != f;
}

static int lead_of(const sched_run *r, int i) {
  while (!leads(r, i)) i++;
  return i;
}

static int family_start(const sched_run *r, int i) {
  while (r->tasks[i].family && i > 0 && r->tasks[i - 1].family == r->tasks[i].family) i--;
  return i;
}

/* The member a family's warm-up measures (a task of no family is its own). */
static bool is_anchor(const sched_run *r, int i) {
  return r->tasks[i].family == 0 || r->tasks[i].anchor;
}

/* The member whose times i's family scales for members not measured yet:
 * the anchor once measured, else a measured one; -1: none. */
static int scale_from(const sched_run *r, int i) {
  int pick = -1;
  for (int j = family_start(r, i); r->tasks[i].family && j <= lead_of(r, i); j++)
    if (r->best[j].len > 0 && (pick < 0 || r->tasks[j].anchor)) pick = j;
  return pick;
}

static double scaled(const sched_run *r, int i, int from, double t) {
  return t * r->tasks[i].size_ratio / r->tasks[from].size_ratio;
}

/* Task i's time: its best, else (a member not measured yet) another's
 * scaled by their work; 0: none. */
static double task_time(const sched_run *r, int i) {
  const history *h = &r->best[i];
  if (h->len > 0) return h->data[h->len - 1];
  int j = scale_from(r, i);
  return j < 0 ? 0 : scaled(r, i, j, task_time(r, j));
}

/* Its untuned time: its default schedule's, else its first, else
 * another's scaled. */
static double untuned_time(const sched_run *r, int i) {
  if (r->st[i].default_sec > 0) return r->st[i].default_sec;
  const history *h = &r->best[i];
  for (int k = 0; k < h->len; k++)
    if (h->data[k] > 0) return h->data[k];
  int j = h->len == 0 ? scale_from(r, i) : -1;
  return j < 0 ? 0 : scaled(r, i, j, untuned_time(r, j));
}

/* calls, and for a member the lead's untuned time over its own: each size
 * counts by its share of the model's time at that size. */
static double weight_of(const sched_run *r, int i) {
  double w = r->tasks[i].weight;
  if (leads(r, i)) return w;
  double own = untuned_time(r, i), lead = untuned_time(r, lead_of(r, i));
  return own > 0 && lead > 0 ? w * lead / own : w;
}

static int total_trials(const sched_run *r) {
  int t = 0;
  for (int i = 0; i < r->n; i++) t += r->st[i].trials;
  return t;
}

/* The model's estimate: calls x time summed over the tasks (each task's
 * best, or its default schedule's; of a family its lead, estimated when
 * not measured: the model at the bounds); 0 when some task has no such
 * time. */
static double est_sec(const sched_run *r, bool defaults) {
  double s = 0;
  for (int i = 0; i < r->n; i++) {
    if (!leads(r, i)) continue;
    double t = defaults ? r->st[i].default_sec : r->st[i].best_sec;
    if (t <= 0 && r->tasks[i].family) t = defaults ? untuned_time(r, i) : task_time(r, i);
    if (t <= 0) return 0;
    s += r->tasks[i].weight * t;
  }
  return s;
}

/* MetaSchedule's gradient of task i; a task without a valid time ranks
 * last. A family member not measured yet counts as one round at its
 * estimated time. */
static double gradient(const sched_run *r, int i) {
  const history *h = &r->best[i];
  int n = h->len, w = r->o->window > 0 ? r->o->window : 3;
  double best = task_time(r, i);
  if (best <= 0) return -1;
  /* A round that found nothing valid recorded 0: the window starts at a time. */
  double back = n >= 1 + w && h->data[n - 1 - w] > 0 ? (h->data[n - 1 - w] - best) / w : 0;
  double g = r->o->alpha * back + (1 - r->o->alpha) * best / (n > 0 ? n : 1);
  return g * weight_of(r, i);
}

/* Whether task i's next round is its warm-up (the gradient kind). */
static bool wants_warm_up(const sched_run *r, int i) {
  return !r->st[i].done && r->best[i].len == 0 && r->st[i].rounds == 0 && is_anchor(r, i) &&
         scale_from(r, i) < 0;
}

/* The task of the next round, -1 when every task is done. */
static int next_task(sched_run *r) {
  if (r->o->kind == MLC_TUNER_SCHED_ROUND_ROBIN) {
    for (int k = 0; k < r->n; k++) {
      int i = (r->cursor + k) % r->n;
      if (!r->st[i].done && i != r->busy) {
        r->cursor = (i + 1) % r->n;
        return i;
      }
    }
    return -1;
  }
  for (int i = 0; i < r->n; i++) /* warm-up: each task (of a family, the anchor) once */
    if (i != r->busy && wants_warm_up(r, i)) return i;
  int pick = -1;
  for (int i = 0; i < r->n; i++) {
    if (r->st[i].done || i == r->busy) continue;
    r->st[i].gradient = gradient(r, i);
    /* ties (all invalid, or equal up to rounding: a family's members
     * start level with their lead): the larger time, then fewer trials,
     * then the first */
    double gi = r->st[i].gradient, gp = pick < 0 ? 0 : r->st[pick].gradient;
    double ti = task_time(r, i), tp = pick < 0 ? 0 : task_time(r, pick);
    bool tie = pick >= 0 && fabs(gi - gp) <= 1e-9 * fmax(fabs(gi), fabs(gp));
    if (pick < 0 || (!tie && gi > gp) ||
        (tie && (ti > tp || (ti == tp && r->st[i].trials < r->st[pick].trials))))
      pick = i;
  }
  return pick;
}

static void report(const sched_run *r, int task, const mlc_tuner_sched_result *res) {
  if (!r->o->progress) return;
  mlc_tuner_sched_progress p = {
      .round = res->rounds, .task = task, .n_tasks = r->n, .tasks = r->tasks, .state = r->st,
      .trials_done = total_trials(r), .trials_total = r->o->trials, .est_sec = est_sec(r, false),
      .elapsed_s = mlc_now_sec() - r->t0,
  };
  r->o->progress(r->o->progress_ud, &p);
}

/* The best records' traces of task i's family but its own, in a (what a
 * round of i measures first, carried to its sizes). */
static int family_seeds(sched_run *r, int i, mlc_arena *a, const char ***out, mlc_error *err) {
  int from = family_start(r, i), to = lead_of(r, i), n = 0;
  const char **traces = MLC_NEW_ARRAY(a, const char *, to - from + 2);
  for (int j = from; r->tasks[i].family && j <= to; j++) {
    if (j == i || r->st[j].best_record_id <= 0) continue;
    mlc_db_record rec;
    int found = mlc_db_get_record(r->db, r->st[j].best_record_id, a, &rec, err);
    if (found < 0) return -1;
    if (found) traces[n++] = rec.trace;
  }
  *out = traces;
  return n;
}

/* The tuning options of a round of task i (its seeds in a); in_flight:
 * trials of a round measured meanwhile. false: an error. */
static bool round_opts(sched_run *r, int i, int in_flight, mlc_arena *a, mlc_tuner_tune_opts *to,
                       mlc_error *err) {
  const mlc_tuner_task *t = &r->tasks[i];
  mlc_tuner_task_state *st = &r->st[i];
  int per = r->o->trials_per_round > 0 ? r->o->trials_per_round : 16;
  int left = r->o->trials - total_trials(r) - in_flight;
  *to = r->o->tune;
  to->task = t->name;
  to->flops = t->flops;
  if (t->shape) to->shape = t->shape;
  to->trials_per_round = per < left ? per : left;
  /* The gradient's warm-up, when the tuner measures the default schedule
   * first, is that one trial per task: every task's untuned time is known
   * before the first search round, which then goes where the model's time
   * is. */
  if (r->o->kind == MLC_TUNER_SCHED_GRADIENT && !to->no_default_candidate && st->rounds == 0 &&
      r->best[i].len == 0 && is_anchor(r, i) && scale_from(r, i) < 0)
    to->trials_per_round = 1;
  to->trials = st->trials + to->trials_per_round;
  to->remeasure_top = 0; /* the rounds' own times rank the records */
  to->measure_baseline = false;
  if (r->o->tune.time_budget_s > 0)
    to->time_budget_s = fmax(1e-3, r->o->tune.time_budget_s - (mlc_now_sec() - r->t0));
  const char **seeds = NULL;
  to->n_seed_traces = family_seeds(r, i, a, &seeds, err);
  to->seed_traces = seeds;
  return to->n_seed_traces >= 0;
}

/* A round of task i done: its state and res. 1: go on, 0: the run should
 * end (stopped). */
static int round_done(sched_run *r, int i, const mlc_tuner_tune_result *tr,
                      mlc_tuner_sched_result *res) {
  mlc_tuner_task_state *st = &r->st[i];
  st->trials = tr->measured_before + tr->measured;
  st->rounds++;
  if (tr->default_record_sec > 0) st->default_sec = tr->default_record_sec;
  st->errors += tr->errors;
  if (tr->best_sec > 0 && (st->best_sec <= 0 || tr->best_sec <= st->best_sec)) {
    st->best_sec = tr->best_sec;
    st->best_record_id = tr->best_record_id;
  }
  MLC_VEC_PUSH(r->best[i], st->best_sec);
  res->measured += tr->measured;
  res->errors += tr->errors;
  if (tr->stopped) {
    res->stopped = true;
    return 0;
  }
  res->rounds++;
  /* An exhausted space, or a round that added nothing (another tuner
   * measured the same), gets no more rounds: no spinning. */
  if (tr->exhausted || tr->measured == 0) st->done = true;
  report(r, i, res);
  return 1;
}

/* One round of task i: 1 measured, 0 the run should end (res says why), -1 error. */
static int one_round(sched_run *r, int i, mlc_tuner_sched_result *res, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_tuner_tune_opts to;
  mlc_tuner_tune_result tr;
  bool ok = round_opts(r, i, 0, a, &to, err) && mlc_tuner_tune(r->db, r->tasks[i].func, &to, &tr, err);
  mlc_arena_free(a);
  if (!ok) return mlc_error_prefix(err, "task %s", r->tasks[i].name), -1;
  return round_done(r, i, &tr, res);
}

/* A round whose batch is measured while the next is searched. */
typedef struct pending {
  int task;
  tuner_session *s;
  mlc_arena *a;
  int n;                   /* candidates in flight */
  mlc_tuner_tune_result tr;
} pending;

/* Opens task i's round and launches its batch. false: an error. */
static bool start_round(sched_run *r, int i, int in_flight, pending *p, mlc_error *err) {
  *p = (pending){.task = i, .a = mlc_arena_new()};
  mlc_tuner_tune_opts to;
  if (!round_opts(r, i, in_flight, p->a, &to, err)) {
    mlc_arena_free(p->a);
    return mlc_error_prefix(err, "task %s", r->tasks[i].name);
  }
  p->s = tuner_session_open(r->db, r->tasks[i].func, &to, false, &p->tr);
  p->n = tuner_session_launch(p->s);
  if (p->n < 0) p->n = 0; /* the close reports the error */
  return true;
}

/* Lands, commits and closes p's round: as one_round's result. */
static int finish_round(sched_run *r, pending *p, mlc_tuner_sched_result *res, mlc_error *err) {
  bool ok = tuner_session_close(p->s, err);
  mlc_arena_free(p->a);
  if (!ok) return mlc_error_prefix(err, "task %s", r->tasks[p->task].name), -1;
  return round_done(r, p->task, &p->tr, res);
}

/* The gradient's warm-up, when the tuner measures default schedules: the
 * defaults of every task that wants one measured as one batch (over the
 * ranks under mpirun, or in one pool with its builders in parallel)
 * instead of a round each; each then counts as that task's warm-up round.
 * false: an error. */
static bool warm_up_together(sched_run *r, mlc_tuner_sched_result *res, mlc_error *err) {
  if (r->o->kind != MLC_TUNER_SCHED_GRADIENT || r->o->tune.no_default_candidate) return true;
  int left = r->o->trials - total_trials(r), k = 0;
  int *idx = mlc_xmalloc(sizeof(int) * (size_t)(r->n + 1));
  for (int i = 0; i < r->n; i++)
    if (k < left && wants_warm_up(r, i)) idx[k++] = i;
  if (k < 2) return mlc_free(idx), true; /* the rounds do it */
  pending *p = mlc_xmalloc(sizeof(pending) * (size_t)k);
  mlc_measure_cand *mc = mlc_xmalloc(sizeof(mlc_measure_cand) * (size_t)k);
  mlc_measure_result *mr = mlc_xmalloc(sizeof(mlc_measure_result) * (size_t)k);
  int *of = mlc_xmalloc(sizeof(int) * (size_t)k), n = 0, opened = 0;
  bool ok = true;
  for (int j = 0; j < k && ok; j++) {
    mlc_tuner_tune_opts to;
    p[j] = (pending){.task = idx[j], .a = mlc_arena_new()};
    opened++;
    if (!round_opts(r, idx[j], 0, p[j].a, &to, err)) {
      ok = mlc_error_prefix(err, "task %s", r->tasks[idx[j]].name);
      break;
    }
    p[j].s = tuner_session_open(r->db, r->tasks[idx[j]].func, &to, true, &p[j].tr);
    if (tuner_session_default(p[j].s, &mc[n])) mr[n].index = -1, of[n++] = j;
  }
  if (ok && n > 0) ok = tuner_session_measure(p[of[0]].s, n, mc, mr, err);
  for (int m = 0; ok && m < n; m++) tuner_session_take_default(p[of[m]].s, &mr[m]);
  for (int j = 0; j < opened; j++) {
    mlc_error e2;
    if (!p[j].s) { /* its options failed: err says so */
      mlc_arena_free(p[j].a);
      continue;
    }
    int rc = finish_round(r, &p[j], res, ok ? err : &e2);
    if (rc < 0) ok = false;
  }
  mlc_free(idx), mlc_free(p), mlc_free(mc), mlc_free(mr), mlc_free(of);
  return ok;
}

/* Whether the run must end before another round (stop, time budget). */
static bool must_end(sched_run *r, mlc_tuner_sched_result *res) {
  const mlc_tuner_sched_opts *o = r->o;
  if (o->tune.stop && *o->tune.stop) {
    res->stopped = true;
    return true;
  }
  if (o->tune.time_budget_s > 0 && mlc_now_sec() - r->t0 >= o->tune.time_budget_s) {
    snprintf(res->message, sizeof res->message, "the time budget (%g s) is spent",
             o->tune.time_budget_s);
    return true;
  }
  return false;
}

/* The rounds one at a time. */
static bool run_rounds(sched_run *r, mlc_tuner_sched_result *res, mlc_error *err) {
  while (total_trials(r) < r->o->trials && !must_end(r, res)) {
    int i = next_task(r);
    if (i < 0) {
      snprintf(res->message, sizeof res->message,
               "every task's search space is exhausted (%d trials of %d)", total_trials(r),
               r->o->trials);
      return true;
    }
    int rc = one_round(r, i, res, err);
    if (rc <= 0) return rc == 0;
  }
  return true;
}

/* The rounds with each batch measured (measurement hosts elsewhere:
 * o->tune.overlap) while the next task is chosen and its batch searched,
 * and committed while the next is measured. The next task is chosen
 * without the results in flight and is never the task in flight. */
static bool run_rounds_overlapped(sched_run *r, mlc_tuner_sched_result *res, mlc_error *err) {
  pending slots[2]; /* a session keeps the address of its pending's result */
  pending *cur = NULL, *next = &slots[0];
  int rc = 1;
  for (;;) {
    int in_flight = cur ? cur->n : 0;
    if (total_trials(r) + in_flight >= r->o->trials || must_end(r, res)) break;
    r->busy = cur ? cur->task : -1;
    int i = next_task(r);
    r->busy = -1;
    if (i < 0 && !cur) {
      snprintf(res->message, sizeof res->message,
               "every task's search space is exhausted (%d trials of %d)", total_trials(r),
               r->o->trials);
      break;
    }
    if (i >= 0 && !start_round(r, i, in_flight, next, err)) {
      rc = -1;
      break;
    }
    if (cur) rc = finish_round(r, cur, res, err);
    cur = i >= 0 ? next : NULL;
    next = cur == &slots[0] ? &slots[1] : &slots[0];
    if (rc <= 0) break;
  }
  if (cur) {
    mlc_error e2;
    int rc2 = finish_round(r, cur, res, rc < 0 ? &e2 : err);
    if (rc > 0) rc = rc2;
  }
  return rc >= 0;
}

/* The rounds rank records by their own times: among many near-equal
 * candidates the best is often the luckiest timing. Each task measured
 * this run with more than one record has its best few and its default
 * schedule timed again, side by side, and its best chosen on that. */
static bool remeasure_tuned(sched_run *r, mlc_error *err) {
  for (int i = 0; i < r->n; i++) {
    mlc_tuner_task_state *st = &r->st[i];
    if (st->rounds == 0 || st->trials < 2) continue;
    if (r->o->tune.stop && *r->o->tune.stop) return true;
    mlc_tuner_tune_opts to = r->o->tune;
    to.task = r->tasks[i].name;
    to.flops = r->tasks[i].flops;
    if (r->tasks[i].shape) to.shape = r->tasks[i].shape;
    mlc_tuner_tune_result tr;
    if (!mlc_tuner_remeasure(r->db, r->tasks[i].func, &to, &tr, err))
      return mlc_error_prefix(err, "task %s", r->tasks[i].name);
    if (tr.best_sec > 0) {
      st->best_sec = tr.best_sec;
      st->best_record_id = tr.best_record_id;
    }
    if (tr.default_record_sec > 0) st->default_sec = tr.default_record_sec;
  }
  return true;
}

bool mlc_tuner_schedule_tasks(mlc_db *db, int n, const mlc_tuner_task *tasks,
                              const mlc_tuner_sched_opts *o, mlc_tuner_task_state *state,
                              mlc_tuner_sched_result *res, mlc_error *err) {
  memset(res, 0, sizeof *res);
  sched_run r = {.db = db, .n = n, .tasks = tasks, .o = o, .st = state, .busy = -1,
                 .t0 = mlc_now_sec()};
  r.best = mlc_xmalloc(sizeof *r.best * (size_t)(n + 1));
  memset(r.best, 0, sizeof *r.best * (size_t)(n + 1));
  mlc_db_normalize_target(o->tune.target ? o->tune.target : "llvm", r.target, sizeof r.target);
  bool ok = true;
  for (int i = 0; i < n && ok; i++)
    if (!load_state(&r, i, err)) ok = mlc_error_prefix(err, "task %s", tasks[i].name);
  if (ok && total_trials(&r) >= o->trials) {
    res->nothing_to_do = true;
    snprintf(res->message, sizeof res->message,
             "nothing to do: the database already holds %d trials for these %d tasks and "
             "target (budget %d)",
             total_trials(&r), n, o->trials);
  }
  if (ok && !res->nothing_to_do) ok = warm_up_together(&r, res, err);
  if (ok && !res->stopped) {
    bool overlap = o->tune.overlap && o->tune.measure; /* never two local pools at once */
    ok = overlap ? run_rounds_overlapped(&r, res, err) : run_rounds(&r, res, err);
  }
  if (ok && !res->stopped && res->measured > 0 && o->tune.remeasure_top > 0)
    ok = remeasure_tuned(&r, err);
  res->est_sec = est_sec(&r, false);
  res->est_default_sec = est_sec(&r, true);
  res->total_sec = mlc_now_sec() - r.t0;
  for (int i = 0; i < n; i++) MLC_VEC_FREE(r.best[i]);
  mlc_free(r.best);
  return ok;
}
