/* Helpers the schedule tests share: a function's TVMScript and a state's
 * trace as heap strings (mlc_free them). */
#ifndef MLC_TESTS_SCHED_UTIL_H
#define MLC_TESTS_SCHED_UTIL_H

#include "schedule/schedule.h"

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

#endif
