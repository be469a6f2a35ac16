/* tensorize with the notes' tmm16 intrinsic: the whole example (matmul
 * blockized, cached into global.A_reg / global.B_reg /
 * global.accumulator, decomposed, tensorized) against a golden print; its
 * trace through JSON, print and replay; its numerics in the interpreter
 * (tmm16 registered with it) and in LLVM code (JIT, and an object linked
 * with examples/tensorize/tmm16.c by the system compiler) against the
 * unscheduled kernel; tensorize of a loop; an intrinsic added from
 * TVMScript; and refusals for TensorIR's reasons, each leaving the state
 * (print, trace, handles, generator) as it was. */
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tests/test.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- the extern function ---------------------------------------------------- */

int32_t tmm16(float *c, const float *a, const float *b, int32_t sa, int32_t sb, int32_t sc);
int32_t tmm16(float *c, const float *a, const float *b, int32_t sa, int32_t sb, int32_t sc) {
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      float acc = c[i * sc + j];
      for (int k = 0; k < 16; k++) acc += a[i * sa + k] * b[j * sb + k];
      c[i * sc + j] = acc;
    }
  return 0;
}

static int n_calls;

static double tmm16_x(void *ud, int n, const mlc_extern_val *v) {
  (void)ud;
  n_calls++;
  if (n != 6 || v[0].kind != MLC_XARG_PTR || v[0].dtype != MLC_FLOAT32) return -1;
  return tmm16(v[0].p, v[1].p, v[2].p, (int32_t)v[3].i, (int32_t)v[4].i, (int32_t)v[5].i);
}

/* ---- helpers ------------------------------------------------------------------ */

static mlc_prim_func *parse_file(mlc_arena *a, const char *path) {
  char *text = test_read_file(path, NULL);
  if (!text) return NULL;
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, path, text, &err);
  mlc_free(text);
  CHECK_MSG(m, "%s", err.msg);
  return m ? m->funcs[0] : NULL;
}

static mlc_prim_func *parse_text(mlc_arena *a, const char *text) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "t.py", text, &err);
  CHECK_MSG(m, "%s", err.msg);
  return m ? m->funcs[0] : NULL;
}

static void print_func(mlc_str *out, const mlc_prim_func *f) {
  mlc_module m = {.name = "Module", .n_funcs = 1, .funcs = (mlc_prim_func **)&f};
  mlc_print_module(out, &m);
}

/* The notes' schedule up to (not including) the steps named by `upto`:
 * "all" runs everything but tensorize. Returns the block handle of
 * matmul_o_update (or matmul_o). */
typedef struct notes_opts {
  int factor;        /* split factor (16 in the notes) */
  bool cache;        /* cache_read/cache_write into the special scopes */
  bool decompose;    /* decompose_reduction */
} notes_opts;

static bool notes_schedule(mlc_sched *s, notes_opts o, mlc_rv *block) {
  mlc_error err;
  mlc_rv b0, *l, i[2], j[2], k[2], A, B, C, init;
  bool ok = mlc_sched_get_block(s, "matmul", "main", &b0, &err);
  ok = ok && mlc_sched_get_loops(s, b0, &l, &err) == 3;
  mlc_rv l0 = l[0], l1 = l[1], l2 = l[2];
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_INT(o.factor)};
  ok = ok && mlc_sched_split(s, l0, 2, f, true, i, &err) && mlc_sched_split(s, l1, 2, f, true, j, &err) &&
       mlc_sched_split(s, l2, 2, f, true, k, &err);
  ok = ok && mlc_sched_reorder(s, 6, (mlc_rv[]){i[0], j[0], k[0], i[1], j[1], k[1]}, &err);
  ok = ok && mlc_sched_blockize(s, i[1], true, block, &err);
  if (ok && o.cache) {
    ok = mlc_sched_cache_read(s, *block, 0, "global.A_reg", 0, NULL, &A, &err) &&
         mlc_sched_cache_read(s, *block, 1, "global.B_reg", 0, NULL, &B, &err) &&
         mlc_sched_compute_at(s, A, k[0], false, -1, &err) &&
         mlc_sched_compute_at(s, B, k[0], false, -1, &err) &&
         mlc_sched_cache_write(s, *block, 0, "global.accumulator", 0, NULL, &C, &err) &&
         mlc_sched_reverse_compute_at(s, C, j[0], false, -1, &err);
  }
  if (ok && o.decompose) ok = mlc_sched_decompose_reduction(s, *block, k[0], &init, &err);
  CHECK_MSG(ok, "schedule: %s", err.msg);
  return ok;
}

