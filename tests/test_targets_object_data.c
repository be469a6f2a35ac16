/* Constant data arrays in emitted objects (mlc_target_build_with_data, how
 * mlc-compile places a model's weights beside its kernels): the bytes come
 * back exact and 64-byte aligned from the JIT and from an object linked by
 * the system C compiler, the kernels still compute what the interpreter
 * does, the data stays out of the IR text, and bad requests are refused
 * with the symbol named and nothing built. */
#include "targets/targets.h"
#include "tasks/tasks.h"
#include "tests/test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static mlc_target host;

enum { N_VALS = 1000 };
static float vals[N_VALS];
static const int32_t ints[5] = {1, -2, 300000, INT32_MIN, INT32_MAX};

/* Awkward floats first (NaN, infinities, -0, denormal), then seeded ones. */
static void fill_vals(void) {
  vals[0] = NAN;
  vals[1] = INFINITY;
  vals[2] = -INFINITY;
  vals[3] = -0.0f;
  vals[4] = 1e-45f;
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 42, 1);
  for (int i = 5; i < N_VALS; i++) vals[i] = (float)(mlc_pcg32_next(&rng) % 20001) / 100.0f - 100.0f;
}

static const mlc_object_data data3[] = {
    {"d_vals", vals, sizeof vals},
    {"d_ints", ints, sizeof ints},
    {"d_empty", NULL, 0},
};

/* The matmul task, renamed so that a JIT load does not clash with other
 * objects' "main". */
static mlc_prim_func *matmul(mlc_arena *a) {
  const mlc_task_def *d = mlc_task_find("matmul");
  int64_t shape[3] = {8, 8, 8};
  return mlc_task_build(a, d, shape);
}

static void test_jit_bytes_exact(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = matmul(a);
  const char *sym = "od_mm";
  mlc_object obj;
  mlc_error err;
  mlc_str ir = {0};
  bool ok = mlc_target_build_with_data(&host, 1, &f, &sym, 3, data3, &ir, &obj, &err);
  CHECK_MSG(ok, "%s", err.msg);
  /* The IR text is the kernels' alone: 4 KB of data would swamp it. */
  CHECK(ok && !strstr(mlc_str_cstr(&ir), "d_vals"));
  mlc_jit_lib *lib = ok ? mlc_jit_load(&obj, &err) : NULL;
  CHECK_MSG(!ok || lib, "%s", err.msg);
  if (lib) {
    const void *pv = (const void *)(uintptr_t)mlc_jit_lookup(lib, "d_vals", &err);
    const void *pi = (const void *)(uintptr_t)mlc_jit_lookup(lib, "d_ints", &err);
    const void *pe = (const void *)(uintptr_t)mlc_jit_lookup(lib, "d_empty", &err);
    CHECK_MSG(pv && pi && pe, "%s", err.msg);
    CHECK(pv && memcmp(pv, vals, sizeof vals) == 0);
    CHECK(pi && memcmp(pi, ints, sizeof ints) == 0);
    CHECK(pe && *(const char *)pe == 0);
    CHECK((uintptr_t)pv % 64 == 0 && (uintptr_t)pi % 64 == 0 && (uintptr_t)pe % 64 == 0);
    /* The kernel in the same object still matches the interpreter. */
    mlc_kernel_fn fn = mlc_jit_lookup(lib, sym, &err);
    CHECK_MSG(fn, "%s", err.msg);
    if (fn) {
      mlc_array *got[3], *want[3];
      mlc_array g[3], w[3];
      mlc_pcg32 rng;
      mlc_pcg32_seed(&rng, 7, 7);
      for (int i = 0; i < 3; i++) {
        got[i] = mlc_array_for_buffer(f->params[i]);
        want[i] = mlc_array_for_buffer(f->params[i]);
        mlc_array_fill_random(got[i], &rng);
        memcpy(want[i]->data, got[i]->data, (size_t)mlc_array_numel(got[i]) * sizeof(float));
        g[i] = *got[i];
        w[i] = *want[i];
      }
      CHECK(mlc_kernel_call(fn, 3, g) == 0);
      CHECK_MSG(mlc_interp_run(f, w, &err), "%s", err.msg);
      double me;
      CHECK_MSG(mlc_array_allclose(&g[2], &w[2], 1e-4, 1e-4, &me), "max error %g", me);
      for (int i = 0; i < 3; i++) {
        mlc_array_free(got[i]);
        mlc_array_free(want[i]);
      }
    }
    mlc_jit_unload(lib);
  }
  mlc_str_free(&ir);
  mlc_object_free(&obj);
  mlc_arena_free(a);
}

