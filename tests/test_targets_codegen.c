/* The LLVM CPU backend against the reference interpreter: every built-in
 * task unscheduled, the hand-scheduled kernels in tests/kernels/ (each
 * function of each file; `# expect-ir: TEXT` lines name text the generated
 * LLVM IR must contain), target strings, errors for loops the CPU cannot
 * run, JIT load/unload cycles, and an emitted object + header linked into a
 * C program by the system compiler. */
#include "schedule/schedule.h"
#include "targets/runtime/mlcrt.h"
#include "targets/targets.h"
#include "tuner/tuner.h"
#include "tasks/tasks.h"
#include "tests/test.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static mlc_target host;

/* Tolerance for floats: results differ from the interpreter by FMA
 * contraction only (libm calls are the same functions), so tight bounds
 * hold. Integers and bools must be equal. */
#define RTOL 1e-4
#define ATOL 1e-4

static void copy_array(mlc_array *dst, const mlc_array *src) {
  memcpy(dst->data, src->data, (size_t)mlc_array_numel(src) * (size_t)mlc_dtype_bytes(src->dtype));
}

/* Run fn and the interpreter on the same seeded inputs, shaped for the
 * sizes (a function of size vars); compare every parameter (inputs must
 * come back unchanged, outputs must match). */
static bool run_and_compare(const mlc_prim_func *f, mlc_kernel_fn fn, uint64_t seed,
                            const int64_t *sizes, char *why, size_t n) {
  int np = f->n_params;
  mlc_array *got = mlc_xmalloc(sizeof(mlc_array) * (size_t)(np + 1));
  mlc_array *want = mlc_xmalloc(sizeof(mlc_array) * (size_t)(np + 1));
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, seed, 7);
  for (int i = 0; i < np; i++) {
    int64_t shape[8];
    CHECK(mlc_buffer_extents(f, f->params[i], sizes, shape));
    mlc_array *g = mlc_array_new(f->params[i]->dtype, f->params[i]->ndim, shape);
    mlc_array *w = mlc_array_new(f->params[i]->dtype, f->params[i]->ndim, shape);
    mlc_array_fill_random(g, &rng);
    copy_array(w, g);
    got[i] = *g;
    want[i] = *w;
    mlc_free(g);
    mlc_free(w);
  }
  mlc_error err;
  bool ok = mlc_interp_run(f, want, &err);
  if (!ok) snprintf(why, n, "interpreter: %s", err.msg);
  int32_t rc = ok ? mlc_kernel_call_sized(fn, np, got, f->n_sizes, sizes) : 0;
  if (ok && rc != 0) ok = (snprintf(why, n, "kernel returned %d", rc), false);
  for (int i = 0; i < np && ok; i++) {
    double me;
    bool fl = mlc_dtype_is_float(want[i].dtype);
    if (!mlc_array_allclose(&got[i], &want[i], fl ? RTOL : 0, fl ? ATOL : 0, &me)) {
      snprintf(why, n, "parameter %s differs from the interpreter: max error %g",
               f->params[i]->name, me);
      ok = false;
    }
  }
  for (int i = 0; i < np; i++) {
    mlc_free(got[i].data);
    mlc_free(want[i].data);
  }
  mlc_free(got);
  mlc_free(want);
  return ok;
}

/* A size outside its bounds: the kernel returns MLC_KERNEL_BAD_SIZE and
 * leaves every argument as it was (here arrays for the lower bound). */
static bool refuses_size(const mlc_prim_func *f, mlc_kernel_fn fn, int k, int64_t bad, char *why,
                         size_t n) {
  int64_t sizes[MLC_MAX_SIZES];
  for (int j = 0; j < f->n_sizes; j++) sizes[j] = f->sizes[j].lo;
  mlc_array *xs = mlc_xmalloc(sizeof(mlc_array) * (size_t)(f->n_params + 1));
  for (int i = 0; i < f->n_params; i++) {
    int64_t shape[8];
    CHECK(mlc_buffer_extents(f, f->params[i], sizes, shape));
    mlc_array *x = mlc_array_new(f->params[i]->dtype, f->params[i]->ndim, shape);
    memset(x->data, 0x5a, (size_t)mlc_array_numel(x) * (size_t)mlc_dtype_bytes(x->dtype));
    xs[i] = *x;
    mlc_free(x);
  }
  sizes[k] = bad;
  int32_t rc = mlc_kernel_call_sized(fn, f->n_params, xs, f->n_sizes, sizes);
  bool ok = rc == MLC_KERNEL_BAD_SIZE;
  if (!ok) snprintf(why, n, "size %s = %lld: kernel returned %d, not %d", f->sizes[k].var->name,
                    (long long)bad, rc, MLC_KERNEL_BAD_SIZE);
  for (int i = 0; i < f->n_params; i++) {
    const unsigned char *p = xs[i].data;
    int64_t bytes = mlc_array_numel(&xs[i]) * mlc_dtype_bytes(xs[i].dtype);
    for (int64_t b = 0; b < bytes && ok; b++)
      if (p[b] != 0x5a) ok = (snprintf(why, n, "a refused call wrote %s", f->params[i]->name), false);
    mlc_free(xs[i].data);
  }
  mlc_free(xs);
  return ok;
}

