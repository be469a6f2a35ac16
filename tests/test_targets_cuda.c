/* The cuda target without a GPU: target strings, PTX for the notes' GPU
 * examples (the .py files of tests/kernels/gpu, each with "# expect-ptx: TEXT" and
 * "# expect-ptx-not: TEXT" lines) checked as text and by ptxas for sm_80
 * when the CUDA toolkit is here, shared-buffer compaction checked against
 * the interpreter, launch extents, and the refusals of code a GPU cannot
 * run.
 */
#include "ir/ir.h"
#include "targets/cuda_internal.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/test.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------------- */

static const char *ptxas_path(void) {
  static char path[1024];
  static int found = -1;
  if (found >= 0) return found ? path : NULL;
  found = 0;
  const char *env = getenv("PATH");
  char *dirs = mlc_xstrdup(env ? env : "");
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
    snprintf(path, sizeof path, "%s/ptxas", d);
    if (access(path, X_OK) == 0) found = 1;
  }
  mlc_free(dirs);
  if (!found && access("/usr/local/cuda/bin/ptxas", X_OK) == 0) {
    snprintf(path, sizeof path, "/usr/local/cuda/bin/ptxas");
    found = 1;
  }
  return found ? path : NULL;
}

/* Run ptxas -arch=sm_80 on the PTX; true when it accepts it, else why. */
static bool run_ptxas(const char *ptx, size_t len, char *why, size_t n) {
  char src[] = "/tmp/mlc_cuda_XXXXXX";
  int fd = mkstemp(src);
  if (fd < 0) {
    snprintf(why, n, "mkstemp failed");
    return false;
  }
  bool ok = write(fd, ptx, len) == (ssize_t)len;
  close(fd);
  char cmd[2400], log[64];
  snprintf(log, sizeof log, "%s.log", src);
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_80 '%s' -o /dev/null >'%s' 2>&1", ptxas_path(), src, log);
  int rc = ok ? system(cmd) : -1;
  ok = ok && rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
  if (!ok) {
    char *text = mlc_read_file(log, NULL, NULL);
    snprintf(why, n, "ptxas rejected the PTX: %.600s", text ? text : "(no output)");
    mlc_free(text);
  }
  unlink(src);
  unlink(log);
  return ok;
}

static const mlc_prim_func *parse_one(mlc_arena *a, const char *name, const char *text) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, name, text, &err);
  if (!m) {
    fprintf(stderr, "parse %s: %s\n", name, err.msg);
    return NULL;
  }
  return m->funcs[0];
}

/* Build text's function for "cuda -arch=sm_80": PTX in *ptx (heap), or
 * false with err. */
static bool build_ptx(const mlc_prim_func *f, mlc_str *ptx, mlc_error *err) {
  mlc_target t;
  if (!mlc_target_parse("cuda -arch=sm_80", &t, err)) return false;
  mlc_object obj;
  if (!mlc_target_build(&t, 1, &f, NULL, NULL, &obj, err)) return false;
  mlc_str_puts(ptx, obj.data);
  bool ok = strlen(obj.data) == obj.len;
  mlc_object_free(&obj);
  if (!ok) return mlc_error_set(err, "PTX length does not match its text");
  return true;
}

/* The error building text for cuda gives ("" when it builds). */
static void build_error(const char *text, char *out, size_t n) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = parse_one(a, "refuse.py", text);
  mlc_str ptx = {0};
  mlc_error err;
  snprintf(out, n, "%.700s", !f ? "parse failed" : build_ptx(f, &ptx, &err) ? "" : err.msg);
  mlc_str_free(&ptx);
  mlc_arena_free(a);
}

static const mlc_prim_func *load_kernel(mlc_arena *a, const char *path);
static void check_on_device(const mlc_prim_func *f, const char *what);

/* ---- target strings ---------------------------------------------------------------- */

static void test_target_strings(void) {
  mlc_target t, t2;
  mlc_error err;
  CHECK(mlc_target_parse("cuda", &t, &err));
  CHECK_STREQ(t.str, "cuda -arch=sm_80");
  CHECK(t.backend == &mlc_backend_cuda);
  /* what code above targets/ asks instead of the backend's identity */
  CHECK(mlc_target_device(&t) == MLC_DEVICE_CUDA);
  mlc_gpu_limits lim, sm80;
  mlc_gpu_limits_sm80(&sm80);
  CHECK(mlc_target_gpu_limits(&t, &lim) && memcmp(&lim, &sm80, sizeof lim) == 0);
  CHECK(mlc_target_parse("llvm", &t2, &err) && mlc_target_device(&t2) == MLC_DEVICE_CPU);
  CHECK(!mlc_target_gpu_limits(&t2, &lim));
  CHECK(mlc_target_parse("  cuda   -arch=sm_86 ", &t, &err));
  CHECK_STREQ(t.str, "cuda -arch=sm_86");
  CHECK_STREQ(t.mcpu, "sm_86");
  CHECK(mlc_target_parse(t.str, &t2, &err));
  CHECK_STREQ(t2.str, t.str);
  /* Hopper: kept in the target string (records are keyed by it), built
   * as sm_86 PTX the driver compiles for the device. */
  CHECK(mlc_target_parse("cuda -arch=sm_90", &t, &err));
  CHECK_STREQ(t.str, "cuda -arch=sm_90");
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = load_kernel(a, "tests/kernels/gpu/vecadd.py");
  mlc_object obj = {0};
  CHECK(f && mlc_target_build(&t, 1, &f, NULL, NULL, &obj, &err));
  CHECK(obj.data && strstr(obj.data, ".target sm_86"));
  mlc_object_free(&obj);
  mlc_arena_free(a);
  CHECK(!mlc_target_parse("cuda -arch=sm_91", &t, &err));
  CHECK_MSG(strstr(err.msg, "sm_91") != NULL, "%s", err.msg);
  CHECK(!mlc_target_parse("cuda -arch", &t, &err));
  CHECK(!mlc_target_parse("cuda -num-cores=2", &t, &err));
  CHECK_MSG(strstr(err.msg, "unknown option -num-cores for target cuda") != NULL, "%s", err.msg);
  CHECK(!mlc_target_parse("opencl", &t, &err));
  CHECK_MSG(strstr(err.msg, "known: llvm, cuda") != NULL, "%s", err.msg);
}

