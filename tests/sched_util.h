/* Helpers the schedule tests share: a function's TVMScript and a state's
 * trace as heap strings (mlc_free them); a snapshot of a state to check
 * that a refusal changed nothing. */
#ifndef MLC_TESTS_SCHED_UTIL_H
#define MLC_TESTS_SCHED_UTIL_H

#include "schedule/schedule.h"

#include <string.h>

static inline char *print_func(const mlc_prim_func *f) {
  mlc_str s = {0};
  mlc_print_func(&s, f);
  return mlc_str_take(&s);
}

static inline char *print_trace(const mlc_sched *s) {
  mlc_str o = {0};
  mlc_trace_print(&o, mlc_sched_trace(s));
  return mlc_str_take(&o);
}

static inline char *trace_json(const mlc_sched *s) {
  mlc_str o = {0};
  mlc_trace_to_json(&o, mlc_sched_trace(s));
  return mlc_str_take(&o);
}

/* What a refused primitive must leave as it was: the function's text and
 * the trace's length. */
typedef struct sched_snapshot {
  char *text;
  int n_insts;
} sched_snapshot;

static inline sched_snapshot sched_snap(const mlc_sched *s) {
  return (sched_snapshot){print_func(mlc_sched_func(s)), mlc_sched_trace(s)->insts.len};
}

/* Whether s is as snap recorded it; frees the snapshot. */
static inline bool sched_unchanged(const mlc_sched *s, sched_snapshot *snap) {
  char *now = print_func(mlc_sched_func(s));
  bool same = strcmp(now, snap->text) == 0 && mlc_sched_trace(s)->insts.len == snap->n_insts;
  mlc_free(now);
  mlc_free(snap->text);
  snap->text = NULL;
  return same;
}

#endif