/* A function of size vars runs at every size var's lower bound, at a
 * small odd size and at the upper bound, and refuses a size just outside
 * either bound; a static function runs once. */
static bool run_all_sizes(const mlc_prim_func *f, mlc_kernel_fn fn, char *why, size_t n) {
  int64_t sizes[MLC_MAX_SIZES] = {0};
  for (int r = 0; r < (f->n_sizes ? 3 : 1); r++) {
    for (int k = 0; k < f->n_sizes; k++) {
      const mlc_size_var *sv = &f->sizes[k];
      int64_t mid = sv->lo + 6 < sv->hi ? sv->lo + 6 : sv->hi;
      sizes[k] = r == 0 ? sv->lo : r == 1 ? mid : sv->hi;
    }
    char sub[1200];
    if (!run_and_compare(f, fn, 42 + (uint64_t)r, sizes, sub, sizeof sub)) {
      snprintf(why, n, "at size set %d (%s = %lld): %s", r,
               f->n_sizes ? f->sizes[0].var->name : "-", (long long)sizes[0], sub);
      return false;
    }
  }
  for (int k = 0; k < f->n_sizes; k++) {
    const mlc_size_var *sv = &f->sizes[k];
    if (sv->hi < INT32_MAX && !refuses_size(f, fn, k, sv->hi + 1, why, n)) return false;
    if (sv->lo > 0 && !refuses_size(f, fn, k, sv->lo - 1, why, n)) return false;
  }
  return true;
}

/* Build f alone under its own name for target t, load it, compare with
 * the interpreter. */
static bool check_func_on(const mlc_target *t, const mlc_prim_func *f, mlc_str *ir, char *why,
                          size_t n) {
  mlc_error err;
  mlc_object obj;
  if (!mlc_target_build(t, 1, &f, NULL, ir, &obj, &err)) {
    snprintf(why, n, "build: %s", err.msg);
    return false;
  }
  bool ok = false;
  mlc_jit_lib *lib = mlc_jit_load(&obj, &err);
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, f->name, &err) : NULL;
  if (!fn) snprintf(why, n, "load: %s", err.msg);
  else ok = run_all_sizes(f, fn, why, n);
  mlc_jit_unload(lib);
  mlc_object_free(&obj);
  return ok;
}

static bool check_func(const mlc_prim_func *f, mlc_str *ir, char *why, size_t n) {
  return check_func_on(&host, f, ir, why, n);
}

/* ---- built-in tasks, unscheduled ------------------------------------------ */

/* Small shapes that still exercise each task's structure (odd sizes,
 * padding, stride). */
static const struct {
  const char *task, *shape;
} small_shapes[] = {
    {"matmul", "7,9,11"},
    {"batch_matmul", "2,5,6,7"},
    {"dense_bias_relu", "6,10,9"},
    {"matmul_relu", "8,7,5"},
    {"conv2d_nchw", "1,3,9,9,4,3,3,2,1"},
    {"conv2d_nchwc", "1,3,9,9,8,3,3,2,1"},
    {"depthwise_conv2d", "1,4,8,8,3,3,1,1"},
    {"softmax", "5,17"},
    {"layernorm", "4,19"},
    {"vecadd", "37"},
    {"window_sum", "29"},
    {"transpose", "6,11"},
    {"reduce_sum", "7,13"},
    {"dense_int8", "5,32,12"},
    {"matmul_bf16", "5,32,12"},
    {"conv2d_nchwc_int8", "1,8,6,5,32,3,3,2,1"},
};

static void test_tasks(void) {
  for (int i = 0; i < mlc_task_count(); i++) {
    const mlc_task_def *d = mlc_task_at(i);
    char name[96], why[1400] = "";
    snprintf(name, sizeof name, "task_%s_unscheduled", d->name);
    const char *shape = NULL;
    for (int k = 0; k < MLC_COUNTOF(small_shapes); k++)
      if (strcmp(small_shapes[k].task, d->name) == 0) shape = small_shapes[k].shape;
    if (!shape) {
      test_report(name, 0, "no small shape for this task in tests/test_targets_codegen.c");
      continue;
    }
    mlc_arena *a = mlc_arena_new();
    int64_t dims[MLC_TASK_MAX_DIMS];
    mlc_error err;
    bool ok = mlc_task_parse_shape(d, shape, dims, &err);
    if (!ok) snprintf(why, sizeof why, "shape %s: %s", shape, err.msg);
    else ok = check_func(mlc_task_build(a, d, dims), NULL, why, sizeof why);
    test_report(name, ok, why);
    mlc_arena_free(a);
  }
}

/* ---- hand-scheduled kernels --------------------------------------------------- */