static const notes_opts notes = {16, true, true};

/* Random inputs, C zeroed; both functions run in the interpreter (the
 * scheduled one calling tmm16 through the registry) or got compiled. */
static void fill_inputs(const mlc_prim_func *f, mlc_array *args) {
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, 5, 9);
  for (int i = 0; i < f->n_params; i++) {
    mlc_array *x = mlc_array_for_buffer(f->params[i]);
    if (i < 2) mlc_array_fill_random(x, &r);
    args[i] = *x;
    mlc_free(x);
  }
}

static void free_args(int n, mlc_array *args) {
  for (int i = 0; i < n; i++) mlc_free(args[i].data);
}

static bool close_to(const mlc_array *got, const mlc_array *want, const char *what) {
  double me;
  bool ok = mlc_array_allclose(got, want, 1e-5, 1e-5, &me);
  CHECK_MSG(ok, "%s: max error %g", what, me);
  return ok;
}

/* The unscheduled kernel's C (interpreter). */
static void reference(const mlc_prim_func *f, mlc_array *want) {
  mlc_error err;
  fill_inputs(f, want);
  CHECK_MSG(mlc_interp_run(f, want, &err), "%s", err.msg);
}

/* ---- the notes' example --------------------------------------------------------- */

static void test_golden_notes(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_file(a, "examples/tensorize/matmul.py");
  if (!f) goto out;
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b;
  mlc_error err;
  if (notes_schedule(s, notes, &b)) {
    CHECK_MSG(mlc_sched_tensorize(s, b, "tmm16", &err), "%s", err.msg);
    CHECK_MSG(mlc_verify_func(mlc_sched_func(s), &err), "%s", err.msg);
    mlc_str got = {0};
    print_func(&got, mlc_sched_func(s));
    char *want = test_read_file("tests/sched_golden/tensorize_tmm16.expected", NULL);
    if (want) CHECK_STREQ(got.data, want);
    mlc_free(want);
    CHECK(strstr(got.data, "T.call_extern(\"int32\", \"tmm16\", T.access_ptr(C_global_accumulator[vi_o * 16:vi_o * 16 + 16, vj_o * 16:vj_o * 16 + 16], \"rw\")"));
    mlc_str_free(&got);
  }
  mlc_sched_free(s);
out:
  mlc_arena_free(a);
}

/* The trace: JSON round trip, the Python-like print, replay on a fresh
 * state (the example's file) giving the same function. */
