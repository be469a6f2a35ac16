/* Reduction inits in the lowering and the interpreter, against TensorIR's
 * semantics: the init runs whenever every reduce iter var is at its
 * minimum. Each program runs three ways on the same random inputs: a C
 * reference written from that rule, the interpreter, and the compiled
 * kernel. The lowering may hoist the init out of the reduce loops only
 * where that is equivalent; ordinary reductions (matmul, softmax, split
 * and tiled reduce loops) must still be hoisted, which the lowered IR
 * shows as an init store outside the reduce loops and no guard. Also
 * accesses that only the binding's range keeps in bounds verify and run. */
#include "targets/runtime/mlcrt.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/test.h"

static mlc_target host;

#define TOL 1e-4

/* The expected final contents of every parameter, computed in place from
 * the initial contents (float32 buffers, in parameter order). */
typedef void (*ref_fn)(float **p);

static mlc_prim_func *parse_one(mlc_arena *a, const char *text, char *why, size_t n) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "inline.py", text, &err);
  if (!m) return snprintf(why, n, "parse: %.900s", err.msg), NULL;
  if (!mlc_verify_module(m, &err)) return snprintf(why, n, "verify: %.900s", err.msg), NULL;
  return m->funcs[0];
}

static bool compare(const char *who, const mlc_prim_func *f, const mlc_array *got,
                    const mlc_array *want, char *why, size_t n) {
  for (int i = 0; i < f->n_params; i++) {
    double me;
    if (!mlc_array_allclose(&got[i], &want[i], TOL, TOL, &me)) {
      snprintf(why, n, "%s: %s differs from TensorIR's semantics, max error %g", who,
               f->params[i]->name, me);
      return false;
    }
  }
  return true;
}

/* Random inputs; the reference, the interpreter and the compiled kernel
 * must agree. */
static bool check_three(const mlc_prim_func *f, ref_fn ref, char *why, size_t n) {
  enum { MAXP = 4 };
  int np = f->n_params;
  MLC_ASSERT(np <= MAXP);
  mlc_array arr[3][MAXP];
  float *refp[MAXP];
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 11, 3);
  for (int i = 0; i < np; i++) {
    for (int k = 0; k < 3; k++) {
      mlc_array *x = mlc_array_for_buffer(f->params[i]);
      arr[k][i] = *x;
      mlc_free(x);
    }
    mlc_array_fill_random(&arr[0][i], &rng);
    size_t bytes = (size_t)mlc_array_numel(&arr[0][i]) * sizeof(float);
    memcpy(arr[1][i].data, arr[0][i].data, bytes);
    memcpy(arr[2][i].data, arr[0][i].data, bytes);
    refp[i] = arr[0][i].data;
  }
  ref(refp);
  mlc_error err;
  bool ok = mlc_interp_run(f, arr[1], &err);
  if (!ok) snprintf(why, n, "interpreter: %.900s", err.msg);
  if (ok) ok = compare("interpreter", f, arr[1], arr[0], why, n);
  mlc_object obj = {0};
  if (ok && !(ok = mlc_target_build(&host, 1, &f, NULL, NULL, &obj, &err)))
    snprintf(why, n, "build: %.900s", err.msg);
  if (ok) {
    mlc_jit_lib *lib = mlc_jit_load(&obj, &err);
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, f->name, &err) : NULL;
    if (!fn) ok = (snprintf(why, n, "load: %.900s", err.msg), false);
    else if (mlc_kernel_call(fn, np, arr[2]) != 0) ok = (snprintf(why, n, "kernel failed"), false);
    else ok = compare("compiled kernel", f, arr[2], arr[0], why, n);
    mlc_jit_unload(lib);
  }
  mlc_object_free(&obj);
  for (int i = 0; i < np; i++)
    for (int k = 0; k < 3; k++) mlc_free(arr[k][i].data);
  return ok;
}

/* The lowered function as TVMScript. */
static char *lowered_text(mlc_arena *a, const mlc_prim_func *f, char *why, size_t n) {
  mlc_error err;
  mlc_prim_func *l = mlc_target_lower(a, f, &err);
  if (!l) return snprintf(why, n, "lower: %.900s", err.msg), NULL;
  mlc_str s = {0};
  mlc_print_func(&s, l);
  char *out = mlc_arena_strdup(a, mlc_str_cstr(&s));
  mlc_str_free(&s);
  return out;
}

/* Is the init hoisted: `init` (a store's text) appears before the reduce
 * loop `loop` ("for k in") and there is no `if` in the lowered code? */
static bool is_hoisted(const char *ir, const char *init, const char *loop) {
  const char *pi = strstr(ir, init), *pl = strstr(ir, loop);
  return pi && pl && pi < pl && !strstr(ir, "if ");
}