/* Each "# expect-ir: TEXT" line of the file must appear in ir, each
 * "# expect-no-ir: TEXT" line must not. */
static bool check_expectations(const char *text, const char *ir, char *why, size_t n) {
  static const struct { const char *tag; bool present; } kinds[] = {
      {"# expect-ir: ", true},
      {"# expect-no-ir: ", false},
  };
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    const char *tag = kinds[k].tag;
    for (const char *p = strstr(text, tag); p; p = strstr(p + 1, tag)) {
      const char *s = p + strlen(tag);
      size_t len = strcspn(s, "\n");
      char want[200];
      snprintf(want, sizeof want, "%.*s", (int)len, s);
      if ((strstr(ir, want) != NULL) != kinds[k].present) {
        snprintf(why, n, "generated LLVM IR %s \"%s\"", kinds[k].present ? "lacks" : "has", want);
        return false;
      }
    }
  }
  return true;
}

static void check_kernel_file(const char *path) {
  char name[300], why[1400] = "";
  snprintf(name, sizeof name, "kernel_%s", path);
  mlc_error err;
  char *text = mlc_read_file(path, NULL, &err);
  if (!text) {
    test_report(name, 0, err.msg);
    return;
  }
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = mlc_parse_module(a, path, text, &err);
  mlc_str ir = {0};
  bool ok = m != NULL;
  if (!ok) snprintf(why, sizeof why, "parse: %s", err.msg);
  /* Kernels are valid TensorIR: what they test is code generation. */
  if (ok && !(ok = mlc_verify_module(m, &err))) snprintf(why, sizeof why, "verify: %s", err.msg);
  for (int i = 0; ok && i < m->n_funcs; i++) {
    char sub[1300];
    ok = check_func(m->funcs[i], &ir, sub, sizeof sub);
    if (!ok) snprintf(why, sizeof why, "%s: %s", m->funcs[i]->name, sub);
  }
  if (ok) ok = check_expectations(text, mlc_str_cstr(&ir), why, sizeof why);
  test_report(name, ok, why);
  mlc_str_free(&ir);
  mlc_arena_free(a);
  mlc_free(text);
}

static void test_kernels(void) {
  DIR *dir = opendir("tests/kernels");
  if (!dir) {
    test_report("kernels", 0, "cannot open tests/kernels (run from the repository root)");
    return;
  }
  MLC_VEC(char *) files = {0};
  for (struct dirent *de; (de = readdir(dir));) {
    size_t len = strlen(de->d_name);
    if (len > 3 && strcmp(de->d_name + len - 3, ".py") == 0) {
      char path[512];
      snprintf(path, sizeof path, "tests/kernels/%s", de->d_name);
      MLC_VEC_PUSH(files, mlc_xstrdup(path));
    }
  }
  closedir(dir);
  qsort(files.data, (size_t)files.len, sizeof(char *), test_cmp_str);
  if (files.len == 0) test_report("kernels", 0, "no tests/kernels/*.py");
  for (int i = 0; i < files.len; i++) {
    check_kernel_file(files.data[i]);
    mlc_free(files.data[i]);
  }
  MLC_VEC_FREE(files);
}

/* ---- targets ---------------------------------------------------------------- */

static void test_target_strings(void) {
  mlc_target t;
  mlc_error err;
  CHECK(mlc_target_parse("llvm -mcpu=znver3 -num-cores=2", &t, &err));
  CHECK_STREQ(t.str, "llvm -mcpu=znver3 -num-cores=2");
  CHECK(t.num_cores == 2);
  CHECK(mlc_target_parse("  llvm   -num-cores=3  -mcpu=skylake ", &t, &err));
  CHECK_STREQ(t.str, "llvm -mcpu=skylake -num-cores=3");
  CHECK(mlc_target_parse("llvm", &t, &err));
  CHECK_STREQ(t.mcpu, mlc_target_host_cpu());
  CHECK(t.num_cores == mlc_target_host_cores() && t.num_cores >= 1);
  char want[600];
  snprintf(want, sizeof want, "llvm -mcpu=%s -num-cores=%d", mlc_target_host_cpu(),
           mlc_target_host_cores());
  CHECK_STREQ(t.str, want);
  CHECK(strlen(mlc_target_host_features()) > 0);
  /* The normalized string parses to itself. */
  mlc_target t2;
  CHECK(mlc_target_parse(t.str, &t2, &err));
  CHECK_STREQ(t2.str, t.str);

  CHECK(!mlc_target_parse("llvm -num-cores=0", &t, &err));
  CHECK(strstr(err.msg, "-num-cores") != NULL);
  CHECK(!mlc_target_parse("llvm -fast", &t, &err));
  CHECK(strstr(err.msg, "unknown option -fast") != NULL);
  CHECK(!mlc_target_parse("llvm mcpu=x", &t, &err));
  CHECK(!mlc_target_parse("tpu", &t, &err));
  CHECK(strstr(err.msg, "unknown target 'tpu'") != NULL);
  CHECK(!mlc_target_parse("", &t, &err));
}