/* ---- kernels ------------------------------------------------------------------------ */

/* Every "# <key> TEXT" line of the file: TEXT must (not) be in the PTX. */
static bool check_expect(const char *file, const char *key, bool want, const char *ptx, char *why,
                         size_t n) {
  size_t klen = strlen(key);
  for (const char *p = strstr(file, key); p; p = strstr(p + 1, key)) {
    if (p > file && p[-1] != ' ') continue; /* "# expect-ptx-not:" vs "# expect-ptx:" */
    const char *s = p + klen;
    while (*s == ' ') s++;
    size_t len = strcspn(s, "\n");
    char text[256];
    snprintf(text, sizeof text, "%.*s", (int)len, s);
    if ((strstr(ptx, text) != NULL) != want) {
      snprintf(why, n, "the PTX %s \"%s\"", want ? "lacks" : "contains", text);
      return false;
    }
  }
  return true;
}

/* Every "# expect-ptx-before: A || B" line: A occurs in the PTX, and
 * before the first B (thread 0's store of a row's max before any load of
 * it: one across a barrier that LLVM moved above it read stale memory). */
static bool check_order(const char *file, const char *ptx, char *why, size_t n) {
  const char *key = "expect-ptx-before:";
  for (const char *p = strstr(file, key); p; p = strstr(p + 1, key)) {
    const char *s = p + strlen(key);
    while (*s == ' ') s++;
    size_t len = strcspn(s, "\n");
    char line[256], *sep;
    snprintf(line, sizeof line, "%.*s", (int)len, s);
    if (!(sep = strstr(line, " || "))) {
      snprintf(why, n, "expect-ptx-before needs \"A || B\": %s", line);
      return false;
    }
    *sep = 0;
    const char *a = strstr(ptx, line), *b = strstr(ptx, sep + 4);
    if (!a || (b && b < a)) {
      snprintf(why, n, "the PTX %s \"%s\"%s%s%s", a ? "has" : "lacks", a ? sep + 4 : line,
               a ? " before \"" : "", a ? line : "", a ? "\"" : "");
      return false;
    }
  }
  return true;
}

static void check_kernel_file(const char *path) {
  char name[600], why[1400] = "";
  snprintf(name, sizeof name, "ptx_%s", path);
  mlc_error err;
  char *text = mlc_read_file(path, NULL, &err);
  if (!text) {
    test_report(name, 0, err.msg);
    return;
  }
  mlc_arena *a = mlc_arena_new();
  mlc_module *m = mlc_parse_module(a, path, text, &err);
  mlc_str ptx = {0};
  bool ok = m != NULL;
  if (!ok) snprintf(why, sizeof why, "parse: %s", err.msg);
  if (ok && !(ok = mlc_verify_module(m, &err))) snprintf(why, sizeof why, "verify: %s", err.msg);
  if (ok && !(ok = build_ptx(m->funcs[0], &ptx, &err))) snprintf(why, sizeof why, "build: %s", err.msg);
  if (ok) ok = check_expect(text, "expect-ptx:", true, mlc_str_cstr(&ptx), why, sizeof why);
  if (ok) ok = check_expect(text, "expect-ptx-not:", false, mlc_str_cstr(&ptx), why, sizeof why);
  if (ok) ok = check_order(text, mlc_str_cstr(&ptx), why, sizeof why);
  if (ok) ok = strstr(mlc_str_cstr(&ptx), ".version 7.5\n.target sm_80\n") != NULL;
  if (ok && ptxas_path()) ok = run_ptxas(ptx.data, ptx.len, why, sizeof why);
  test_report(name, ok, why);
  mlc_str_free(&ptx);
  mlc_arena_free(a);
  mlc_free(text);
}

static void test_kernels(void) {
  if (!ptxas_path()) printf("SKIP ptxas checks (ptxas not found on PATH or in /usr/local/cuda/bin)\n");
  DIR *dir = opendir("tests/kernels/gpu");
  if (!dir) {
    test_report("kernels", 0, "cannot open tests/kernels/gpu (run from the repository root)");
    return;
  }
  MLC_VEC(char *) files = {0};
  for (struct dirent *de; (de = readdir(dir));) {
    size_t len = strlen(de->d_name);
    if (len > 3 && strcmp(de->d_name + len - 3, ".py") == 0) {
      char path[512];
      snprintf(path, sizeof path, "tests/kernels/gpu/%s", de->d_name);
      MLC_VEC_PUSH(files, mlc_xstrdup(path));
    }
  }
  closedir(dir);
  qsort(files.data, (size_t)files.len, sizeof(char *), test_cmp_str);
  if (files.len < 5) test_report("kernels", 0, "expected the GPU kernels in tests/kernels/gpu");
  for (int i = 0; i < files.len; i++) {
    check_kernel_file(files.data[i]);
    mlc_free(files.data[i]);
  }
  MLC_VEC_FREE(files);
}

/* ---- launch extents and shared compaction ---------------------------------------- */

static const mlc_prim_func *load_kernel(mlc_arena *a, const char *path) {
  char *text = mlc_read_file(path, NULL, NULL);
  if (!text) return NULL;
  char *copy = mlc_arena_strdup(a, text);
  mlc_free(text);
  return parse_one(a, path, copy);
}