/* The object written to disk and linked by cc: a C program declaring the
 * arrays extern finds them, with the same values (compared with %a
 * literals it is given, not with the object's own bytes). */
static void test_linked_by_cc(void) {
  if (system("cc --version >/dev/null 2>&1") != 0) {
    printf("SKIP linked_by_cc: no cc\n");
    return;
  }
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = matmul(a);
  const char *sym = "od_mm";
  mlc_object obj;
  mlc_error err;
  bool ok = mlc_target_build_with_data(&host, 1, &f, &sym, 3, data3, NULL, &obj, &err);
  CHECK_MSG(ok, "%s", err.msg);
  char dir[] = "/tmp/mlc_od_XXXXXX";
  CHECK(mkdtemp(dir));
  const char *o = mlc_arena_printf(a, "%s/d.o", dir), *c = mlc_arena_printf(a, "%s/m.c", dir);
  CHECK_MSG(!ok || mlc_object_write(&obj, o, &err), "%s", err.msg);
  mlc_str src = {0};
  mlc_str_puts(&src, "#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
                     "extern const float d_vals[1000];\nextern const int32_t d_ints[5];\n"
                     "static const float want[1000] = {NAN, INFINITY, -INFINITY");
  for (int i = 3; i < N_VALS; i++) mlc_str_printf(&src, ", %af", (double)vals[i]);
  mlc_str_puts(&src, "};\nint main(void) {\n"
                     "  if ((uintptr_t)d_vals % 64 || !isnan(d_vals[0])) return 2;\n"
                     "  if (memcmp(d_vals + 1, want + 1, sizeof want - sizeof *want)) return 3;\n"
                     "  if (d_ints[0] != 1 || d_ints[2] != 300000 || d_ints[3] != INT32_MIN) return 4;\n"
                     "  return 0;\n}\n");
  CHECK_MSG(mlc_write_file(c, src.data, src.len, &err), "%s", err.msg);
  const char *cmd = mlc_arena_printf(a, "cc -std=gnu11 %s %s -o %s/m -lm 2>%s/cc.txt && %s/m", c,
                                     o, dir, dir, dir);
  int rc = ok ? system(cmd) : -1;
  CHECK_MSG(rc == 0, "%s: exit %d", cmd, rc);
  system(mlc_arena_printf(a, "rm -rf %s", dir));
  mlc_str_free(&src);
  mlc_object_free(&obj);
  mlc_arena_free(a);
}

/* One refusal: false, the message contains want, nothing built. */
static void check_refused(const mlc_target *t, const char *sym, int n_data,
                          const mlc_object_data *data, const char *want) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f = matmul(a);
  mlc_object obj = {(void *)1, 1};
  mlc_error err = {0};
  CHECK(!mlc_target_build_with_data(t, 1, &f, &sym, n_data, data, NULL, &obj, &err));
  CHECK_MSG(strstr(err.msg, want), "message \"%s\" lacks \"%s\"", err.msg, want);
  CHECK(obj.data == NULL && obj.len == 0);
  mlc_arena_free(a);
}

static void test_refusals(void) {
  const mlc_object_data twice[] = {{"d_a", ints, 4}, {"d_a", ints, 8}};
  check_refused(&host, "od_mm", 2, twice, "two data arrays would both be named d_a");
  const mlc_object_data clash[] = {{"od_mm", ints, 4}};
  check_refused(&host, "od_mm", 1, clash, "data array od_mm has the name of a function");
  mlc_target cuda;
  mlc_error err;
  if (mlc_target_parse("cuda", &cuda, &err))
    check_refused(&cuda, "od_mm", 1, data3, "cannot place data arrays in its objects");
}

int main(void) {
  mlc_target_host(&host);
  fill_vals();
  RUN(test_jit_bytes_exact);
  RUN(test_linked_by_cc);
  RUN(test_refusals);
  return test_summary();
}
