/* Trace replay micro-benchmark: replays per second of a
 * ~30-instruction matmul trace made with the schedule API (tiling
 * samples, splits, reorder, fuse, parallel, vectorize, unroll,
 * annotations, postprocessing), and the cost of mlc_sched_copy and
 * mlc_sched_free of the scheduled state.
 *
 *   bench_replay [--results FILE] [--shape M,N,K] [--dump-trace FILE]
 */
#include "bench/results.h"
#include "schedule/schedule.h"
#include "tasks/tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_OK(x)                                                                   \
  do {                                                                                \
    if (!(x)) {                                                                       \
      fprintf(stderr, "bench_replay: error: %s: %s\n", #x, err.msg);                  \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

/* The trace: Ansor-style SSRSRS tiling of C[i, j] += A[i, k] * B[k, j]. */
static mlc_sched *make_schedule(const mlc_prim_func *f) {
  mlc_error err;
  mlc_sched *s = mlc_sched_new(f, 7);
  mlc_rv c, *loops, ti[4], tj[4], tk[2], li[4], lj[4], lk[2], fused, unroll;
  CHECK_OK(mlc_sched_get_block(s, "C", "main", &c, &err));
  CHECK_OK(mlc_sched_get_loops(s, c, &loops, &err) == 3);
  mlc_rv i = loops[0], j = loops[1], k = loops[2];
  CHECK_OK(mlc_sched_sample_perfect_tile(s, i, 4, 16, ti, &err));
  CHECK_OK(mlc_sched_sample_perfect_tile(s, j, 4, 16, tj, &err));
  CHECK_OK(mlc_sched_sample_perfect_tile(s, k, 2, 16, tk, &err));
  mlc_operand fi[4], fj[4], fk[2];
  for (int x = 0; x < 4; x++) fi[x] = MLC_OP_RV(ti[x]), fj[x] = MLC_OP_RV(tj[x]);
  for (int x = 0; x < 2; x++) fk[x] = MLC_OP_RV(tk[x]);
  CHECK_OK(mlc_sched_split(s, i, 4, fi, true, li, &err));
  CHECK_OK(mlc_sched_split(s, j, 4, fj, true, lj, &err));
  CHECK_OK(mlc_sched_split(s, k, 2, fk, true, lk, &err));
  mlc_rv order[10] = {li[0], lj[0], li[1], lj[1], lk[0], li[2], lj[2], lk[1], li[3], lj[3]};
  CHECK_OK(mlc_sched_reorder(s, 10, order, &err));
  CHECK_OK(mlc_sched_fuse(s, 2, (mlc_rv[]){li[0], lj[0]}, true, &fused, &err));
  CHECK_OK(mlc_sched_annotate(s, c, "meta_schedule.tiling_structure", MLC_OP_STR("SSRSRS"), &err));
  CHECK_OK(mlc_sched_annotate(s, c, "meta_schedule.parallel", MLC_OP_INT(32), &err));
  CHECK_OK(mlc_sched_annotate(s, c, "meta_schedule.vectorize", MLC_OP_INT(32), &err));
  CHECK_OK(mlc_sched_sample_categorical(s, 4, (int64_t[]){0, 16, 64, 512},
                                        (double[]){0.25, 0.25, 0.25, 0.25}, &unroll, &err));
  CHECK_OK(mlc_sched_annotate(s, c, "meta_schedule.unroll_explicit", MLC_OP_RV(unroll), &err));
  /* What the postprocessors would do with those annotations. */
  CHECK_OK(mlc_sched_annotate(s, c, "meta_schedule.random_compute_producer", MLC_OP_INT(1), &err));
  mlc_sched_enter_postproc(s);
  /* Postprocessors look blocks up again by name. */
  CHECK_OK(mlc_sched_get_block(s, "C", "main", &c, &err));
  CHECK_OK(mlc_sched_unannotate(s, c, "meta_schedule.random_compute_producer", &err));
  CHECK_OK(mlc_sched_get_loops(s, c, &loops, &err) == 9);
  CHECK_OK(mlc_sched_parallel(s, loops[0], &err));
  CHECK_OK(mlc_sched_vectorize(s, loops[8], &err));
  CHECK_OK(mlc_sched_unroll(s, loops[7], &err));
  CHECK_OK(mlc_sched_unannotate(s, c, "meta_schedule.parallel", &err));
  CHECK_OK(mlc_sched_unannotate(s, c, "meta_schedule.vectorize", &err));
  CHECK_OK(mlc_sched_unannotate(s, c, "meta_schedule.unroll_explicit", &err));
  CHECK_OK(mlc_sched_annotate(s, loops[1], "pragma_auto_unroll_max_step", MLC_OP_RV(unroll), &err));
  CHECK_OK(mlc_sched_annotate(s, loops[1], "pragma_unroll_explicit", MLC_OP_INT(1), &err));
  CHECK_OK(mlc_sched_annotate(s, loops[8], "pragma_vectorize_width", MLC_OP_INT(8), &err));
  return s;
}

typedef struct ctx {
  const mlc_prim_func *f;
  const mlc_trace *t;
  mlc_sched *state;
} ctx;

static void replay_once(void *p) {
  ctx *c = p;
  mlc_error err;
  mlc_sched *s = mlc_sched_new(c->f, 1);
  CHECK_OK(mlc_sched_replay(s, c->t, NULL, NULL, &err));
  mlc_sched_free(s);
}

static void new_once(void *p) {
  ctx *c = p;
  mlc_sched_free(mlc_sched_new(c->f, 1));
}

static void copy_once(void *p) {
  ctx *c = p;
  mlc_sched_free(mlc_sched_copy(c->state));
}

int main(int argc, char **argv) {
  const char *results = "bench/results.json", *shape_text = "1024,1024,1024", *dump = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) shape_text = argv[++i];
    else if (strcmp(argv[i], "--dump-trace") == 0 && i + 1 < argc) dump = argv[++i];
    else {
      fprintf(stderr, "usage: bench_replay [--results FILE] [--shape M,N,K] [--dump-trace FILE]\n");
      return 2;
    }
  }
  mlc_error err;
  mlc_arena *a = mlc_arena_new();
  const mlc_task_def *d = mlc_task_find("matmul");
  int64_t shape[MLC_TASK_MAX_DIMS];
  CHECK_OK(mlc_task_parse_shape(d, shape_text, shape, &err));
  mlc_prim_func *f = mlc_task_build(a, d, shape);
  mlc_sched *s = make_schedule(f);
  const mlc_trace *t = mlc_sched_trace(s);
  int n_insts = t->insts.len;
  if (dump) {
    mlc_str js = {0};
    mlc_trace_to_json(&js, t);
    mlc_str_putc(&js, '\n');
    CHECK_OK(mlc_write_file(dump, js.data, js.len, &err));
    mlc_str_free(&js);
  }
  /* Round trip through JSON, as the tuner does with stored traces. */
  mlc_str js = {0};
  mlc_trace_to_json(&js, t);
  mlc_trace *parsed = mlc_trace_from_json(a, js.data, js.len, &err);
  CHECK_OK(parsed != NULL);
  mlc_str_free(&js);

  ctx c = {f, parsed, s};
  double replay_us = bench_time_ms(replay_once, &c, 7, 200) * 1e3;
  double new_us = bench_time_ms(new_once, &c, 7, 100) * 1e3;
  double copy_us = bench_time_ms(copy_once, &c, 7, 100) * 1e3;
  char *notes = mlc_arena_printf(a, "%d-instruction matmul trace (%s), stored decisions, "
                                    "new state + replay + free; state new+free %.2f us",
                                 n_insts, shape_text, new_us);
  bench_case cases[] = {
      {"trace_replay_matmul", 1e6 / replay_us, "replays/s", NULL, 0, notes},
      {"trace_replay_matmul_us", replay_us, "us", NULL, 0, "microseconds per replay"},
      {"sched_copy_matmul", copy_us, "us", NULL, 0,
       "mlc_sched_copy + mlc_sched_free of the scheduled state"},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) bench_print(&cases[i]);
  bool ok = bench_write_results(results, MLC_COUNTOF(cases), cases, &err);
  if (!ok) fprintf(stderr, "bench_replay: error: %s\n", err.msg);
  mlc_sched_free(s);
  mlc_arena_free(a);
  return ok ? 0 : 1;
}