static void test_launch_info(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_target t;
  mlc_error err;
  CHECK(mlc_target_parse("cuda", &t, &err));
  mlc_gpu_launch l;
  const mlc_prim_func *f = load_kernel(a, "tests/kernels/gpu/mm_local.py");
  CHECK(f && mlc_cuda_launch_info(&t, f, &l, &err));
  CHECK(l.grid[0] == 16 && l.grid[1] == 16 && l.grid[2] == 1);
  CHECK(l.block[0] == 8 && l.block[1] == 8 && l.block[2] == 1);
  CHECK_MSG(l.shared_bytes == 0 && l.local_bytes == 8 * 8 * 4, "local %lld", (long long)l.local_bytes);
  f = load_kernel(a, "tests/kernels/gpu/mm_shared.py");
  CHECK(f && mlc_cuda_launch_info(&t, f, &l, &err));
  CHECK(l.block[0] == 64 && l.block[1] == 1 && l.grid[0] == 16 && l.grid[1] == 16);
  CHECK_MSG(l.shared_bytes == 2 * 64 * 8 * 4, "shared %lld", (long long)l.shared_bytes);
  mlc_arena_free(a);
}

/* Interpret f and g on the same seeded inputs; outputs must be equal. */
static bool same_results(const mlc_prim_func *f, const mlc_prim_func *g, char *why, size_t n) {
  int np = f->n_params;
  mlc_array *x[8], *y[8];
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 7, 1);
  for (int i = 0; i < np; i++) {
    x[i] = mlc_array_for_buffer(f->params[i]);
    y[i] = mlc_array_for_buffer(g->params[i]);
    mlc_array_fill_random(x[i], &rng);
    memcpy(y[i]->data, x[i]->data, (size_t)mlc_array_numel(x[i]) * (size_t)mlc_dtype_bytes(x[i]->dtype));
  }
  mlc_array xs[8], ys[8];
  for (int i = 0; i < np; i++) xs[i] = *x[i], ys[i] = *y[i];
  mlc_error err;
  bool ok = mlc_interp_run(f, xs, &err);
  if (!ok) snprintf(why, n, "interp original: %.600s", err.msg);
  if (ok && !(ok = mlc_interp_run(g, ys, &err))) snprintf(why, n, "interp prepared: %.600s", err.msg);
  for (int i = 0; ok && i < np; i++) {
    double e;
    if (!mlc_array_allclose(&ys[i], &xs[i], 0, 0, &e)) {
      snprintf(why, n, "parameter %d differs by %g", i, e);
      ok = false;
    }
  }
  for (int i = 0; i < np; i++) {
    mlc_array_free(x[i]);
    mlc_array_free(y[i]);
  }
  return ok;
}

static const mlc_buffer *root_alloc(const mlc_prim_func *f, const char *name) {
  const mlc_block *root = mlc_func_root(f);
  for (int i = 0; i < root->n_allocs; i++)
    if (strcmp(root->allocs[i]->name, name) == 0) return root->allocs[i];
  return NULL;
}

/* Replace every `from` by `to` in text (arena copy). */
static char *replace_all(mlc_arena *a, const char *text, const char *from, const char *to) {
  mlc_str s = {0};
  size_t fl = strlen(from);
  for (const char *p = text, *q; *p; p = q + fl) {
    q = strstr(p, from);
    if (!q) {
      mlc_str_puts(&s, p);
      break;
    }
    mlc_str_printf(&s, "%.*s%s", (int)(q - p), p, to);
  }
  char *out = mlc_arena_strdup(a, mlc_str_cstr(&s));
  mlc_str_free(&s);
  return out;
}

static void test_shared_compaction(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char why[800] = "";
  /* The window sum: A_shared 1027 -> the 130 elements a block reads. */
  const mlc_prim_func *f = load_kernel(a, "tests/kernels/gpu/window_sum.py");
  const mlc_prim_func *g = f ? cuda_prepare(a, f, &err) : NULL;
  CHECK(f && g && g != f);
  const mlc_buffer *b = g ? root_alloc(g, "A_shared") : NULL;
  CHECK(b && b->ndim == 1 && b->shape[0] == 130);
  CHECK_MSG(f && g && same_results(f, g, why, sizeof why), "%s", why);

  /* The shared matmul at 64^3 (one block, 8 k_0 steps): [64, 8] and
   * [8, 64] tiles, same results as the uncompacted function. */
  char *text = mlc_read_file("tests/kernels/gpu/mm_shared.py", NULL, &err);
  CHECK(text != NULL);
  if (text) {
    char *small = replace_all(a, text, "1024", "64");
    small = replace_all(a, small, "T.thread_binding(16, thread=\"blockIdx", "T.thread_binding(1, thread=\"blockIdx");
    small = replace_all(a, small, "range(128)", "range(8)");
    mlc_free(text);
    f = parse_one(a, "mm_small.py", small);
    CHECK(f && mlc_verify_func(f, &err));
    g = f ? cuda_prepare(a, f, &err) : NULL;
    const mlc_buffer *as = g ? root_alloc(g, "A_shared") : NULL;
    const mlc_buffer *bs = g ? root_alloc(g, "B_shared") : NULL;
    CHECK(as && as->shape[0] == 64 && as->shape[1] == 8);
    CHECK(bs && bs->shape[0] == 8 && bs->shape[1] == 64);
    CHECK_MSG(f && g && same_results(f, g, why, sizeof why), "%s", why);
  }
  mlc_arena_free(a);
}

/* ---- refusals -------------------------------------------------------------------------- */

#define HEAD                                                                             \
  "@T.prim_func\n"                                                                     \
  "def k(A: T.Buffer((256,), \"float32\"), B: T.Buffer((256,), \"float32\")):\n"      \
  "    T.func_attr({\"global_symbol\": \"k\", \"tir.noalias\": True})\n"

static void expect_refusal(const char *text, const char *want) {
  char msg[800];
  build_error(text, msg, sizeof msg);
  CHECK_MSG(*msg && strstr(msg, want) != NULL, "wanted \"%s\", got \"%s\"", want, msg);
}