static void test_trace_replay(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_file(a, "examples/tensorize/matmul.py");
  if (!f) goto out;
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b;
  mlc_error err;
  if (notes_schedule(s, notes, &b) && mlc_sched_tensorize(s, b, "tmm16", &err)) {
    mlc_str json = {0}, json2 = {0}, py = {0};
    mlc_trace_to_json(&json, mlc_sched_trace(s));
    CHECK_MSG(strstr(json.data, "[\"Tensorize\",[\"b10\"],{\"intrin\":\"tmm16\"},[]]"), "%s", json.data);
    mlc_trace *t = mlc_trace_from_json(a, json.data, json.len, &err);
    CHECK_MSG(t, "%s", err.msg);
    if (t) {
      mlc_trace_to_json(&json2, t);
      CHECK_STREQ(json.data, json2.data);
      mlc_trace_print(&py, t);
      CHECK_MSG(strstr(py.data, "  sch.tensorize(block_or_loop=b10, tensor_intrin=\"tmm16\")\n"), "%s", py.data);
      mlc_sched *r = mlc_sched_new(f, 7);
      CHECK_MSG(mlc_sched_replay(r, t, NULL, NULL, &err), "%s", err.msg);
      CHECK(mlc_func_struct_equal(mlc_sched_func(r), mlc_sched_func(s)));
      mlc_str p1 = {0}, p2 = {0};
      print_func(&p1, mlc_sched_func(r));
      print_func(&p2, mlc_sched_func(s));
      CHECK_STREQ(p1.data, p2.data);
      mlc_str_free(&p1), mlc_str_free(&p2);
      mlc_sched_free(r);
    }
    /* The example's stored trace is the same one. */
    char *file = test_read_file("examples/tensorize/tmm16_trace.json", NULL);
    mlc_trace *ft = file ? mlc_trace_from_json(a, file, strlen(file), &err) : NULL;
    CHECK_MSG(ft, "%s", err.msg);
    if (ft) {
      mlc_str fj = {0};
      mlc_trace_to_json(&fj, ft);
      CHECK_STREQ(fj.data, json.data);
      mlc_str_free(&fj);
    }
    mlc_free(file);
    /* Replay refuses an unknown intrinsic by name. */
    char *bad = mlc_arena_strdup(a, json.data);
    char *at = strstr(bad, "\"tmm16\"");
    if (at) memcpy(at, "\"tmm99\"", 7);
    mlc_trace *bt = mlc_trace_from_json(a, bad, strlen(bad), &err);
    mlc_sched *r2 = mlc_sched_new(f, 7);
    CHECK(bt && !mlc_sched_replay(r2, bt, NULL, NULL, &err));
    CHECK_MSG(strstr(err.msg, "no tensor intrinsic named \"tmm99\""), "%s", err.msg);
    mlc_sched_free(r2);
    mlc_str_free(&json), mlc_str_free(&json2), mlc_str_free(&py);
  } else {
    CHECK_MSG(0, "%s", err.msg);
  }
  mlc_sched_free(s);
out:
  mlc_arena_free(a);
}

static mlc_sched *tensorized_notes(mlc_arena *a, const mlc_prim_func **orig) {
  mlc_prim_func *f = parse_file(a, "examples/tensorize/matmul.py");
  if (!f) return NULL;
  *orig = f;
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_rv b;
  mlc_error err;
  if (!notes_schedule(s, notes, &b) || !mlc_sched_tensorize(s, b, "tmm16", &err)) {
    CHECK_MSG(0, "%s", err.msg);
    mlc_sched_free(s);
    return NULL;
  }
  return s;
}