/* Thread counts: the target's, unless MLC_NUM_THREADS says otherwise. */
static void test_runtime_threads(void) {
  const char *old = getenv("MLC_NUM_THREADS");
  char *saved = old ? mlc_xstrdup(old) : NULL;
  unsetenv("MLC_NUM_THREADS");
  CHECK(mlc_rt_num_threads(3) == 3);
  CHECK(mlc_rt_num_threads(0) >= 1);
  setenv("MLC_NUM_THREADS", "5", 1);
  CHECK(mlc_rt_num_threads(3) == 5);
  setenv("MLC_NUM_THREADS", "junk", 1);
  CHECK(mlc_rt_num_threads(2) == 2);
  if (saved) setenv("MLC_NUM_THREADS", saved, 1);
  else unsetenv("MLC_NUM_THREADS");
  mlc_free(saved);
}

/* The generic x86-64 CPU (SSE2 only, no F16C): float16 goes through the
 * runtime's conversion functions, vectors through 128-bit registers. */
static void test_generic_cpu(void) {
  mlc_target t;
  mlc_error err;
  CHECK(mlc_target_parse("llvm -mcpu=x86-64 -num-cores=1", &t, &err));
  mlc_arena *a = mlc_arena_new();
  char *text = mlc_read_file("tests/kernels/exprs.py", NULL, &err);
  mlc_module *m = text ? mlc_parse_module(a, "exprs.py", text, &err) : NULL;
  CHECK_MSG(m != NULL, "%s", err.msg);
  for (int i = 0; m && i < m->n_funcs; i++) {
    char why[1400] = "";
    CHECK_MSG(check_func_on(&t, m->funcs[i], NULL, why, sizeof why), "%s", why);
  }
  mlc_free(text);
  mlc_arena_free(a);
}

static void test_runtime_half(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float x = __gnu_h2f_ieee((uint16_t)h), y = mlc_half_to_float((uint16_t)h);
    if (x != x && y != y) continue;
    if (memcmp(&x, &y, sizeof x) != 0) bad++;
    if ((h & 0x7c00) != 0x7c00 && __gnu_f2h_ieee(x) != h) bad++;
  }
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 3, 4);
  for (int i = 0; i < 100000; i++) {
    uint32_t bits = mlc_pcg32_next(&rng);
    float f;
    memcpy(&f, &bits, sizeof f);
    if (f != f) continue;
    if (__gnu_f2h_ieee(f) != mlc_float_to_half(f)) bad++;
  }
  CHECK_MSG(bad == 0, "%d conversions differ from ir/array.c", bad);
}

/* exp on the CPU is our own polynomial (llvm_expr.c cpu_exp): checked
 * against libm's expf over the whole float range, special values included,
 * in a serial and in a vectorized loop. */
#define EXP_N 4096
static const char *const exp_kernels =
    "@T.prim_func\n"
    "def exp_serial(A: T.Buffer((4096,), \"float32\"), B: T.Buffer((4096,), \"float32\")):\n"
    "    for i in range(4096):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(4096, i)\n"
    "            B[vi] = T.exp(A[vi])\n"
    "@T.prim_func\n"
    "def exp_vector(A: T.Buffer((4096,), \"float32\"), B: T.Buffer((4096,), \"float32\")):\n"
    "    for i0 in range(256):\n"
    "        for i1 in T.vectorized(16):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(4096, i0 * 16 + i1)\n"
    "                B[vi] = T.exp(A[vi])\n";

static void exp_inputs(float *x) {
  static const float special[] = {0.0f, -0.0f, 1e-8f, -1e-8f, 1.0f, -1.0f, 88.72f, 88.73f, 89.5f,
                                  -87.33f, -88.0f, -100.0f, -103.9f, -104.5f, -200.0f, 1000.0f};
  int k = 0;
  for (; k < MLC_COUNTOF(special); k++) x[k] = special[k];
  x[k++] = INFINITY;
  x[k++] = -INFINITY;
  x[k++] = NAN;
  for (int i = k; i < EXP_N; i++) x[i] = -110.0f + 205.0f * (float)(i - k) / (float)(EXP_N - k);
}

/* Where got is not expf(x) within 2 ulp (or, for results below 2^-126,
 * 2^-148 absolute); -1 when all agree. */
static int exp_mismatch(const float *x, const float *got) {
  for (int i = 0; i < EXP_N; i++) {
    float want = expf(x[i]);
    if (isnan(want) ? !isnan(got[i]) : isinf(want) ? got[i] != want : 0) return i;
    if (isnan(want) || isinf(want)) continue;
    double err = fabs((double)got[i] - want);
    if (want < 1.17549435e-38f ? err > 0x1p-148 : err > 2.4e-7 * want) return i;
  }
  return -1;
}