static void test_refusals(void) {
  /* No loop bound at all. */
  expect_refusal(HEAD "    for i in range(256):\n"
                      "        with T.block(\"B\"):\n"
                      "            vi = T.axis.spatial(256, i)\n"
                      "            B[vi] = A[vi]\n",
                 "no loop is bound to blockIdx or threadIdx");
  /* A loop nest outside the threadIdx binding: every thread would run it. */
  expect_refusal(HEAD "    for b in T.thread_binding(2, thread=\"blockIdx.x\"):\n"
                      "        for t in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
                      "            with T.block(\"B\"):\n"
                      "                vi = T.axis.spatial(256, b * 128 + t)\n"
                      "                B[vi] = A[vi]\n"
                      "        for j in range(128):\n"
                      "            with T.block(\"A\"):\n"
                      "                vj = T.axis.spatial(256, b * 128 + j)\n"
                      "                A[vj] = T.float32(0)\n",
                 "store to A is not under a loop bound to threadIdx.x: all 128 threads");
  /* Cross-thread reductions (rowsum_xthread.py and softmax_xthread.py
   * build) that cannot be rewritten: an init that is not the identity (each
   * thread would add it once), an update that is not a reduction. */
#define XT_HEAD                                                                \
  "@T.prim_func\n"                                                             \
  "def k(A: T.Buffer((8, 128), \"float32\"), B: T.Buffer((8,), \"float32\")):\n" \
  "    for i in T.thread_binding(8, thread=\"blockIdx.x\"):\n"                   \
  "        for r in T.thread_binding(128, thread=\"threadIdx.x\"):\n"            \
  "            with T.block(\"B\"):\n"                                          \
  "                vi, vr = T.axis.remap(\"SR\", [i, r])\n"                      \
  "                with T.init():\n"
  expect_refusal(XT_HEAD "                    B[vi] = T.float32(1)\n"
                         "                B[vi] = B[vi] + A[vi, vr]\n",
                 "block B: its reduction over loop r (bound to threadIdx.x) runs across threads, "
                 "which needs a cross-thread reduction, but its init is not the identity of its "
                 "reduction");
  expect_refusal(XT_HEAD "                    B[vi] = T.float32(0)\n"
                         "                B[vi] = A[vi, vr] - B[vi]\n",
                 "but its update is not W = W + e, W * e, max(W, e) or min(W, e)");
  expect_refusal(XT_HEAD "                    B[vi] = T.float32(0)\n"
                         "                B[vi] = B[vi] + A[vi, vr] * B[0]\n",
                 "but its update reads the buffer it reduces into elsewhere");
#undef XT_HEAD
  /* A guard that uses the thread's index but lets many threads through
   * does not keep them from racing on one element. */
  expect_refusal("@T.prim_func\n"
                 "def k(A: T.Buffer((8, 128), \"float32\"), B: T.Buffer((8,), \"float32\")):\n"
                 "    for i in T.thread_binding(8, thread=\"blockIdx.x\"):\n"
                 "        for r in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
                 "            with T.block(\"B\"):\n"
                 "                T.where(r < 100)\n"
                 "                vi = T.axis.spatial(8, i)\n"
                 "                B[vi] = A[vi, r]\n",
                 "store to B does not depend on threadIdx.x (loop r): its threads would race");
  /* A global intermediate shared by two bound loop nests. */
  expect_refusal(HEAD "    T_tmp = T.alloc_buffer((256,))\n"
                      "    for b in T.thread_binding(2, thread=\"blockIdx.x\"):\n"
                      "        for t in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
                      "            with T.block(\"T\"):\n"
                      "                vi = T.axis.spatial(256, b * 128 + t)\n"
                      "                T_tmp[vi] = A[vi] * T.float32(2)\n"
                      "    for b in T.thread_binding(2, thread=\"blockIdx.x\"):\n"
                      "        for t in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
                      "            with T.block(\"B\"):\n"
                      "                vi = T.axis.spatial(256, b * 128 + t)\n"
                      "                B[vi] = T_tmp[255 - vi]\n",
                 "intermediate buffer T_tmp (scope global) is allocated outside the loops bound to "
                 "blockIdx.x");
  /* Too many threads per block. */
  expect_refusal(HEAD "    for t in T.thread_binding(256, thread=\"threadIdx.x\"):\n"
                      "        for u in T.thread_binding(8, thread=\"threadIdx.y\"):\n"
                      "            with T.block(\"B\"):\n"
                      "                vi = T.axis.spatial(256, t)\n"
                      "                T.where(u < 1)\n"
                      "                B[vi] = A[vi]\n",
                 "2048 threads per block (256 x 8 x 1) exceed the limit of 1024");
  /* A parallel loop. */
  expect_refusal(HEAD "    for b in T.thread_binding(2, thread=\"blockIdx.x\"):\n"
                      "        for t in T.parallel(128):\n"
                      "            with T.block(\"B\"):\n"
                      "                vi = T.axis.spatial(256, b * 128 + t)\n"
                      "                B[vi] = A[vi]\n",
                 "parallel loop t in a GPU kernel");
  /* Too much shared memory: 16384 floats = 64 KiB per block. */
  expect_refusal("@T.prim_func\n"
                 "def k(A: T.Buffer((16384,), \"float32\"), B: T.Buffer((16384,), \"float32\")):\n"
                 "    S = T.alloc_buffer((16384,), scope=\"shared\")\n"
                 "    for t in T.thread_binding(1024, thread=\"threadIdx.x\"):\n"
                 "        for j in range(16):\n"
                 "            with T.block(\"S\"):\n"
                 "                vj = T.axis.spatial(16384, j * 1024 + t)\n"
                 "                S[vj] = A[vj]\n"
                 "        for j in range(16):\n"
                 "            with T.block(\"B\"):\n"
                 "                vj = T.axis.spatial(16384, j * 1024 + t)\n"
                 "                B[vj] = S[16383 - vj]\n",
                 "65536 bytes of shared memory per block exceed the limit of 49152");
  /* A barrier needed where only 64 of the 128 threads run. */
  expect_refusal("@T.prim_func\n"
                 "def k(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
                 "    S = T.alloc_buffer((64,), scope=\"shared\")\n"
                 "    for t in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
                 "        with T.block(\"B\"):\n"
                 "            vi = T.axis.spatial(128, t)\n"
                 "            B[vi] = A[vi]\n"
                 "    for t in T.thread_binding(64, thread=\"threadIdx.x\"):\n"
                 "        with T.block(\"S\"):\n"
                 "            vi = T.axis.spatial(64, t)\n"
                 "            S[vi] = A[vi]\n"
                 "        with T.block(\"B2\"):\n"
                 "            vi = T.axis.spatial(64, t)\n"
                 "            B[vi] = S[63 - vi]\n",
                 "needs a barrier inside loop t (64 of 128 threads along threadIdx.x)");
  /* A fetch loop needing more threads than the loop it is nested in. */
  expect_refusal("@T.prim_func\n"
                 "def k(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
                 "    S = T.alloc_buffer((128,), scope=\"shared\")\n"
                 "    for t in T.thread_binding(64, thread=\"threadIdx.x\"):\n"
                 "        for f in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
                 "            with T.block(\"S\"):\n"
                 "                vi = T.axis.spatial(128, f)\n"
                 "                S[vi] = A[vi]\n"
                 "        with T.block(\"B\"):\n"
                 "            vi = T.axis.spatial(128, t)\n"
                 "            B[vi] = S[vi] + S[vi + 64]\n",
                 "loop f bound to threadIdx.x has extent 128 inside loop t bound to it with extent 64");
  /* A nested loop on the same axis that tells the outer loop's threads apart. */
  expect_refusal("@T.prim_func\n"
                 "def k(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
                 "    for t in T.thread_binding(8, thread=\"threadIdx.x\"):\n"
                 "        for f in T.thread_binding(8, thread=\"threadIdx.x\"):\n"
                 "            with T.block(\"B\"):\n"
                 "                vi = T.axis.spatial(128, t * 8 + f)\n"
                 "                B[vi] = A[vi]\n",
                 "loop f bound to threadIdx.x uses t, the enclosing loop bound to the same axis");
  /* The same with 128 threads everywhere builds, with the barrier. */
  char msg[800];
  build_error("@T.prim_func\n"
              "def k(A: T.Buffer((128,), \"float32\"), B: T.Buffer((128,), \"float32\")):\n"
              "    S = T.alloc_buffer((128,), scope=\"shared\")\n"
              "    for t in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
              "        with T.block(\"S\"):\n"
              "            vi = T.axis.spatial(128, t)\n"
              "            S[vi] = A[vi]\n"
              "        with T.block(\"B2\"):\n"
              "            vi = T.axis.spatial(128, t)\n"
              "            B[vi] = S[127 - vi]\n",
              msg, sizeof msg);
  CHECK_MSG(!*msg, "%s", msg);
  /* The llvm target still refuses thread bindings. */
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = load_kernel(a, "tests/kernels/gpu/vecadd.py");
  mlc_target t;
  mlc_error err;
  mlc_object obj;
  CHECK(f && mlc_target_parse("llvm", &t, &err));
  CHECK(f && !mlc_target_build(&t, 1, &f, NULL, NULL, &obj, &err));
  CHECK_MSG(strstr(err.msg, "needs a GPU target") != NULL, "%s", err.msg);
  mlc_arena_free(a);
}