static void run_case(const char *name, const char *text, ref_fn ref, int want_hoist,
                     const char *init, const char *loop) {
  char why[1024] = "";
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_one(a, text, why, sizeof why);
  bool ok = f && check_three(f, ref, why, sizeof why);
  if (ok && want_hoist >= 0) {
    char *ir = lowered_text(a, f, why, sizeof why);
    ok = ir != NULL;
    if (ok && is_hoisted(ir, init, loop) != (want_hoist == 1)) {
      snprintf(why, sizeof why, "init %s hoisted: %.700s", want_hoist ? "not" : "wrongly", ir);
      ok = false;
    }
  }
  test_report(name, ok, why);
  mlc_arena_free(a);
}

#define HEAD(A, B)                                                                   \
  "@T.prim_func\n"                                                                   \
  "def f(A: T.Buffer(" A ", \"float32\"), B: T.Buffer(" B ", \"float32\")):\n"      \
  "    T.func_attr({\"global_symbol\": \"f\", \"tir.noalias\": True})\n"

/* A block summing A[vi, vk] into B[vi] under loops i, k (extent KE) with
 * binding `vk = T.axis.reduce(VKD, BIND)`. */
#define ROW_SUM(KE, VKD, BIND)                                    \
  HEAD("(4, 128)", "(4,)")                                        \
  "    for i, k in T.grid(4, " KE "):\n"                          \
  "        with T.block(\"B\"):\n"                                \
  "            vi = T.axis.spatial(4, i)\n"                       \
  "            vk = T.axis.R(" VKD ", " BIND ")\n"                \
  "            T.reads(A[vi, vk])\n"                              \
  "            T.writes(B[vi])\n"                                 \
  "            with T.init():\n"                                  \
  "                B[vi] = T.float32(0)\n"                        \
  "            B[vi] = B[vi] + A[vi, vk]\n"

/* B[i] = sum over k of A[i, vk(k)], reset to 0 before the update at each
 * k where vk(k) == 0: TensorIR's rule, spelled out. */
static void row_sum_ref(float **p, int ke, int (*vk)(int)) {
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < ke; k++) {
      if (vk(k) == 0) p[1][i] = 0;
      p[1][i] += p[0][i * 128 + vk(k)];
    }
}
static int vk_square(int k) { return k * k / 2; }
static int vk_half(int k) { return k / 2; }
static int vk_rev(int k) { return 15 - k; }
static int vk_mod(int k) { return k % 4; }
static int vk_id(int k) { return k; }
static void ref_square(float **p) { row_sum_ref(p, 16, vk_square); }
static void ref_half(float **p) { row_sum_ref(p, 32, vk_half); }
static void ref_rev(float **p) { row_sum_ref(p, 16, vk_rev); }
static void ref_mod(float **p) { row_sum_ref(p, 16, vk_mod); }
static void ref_id(float **p) { row_sum_ref(p, 16, vk_id); }

/* Item 1: the reduce var is at its minimum at more than one iteration, or
 * not at the first: the init must run there, not once before the loop. */
static void test_init_not_first_iteration(void) {
  run_case("init_floordiv_square", ROW_SUM("16", "128", "T.floordiv(k * k, 2)"), ref_square, 0,
           "", "");
  run_case("init_floordiv", ROW_SUM("32", "16", "k // 2"), ref_half, 0, "", "");
  run_case("init_reversed", ROW_SUM("16", "16", "15 - k"), ref_rev, 0, "", "");
  run_case("init_floormod", ROW_SUM("16", "4", "k % 4"), ref_mod, 0, "", "");
  /* And the plain binding is hoisted. */
  run_case("init_plain_hoisted", ROW_SUM("16", "128", "k"), ref_id, 1, "B[i] = T.float32(0)",
           "for k in");
}

/* A spatial loop between the reduce loops whose points share an
 * accumulator (vi = i // 2): TensorIR resets B[vi] at each i. */
static const char *const shared_acc =
    HEAD("(4, 16)", "(4,)")
    "    for k0, i, k1 in T.grid(2, 8, 8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(4, i // 2)\n"
    "            vk = T.axis.reduce(16, k0 * 8 + k1)\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(B[vi])\n"
    "            with T.init():\n"
    "                B[vi] = T.float32(0)\n"
    "            B[vi] = B[vi] + A[vi, vk]\n";

static void ref_shared_acc(float **p) {
  for (int k0 = 0; k0 < 2; k0++)
    for (int i = 0; i < 8; i++)
      for (int k1 = 0; k1 < 8; k1++) {
        int vi = i / 2, vk = k0 * 8 + k1;
        if (vk == 0) p[1][vi] = 0;
        p[1][vi] += p[0][vi * 16 + vk];
      }
}

/* Two unit loops of a spatial loop between reduce loops (k0, i, k1) keep
 * their accumulators apart: hoisted, and still right. */