static void test_exp_accuracy(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "exp.py", exp_kernels, &err);
  mlc_object obj = {0};
  mlc_jit_lib *lib = NULL;
  bool ok = m && mlc_target_build_module(&host, m, NULL, &obj, &err) &&
            (lib = mlc_jit_load(&obj, &err)) != NULL;
  CHECK_MSG(ok, "%s", err.msg);
  for (int k = 0; ok && k < m->n_funcs; k++) {
    mlc_kernel_fn fn = mlc_jit_lookup(lib, m->funcs[k]->name, &err);
    mlc_array args[2];
    for (int i = 0; i < 2; i++) {
      mlc_array *arr = mlc_array_for_buffer(m->funcs[k]->params[i]);
      args[i] = *arr;
      mlc_free(arr);
    }
    exp_inputs(args[0].data);
    int32_t rc = fn ? mlc_kernel_call(fn, 2, args) : -1;
    int bad = rc == 0 ? exp_mismatch(args[0].data, args[1].data) : 0;
    const float *x = args[0].data, *y = args[1].data;
    CHECK_MSG(rc == 0 && bad < 0, "%s: exp(%.9g) = %.9g, expf gives %.9g", m->funcs[k]->name,
              bad >= 0 ? x[bad] : 0.0, bad >= 0 ? y[bad] : 0.0, bad >= 0 ? expf(x[bad]) : 0.0);
    for (int i = 0; i < 2; i++) mlc_free(args[i].data);
  }
  mlc_jit_unload(lib);
  mlc_object_free(&obj);
  mlc_arena_free(a);
}

/* ---- errors --------------------------------------------------------------------- */

static bool build_text(const char *text, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = mlc_parse_module(a, "inline.py", text, err);
  bool ok = false;
  if (m) {
    mlc_object obj;
    ok = mlc_target_build_module(&host, m, NULL, &obj, err);
    mlc_object_free(&obj);
  }
  mlc_arena_free(a);
  return ok;
}

#define KERNEL_HEAD                                                              \
  "@T.prim_func\n"                                                               \
  "def f(A: T.Buffer((64, 128), \"float32\"), B: T.Buffer((64, 128), \"float32\")):\n"
#define COPY_BLOCK(ind)                                        \
  ind "with T.block(\"B\"):\n"                                 \
  ind "    vi, vj = T.axis.remap(\"SS\", [i, j])\n"            \
  ind "    B[vi, vj] = A[vi, vj]\n"

static void test_rejected_loops(void) {
  mlc_error err;
  CHECK(!build_text(KERNEL_HEAD "    for i in T.thread_binding(64, thread=\"blockIdx.x\"):\n"
                                "        for j in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
                                COPY_BLOCK("            "), &err));
  CHECK_MSG(strstr(err.msg, "bound to blockIdx.x needs a GPU target") != NULL, "%s", err.msg);
  CHECK(!build_text(KERNEL_HEAD "    for i in T.parallel(64):\n"
                                "        for j in T.parallel(128):\n"
                                COPY_BLOCK("            "), &err));
  CHECK_MSG(strstr(err.msg, "nested parallel loops") != NULL, "%s", err.msg);
  CHECK(!build_text(KERNEL_HEAD "    for i in range(64):\n"
                                "        for j in T.vectorized(128):\n"
                                COPY_BLOCK("            "), &err));
  CHECK_MSG(strstr(err.msg, "vectorized loop j has extent 128") != NULL, "%s", err.msg);
  CHECK(!build_text(KERNEL_HEAD "    for i in T.vectorized(64):\n"
                                "        for j in T.parallel(128):\n"
                                COPY_BLOCK("            "), &err));
  CHECK_MSG(strstr(err.msg, "parallel loop j inside vectorized loop i") != NULL, "%s", err.msg);
  CHECK_MSG(strstr(err.msg, "function f") != NULL, "%s", err.msg);
  /* And the same nest with legal kinds builds. */
  CHECK_MSG(build_text(KERNEL_HEAD "    for i in T.parallel(64):\n"
                                   "        for j in T.vectorized(64):\n"
                                   COPY_BLOCK("            "), &err), "%s", err.msg);
}

/* Invalid IR (a loop var used after its loop) is an error, not a crash. */
static void test_unbound_var(void) {
  mlc_arena *a = mlc_arena_new();
  int64_t n = 8;
  mlc_buffer *A = mlc_buffer_new(a, "A", MLC_FLOAT32, 1, &n, NULL);
  mlc_buffer *B = mlc_buffer_new(a, "B", MLC_FLOAT32, 1, &n, NULL);
  mlc_var *i = mlc_var_new(a, "i", MLC_INT32);
  mlc_expr *ix = mlc_ref(a, i);
  mlc_stmt *copy = mlc_store_new(a, B, &ix, mlc_load(a, A, &ix));
  mlc_stmt *loop = mlc_for_new(a, i, mlc_int(a, 0), mlc_int(a, 8), MLC_FOR_SERIAL, copy);
  mlc_stmt *stray = mlc_store_new(a, B, &ix, mlc_float(a, MLC_FLOAT32, 0));
  mlc_block *root = mlc_block_new(a, "root");
  root->body = mlc_seq_new(a, 2, (mlc_stmt *[]){loop, stray});
  mlc_prim_func *f = mlc_func_new(a, "stray");
  f->n_params = 2;
  f->params = MLC_NEW_ARRAY(a, mlc_buffer *, 2);
  f->params[0] = A;
  f->params[1] = B;
  f->body = mlc_realize_new(a, root, NULL, NULL);
  const mlc_prim_func *fs[1] = {f};
  mlc_object obj;
  mlc_error err;
  CHECK(!mlc_target_build(&host, 1, fs, NULL, NULL, &obj, &err));
  CHECK_MSG(strstr(err.msg, "variable i is used outside the loop") != NULL, "%s", err.msg);
  CHECK(obj.data == NULL);
  mlc_arena_free(a);
}