/* Barriers land between the fetch and the use, and at the top of the
 * reduction loop (before the next fetch overwrites the tile). */
static void test_barriers(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = load_kernel(a, "tests/kernels/gpu/mm_shared.py");
  mlc_target t;
  mlc_error err;
  mlc_object obj;
  mlc_str ir = {0};
  CHECK(f && mlc_target_parse("cuda", &t, &err));
  bool ok = f && mlc_target_build(&t, 1, &f, NULL, &ir, &obj, &err);
  CHECK_MSG(ok, "%s", err.msg);
  if (ok) {
    const char *s = mlc_str_cstr(&ir);
    int n = 0;
    for (const char *p = strstr(s, "call void @llvm.nvvm.barrier0()"); p;
         p = strstr(p + 1, "call void @llvm.nvvm.barrier0()"))
      n++;
    CHECK_MSG(n == 2, "%d barriers", n);
    CHECK(strstr(s, "!\"kernel\", i32 1") != NULL);
    CHECK(strstr(s, "!\"maxntidx\", i32 64") != NULL);
    CHECK(strstr(s, "addrspace(3)") != NULL);
    CHECK(strstr(s, "@llvm.nvvm.read.ptx.sreg.tid.x()") != NULL);
    mlc_object_free(&obj);
  }
  mlc_str_free(&ir);
  mlc_arena_free(a);
}

/* ---- a design-space-like schedule ------------------------------------------------ */

