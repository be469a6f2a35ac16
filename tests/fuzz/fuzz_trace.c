/* libFuzzer harness for trace JSON and replay: any bytes read as a trace
 * or are refused naming the instruction; a trace replays on each of
 * several workloads or is refused, and what replays verifies, prints and
 * writes back as JSON that reads to the same trace. */
#include "fuzz.h"
#include "schedule/schedule.h"
#include "tasks/tasks.h"

/* Small shapes: replay must be cheap per input. */
static const struct {
  const char *task;
  int64_t shape[9];
} workloads[] = {
    {"matmul", {16, 16, 16}},
    {"matmul_relu", {8, 16, 8}},
    {"conv2d_nchw", {1, 4, 6, 6, 4, 3, 3, 1, 1}},
    {"softmax", {4, 16}},
    {"reduce_sum", {8, 16}},
    {"dense_int8", {32, 64, 128}},
};
#define N_WORKLOADS ((int)(sizeof workloads / sizeof workloads[0]))

static mlc_prim_func *funcs[N_WORKLOADS];

static void build_workloads(void) {
  static mlc_arena *a;
  if (a) return;
  a = mlc_arena_new();
  /* the CPU intrinsic families, whatever the host (replay does not run
   * them), so that traces tensorized with them replay */
  mlc_error err;
  if (!mlc_tensor_intrin_register_cpu("+avx512vnni,+amx-int8,+amx-tile", NULL, &err))
    fuzz_fail(err.msg, "(setup)", "");
  for (int i = 0; i < N_WORKLOADS; i++)
    funcs[i] = mlc_task_build(a, mlc_task_find(workloads[i].task), workloads[i].shape);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  build_workloads();
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_trace *t = mlc_trace_from_json(a, (const char *)data, size, &err);
  if (t) {
    mlc_str j1 = {0}, j2 = {0};
    mlc_trace_to_json(&j1, t);
    mlc_trace *t2 = mlc_trace_from_json(a, mlc_str_cstr(&j1), strlen(mlc_str_cstr(&j1)), &err);
    if (!t2) fuzz_fail(err.msg, "(input)", mlc_str_cstr(&j1));
    mlc_trace_to_json(&j2, t2);
    if (strcmp(mlc_str_cstr(&j1), mlc_str_cstr(&j2)) != 0)
      fuzz_fail("to_json(from_json(to_json(t))) != to_json(t)", mlc_str_cstr(&j1),
                mlc_str_cstr(&j2));
    for (int i = 0; i < N_WORKLOADS; i++) {
      mlc_sched *s = mlc_sched_new(funcs[i], 1);
      if (mlc_sched_replay(s, t, NULL, NULL, &err)) {
        if (!mlc_verify_func(mlc_sched_func(s), &err)) {
          mlc_str p = {0};
          mlc_print_func(&p, mlc_sched_func(s));
          fuzz_fail(err.msg, mlc_str_cstr(&j1), mlc_str_cstr(&p));
        }
        mlc_str p = {0};
        mlc_trace_print(&p, mlc_sched_trace(s));
        mlc_str_free(&p);
      }
      mlc_sched_free(s);
    }
    mlc_str_free(&j1);
    mlc_str_free(&j2);
  }
  mlc_arena_free(a);
  return 0;
}
