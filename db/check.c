/* db: a record's trace replayed on its workload, the way the measurement
 * worker and mlc-compile replay it, and the structural hash of the result.
 *
 * Records are untrusted input once they are shared (imports, another
 * machine's database): import refuses a record whose trace does not
 * replay to a verified function, and whoever compiles a record compares
 * the hash of its replay with the hash stored when it was measured. */
#include "db/db_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"

#include <string.h>

/* The function name the trace's GetBlock instructions ask for (tasks are
 * named "main", graph kernels otherwise), or NULL. */
static const char *trace_func_name(const mlc_trace *t) {
  for (int i = 0; i < t->insts.len; i++) {
    const mlc_inst *in = &t->insts.data[i];
    if (in->kind != MLC_INST_GET_BLOCK) continue;
    for (int j = 0; j < in->n_attrs; j++)
      if (strcmp(in->attrs[j].key, "func_name") == 0 && in->attrs[j].kind == MLC_ATTR_STR)
        return in->attrs[j].s;
  }
  return NULL;
}

bool mlc_db_replay_trace(mlc_arena *a, const mlc_prim_func *workload, const char *trace,
                         mlc_prim_func **out, char hash[17], mlc_error *err) {
  /* Traces tensorized with this CPU's dot-product intrinsics (mlc-tune's
   * records for the host) replay only with them registered. */
  if (!mlc_tensor_intrin_register_cpu(mlc_target_host_features(), NULL, err)) return false;
  mlc_arena *tmp = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(tmp, trace, strlen(trace), err);
  bool ok = t != NULL;
  if (!ok) mlc_error_prefix(err, "trace");
  if (ok) {
    mlc_prim_func *f = mlc_func_copy(tmp, workload);
    const char *fname = trace_func_name(t);
    if (fname) f->name = mlc_arena_strdup(tmp, fname);
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_replay_report rep = {0};
    ok = mlc_sched_replay(s, t, NULL, &rep, err);
    if (!ok) mlc_error_prefix(err, "the trace does not replay");
    else if (rep.n_resampled > 0)
      ok = mlc_error_set(err, "the trace does not replay as measured: the decision of "
                              "instruction %d does not fit the workload",
                         rep.resampled[0]);
    else if (!mlc_verify_func(mlc_sched_func(s), err))
      ok = mlc_error_prefix(err, "the replayed function does not verify");
    if (ok) {
      mlc_func_hash_hex(mlc_sched_func(s), hash);
      if (out) *out = mlc_func_copy(a, mlc_sched_func(s));
    }
    mlc_sched_free(s);
  }
  mlc_arena_free(tmp);
  return ok;
}