#define SCHED_OK(call)                                              \
  do {                                                              \
    if (!(call)) {                                                  \
      test_fail_(__FILE__, __LINE__, "%s: %s", #call, err.msg);     \
      goto done;                                                    \
    }                                                               \
  } while (0)

/* Split loop l by the given factors into out. */
static bool split(mlc_sched *s, mlc_rv l, int n, const int64_t *f, mlc_rv *out, mlc_error *err) {
  mlc_operand ops[8];
  for (int i = 0; i < n; i++) ops[i] = MLC_OP_INT(f[i]);
  return mlc_sched_split(s, l, n, ops, true, out, err);
}

/* The fetch of a shared cache: its loops fused, split over the 8 x 8
 * threads and 4-wide vectors. */
static bool coop_fetch(mlc_sched *s, mlc_rv cache, mlc_error *err) {
  mlc_rv *loops, fused, parts[4];
  int n = mlc_sched_get_loops(s, cache, &loops, err);
  if (n < 2) return false;
  if (!mlc_sched_fuse(s, 2, loops + n - 2, true, &fused, err)) return false;
  mlc_operand f[4] = {MLC_OP_NONE, MLC_OP_INT(8), MLC_OP_INT(8), MLC_OP_INT(4)};
  return mlc_sched_split(s, fused, 4, f, true, parts, err) &&
         mlc_sched_bind(s, parts[1], "threadIdx.y", err) &&
         mlc_sched_bind(s, parts[2], "threadIdx.x", err) && mlc_sched_vectorize(s, parts[3], err);
}

/* A matmul tiled as the GPU design space does ("SSSRRSRS": blockIdx,
 * vthread, threadIdx, k0, k1, inner i/j, k2, inner i/j), C in a local
 * cache written back under the threads, A and B in shared caches at k0
 * fetched cooperatively by 8 x 8 threads: PTX that ptxas takes, the launch
 * extents and shared bytes expected, and the compacted function equal to
 * the scheduled one. Factors whose product exceeds an extent leave T.where
 * guards (the fetch then covers more than the matrix has). */
static void design_space_matmul(const int64_t *shape, const int64_t *fi, const int64_t *fj,
                                const int64_t *fk, const char *launch, int64_t shared) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err = {{0}};
  mlc_prim_func *f0 = mlc_task_build(a, mlc_task_find("matmul"), shape);
  mlc_sched *s = mlc_sched_new(f0, 1);
  mlc_rv c, cl, as, bs, init, *loops, i[5], j[5], k[3];
  SCHED_OK(mlc_sched_get_block(s, "C", "main", &c, &err));
  SCHED_OK(mlc_sched_cache_write(s, c, 0, "local", 0, NULL, &cl, &err));
  SCHED_OK(mlc_sched_get_loops(s, c, &loops, &err) == 3);
  mlc_rv l0 = loops[0], l1 = loops[1], l2 = loops[2];
  SCHED_OK(split(s, l0, 5, fi, i, &err));
  SCHED_OK(split(s, l1, 5, fj, j, &err));
  SCHED_OK(split(s, l2, 3, fk, k, &err));
  mlc_rv order[13] = {i[0], j[0], i[1], j[1], i[2], j[2], k[0], k[1], i[3], j[3], k[2], i[4], j[4]};
  SCHED_OK(mlc_sched_reorder(s, 13, order, &err));
  SCHED_OK(mlc_sched_bind(s, i[0], "blockIdx.y", &err));
  SCHED_OK(mlc_sched_bind(s, j[0], "blockIdx.x", &err));
  SCHED_OK(mlc_sched_bind(s, i[1], "vthread.y", &err));
  SCHED_OK(mlc_sched_bind(s, j[1], "vthread.x", &err));
  SCHED_OK(mlc_sched_bind(s, i[2], "threadIdx.y", &err));
  SCHED_OK(mlc_sched_bind(s, j[2], "threadIdx.x", &err));
  SCHED_OK(mlc_sched_reverse_compute_at(s, cl, j[2], true, -1, &err));
  SCHED_OK(mlc_sched_cache_read(s, c, 0, "shared", 0, NULL, &as, &err));
  SCHED_OK(mlc_sched_compute_at(s, as, k[0], true, -1, &err));
  SCHED_OK(coop_fetch(s, as, &err));
  SCHED_OK(mlc_sched_cache_read(s, c, 1, "shared", 0, NULL, &bs, &err));
  SCHED_OK(mlc_sched_compute_at(s, bs, k[0], true, -1, &err));
  SCHED_OK(coop_fetch(s, bs, &err));
  SCHED_OK(mlc_sched_decompose_reduction(s, c, k[0], &init, &err));
  const mlc_prim_func *f = mlc_sched_func(s);
  SCHED_OK(mlc_verify_func(f, &err));
  mlc_str ptx = {0};
  char why[1400] = "";
  bool ok = build_ptx(f, &ptx, &err);
  CHECK_MSG(ok, "%s", err.msg);
  if (ok) {
    const char *p = mlc_str_cstr(&ptx);
    CHECK(strstr(p, ".maxntid 8, 8, 1") != NULL);
    CHECK_MSG(strstr(p, launch) != NULL, "%.120s", p);
    /* Two barriers: the tiles are fetched once for all virtual threads. */
    int bars = 0;
    for (const char *q = strstr(p, "bar.sync"); q; q = strstr(q + 1, "bar.sync")) bars++;
    CHECK_MSG(bars == 2, "%d barriers", bars);
    if (ptxas_path()) CHECK_MSG(run_ptxas(ptx.data, ptx.len, why, sizeof why), "%s", why);
  }
  mlc_str_free(&ptx);
  check_on_device(f, "design-space matmul");
  mlc_gpu_launch l;
  mlc_target t;
  CHECK(mlc_target_parse("cuda", &t, &err) && mlc_cuda_launch_info(&t, f, &l, &err));
  CHECK_MSG(l.shared_bytes == shared, "shared %lld", (long long)l.shared_bytes);
  const mlc_prim_func *g = cuda_prepare(a, f, &err);
  CHECK(g && g != f);
  CHECK_MSG(g && same_results(f, g, why, sizeof why), "%s", why);
  /* Virtual threads interleaved after lowering: the same results too. */
  mlc_prim_func *lf = g ? mlc_target_lower(a, g, &err) : NULL;
  const mlc_prim_func *vf = lf ? cuda_vthread(a, lf) : NULL;
  CHECK(vf && vf != lf);
  CHECK_MSG(vf && same_results(lf, vf, why, sizeof why), "%s", why);
done:
  mlc_sched_free(s);
  mlc_arena_free(a);
}

static void test_design_space_matmul(void) {
  /* 128 x 64 x 32: A's tile is 2 vthreads x 8 threads x 4 rows by 8 k,
   * B's the same transposed: 512 floats each. */
  const int64_t shape[3] = {128, 64, 32}, fi[5] = {2, 2, 8, 1, 4}, fj[5] = {1, 2, 8, 1, 4};
  const int64_t fk[3] = {4, 2, 4};
  design_space_matmul(shape, fi, fj, fk, "grid=1,2,1 block=8,8,1", 2 * 512 * 4);
}