static const char *const split_acc =
    HEAD("(8, 16)", "(8,)")
    "    for k0, i, k1 in T.grid(2, 8, 8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            vk = T.axis.reduce(16, k0 * 8 + k1)\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(B[vi])\n"
    "            with T.init():\n"
    "                B[vi] = T.float32(0)\n"
    "            B[vi] = B[vi] + A[vi, vk]\n";

static void ref_split_acc(float **p) {
  for (int i = 0; i < 8; i++) {
    p[1][i] = 0;
    for (int k = 0; k < 16; k++) p[1][i] += p[0][i * 16 + k];
  }
}

static void test_init_spatial_between(void) {
  run_case("init_shared_accumulator", shared_acc, ref_shared_acc, 0, "", "");
  run_case("init_spatial_between_hoisted", split_acc, ref_split_acc, 1, "B[i] = T.float32(0)",
           "for k0");
}

/* Item 2: an init indexed by a reduce var. */
static const char *const init_by_vk =
    HEAD("(8, 16)", "(16,)")
    "    for i, k in T.grid(8, 16):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(B[vk])\n"
    "            with T.init():\n"
    "                B[vk] = T.float32(0)\n"
    "            B[vk] = B[vk] + A[vi, vk]\n";

static const char *const init_by_vk_outer =
    HEAD("(8, 16)", "(16,)")
    "    for k, i in T.grid(16, 8):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(B[vk])\n"
    "            with T.init():\n"
    "                B[vk] = T.float32(0)\n"
    "            B[vk] = B[vk] + A[vi, vk]\n";

static const char *const init_by_vk_split =
    HEAD("(8, 16)", "(16,)")
    "    for k0, i, k1 in T.grid(4, 8, 4):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(8, i)\n"
    "            vk = T.axis.reduce(16, k0 * 4 + k1)\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(B[vk])\n"
    "            with T.init():\n"
    "                B[vk] = T.float32(0)\n"
    "            B[vk] = B[vk] + A[vi, vk]\n";

/* The init's value reads the reduce var: B[vi] starts at A[vi, 0]. */
static const char *const init_value_vk =
    HEAD("(8, 16)", "(8,)")
    "    for i, k in T.grid(8, 16):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(B[vi])\n"
    "            with T.init():\n"
    "                B[vi] = A[vi, vk]\n"
    "            B[vi] = B[vi] + A[vi, vk]\n";

/* Loop order (i outer or k outer) does not matter here: the init of B[0]
 * runs at every (i, k = 0), before that point's update. */
static void ref_by_vk(float **p, bool k_outer) {
  for (int x = 0; x < (k_outer ? 16 : 8); x++)
    for (int y = 0; y < (k_outer ? 8 : 16); y++) {
      int i = k_outer ? y : x, k = k_outer ? x : y;
      if (k == 0) p[1][k] = 0;
      p[1][k] += p[0][i * 16 + k];
    }
}
static void ref_by_vk_inner(float **p) { ref_by_vk(p, false); }
static void ref_by_vk_outer(float **p) { ref_by_vk(p, true); }

static void ref_by_vk_split(float **p) {
  for (int k0 = 0; k0 < 4; k0++)
    for (int i = 0; i < 8; i++)
      for (int k1 = 0; k1 < 4; k1++) {
        int vk = k0 * 4 + k1;
        if (vk == 0) p[1][vk] = 0;
        p[1][vk] += p[0][i * 16 + vk];
      }
}

static void ref_value_vk(float **p) {
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 16; k++) {
      if (k == 0) p[1][i] = p[0][i * 16 + k];
      p[1][i] += p[0][i * 16 + k];
    }
}

static void test_init_uses_reduce_var(void) {
  run_case("init_indexed_by_reduce_var", init_by_vk, ref_by_vk_inner, 0, "", "");
  run_case("init_indexed_by_reduce_var_k_outer", init_by_vk_outer, ref_by_vk_outer, 0, "", "");
  run_case("init_indexed_by_split_reduce_var", init_by_vk_split, ref_by_vk_split, 0, "", "");
  run_case("init_value_reads_reduce_var", init_value_vk, ref_value_vk, 0, "", "");
}

/* ---- accesses bounded by the binding's range -------------------------------- */

/* vi = T.axis.spatial(16, 8 + i) reads A[vi - 8]: valid TensorIR (the
 * verifier bounds vi by its binding), and it runs. */
static const char *const offset_binding =
    HEAD("(8,)", "(8,)")
    "    for i in range(8):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(16, 8 + i)\n"
    "            T.reads(A[vi - 8])\n"
    "            T.writes(B[vi - 8])\n"
    "            B[vi - 8] = A[vi - 8] * T.float32(2)\n";

