/* Large inputs for the scaling test (tests/test_graph_scale.c) and benchmark
 * (bench/bench_scale.c): a model JSON of n nodes, a trace of n
 * instructions, a TVMScript function of n statements. Each runs one whole
 * pipeline and returns its CPU time in seconds, or -1 with err set. */
#ifndef MLC_SCALE_INPUTS_H
#define MLC_SCALE_INPUTS_H

#include "frontend/frontend.h"
#include "graph/graph.h"
#include "schedule/schedule.h"
#include "tasks/tasks.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* CPU seconds of the process: the pipelines are single-threaded, and on a
 * shared machine wall time mostly measures the neighbours. */
static double scale_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A chain x -> relu -> relu ... of n nodes, with an add of a weight every
 * 7th node so fusion makes groups of different shapes. */
static char *scale_model_json(int n) {
  mlc_str s = {0};
  mlc_str_puts(&s, "{\"name\": \"chain\", \"inputs\": [{\"name\": \"x\", \"shape\": [2, 8]}],\n"
                   " \"weights\": [{\"name\": \"w\", \"shape\": [8]}],\n \"nodes\": [\n");
  for (int i = 0; i < n; i++) {
    char prev[32];
    if (i) snprintf(prev, sizeof prev, "n%d", i - 1);
    else snprintf(prev, sizeof prev, "x");
    if (i % 7 == 6)
      mlc_str_printf(&s, "  {\"name\": \"n%d\", \"op\": \"add\", \"inputs\": [\"%s\", \"w\"]}", i,
                     prev);
    else
      mlc_str_printf(&s, "  {\"name\": \"n%d\", \"op\": \"relu\", \"inputs\": [\"%s\"]}", i,
                     prev);
    mlc_str_puts(&s, i + 1 < n ? ",\n" : "\n");
  }
  mlc_str_printf(&s, " ],\n \"outputs\": [\"n%d\"]}\n", n - 1);
  return mlc_str_take(&s);
}

/* Parse the model and run every graph pass. */
static double scale_run_model(int n, mlc_error *err) {
  char *text = scale_model_json(n);
  double t0 = scale_now();
  mlc_gmodule *m = mlc_graph_parse("chain.json", text, strlen(text), NULL, err);
  bool ok = m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, err);
  double t = scale_now() - t0;
  mlc_graph_free(m);
  mlc_free(text);
  return ok ? t : -1;
}

/* The trace JSON of n instructions on matmul 64^3: get_block, get_loops,
 * then rounds of reorder (swap the outer two loops), annotate, unannotate,
 * sample_categorical (a decision) and get_loops. Split and fuse would
 * double the loop names' length every round (j_0_j_1_fused...). */
static char *scale_trace_json(int n, mlc_prim_func **func, mlc_arena *a, mlc_error *err) {
  const mlc_task_def *d = mlc_task_find("matmul");
  int64_t shape[] = {64, 64, 64};
  *func = mlc_task_build(a, d, shape);
  mlc_sched *s = mlc_sched_new(*func, 1);
  mlc_rv b, *loops;
  char *json = NULL;
  if (!mlc_sched_get_block(s, "C", NULL, &b, err) || mlc_sched_get_loops(s, b, &loops, err) != 3)
    goto out;
  for (int64_t r = 0; mlc_sched_trace(s)->insts.len + 5 <= n; r++) {
    mlc_rv swap[2] = {loops[1], loops[0]}, v;
    int64_t cands[] = {1, 2, 4};
    double probs[] = {0.5, 0.25, 0.25};
    if (!mlc_sched_reorder(s, 2, swap, err) ||
        !mlc_sched_annotate(s, loops[2], "pragma_round", MLC_OP_INT(r), err) ||
        !mlc_sched_unannotate(s, loops[2], "pragma_round", err) ||
        !mlc_sched_sample_categorical(s, 3, cands, probs, &v, err) ||
        mlc_sched_get_loops(s, b, &loops, err) != 3)
      goto out;
  }
  mlc_str js = {0};
  mlc_trace_to_json(&js, mlc_sched_trace(s));
  json = mlc_str_take(&js);
out:
  mlc_sched_free(s);
  return json;
}

/* Read the trace back and replay it on a fresh state. */
static double scale_run_trace(int n, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f;
  char *json = scale_trace_json(n, &f, a, err);
  double t = -1;
  if (json) {
    double t0 = scale_now();
    mlc_arena *ta = mlc_arena_new();
    mlc_trace *tr = mlc_trace_from_json(ta, json, strlen(json), err);
    mlc_sched *s = tr ? mlc_sched_new(f, 1) : NULL;
    bool ok = s && mlc_sched_replay(s, tr, NULL, NULL, err) &&
              mlc_verify_func(mlc_sched_func(s), err);
    if (ok) t = scale_now() - t0;
    mlc_sched_free(s);
    mlc_arena_free(ta);
  }
  mlc_free(json);
  mlc_arena_free(a);
  return t;
}

/* One function of n blocks, each storing one element. */
static char *scale_script(int n) {
  mlc_str s = {0};
  mlc_str_printf(&s, "# from tvm.script import tir as T\n\n@T.prim_func\n"
                     "def main(A: T.Buffer((%d,), \"float32\")):\n", n);
  for (int i = 0; i < n; i++)
    mlc_str_printf(&s,
                   "    with T.block(\"b%d\"):\n        T.reads(A[%d])\n"
                   "        T.writes(A[%d])\n        A[%d] = A[%d] + T.float32(1)\n",
                   i, i ? i - 1 : 0, i, i, i ? i - 1 : 0);
  return mlc_str_take(&s);
}

/* Parse, verify, print and parse the print again; -1 with err set when
 * the second print differs from the first. */
static double scale_run_script(int n, mlc_error *err) {
  char *text = scale_script(n);
  double t0 = scale_now(), t = -1;
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = mlc_parse_module(a, "scale.py", text, err);
  if (m && mlc_verify_module(m, err)) {
    mlc_str p1 = {0}, p2 = {0};
    mlc_print_module(&p1, m);
    mlc_module *m2 = mlc_parse_module(a, "scale2.py", mlc_str_cstr(&p1), err);
    if (m2) {
      mlc_print_module(&p2, m2);
      if (strcmp(mlc_str_cstr(&p1), mlc_str_cstr(&p2)) == 0) t = scale_now() - t0;
      else mlc_error_set(err, "print(parse(print(f))) differs from print(f)");
    }
    mlc_str_free(&p1);
    mlc_str_free(&p2);
  }
  mlc_arena_free(a);
  mlc_free(text);
  return t;
}

#endif