static void test_design_space_matmul_guarded(void) {
  /* 100 x 72 x 36 with tiles of 64 x 32 x 8: guards everywhere; A's tile
   * [64, 8], B's [8, 32]. */
  const int64_t shape[3] = {100, 72, 36}, fi[5] = {2, 2, 8, 1, 4}, fj[5] = {3, 1, 8, 1, 4};
  const int64_t fk[3] = {5, 2, 4};
  design_space_matmul(shape, fi, fj, fk, "grid=3,2,1 block=8,8,1", (64 * 8 + 8 * 32) * 4);
}

/* The notes' schedules through the schedule API on the built-in tasks:
 * vector add split and bound; window sum with A cached in shared memory at
 * the threadIdx loop and fetched cooperatively (6.2, step by step). */
static void test_notes_schedules(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err = {{0}};
  const int64_t n[1] = {1024};
  mlc_sched *s = mlc_sched_new(mlc_task_build(a, mlc_task_find("vecadd"), n), 1);
  mlc_sched *w = mlc_sched_new(mlc_task_build(a, mlc_task_find("window_sum"), n), 1);
  mlc_rv b, *loops, ii[2], ax[2], cache;
  const int64_t f[2] = {8, 128};
  char why[1400] = "";
  mlc_str ptx = {0};
  SCHED_OK(mlc_sched_get_block(s, "C", "main", &b, &err));
  SCHED_OK(mlc_sched_get_loops(s, b, &loops, &err) == 1);
  SCHED_OK(split(s, loops[0], 2, f, ii, &err));
  SCHED_OK(mlc_sched_bind(s, ii[0], "blockIdx.x", &err));
  SCHED_OK(mlc_sched_bind(s, ii[1], "threadIdx.x", &err));
  SCHED_OK(build_ptx(mlc_sched_func(s), &ptx, &err));
  CHECK(strstr(mlc_str_cstr(&ptx), "grid=8,1,1 block=128,1,1 shared=0") != NULL);
  if (ptxas_path()) CHECK_MSG(run_ptxas(ptx.data, ptx.len, why, sizeof why), "%s", why);
  check_on_device(mlc_sched_func(s), "notes' vector add");
  ptx.len = 0;

  SCHED_OK(mlc_sched_get_block(w, "B", "main", &b, &err));
  SCHED_OK(mlc_sched_get_loops(w, b, &loops, &err) == 1);
  SCHED_OK(split(w, loops[0], 2, f, ii, &err));
  SCHED_OK(mlc_sched_bind(w, ii[0], "blockIdx.x", &err));
  SCHED_OK(mlc_sched_bind(w, ii[1], "threadIdx.x", &err));
  SCHED_OK(mlc_sched_cache_read(w, b, 0, "shared", 0, NULL, &cache, &err));
  SCHED_OK(mlc_sched_compute_at(w, cache, ii[1], true, -1, &err));
  int nl = mlc_sched_get_loops(w, cache, &loops, &err);
  SCHED_OK(nl >= 1);
  mlc_operand fo[2] = {MLC_OP_NONE, MLC_OP_INT(128)};
  SCHED_OK(mlc_sched_split(w, loops[nl - 1], 2, fo, true, ax, &err));
  SCHED_OK(mlc_sched_bind(w, ax[1], "threadIdx.x", &err));
  SCHED_OK(build_ptx(mlc_sched_func(w), &ptx, &err));
  const char *p = mlc_str_cstr(&ptx);
  CHECK_MSG(strstr(p, "grid=8,1,1 block=128,1,1 shared=520") != NULL, "%.120s", p);
  CHECK(strstr(p, "bar.sync") && strstr(p, "ld.shared.f32") && strstr(p, "st.shared.f32"));
  if (ptxas_path()) CHECK_MSG(run_ptxas(ptx.data, ptx.len, why, sizeof why), "%s", why);
  check_on_device(mlc_sched_func(w), "notes' window sum (shared, cooperative fetch)");
done:
  mlc_str_free(&ptx);
  mlc_sched_free(s);
  mlc_sched_free(w);
  mlc_arena_free(a);
}

/* Vector lanes' indices rewritten base + lane only where no lane crosses
 * a multiple of a divisor: (t * 4 + l) % 8 is, (t * 2 + l) % 8 is not. The
 * rewritten function computes what the lowered one does. */
static void test_lane_indices(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char why[800] = "";
  const mlc_prim_func *f = parse_one(
      a, "lanes.py",
      "@T.prim_func\n"
      "def k(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
      "    for t in T.thread_binding(8, thread=\"threadIdx.x\"):\n"
      "        for l in T.vectorized(4):\n"
      "            with T.block(\"B\"):\n"
      "                vi = T.axis.spatial(64, t * 8 + l)\n"
      "                B[vi] = A[t * 8 + (t * 2 + l) % 8] + A[(t * 4 + l) // 8 * 8 + (t * 4 + l) % 8]\n");
  mlc_prim_func *lf = f ? mlc_target_lower(a, f, &err) : NULL;
  const mlc_prim_func *vf = lf ? cuda_vthread(a, lf) : NULL;
  CHECK(vf && vf != lf);
  CHECK_MSG(vf && same_results(lf, vf, why, sizeof why), "%s", why);
  mlc_arena_free(a);
}

/* ---- mlc-ir -------------------------------------------------------------------------- */

/* `mlc-ir build FILE --target "cuda -arch=sm_80" -o OUT.ptx` (when the tool
 * is built): PTX in the file; --header refused. */
static void test_mlc_ir_build(void) {
  const char *tool = "build/bin/mlc-ir";
  if (access(tool, X_OK) != 0) {
    printf("SKIP mlc-ir build (%s not built)\n", tool);
    return;
  }
  char out[] = "/tmp/mlc_cuda_ir_XXXXXX", cmd[512];
  int fd = mkstemp(out);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  snprintf(cmd, sizeof cmd,
           "%s build tests/kernels/gpu/window_sum.py --target 'cuda -arch=sm_80' -o %s 2>/dev/null",
           tool, out);
  CHECK(system(cmd) == 0);
  char *ptx = mlc_read_file(out, NULL, NULL);
  CHECK(ptx && strstr(ptx, ".entry window_sum(") && strstr(ptx, "bar.sync"));
  mlc_free(ptx);
  snprintf(cmd, sizeof cmd,
           "%s build tests/kernels/gpu/vecadd.py --target cuda -o %s --header %s.h 2>/dev/null",
           tool, out, out);
  int rc = system(cmd);
  CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
  unlink(out);
}