/* ---- JIT ------------------------------------------------------------------------- */

static mlc_prim_func *vecadd(mlc_arena *a, const char *name, int64_t n) {
  const mlc_task_def *d = mlc_task_find("vecadd");
  MLC_ASSERT(d);
  mlc_prim_func *f = mlc_task_build(a, d, &n);
  f->name = mlc_arena_strdup(a, name);
  return f;
}

/* A tuner loads and drops candidates by the thousand: load, call, unload
 * must keep working (and not grow; ASan would flag leaks). */
static void test_jit_cycles(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = vecadd(a, "cand", 50);
  const mlc_prim_func *fs[1] = {f};
  mlc_object obj;
  mlc_error err;
  CHECK(mlc_target_build(&host, 1, fs, NULL, NULL, &obj, &err));
  float x[50], y[50], z[50];
  for (int i = 0; i < 50; i++) x[i] = (float)i, y[i] = 0.5f * (float)i;
  int bad = 0;
  for (int round = 0; round < 300 && obj.data; round++) {
    mlc_jit_lib *lib = mlc_jit_load(&obj, &err);
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, "cand", &err) : NULL;
    if (!fn) {
      bad++;
      CHECK_MSG(0, "round %d: %s", round, err.msg);
      mlc_jit_unload(lib);
      break;
    }
    memset(z, 0, sizeof z);
    void *args[3] = {x, y, z};
    CHECK(fn(args) == 0);
    for (int i = 0; i < 50; i++) bad += z[i] != 1.5f * (float)i;
    mlc_jit_unload(lib);
  }
  CHECK(bad == 0);
  mlc_object_free(&obj);
  mlc_arena_free(a);
}

/* Two objects live at once under different symbols; a second copy of a
 * live symbol is refused, and accepted again once the first is gone. */
static void test_jit_symbols(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f1[1] = {vecadd(a, "first", 8)}, *f2[1] = {vecadd(a, "second", 8)};
  mlc_object o1, o2;
  mlc_error err;
  CHECK(mlc_target_build(&host, 1, f1, NULL, NULL, &o1, &err));
  CHECK(mlc_target_build(&host, 1, f2, NULL, NULL, &o2, &err));
  mlc_jit_lib *l1 = mlc_jit_load(&o1, &err), *l2 = mlc_jit_load(&o2, &err);
  CHECK(l1 && l2);
  CHECK(l1 && mlc_jit_lookup(l1, "first", &err) != NULL);
  CHECK(l2 && mlc_jit_lookup(l2, "second", &err) != NULL);
  CHECK(l1 && mlc_jit_lookup(l1, "missing", &err) == NULL);
  mlc_jit_lib *dup = mlc_jit_load(&o1, &err);
  CHECK(dup == NULL);
  CHECK_MSG(strstr(err.msg, "Duplicate definition of symbol 'first'") != NULL, "%s", err.msg);
  mlc_jit_unload(dup);
  mlc_jit_unload(l1);
  l1 = mlc_jit_load(&o1, &err);
  CHECK_MSG(l1 && mlc_jit_lookup(l1, "first", &err) != NULL, "%s", err.msg);
  mlc_jit_unload(l1);
  mlc_jit_unload(l2);
  mlc_object_free(&o1);
  mlc_object_free(&o2);
  mlc_arena_free(a);
}

/* ---- a tuned schedule on a function of size vars ------------------------------------- */

/* f lowered and printed into out (a failure is a CHECK). */
static void print_lowered(mlc_arena *a, const mlc_prim_func *f, mlc_str *out) {
  mlc_error err;
  mlc_prim_func *low = mlc_target_lower(a, f, &err);
  CHECK_MSG(low != NULL, "%s", err.msg);
  if (low) mlc_print_stmt(out, low->body, 0);
}

/* f, a function of one size var, built and run against the interpreter
 * at n = 1 up to max (by small steps below `until`, then big ones), then
 * at the bounds (run_all_sizes). */