static void test_interp_numerics(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f;
  mlc_sched *s = tensorized_notes(a, &f);
  if (s) {
    mlc_array want[3], got[3];
    mlc_error err;
    reference(f, want);
    fill_inputs(f, got);
    n_calls = 0;
    CHECK_MSG(mlc_interp_run(mlc_sched_func(s), got, &err), "%s", err.msg);
    CHECK_MSG(n_calls == 4 * 4 * 4, "tmm16 called %d times", n_calls);
    close_to(&got[2], &want[2], "interpreter, tensorized vs unscheduled");
    free_args(3, want), free_args(3, got);
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

static void test_jit_numerics(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f;
  mlc_sched *s = tensorized_notes(a, &f);
  if (s) {
    mlc_error err;
    mlc_target t;
    mlc_object obj = {0};
    const mlc_prim_func *g = mlc_sched_func(s);
    CHECK(mlc_target_parse("llvm", &t, &err));
    CHECK(mlc_jit_define_symbol("tmm16", (void *)tmm16, &err));
    bool built = mlc_target_build(&t, 1, &g, NULL, NULL, &obj, &err);
    CHECK_MSG(built, "%s", err.msg);
    mlc_jit_lib *lib = built ? mlc_jit_load(&obj, &err) : NULL;
    mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, g->name, &err) : NULL;
    CHECK_MSG(!built || fn, "%s", err.msg);
    if (fn) {
      mlc_array want[3], got[3];
      reference(f, want);
      fill_inputs(f, got);
      CHECK(mlc_kernel_call(fn, 3, got) == 0);
      close_to(&got[2], &want[2], "LLVM, tensorized vs unscheduled");
      free_args(3, want), free_args(3, got);
    }
    mlc_jit_unload(lib);
    if (built) mlc_object_free(&obj);
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

/* The object and header written as mlc-ir build writes them, linked by
 * the system compiler with examples/tensorize/tmm16.c and the runtime. */
static void test_object_links(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f;
  mlc_sched *s = tensorized_notes(a, &f);
  if (!s) goto out;
  mlc_error err;
  mlc_target t;
  mlc_target_host(&t);
  const mlc_prim_func *g = mlc_sched_func(s);
  const char *sym[1] = {"mm"};
  mlc_object obj;
  mlc_str hdr = {0};
  CHECK(mlc_target_write_header(&hdr, 1, &g, sym, "MM_H", &err));
  if (!mlc_target_build(&t, 1, &g, sym, NULL, &obj, &err)) {
    CHECK_MSG(0, "build: %s", err.msg);
    goto done;
  }
  char dir[] = "/tmp/mlc_tensorize_XXXXXX", path[512], cmd[2048];
  if (!mkdtemp(dir)) {
    CHECK_MSG(0, "no temp dir");
    mlc_object_free(&obj);
    goto done;
  }
  snprintf(path, sizeof path, "%s/mm.o", dir);
  CHECK(mlc_object_write(&obj, path, &err));
  snprintf(path, sizeof path, "%s/mm.h", dir);
  CHECK(mlc_write_file(path, hdr.data, hdr.len, &err));
  static const char prog[] =
      "#include <stdio.h>\n#include \"mm.h\"\n"
      "static float A[64*64], B[64*64], C[64*64];\n"
      "int main(void) {\n"
      "  for (int i = 0; i < 64*64; i++) { A[i] = (float)(i % 7) - 3; B[i] = (float)(i % 5) * 0.5f; }\n"
      "  if (mm_call(A, B, C) != 0) return 2;\n"
      "  for (int i = 0; i < 64; i++) for (int j = 0; j < 64; j++) {\n"
      "    float s = 0; for (int k = 0; k < 64; k++) s += A[i*64+k] * B[j*64+k];\n"
      "    if (s != C[i*64+j]) { printf(\"bad %d %d %g %g\\n\", i, j, s, C[i*64+j]); return 1; }\n"
      "  }\n"
      "  printf(\"ok\\n\");\n  return 0;\n}\n";
  snprintf(path, sizeof path, "%s/main.c", dir);
  CHECK(mlc_write_file(path, prog, strlen(prog), &err));
  snprintf(cmd, sizeof cmd,
           "cd %s && cc -O1 -ffp-contract=off -o prog main.c mm.o '%s/examples/tensorize/tmm16.c' "
           "'%s/targets/runtime/parallel.c' '%s/targets/runtime/workspace.c' -I'%s' -fopenmp -lm "
           "> cc.log 2>&1 && ./prog > out.txt 2>&1 && grep -q '^ok$' out.txt",
           dir, MLC_SOURCE_DIR, MLC_SOURCE_DIR, MLC_SOURCE_DIR, MLC_SOURCE_DIR);
  int rc = system(cmd);
  if (rc != 0) {
    snprintf(path, sizeof path, "%s/cc.log", dir);
    char *l = mlc_read_file(path, NULL, &err);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    char *o = mlc_read_file(path, NULL, &err);
    CHECK_MSG(0, "compile+run failed (%d): %.300s %.200s", rc, l ? l : "", o ? o : "");
    mlc_free(l), mlc_free(o);
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) CHECK_MSG(0, "rm failed");
  mlc_object_free(&obj);
done:
  mlc_str_free(&hdr);
  mlc_sched_free(s);
out:
  mlc_arena_free(a);
}

/* ---- tensorize of a loop, and a user intrinsic ------------------------------------ */

/* Operands already in the intrinsic's scopes, no init: tensorize the loop
 * i_1 directly (it blockizes). */
static const char *const scoped_src =
    "@T.prim_func\n"
    "def main(A: T.Buffer((32, 16), \"float32\", scope=\"global.A_reg\"), B: T.Buffer((32, 16), "
    "\"float32\", scope=\"global.B_reg\"), C: T.Buffer((32, 32), \"float32\", scope=\"global.accumulator\")):\n"
    "    for i, j, k in T.grid(32, 32, 16):\n"
    "        with T.block(\"update\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]\n";

static bool split_ij(mlc_sched *s, int factor, mlc_rv *inner_i) {
  mlc_error err;
  mlc_rv b, *l, i[2], j[2];
  mlc_operand f[2] = {MLC_OP_NONE, MLC_OP_INT(factor)};
  bool ok = mlc_sched_get_block(s, "update", NULL, &b, &err) && mlc_sched_get_loops(s, b, &l, &err) == 3;
  mlc_rv l0 = l[0], l1 = l[1], l2 = l[2];
  ok = ok && mlc_sched_split(s, l0, 2, f, true, i, &err) && mlc_sched_split(s, l1, 2, f, true, j, &err) &&
       mlc_sched_reorder(s, 5, (mlc_rv[]){i[0], j[0], i[1], j[1], l2}, &err);
  CHECK_MSG(ok, "%s", err.msg);
  *inner_i = i[1];
  return ok;
}

static void check_loop_tensorize(const char *intrin) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_text(a, scoped_src);
  mlc_sched *s = f ? mlc_sched_new(f, 3) : NULL;
  mlc_rv l;
  mlc_error err;
  if (s && split_ij(s, 16, &l)) {
    CHECK_MSG(mlc_sched_tensorize(s, l, intrin, &err), "%s", err.msg);
    mlc_str py = {0};
    mlc_trace_print(&py, mlc_sched_trace(s));
    CHECK_MSG(strstr(py.data, "sch.tensorize(block_or_loop=l5, tensor_intrin=") && !strstr(py.data, "blockize"),
              "%s", py.data);
    mlc_str_free(&py);
    mlc_array want[3], got[3];
    reference(f, want);
    fill_inputs(f, got);
    n_calls = 0;
    CHECK_MSG(mlc_interp_run(mlc_sched_func(s), got, &err), "%s", err.msg);
    CHECK(n_calls == 4);
    close_to(&got[2], &want[2], intrin);
    free_args(3, want), free_args(3, got);
  }
  mlc_sched_free(s);
  mlc_arena_free(a);
}

static void test_loop(void) { check_loop_tensorize("tmm16"); }

/* examples/tensorize/tmm16.py under another name, added from TVMScript. */
static void test_user_intrin(void) {
  char *text = test_read_file("examples/tensorize/tmm16.py", NULL);
  if (!text) return;
  for (char *p = text; (p = strstr(p, "tmm16_")) != NULL; p += 6) memcpy(p, "mytmm_", 6);
  mlc_error err;
  int n = 0;
  CHECK(!mlc_tensor_intrin_exists("mytmm"));
  CHECK_MSG(mlc_tensor_intrin_register_text("mytmm.py", text, &n, &err), "%s", err.msg);
  CHECK(n == 1 && mlc_tensor_intrin_exists("mytmm"));
  mlc_free(text);
  check_loop_tensorize("mytmm");
  CHECK(!mlc_tensor_intrin_register_text("none.py", "@T.prim_func\ndef f(A: T.Buffer((1,), \"float32\")):\n"
                                         "    A[0] = T.float32(1)\n", &n, &err));
  CHECK_MSG(strstr(err.msg, "no tensor intrinsic"), "%s", err.msg);
}

/* ---- refusals -------------------------------------------------------------------------- */

typedef struct snapshot {
  mlc_str print, json;
  int n_rvs;
  mlc_sched *copy; /* its generator, to compare draws */
} snapshot;

static void take(snapshot *x, mlc_sched *s) {
  memset(x, 0, sizeof *x);
  print_func(&x->print, mlc_sched_func(s));
  mlc_trace_to_json(&x->json, mlc_sched_trace(s));
  x->n_rvs = mlc_sched_n_rvs(s);
  x->copy = mlc_sched_copy(s);
}

/* s is exactly as at the snapshot: print, trace, handles, generator. */
static void same_as(snapshot *x, mlc_sched *s) {
  snapshot y;
  take(&y, s);
  CHECK_STREQ(y.print.data, x->print.data);
  CHECK_STREQ(y.json.data, x->json.data);
  CHECK(y.n_rvs == x->n_rvs);
  mlc_error err;
  mlc_rv v1, v2;
  int64_t c[4] = {1, 2, 3, 4};
  double p[4] = {1, 1, 1, 1};
  CHECK(mlc_sched_sample_categorical(x->copy, 4, c, p, &v1, &err));
  CHECK(mlc_sched_sample_categorical(y.copy, 4, c, p, &v2, &err));
  CHECK(mlc_sched_rv_value(x->copy, v1) == mlc_sched_rv_value(y.copy, v2));
  mlc_sched_free(y.copy), mlc_str_free(&y.print), mlc_str_free(&y.json);
  mlc_sched_free(x->copy), mlc_str_free(&x->print), mlc_str_free(&x->json);
}

/* Schedule `src` (the notes' matmul or a variant) with o, tensorize the
 * block with tmm16, expect a refusal mentioning `want`. */
static void expect_refusal(const char *src, notes_opts o, const char *want) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = src ? parse_text(a, src) : parse_file(a, "examples/tensorize/matmul.py");
  mlc_sched *s = f ? mlc_sched_new(f, 11) : NULL;
  mlc_rv b;
  mlc_error err;
  if (s && notes_schedule(s, o, &b)) {
    snapshot x;
    take(&x, s);
    CHECK_MSG(!mlc_sched_tensorize(s, b, "tmm16", &err), "tensorized, expected: %s", want);
    CHECK_MSG(strstr(err.msg, want), "got \"%s\", want \"%s\"", err.msg, want);
    CHECK_MSG(strstr(err.msg, "tensorize: b"), "%s", err.msg);
    same_as(&x, s);
  }
  mlc_sched_free(s);
  mlc_arena_free(a);
}

static void test_refuse_init(void) {
  expect_refusal(NULL, (notes_opts){16, true, false}, "reduction mismatch: block matmul_o has an init");
}

static void test_refuse_scope(void) {
  expect_refusal(NULL, (notes_opts){16, false, true},
                 "storage scope mismatch: buffer C is in \"global\", the intrinsic's operand C in "
                 "\"global.accumulator\"");
}

static void test_refuse_shape(void) {
  expect_refusal(NULL, (notes_opts){8, true, true}, "shape mismatch: loop i_1 has extent 8");
}

static char *variant(const char *from, const char *to) {
  char *text = test_read_file("examples/tensorize/matmul.py", NULL);
  if (!text) return NULL;
  char *at = strstr(text, from);
  CHECK_MSG(at, "no %s in matmul.py", from);
  if (!at) return text;
  size_t n = strlen(text) + strlen(to) + 1;
  char *out = mlc_xmalloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  mlc_free(text);
  return out;
}

static void test_refuse_dtype(void) {
  char *src = variant("C: T.Buffer((64, 64), \"float32\")", "C: T.Buffer((64, 64), \"float16\")");
  if (!src) return;
  char *src2 = src;
  for (char *p = strstr(src2, "T.float32(0)"); p; p = NULL) memcpy(p, "T.float16(0)", 12);
  /* C = C + T.Cast(...) would not parse as written: cast the product. */
  char *v = strstr(src2, "C[vi, vj] + A[vi, vk] * B[vj, vk]");
  if (v) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%.*sC[vi, vj] + T.Cast(\"float16\", A[vi, vk] * B[vj, vk])%s", (int)(v - src2),
             src2, v + strlen("C[vi, vj] + A[vi, vk] * B[vj, vk]"));
    expect_refusal(buf, notes, "dtype mismatch");
  }
  mlc_free(src);
}