/* ---- running (only where a CUDA device is) ------------------------------------ */

/* The 1024^3 matmul kernels (mm_*: C = A @ B), where the interpreter would
 * take minutes: the product in plain C. */
static bool is_big_matmul(const mlc_prim_func *f) {
  return strncmp(f->name, "mm_", 3) == 0 && f->n_params == 3;
}

static void matmul_reference(mlc_array *x) {
  const float *A = x[0].data, *B = x[1].data;
  float *C = x[2].data;
  int64_t M = x[0].shape[0], K = x[0].shape[1], N = x[1].shape[1];
  for (int64_t i = 0; i < M * N; i++) C[i] = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) C[i * N + j] += A[i * K + k] * B[k * N + j];
}

static bool run_reference(const mlc_prim_func *f, mlc_array *x, mlc_error *err) {
  if (!is_big_matmul(f)) return mlc_interp_run(f, x, err);
  matmul_reference(x);
  return true;
}

/* Build f, run it on the device and in the interpreter on the same seeded
 * inputs; every parameter must match (rtol/atol 1e-4). */
static bool run_on_device(const mlc_prim_func *f, char *why, size_t n) {
  mlc_target t;
  mlc_error err;
  mlc_object obj = {0};
  mlc_gpu_launch l;
  enum { MAX_PARAMS = 16 };
  int np = f->n_params;
  if (np > MAX_PARAMS) return snprintf(why, n, "%d parameters (at most %d)", np, MAX_PARAMS), false;
  mlc_array *got[MAX_PARAMS], *want[MAX_PARAMS];
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 11, 3);
  for (int i = 0; i < np; i++) {
    got[i] = mlc_array_for_buffer(f->params[i]);
    want[i] = mlc_array_for_buffer(f->params[i]);
    mlc_array_fill_random(got[i], &rng);
    memcpy(want[i]->data, got[i]->data, (size_t)mlc_array_numel(got[i]) * (size_t)mlc_dtype_bytes(got[i]->dtype));
  }
  mlc_array gs[MAX_PARAMS], ws[MAX_PARAMS];
  for (int i = 0; i < np; i++) gs[i] = *got[i], ws[i] = *want[i];
  double ms = 0;
  bool ok = mlc_target_parse("cuda", &t, &err) && mlc_target_build(&t, 1, &f, NULL, NULL, &obj, &err) &&
            mlc_cuda_launch_info(&t, f, &l, &err) &&
            mlc_cuda_run(&obj, f->name, &l, np, gs, 1, 3, &ms, &err) && run_reference(f, ws, &err);
  if (!ok) snprintf(why, n, "%.700s", err.msg);
  for (int i = 0; ok && i < np; i++) {
    double e;
    if (!mlc_array_allclose(&gs[i], &ws[i], 1e-4, 1e-4, &e)) {
      snprintf(why, n, "parameter %s differs from the interpreter by %g", f->params[i]->name, e);
      ok = false;
    }
  }
  if (ok) printf("  %s: %.4f ms on the device (median of 3)\n", f->name, ms);
  for (int i = 0; i < np; i++) {
    mlc_array_free(got[i]);
    mlc_array_free(want[i]);
  }
  mlc_object_free(&obj);
  return ok;
}

static bool device_known, device_ok;

/* Whether kernels can run here; on the first call, the reason they cannot
 * must be one of the clean ones. */
static bool have_device(void) {
  if (!device_known) {
    mlc_error err = {{0}};
    device_ok = mlc_cuda_available(&err);
    device_known = true;
    if (!device_ok) {
      CHECK_MSG(strstr(err.msg, "no CUDA driver") || strstr(err.msg, "no CUDA device") ||
                    strstr(err.msg, "no usable CUDA device"), "%s", err.msg);
      printf("SKIP device runs (%s)\n", err.msg);
    }
  }
  return device_ok;
}

/* f run on the device against the interpreter, where there is a device. */
static void check_on_device(const mlc_prim_func *f, const char *what) {
  if (!have_device()) return;
  char why[800] = "";
  bool ok = run_on_device(f, why, sizeof why);
  test_report(what, ok, why);
}

/* Every kernel of tests/kernels/gpu on the device. */
static void test_device_runs(void) {
  if (!have_device()) return;
  const char *files[] = {"tests/kernels/gpu/vecadd.py",    "tests/kernels/gpu/window_sum.py",
                         "tests/kernels/gpu/softmax.py",   "tests/kernels/gpu/mm_local.py",
                         "tests/kernels/gpu/mm_shared.py", "tests/kernels/gpu/exprs.py",
                         "tests/kernels/gpu/softmax_xthread.py",
                         "tests/kernels/gpu/rowsum_xthread.py"};
  for (int i = 0; i < MLC_COUNTOF(files); i++) {
    mlc_arena *a = mlc_arena_new();
    const mlc_prim_func *f = load_kernel(a, files[i]);
    CHECK(f);
    if (f) check_on_device(f, files[i]);
    mlc_arena_free(a);
  }
}

int main(void) {
  RUN(test_target_strings);
  test_kernels();
  RUN(test_launch_info);
  RUN(test_shared_compaction);
  RUN(test_refusals);
  RUN(test_barriers);
  RUN(test_design_space_matmul);
  RUN(test_design_space_matmul_guarded);
  RUN(test_notes_schedules);
  RUN(test_lane_indices);
  RUN(test_mlc_ir_build);
  RUN(test_device_runs);
  return test_summary();
}