static void run_at_sizes(const mlc_prim_func *f, uint64_t seed, int64_t max, int64_t until,
                         int64_t small, int64_t big) {
  mlc_error err;
  mlc_object obj;
  const mlc_prim_func *fs[1] = {f};
  bool built = mlc_target_build(&host, 1, fs, NULL, NULL, &obj, &err);
  CHECK_MSG(built, "%s", err.msg);
  mlc_jit_lib *lib = built ? mlc_jit_load(&obj, &err) : NULL;
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, f->name, &err) : NULL;
  CHECK_MSG(fn != NULL, "%s", err.msg);
  char why[1400] = "";
  for (int64_t n = 1; fn && n <= max; n += n < until ? small : big)
    CHECK_MSG(run_and_compare(f, fn, seed, &n, why, sizeof why), "n=%lld: %s", (long long)n, why);
  if (fn) CHECK_MSG(run_all_sizes(f, fn, why, sizeof why), "%s", why);
  mlc_jit_unload(lib);
  if (built) mlc_object_free(&obj);
}

/* The best trace of a 128-row dense replays on the dense of n rows (its
 * splits of n leave tails under T.where); one build runs at every size,
 * including sizes no tile divides, and refuses one past the bound. The
 * lowering runs whole tiles unguarded: the test of a full row tile
 * appears once per parallel iteration. */
static void test_symbolic_trace(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char *text = mlc_read_file("tests/kernels/sym_dense.py", NULL, &err);
  char *json = mlc_read_file("tests/kernels/sym_dense_trace.json", NULL, &err);
  mlc_module *m = text ? mlc_parse_module(a, "sym_dense.py", text, &err) : NULL;
  mlc_trace *tr = json ? mlc_trace_from_json(a, json, strlen(json), &err) : NULL;
  CHECK_MSG(m && tr, "%s", err.msg);
  mlc_free(text);
  mlc_free(json);
  if (!m || !tr) return mlc_arena_free(a);
  mlc_sched *s = mlc_sched_new(m->funcs[0], 1);
  CHECK_MSG(mlc_sched_replay(s, tr, NULL, NULL, &err), "replay: %s", err.msg);
  mlc_prim_func *f = mlc_func_copy(a, mlc_sched_func(s));
  mlc_sched_free(s);
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);
  mlc_str lt = {0};
  print_lowered(a, f, &lt);
  CHECK_MSG(strstr(mlc_str_cstr(&lt), "* T.int64(32) + T.int64(31) < n") != NULL, "no full-tile test in:\n%s",
            mlc_str_cstr(&lt));
  mlc_str_free(&lt);
  run_at_sizes(f, 5, 160, 40, 8, 61);
  mlc_arena_free(a);
}

/* A register tile over two symbolic extents (the scores of attention):
 * the lowering runs tiles full in both unguarded, so the innermost body
 * of that path tests neither tail; the build is right at every size. */
static void test_symbolic_tile_two_tails(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char *text = mlc_read_file("tests/kernels/sym_scores.py", NULL, &err);
  mlc_module *m = text ? mlc_parse_module(a, "sym_scores.py", text, &err) : NULL;
  CHECK_MSG(m != NULL, "%s", err.msg);
  mlc_free(text);
  if (!m) return mlc_arena_free(a);
  int64_t at = 64;
  mlc_prim_func *f = mlc_tuner_cpu_default_schedule_at(a, m->funcs[0], &at);
  CHECK_MSG(mlc_verify_func(f, &err), "%s", err.msg);
  mlc_str lt = {0};
  print_lowered(a, f, &lt);
  /* full in both: the accumulation right under its vector loop */
  const char *t = mlc_str_cstr(&lt);
  bool unguarded = false;
  for (const char *p = strstr(t, "for j_1 in T.vectorized"); p && !unguarded;
       p = strstr(p + 1, "for j_1 in T.vectorized")) {
    const char *next = strchr(p, '\n');
    while (next && (*next == '\n' || *next == ' ')) next++;
    unguarded = next && strncmp(next, "C_global[", 9) == 0;
  }
  CHECK_MSG(strstr(t, "i_0_0 * 8 + 7 < n") && strstr(t, "j_0_0 * 32 + 31 < n") && unguarded,
            "no unguarded full tile in:\n%s", t);
  mlc_str_free(&lt);
  run_at_sizes(f, 9, 96, 20, 3, 19);
  mlc_arena_free(a);
}

/* ---- object + header, linked by the system C compiler ---------------------------- */