static void test_refuse_access(void) {
  char *src = variant("A[vi, vk] * B[vj, vk]", "A[vi, vk] * B[vk, vj]");
  if (src) expect_refusal(src, notes, "access pattern mismatch: B_global_B_reg index");
  mlc_free(src);
}

/* A kernel indexed by int64 (as ONNX exports' sizes are) against tmm16's
 * int32 description: refused by name, where substituting one var for the
 * other built a mixed-type index and aborted. */
static void test_refuse_index_dtype(void) {
  char *text = test_read_file("examples/tensorize/matmul.py", NULL);
  mlc_str src = {0};
  for (const char *p = text; p && *p;) {
    const char *at = strstr(p, "64");
    size_t n = at ? (size_t)(at - p) : strlen(p);
    mlc_str_printf(&src, "%.*s%s", (int)n, p, at ? "T.int64(64)" : "");
    p = at ? at + 2 : p + n;
  }
  /* no caches: compute_at of int32-indexed cache blocks at int64 loops is another matter */
  if (text) expect_refusal(src.data, (notes_opts){16, false, true}, "dtype mismatch: index");
  mlc_str_free(&src);
  mlc_free(text);
}

/* A loop refused: blockize must not have happened either. */
static void test_refuse_loop(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_text(a, scoped_src);
  mlc_sched *s = f ? mlc_sched_new(f, 3) : NULL;
  mlc_rv l;
  mlc_error err;
  if (s && split_ij(s, 8, &l)) {
    snapshot x;
    take(&x, s);
    CHECK(!mlc_sched_tensorize(s, l, "tmm16", &err));
    CHECK_MSG(strstr(err.msg, "shape mismatch"), "%s", err.msg);
    same_as(&x, s);
    take(&x, s);
    CHECK(!mlc_sched_tensorize(s, l, "no_such_intrin", &err));
    CHECK_MSG(strstr(err.msg, "no tensor intrinsic named \"no_such_intrin\""), "%s", err.msg);
    same_as(&x, s);
  }
  mlc_sched_free(s);
  mlc_arena_free(a);
}

