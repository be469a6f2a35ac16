/* Library offload as one more tuning candidate (mlc-tune --library).
 *
 * The candidate is an ordinary trace: get_block + library_call for every
 * block of the kernel that library_call takes (a model's fused kernel has
 * one matmul among elementwise blocks), then the space's postprocessors as
 * for any candidate. It has no decisions, so it is measured once per
 * workload and target; its record then competes with the tuned ones by
 * measured time, and mlc-compile replays whichever is best.
 */
#include "tuner/tuner_internal.h"
#include "db/db.h"
#include "schedule/schedule.h"

#include <stdio.h>
#include <string.h>

/* library_call of the named block on a copy of s first: a block it does
 * not take leaves s (and its trace) as it was. */
static bool try_block(mlc_sched *s, const char *name, const char *library, mlc_error *err) {
  mlc_sched *probe = mlc_sched_copy(s);
  mlc_rv b;
  bool ok = mlc_sched_get_block(probe, name, NULL, &b, err) &&
            mlc_sched_library_call(probe, b, library, err);
  mlc_sched_free(probe);
  if (!ok) return false;
  ok = mlc_sched_get_block(s, name, NULL, &b, err) && mlc_sched_library_call(s, b, library, err);
  MLC_ASSERT(ok);
  return true;
}

static bool has_reduction(const mlc_prim_func *f, const char *name) {
  mlc_sched *s = mlc_sched_new(f, 0);
  mlc_rv b;
  mlc_error e;
  bool red = false;
  if (mlc_sched_get_block(s, name, NULL, &b, &e)) {
    const mlc_block *blk = mlc_sched_rv_block(s, b);
    for (int i = 0; blk && i < blk->n_iters; i++) red |= blk->iters[i].kind == MLC_ITER_REDUCE;
  }
  mlc_sched_free(s);
  return red;
}

mlc_sched *tuner_library_candidate(const mlc_prim_func *f, const char *library,
                                   const mlc_tuner_opts *o, mlc_error *why) {
  if (!mlc_sched_library_known(library)) {
    mlc_error_set(why, "unknown library \"%s\" (known: openblas)", library);
    return NULL;
  }
  mlc_arena *a = mlc_arena_new();
  const char **names;
  int nb = tuner_blocks_post_order(a, f, &names);
  mlc_sched *s = mlc_sched_new(f, o->seed);
  int done = 0;
  bool have_why = false, why_red = false;
  for (int i = 0; i < nb; i++) {
    mlc_error e;
    if (try_block(s, names[i], library, &e)) {
      done++;
      continue;
    }
    /* the reason worth giving: the first reduction block's (a product
     * that did not fit), else the first block's */
    bool red = !why_red && has_reduction(f, names[i]);
    if (!have_why || red) mlc_error_set(why, "%s", e.msg);
    have_why = true;
    why_red |= red;
  }
  mlc_arena_free(a);
  if (done == 0) {
    if (nb == 0) mlc_error_set(why, "the kernel has no block");
    mlc_sched_free(s);
    return NULL;
  }
  if (!mlc_tuner_postproc(s, o, why)) {
    mlc_sched_free(s);
    return NULL;
  }
  return s;
}

/* ---- comparing records ------------------------------------------------------------ */

int mlc_tuner_library_compare(mlc_db *db, int64_t workload_id, const char *target,
                              mlc_tuner_library_cmp *out, mlc_error *err) {
  memset(out, 0, sizeof *out);
  mlc_arena *a = mlc_arena_new();
  mlc_db_record *recs;
  int n = mlc_db_records(db, workload_id, target, a, &recs, err);
  for (int i = 0; i < n; i++) {
    const mlc_db_record *r = &recs[i];
    if (r->error || r->mean_sec <= 0 || !r->sched_hash) continue;
    const char *lib = NULL;
    /* only traces that name the kind are parsed */
    if (strstr(r->trace, "\"LibraryCall\"")) {
      mlc_error e;
      mlc_trace *t = mlc_trace_from_json(a, r->trace, strlen(r->trace), &e);
      lib = t ? mlc_trace_library(t) : NULL;
    }
    if (lib && (out->library_id == 0 || r->mean_sec < out->library_sec)) {
      snprintf(out->library, sizeof out->library, "%s", lib);
      out->library_id = r->id;
      out->library_sec = r->mean_sec;
    } else if (!lib && (out->tuned_id == 0 || r->mean_sec < out->tuned_sec)) {
      out->tuned_id = r->id;
      out->tuned_sec = r->mean_sec;
    }
  }
  mlc_arena_free(a);
  return n < 0 ? -1 : out->library_id != 0;
}