static void ref_offset(float **p) {
  for (int i = 0; i < 8; i++) p[1][i] = p[0][i] * 2;
}

/* The same with a reduction over vk = k + 32 reading A[vi, vk - 32]; its
 * init never runs (vk never reaches 0), so B accumulates onto its input. */
static const char *const offset_reduce =
    HEAD("(4, 16)", "(4,)")
    "    for i, k in T.grid(4, 16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(4, i)\n"
    "            vk = T.axis.reduce(64, k + 32)\n"
    "            T.reads(A[vi, vk - 32])\n"
    "            T.writes(B[vi])\n"
    "            with T.init():\n"
    "                B[vi] = T.float32(0)\n"
    "            B[vi] = B[vi] + A[vi, vk - 32]\n";

static void ref_offset_reduce(float **p) {
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < 16; k++) p[1][i] += p[0][i * 16 + k];
}

static void test_binding_range(void) {
  run_case("binding_range_offset_runs", offset_binding, ref_offset, -1, "", "");
  run_case("binding_range_reduce_runs", offset_reduce, ref_offset_reduce, 0, "", "");
}

/* ---- ordinary reductions keep the hoisted init ----------------------------- */

static void check_task_hoisted(const char *task, const char *shape, const char *init,
                               const char *loop) {
  char name[96], why[1024] = "";
  snprintf(name, sizeof name, "hoisted_%s", task);
  mlc_arena *a = mlc_arena_new();
  const mlc_task_def *d = mlc_task_find(task);
  int64_t dims[MLC_TASK_MAX_DIMS];
  mlc_error err;
  bool ok = d && mlc_task_parse_shape(d, shape, dims, &err);
  char *ir = ok ? lowered_text(a, mlc_task_build(a, d, dims), why, sizeof why) : NULL;
  if (ok && ir && !is_hoisted(ir, init, loop)) {
    snprintf(why, sizeof why, "init not hoisted: %.700s", ir);
    ok = false;
  }
  test_report(name, ok && ir, why);
  mlc_arena_free(a);
}

/* Every reduction block of tests/kernels/init_hoist.py but the broken
 * chain, the tiled matmul of mm_tiled.py (cache_write'd, spatial tile loops
 * under the reduce loop) and rfactor's output hoist: the lowered function
 * carries no guard on a reduce loop being at its start. */
static void check_file_hoisted(const char *path, const char *func, const char *guard) {
  char name[160], why[1024] = "";
  snprintf(name, sizeof name, "hoisted_%s_%s", path, func);
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char *text = mlc_read_file(path, NULL, &err);
  mlc_module *m = text ? mlc_parse_module(a, path, text, &err) : NULL;
  bool ok = m != NULL;
  if (!ok) snprintf(why, sizeof why, "%.900s", err.msg);
  const mlc_prim_func *f = NULL;
  for (int i = 0; ok && i < m->n_funcs; i++)
    if (strcmp(m->funcs[i]->name, func) == 0) f = m->funcs[i];
  if (ok && !f) ok = (snprintf(why, sizeof why, "no function %s", func), false);
  char *ir = ok ? lowered_text(a, f, why, sizeof why) : NULL;
  if (ok && (!ir || strstr(ir, guard))) {
    if (ir) snprintf(why, sizeof why, "init guarded by %s: %.700s", guard, ir);
    ok = false;
  }
  test_report(name, ok, why);
  mlc_free(text);
  mlc_arena_free(a);
}

static void test_ordinary_hoisted(void) {
  check_task_hoisted("matmul", "8,8,8", "C[i * 8 + j] = T.float32(0)", "for k in");
  check_task_hoisted("batch_matmul", "2,4,4,4", "= T.float32(0)", "for k in");
  check_task_hoisted("reduce_sum", "4,8", "= T.float32(0)", "for k in");
  check_task_hoisted("softmax", "4,8", "T_softmax_maxelem[i] = T.float32(-3.4028235e+38)",
                     "for k in");
  check_file_hoisted("tests/kernels/init_hoist.py", "mm_split_k", "k0 == 0");
  check_file_hoisted("tests/kernels/init_hoist.py", "mm_split_ik", "k0 == 0");
  check_file_hoisted("tests/kernels/init_hoist.py", "rowmax", "k0 == 0");
  check_file_hoisted("tests/kernels/mm_tiled.py", "mm_tiled", "if ");
  check_file_hoisted("tests/sched_golden/reduce_rfactor_sum.expected", "main", "if ");
  check_file_hoisted("tests/sched_golden/reduce_rfactor_matmul.expected", "main", "if ");
}

int main(void) {
  mlc_target_host(&host);
  test_init_not_first_iteration();
  test_init_spatial_between();
  test_init_uses_reduce_var();
  test_binding_range();
  test_ordinary_hoisted();
  return test_summary();
}