/* A block already tensorized is not matched again. */
static void test_refuse_twice(void) {
  mlc_arena *a = mlc_arena_new();
  const mlc_prim_func *f;
  mlc_sched *s = tensorized_notes(a, &f);
  if (s) {
    mlc_error err;
    mlc_rv b;
    CHECK(mlc_sched_get_block(s, "matmul_o_update", NULL, &b, &err));
    snapshot x;
    take(&x, s);
    CHECK(!mlc_sched_tensorize(s, b, "tmm16", &err));
    CHECK_MSG(strstr(err.msg, "mismatch"), "%s", err.msg);
    same_as(&x, s);
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

int main(void) {
  mlc_interp_register_extern("tmm16", tmm16_x, NULL);
  RUN(test_golden_notes);
  RUN(test_trace_replay);
  RUN(test_interp_numerics);
  RUN(test_jit_numerics);
  RUN(test_object_links);
  RUN(test_loop);
  RUN(test_user_intrin);
  RUN(test_refuse_init);
  RUN(test_refuse_scope);
  RUN(test_refuse_shape);
  RUN(test_refuse_dtype);
  RUN(test_refuse_access);
  RUN(test_refuse_index_dtype);
  RUN(test_refuse_loop);
  RUN(test_refuse_twice);
  mlc_jit_shutdown();
  return test_summary();
}