static void test_object_and_header(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char *text = mlc_read_file("tests/kernels/mm_tiled.py", NULL, &err);
  mlc_module *m = text ? mlc_parse_module(a, "mm_tiled.py", text, &err) : NULL;
  CHECK_MSG(m != NULL, "%s", err.msg);
  mlc_free(text);
  if (!m) {
    mlc_arena_free(a);
    return;
  }
  const mlc_prim_func *fs[2] = {m->funcs[0], vecadd(a, "add8", 8)};
  const char *syms[2] = {"mm", "vadd"};
  mlc_str h = {0};
  CHECK(mlc_target_write_header(&h, 2, fs, syms, "MM_H", &err));
  const char *hdr = mlc_str_cstr(&h);
  CHECK(strstr(hdr, "int32_t mm(void **args);") != NULL);
  CHECK(strstr(hdr, "static inline int32_t mm_call(float *A, float *B, float *C)") != NULL);
  CHECK(strstr(hdr, "int32_t vadd(void **args);") != NULL);
  CHECK(strstr(hdr, "#ifndef MM_H") != NULL);
  mlc_str bad = {0};
  const char *main_sym[1] = {"main"}, *clash[2] = {"k", "k_call"};
  CHECK(!mlc_target_write_header(&bad, 1, fs, main_sym, NULL, &err));
  CHECK(!mlc_target_write_header(&bad, 2, fs, clash, NULL, &err));
  CHECK_MSG(strstr(err.msg, "clash") != NULL, "%s", err.msg);
  mlc_str_free(&bad);
  /* A parameter named like a C keyword gets a positional name. */
  mlc_prim_func *kw = vecadd(a, "kw", 4);
  kw->params[0]->name = "float";
  const mlc_prim_func *kws[1] = {kw};
  mlc_str kh = {0};
  CHECK(mlc_target_write_header(&kh, 1, kws, NULL, NULL, &err));
  CHECK_MSG(strstr(mlc_str_cstr(&kh), "kw_call(float *arg0, float *B, float *C)") != NULL, "%s",
            mlc_str_cstr(&kh));
  mlc_str_free(&kh);

  mlc_object obj;
  CHECK(mlc_target_build(&host, 2, fs, syms, NULL, &obj, &err));
  char dir[] = "/tmp/mlc_codegen_XXXXXX";
  if (!mkdtemp(dir) || !obj.data) {
    CHECK_MSG(0, "no temp dir or object");
    mlc_object_free(&obj);
    mlc_str_free(&h);
    mlc_arena_free(a);
    return;
  }
  char path[512], cmd[2048];
  snprintf(path, sizeof path, "%s/mm.o", dir);
  CHECK(mlc_object_write(&obj, path, &err));
  snprintf(path, sizeof path, "%s/mm.h", dir);
  CHECK(mlc_write_file(path, hdr, strlen(hdr), &err));
  static const char prog[] =
      "#include <stdio.h>\n#include \"mm.h\"\n"
      "static float A[64*64], B[64*64], C[64*64];\n"
      "int main(void) {\n"
      "  for (int i = 0; i < 64*64; i++) { A[i] = (float)(i % 7) - 3; B[i] = (float)(i % 5) * 0.5f; }\n"
      "  if (mm_call(A, B, C) != 0) return 2;\n"
      "  for (int i = 0; i < 64; i++) for (int j = 0; j < 64; j++) {\n"
      "    float s = 0; for (int k = 0; k < 64; k++) s += A[i*64+k] * B[k*64+j];\n"
      "    if (s != C[i*64+j]) { printf(\"bad %d %d %g %g\\n\", i, j, s, C[i*64+j]); return 1; }\n"
      "  }\n"
      "  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {0}, z[8];\n"
      "  if (vadd_call(x, y, z) != 0 || z[7] != 8) return 3;\n"
      "  printf(\"ok\\n\");\n  return 0;\n}\n";
  snprintf(path, sizeof path, "%s/main.c", dir);
  CHECK(mlc_write_file(path, prog, strlen(prog), &err));
  /* The runtime from source, so the test does not depend on which build
   * (plain or sanitized) produced libmlcrt.a. */
  snprintf(cmd, sizeof cmd,
           "cd %s && cc -O1 -o prog main.c mm.o '%s/targets/runtime/parallel.c' "
           "'%s/targets/runtime/workspace.c' -I'%s' -fopenmp -lm "
           "> cc.log 2>&1 && ./prog > out.txt 2>&1 && grep -q '^ok$' out.txt",
           dir, MLC_SOURCE_DIR, MLC_SOURCE_DIR, MLC_SOURCE_DIR);
  int rc = system(cmd);
  if (rc != 0) {
    char log[512] = "";
    snprintf(path, sizeof path, "%s/cc.log", dir);
    char *l = mlc_read_file(path, NULL, &err);
    if (l) snprintf(log, sizeof log, "%s", l);
    mlc_free(l);
    CHECK_MSG(0, "compile+run failed (%d): %s", rc, log);
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) CHECK_MSG(0, "rm failed");
  mlc_object_free(&obj);
  mlc_str_free(&h);
  mlc_arena_free(a);
}

int main(void) {
  mlc_target_host(&host);
  RUN(test_target_strings);
  RUN(test_runtime_threads);
  RUN(test_runtime_half);
  RUN(test_exp_accuracy);
  test_tasks();
  test_kernels();
  RUN(test_generic_cpu);
  RUN(test_rejected_loops);
  RUN(test_unbound_var);
  RUN(test_jit_cycles);
  RUN(test_jit_symbols);
  RUN(test_object_and_header);
  RUN(test_symbolic_trace);
  RUN(test_symbolic_tile_two_tails);
  return test_summary();
}
