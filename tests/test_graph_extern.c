/* graph/ call_extern nodes: a model calling a plain C function between
 * compiled ops (dense -> scale_shift -> relu -> dense, and a call over
 * weights only that folding must leave alone), printed as
 * R.call_dps_packed, untouched by the passes, run compiled (JIT) and by the
 * reference executor against a plain C evaluation; the model loader's and
 * the runner's refusals. */
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "measure/measure.h"
#include "onnx/onnx.pb-c.h"
#include "targets/targets.h"
#include "tests/test.h"
#include "tuner/tuner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The user's function: out[i, j] = a[i, j] * s[j] + 0.25, for [R, 6] a. */
static int scale_calls;
static int32_t scale_shift_rows(const float *a, const float *s, float *out, int rows) {
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < 6; j++) out[i * 6 + j] = a[i * 6 + j] * s[j] + 0.25f;
  return 0;
}
/* Called on [2, 6] and on [3, 6] data: the shape comes from the model. */
static int32_t scale_shift2(const float *a, const float *s, float *out) {
  scale_calls++;
  return scale_shift_rows(a, s, out, 2);
}
static int32_t scale_shift3(const float *a, const float *s, float *out) {
  scale_calls++;
  return scale_shift_rows(a, s, out, 3);
}
static int32_t fails(const float *a, const float *s, float *out) {
  (void)a, (void)s, (void)out;
  return 7;
}

/* y = dense(relu(ss(dense(x, w0, b0), s)), ss3(w1, s1)): two functions
 * because the two calls have different shapes (a C function sees only
 * pointers). */
static const char *model_json =
    "{\"name\": \"ext\", \"inputs\": [{\"name\": \"x\", \"shape\": [2, 8]}],"
    " \"weights\": [{\"name\": \"w0\", \"shape\": [6, 8]}, {\"name\": \"b0\", \"shape\": [6]},"
    "   {\"name\": \"s\", \"shape\": [6]}, {\"name\": \"w1\", \"shape\": [3, 6]},"
    "   {\"name\": \"s1\", \"shape\": [6]}],"
    " \"nodes\": ["
    "   {\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w0\", \"b0\"]},"
    "   {\"name\": \"e\", \"op\": \"call_extern\", \"func\": \"scale_shift\", \"inputs\": [\"d\", \"s\"],"
    "    \"out_shape\": [2, 6]},"
    "   {\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"e\"]},"
    "   {\"name\": \"k\", \"op\": \"call_extern\", \"func\": \"scale_shift3\", \"inputs\": [\"w1\", \"s1\"],"
    "    \"out_shape\": [3, 6], \"dtype\": \"float32\"},"
    "   {\"name\": \"y\", \"op\": \"dense\", \"inputs\": [\"r\", \"k\"]}],"
    " \"outputs\": [\"y\"]}";

static mlc_gmodule *load(mlc_error *err) {
  mlc_gmodule *m = mlc_graph_parse("t.json", model_json, strlen(model_json), NULL, err);
  if (m && !(mlc_graph_define_extern(m, "scale_shift", (void *)scale_shift2, err) &&
             mlc_graph_define_extern(m, "scale_shift3", (void *)scale_shift3, err))) {
    mlc_graph_free(m);
    return NULL;
  }
  return m;
}

static const mlc_gvar *weight(const mlc_gmodule *m, const char *name) {
  for (int i = 0; i < m->n_consts; i++)
    if (strcmp(m->consts[i]->name, name) == 0) return m->consts[i];
  return NULL;
}

/* The model in plain C from the loaded weights. */
static void plain_c(const mlc_gmodule *m, const float *x, float *y) {
  const float *w0 = weight(m, "w0")->data, *b0 = weight(m, "b0")->data, *s = weight(m, "s")->data,
              *w1 = weight(m, "w1")->data, *s1 = weight(m, "s1")->data;
  float r[2][6], k[3][6];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 6; j++) {
      double acc = b0[j];
      for (int q = 0; q < 8; q++) acc += (double)x[i * 8 + q] * w0[j * 8 + q];
      float e = (float)acc * s[j] + 0.25f;
      r[i][j] = e > 0 ? e : 0;
    }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 6; j++) k[i][j] = w1[i * 6 + j] * s1[j] + 0.25f;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      double acc = 0;
      for (int q = 0; q < 6; q++) acc += (double)r[i][q] * k[j][q];
      y[i * 3 + j] = (float)acc;
    }
}

static void test_print_load(void) {
  mlc_error err;
  mlc_gmodule *m = load(&err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  mlc_str s = {0};
  mlc_graph_print(&s, m, 0);
  const char *t = mlc_str_cstr(&s);
  CHECK_MSG(strstr(t, "            e = R.call_dps_packed(\"scale_shift\", (d, metadata[\"s\"]), "
                      "out_sinfo=R.Tensor((2, 6), dtype=\"float32\"))\n"),
            "%s", t);
  CHECK_MSG(strstr(t, "k = R.call_dps_packed(\"scale_shift3\", (metadata[\"w1\"], metadata[\"s1\"]), "
                      "out_sinfo=R.Tensor((3, 6), dtype=\"float32\"))"),
            "%s", t);
  CHECK(!strstr(t, "cls = Module")); /* call_dps_packed names no member of the module */
  const char **names;
  int n = mlc_graph_extern_names(m, &names);
  CHECK(n == 2 && strcmp(names[0], "scale_shift") == 0 && strcmp(names[1], "scale_shift3") == 0);
  mlc_str_free(&s);
  mlc_graph_free(m);
}

/* The passes leave the calls alone: nothing folded (k's inputs are all
 * weights), nothing fused into or across them, both still in main. */
static void test_passes_leave_it(void) {
  mlc_error err;
  mlc_gmodule *m = load(&err);
  CHECK_MSG(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  if (!m) return;
  const mlc_gfunc *f = mlc_graph_main(m);
  int ext = 0, tir = 0;
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    ext += b->kind == MLC_GCALL_EXTERN;
    tir += b->kind == MLC_GCALL_TIR;
    if (b->kind == MLC_GCALL_EXTERN && strcmp(b->var->name, "e") == 0)
      CHECK(b->n_args == 2 && strcmp(b->args[0]->name, "d") == 0 &&
            strcmp(b->extern_func, "scale_shift") == 0);
    if (b->kind == MLC_GCALL_EXTERN && strcmp(b->var->name, "k") == 0)
      CHECK(b->args[0]->kind == MLC_GVAR_CONST && b->args[1]->kind == MLC_GVAR_CONST);
  }
  CHECK_MSG(ext == 2 && tir == 3, "%d extern, %d call_tir", ext, tir); /* dense+bias, relu, dense */
  CHECK(weight(m, "s") && weight(m, "s1") && weight(m, "w1")); /* still used by the calls */
  mlc_gtask *ts;
  int nt = mlc_graph_extract_tasks(m, &ts);
  CHECK(nt == 3); /* nothing to tune for the extern calls */
  mlc_free(ts);
  mlc_graph_free(m);
}

typedef struct compiled {
  int n;
  mlc_prim_func **funcs;
  mlc_kernel_fn *fns;
  mlc_jit_lib *lib;
} compiled;

static bool jit_kernel(void *ud, const mlc_prim_func *f, int n, mlc_array *args, mlc_error *err) {
  compiled *c = ud;
  for (int i = 0; i < c->n; i++)
    if (c->funcs[i] == f) return mlc_kernel_call(c->fns[i], n, args) == 0;
  return mlc_error_set(err, "no kernel for %s", f->name);
}

static bool compile_kernels(mlc_gmodule *m, mlc_arena *a, compiled *c) {
  mlc_error err;
  mlc_target t;
  mlc_target_host(&t);
  c->n = m->tir->n_funcs;
  c->funcs = m->tir->funcs;
  const mlc_prim_func **sched = MLC_NEW_ARRAY(a, const mlc_prim_func *, c->n);
  const char **syms = MLC_NEW_ARRAY(a, const char *, c->n);
  for (int i = 0; i < c->n; i++) {
    sched[i] = mlc_tuner_cpu_default_schedule(a, c->funcs[i]);
    syms[i] = mlc_graph_symbol(a, m, c->funcs[i]);
  }
  mlc_object obj;
  bool ok = mlc_target_build(&t, c->n, sched, syms, NULL, &obj, &err);
  CHECK_MSG(ok, "%s", err.msg);
  if (!ok) return false;
  c->lib = mlc_jit_load(&obj, &err);
  mlc_object_free(&obj);
  CHECK_MSG(c->lib, "%s", err.msg);
  if (!c->lib) return false;
  c->fns = MLC_NEW_ARRAY(a, mlc_kernel_fn, c->n);
  for (int i = 0; i < c->n; i++)
    if (!(c->fns[i] = mlc_jit_lookup(c->lib, syms[i], &err))) return false;
  return true;
}

/* Compiled kernels + the C function, and the reference executor, each
 * against the plain C evaluation. */
static void test_run_matches(void) {
  mlc_error err;
  mlc_gmodule *m = load(&err), *r = load(&err);
  CHECK_MSG(m && r && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  if (!m || !r) return;
  mlc_arena *a = mlc_arena_new();
  compiled c = {0};
  if (compile_kernels(m, a, &c)) {
    for (int seed = 0; seed < 3; seed++) {
      int64_t xs[2] = {2, 8}, ys[2] = {2, 3};
      mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, xs);
      mlc_array *y = mlc_array_new(MLC_FLOAT32, 2, ys), *yr = mlc_array_new(MLC_FLOAT32, 2, ys);
      mlc_array *want = mlc_array_new(MLC_FLOAT32, 2, ys);
      mlc_pcg32 rng;
      mlc_pcg32_seed(&rng, 40 + (uint64_t)seed, 0);
      mlc_array_fill_random(x, &rng);
      plain_c(r, x->data, want->data);
      scale_calls = 0;
      CHECK_MSG(mlc_graph_execute(m, jit_kernel, &c, &x, &y, &err), "%s", err.msg);
      CHECK(scale_calls == 2);
      CHECK_MSG(mlc_graph_reference(r, &x, &yr, &err), "%s", err.msg);
      double e1 = 1, e2 = 1;
      CHECK_MSG(mlc_check_close(y, want, MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e1), "compiled: %g", e1);
      CHECK_MSG(mlc_check_close(yr, want, MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e2), "reference: %g",
                e2);
      /* the interpreter's kernels with the same function */
      CHECK_MSG(mlc_graph_execute(m, NULL, NULL, &x, &yr, &err), "%s", err.msg);
      CHECK(mlc_check_close(yr, want, MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e2));
      mlc_array_free(x);
      mlc_array_free(y);
      mlc_array_free(yr);
      mlc_array_free(want);
    }
    /* each function counted: 3 seeds, compiled and interpreted kernels */
    for (int i = 0; i < m->n_externs; i++)
      CHECK_MSG(m->externs[i].calls == 6 && m->externs[i].sec >= 0, "%s: %lld calls",
                m->externs[i].name, (long long)m->externs[i].calls);
    CHECK(m->n_externs == 2);
    mlc_jit_unload(c.lib);
  }
  mlc_arena_free(a);
  mlc_graph_free(m);
  mlc_graph_free(r);
}

/* Fusion around a call: d feeds both the call and an add (a shared
 * producer: not fused with the add), and the call's result joins a dense
 * + add + relu group as an input. y = 3 d + relu(x w2^T + 2 d), d = x w^T. */
static int32_t doubled(const float *x, float *y) {
  for (int i = 0; i < 12; i++) y[i] = 2 * x[i];
  return 0;
}

static const char *fuse_json =
    "{\"name\": \"fz\", \"inputs\": [{\"name\": \"x\", \"shape\": [2, 8]}],"
    " \"weights\": [{\"name\": \"w\", \"shape\": [6, 8]}, {\"name\": \"w2\", \"shape\": [6, 8]}],"
    " \"nodes\": [{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"]},"
    "  {\"name\": \"e\", \"op\": \"call_extern\", \"func\": \"doubled\", \"inputs\": [\"d\"],"
    "   \"out_shape\": [2, 6]},"
    "  {\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"d\", \"e\"]},"
    "  {\"name\": \"d2\", \"op\": \"dense\", \"inputs\": [\"x\", \"w2\"]},"
    "  {\"name\": \"a2\", \"op\": \"add\", \"inputs\": [\"d2\", \"e\"]},"
    "  {\"name\": \"r2\", \"op\": \"relu\", \"inputs\": [\"a2\"]},"
    "  {\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"a\", \"r2\"]}],"
    " \"outputs\": [\"y\"]}";

static void test_fusion_around(void) {
  mlc_error err;
  mlc_gmodule *m = mlc_graph_parse("t.json", fuse_json, strlen(fuse_json), NULL, &err);
  CHECK_MSG(m && mlc_graph_define_extern(m, "doubled", (void *)doubled, &err) &&
                mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err),
            "%s", err.msg);
  if (!m) return;
  const mlc_gfunc *f = mlc_graph_main(m);
  int e_at = -1, d_at = -1, group_at = -1;
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (b->kind == MLC_GCALL_EXTERN) e_at = i;
    if (strcmp(b->var->name, "d") == 0) d_at = i;
    for (int j = 0; b->kind == MLC_GCALL_TIR && j < b->n_args; j++)
      if (strcmp(b->args[j]->name, "e") == 0 && strcmp(b->args[0]->name, "x") == 0) group_at = i;
  }
  /* d stays a binding of its own before the call; the dense + add + relu
   * group takes e after it */
  CHECK_MSG(d_at >= 0 && d_at < e_at && e_at < group_at, "d %d, e %d, group %d", d_at, e_at,
            group_at);
  mlc_arena *a = mlc_arena_new();
  compiled c = {0};
  if (compile_kernels(m, a, &c)) {
    int64_t xs[2] = {2, 8}, ys[2] = {2, 6};
    mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, xs), *y = mlc_array_new(MLC_FLOAT32, 2, ys);
    mlc_array *want = mlc_array_new(MLC_FLOAT32, 2, ys);
    mlc_pcg32 rng;
    mlc_pcg32_seed(&rng, 5, 0);
    mlc_array_fill_random(x, &rng);
    const float *w = weight(m, "w")->data, *w2 = weight(m, "w2")->data, *xd = x->data;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 6; j++) {
        double d = 0, d2 = 0;
        for (int k = 0; k < 8; k++) d += (double)xd[i * 8 + k] * w[j * 8 + k];
        for (int k = 0; k < 8; k++) d2 += (double)xd[i * 8 + k] * w2[j * 8 + k];
        double r = d2 + 2 * d;
        ((float *)want->data)[i * 6 + j] = (float)(3 * d + (r > 0 ? r : 0));
      }
    double e = 1;
    CHECK_MSG(mlc_graph_execute(m, jit_kernel, &c, &x, &y, &err), "%s", err.msg);
    CHECK_MSG(mlc_check_close(y, want, MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e), "max error %g", e);
    mlc_array_free(x);
    mlc_array_free(y);
    mlc_array_free(want);
    mlc_jit_unload(c.lib);
  }
  mlc_arena_free(a);
  mlc_graph_free(m);
}

/* No function defined, or a failing one: an error naming the node. */
static void test_run_refusals(void) {
  mlc_error err;
  mlc_gmodule *m = mlc_graph_parse("t.json", model_json, strlen(model_json), NULL, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  int64_t xs[2] = {2, 8}, ys[2] = {2, 3};
  mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, xs), *y = mlc_array_new(MLC_FLOAT32, 2, ys);
  memset(y->data, 0, sizeof(float) * 6);
  CHECK(!mlc_graph_reference(m, &x, &y, &err));
  CHECK_MSG(strstr(err.msg, "node 'e': call_extern \"scale_shift\" has no function"), "%s",
            err.msg);
  CHECK(mlc_graph_define_extern(m, "scale_shift", (void *)fails, &err));
  CHECK(mlc_graph_define_extern(m, "scale_shift3", (void *)scale_shift3, &err));
  CHECK(!mlc_graph_reference(m, &x, &y, &err));
  CHECK_MSG(strstr(err.msg, "node 'e': call_extern \"scale_shift\" returned 7"), "%s", err.msg);
  /* redefining replaces it */
  CHECK(mlc_graph_define_extern(m, "scale_shift", (void *)scale_shift2, &err));
  CHECK_MSG(mlc_graph_reference(m, &x, &y, &err), "%s", err.msg);
  CHECK(!mlc_graph_define_extern(m, "int", (void *)scale_shift2, &err));
  CHECK_MSG(strstr(err.msg, "reserved"), "%s", err.msg);
  CHECK(m->n_externs == 2);
  /* shared objects: none given, one without the symbol, one that is not there */
  mlc_gmodule *u = mlc_graph_parse("t.json", model_json, strlen(model_json), NULL, &err);
  CHECK(u && !mlc_graph_load_externs(u, 0, NULL, &err));
  CHECK_MSG(strstr(err.msg, "node 'e': call_extern \"scale_shift\": no extern library given"), "%s",
            err.msg);
  const char *libm[] = {"libm.so.6"};
  CHECK(u && !mlc_graph_load_externs(u, 1, libm, &err));
  CHECK_MSG(strstr(err.msg, "node 'e': call_extern \"scale_shift\": no symbol scale_shift in "
                            "libm.so.6"),
            "%s", err.msg);
  const char *none[] = {"/nonexistent/libx.so"};
  CHECK(u && !mlc_graph_load_externs(u, 1, none, &err));
  CHECK_MSG(strstr(err.msg, "extern library /nonexistent/libx.so"), "%s", err.msg);
  CHECK(u && u->n_externs == 0);
  mlc_graph_free(u);
  mlc_array_free(x);
  mlc_array_free(y);
  mlc_graph_free(m);
}

/* The header declares each function once, with every call's shapes, and
 * the entry calls it directly. */
static void test_header(void) {
  mlc_error err;
  mlc_gmodule *m = load(&err);
  CHECK_MSG(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  if (!m) return;
  mlc_str s = {0};
  mlc_graph_write_entry(&s, m);
  const char *h = mlc_str_cstr(&s);
  CHECK_MSG(strstr(h, "int32_t scale_shift(const float *in0, const float *in1, float *out);"), "%s",
            h);
  CHECK(strstr(h, " *   node e: in0(2, 6) in1(6,) -> out(2, 6)\n"));
  CHECK(strstr(h, "if (scale_shift(v_d, ext_w_s, v_e) != 0) {"));
  CHECK(strstr(h, "if (scale_shift3(ext_w_w1, ext_w_s1, v_k) != 0) {"));
  CHECK(strstr(h, "extern \"C\" {"));
  const char *first = strstr(h, "int32_t scale_shift(");
  CHECK(first && !strstr(first + 1, "int32_t scale_shift("));
  mlc_str_free(&s);
  mlc_graph_free(m);
}

typedef struct bad_case {
  const char *name, *node, *want;
} bad_case;

#define EXT(extra) "{\"name\": \"e\", \"op\": \"call_extern\", " extra "}"
static const bad_case bad[] = {
    {"no_func", EXT("\"inputs\": [\"x\"], \"out_shape\": [2]"), "node 'e': call_extern needs \"func\""},
    {"bad_func", EXT("\"func\": \"1f\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"1f\" is not a C identifier"},
    {"func_dash", EXT("\"func\": \"my-fn\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"my-fn\" is not a C identifier"},
    {"func_keyword", EXT("\"func\": \"float\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"float\" is reserved"},
    {"func_main", EXT("\"func\": \"main\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"main\" is reserved"},
    {"func_mlc", EXT("\"func\": \"mlc_parallel_for\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "is reserved"},
    {"func_model_prefix", EXT("\"func\": \"m_fused_dense0\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"m_fused_dense0\" is reserved"},
    {"func_model_macro", EXT("\"func\": \"M_WORKSPACE_FLOATS\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"M_WORKSPACE_FLOATS\" is reserved"},
    {"func_local", EXT("\"func\": \"input0\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"input0\" is reserved"},
    {"func_var", EXT("\"func\": \"v_e\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"v_e\" is reserved"},
    {"func_free", EXT("\"func\": \"free\", \"inputs\": [\"x\"], \"out_shape\": [2]"),
     "node 'e': func \"free\" is reserved"},
    {"unknown_input", EXT("\"func\": \"f\", \"inputs\": [\"nope\"], \"out_shape\": [2]"),
     "node 'e': input 0 \"nope\" is not an input, weight or node"},
    {"no_out_shape", EXT("\"func\": \"f\", \"inputs\": [\"x\"]"), "node 'e': call_extern needs \"out_shape\""},
    {"empty_out_shape", EXT("\"func\": \"f\", \"inputs\": [\"x\"], \"out_shape\": []"),
     "node 'e': \"out_shape\" must have at least one dimension"},
    {"zero_extent", EXT("\"func\": \"f\", \"inputs\": [\"x\"], \"out_shape\": [2, 0]"),
     "node 'e': \"out_shape\": entry 1 is not an integer >= 1"},
    {"huge_out_shape",
     EXT("\"func\": \"f\", \"inputs\": [\"x\"], \"out_shape\": [1099511627776, 1099511627776]"),
     "node 'e'"},
    {"bad_dtype", EXT("\"func\": \"f\", \"inputs\": [\"x\"], \"out_shape\": [2], \"dtype\": \"int8\""),
     "node 'e': dtype \"int8\" is not supported"},
    {"unknown_key", EXT("\"func\": \"f\", \"inputs\": [\"x\"], \"out_shape\": [2], \"axis\": 1"),
     "node 'e': unknown key \"axis\""},
    {"too_many_inputs",
     EXT("\"func\": \"f\", \"inputs\": [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"], "
         "\"out_shape\": [2]"),
     "node 'e': call_extern takes at most 8 inputs, got 9"},
    {"arity_differs",
     EXT("\"func\": \"f\", \"inputs\": [\"x\"], \"out_shape\": [2, 4]"
         "}, {\"name\": \"g\", \"op\": \"call_extern\", \"func\": \"f\", \"inputs\": [\"e\", \"x\"], "
         "\"out_shape\": [2, 4]"),
     "node 'g': call_extern \"f\" with 2 inputs, node 'e' calls it with 1"},
};

static void test_model_errors(void) {
  for (int i = 0; i < MLC_COUNTOF(bad); i++) {
    char json[2048], name[96];
    const char *out = strstr(bad[i].node, "\"g\"") ? "g" : "e";
    snprintf(json, sizeof json,
             "{\"name\": \"m\", \"inputs\": [{\"name\": \"x\", \"shape\": [2, 4]}], \"nodes\": [%s],"
             " \"outputs\": [\"%s\"]}",
             bad[i].node, out);
    mlc_error err = {0};
    mlc_gmodule *m = mlc_graph_parse("t.json", json, strlen(json), NULL, &err);
    bool ok = !m && strstr(err.msg, bad[i].want) && strncmp(err.msg, "t.json", 6) == 0;
    snprintf(name, sizeof name, "extern_model_error_%s", bad[i].name);
    test_report(name, ok, err.msg[0] ? err.msg : "accepted");
    mlc_graph_free(m);
  }
}

/* A graph built by hand gets the same checks from the verifier. */
static void test_verify(void) {
  mlc_error err;
  mlc_gmodule *m = load(&err);
  if (!m) return;
  mlc_gfunc *f = mlc_graph_main(m);
  mlc_gbinding *k = NULL;
  for (int i = 0; i < f->n_bindings; i++)
    if (f->bindings[i].kind == MLC_GCALL_EXTERN && strcmp(f->bindings[i].var->name, "k") == 0)
      k = &f->bindings[i];
  CHECK(k && mlc_graph_verify(m, &err));
  if (!k) return;
  k->extern_func = "scale_shift"; /* 2 inputs both times: fine */
  CHECK_MSG(mlc_graph_verify(m, &err), "%s", err.msg);
  k->n_args = 1; /* now 1 input there, 2 at e */
  CHECK(!mlc_graph_verify(m, &err));
  CHECK_MSG(strstr(err.msg, "call_extern \"scale_shift\": 1 inputs here, 2 elsewhere") ||
                strstr(err.msg, "call_extern \"scale_shift\": 2 inputs here, 1 elsewhere"),
            "%s", err.msg);
  k->n_args = 2;
  k->extern_func = "a b";
  CHECK(!mlc_graph_verify(m, &err));
  CHECK_MSG(strstr(err.msg, "binding k: func \"a b\" is not a C identifier"), "%s", err.msg);
  mlc_graph_free(m);
}

/* ---- ONNX: a node of the domain "mlc.extern" ------------------------------------ */

/* relu in C, over as many elements as the model's node has. */
static int64_t relu_numel;
static int relu_calls;
static int32_t my_relu(const float *x, float *y) {
  relu_calls++;
  for (int64_t i = 0; i < relu_numel; i++) y[i] = x[i] > 0 ? x[i] : 0;
  return 0;
}

/* tests/onnx/tiny_cnn.onnx with its first Relu node (op_type at the first
 * match) turned into {domain "mlc.extern", op_type func, out_shape}; the
 * packed bytes (mlc_free), NULL if the model has no such node. */
static uint8_t *alter_cnn(const char *bytes, size_t len, const char *func, int nd,
                          int64_t *shape, const char *extra_attr, size_t *plen) {
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
  if (!mp) return NULL;
  Onnx__NodeProto *p = NULL;
  for (size_t i = 0; i < mp->graph->n_node && !p; i++)
    if (strcmp(mp->graph->node[i]->op_type, "Relu") == 0) p = mp->graph->node[i];
  uint8_t *packed = NULL;
  if (p) {
    char *dom = p->domain, *op = p->op_type;
    size_t n_attr = p->n_attribute;
    Onnx__AttributeProto **attrs = p->attribute;
    Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT, b = ONNX__ATTRIBUTE_PROTO__INIT;
    a.name = "out_shape";
    a.has_type = 1;
    a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a.n_ints = (size_t)nd;
    a.ints = shape;
    b.name = (char *)extra_attr;
    b.has_type = 1;
    b.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    b.has_i = 1;
    Onnx__AttributeProto *list[2] = {&a, &b};
    p->domain = "mlc.extern";
    p->op_type = (char *)func;
    p->attribute = nd > 0 ? list : list + 1;
    p->n_attribute = (nd > 0) + (extra_attr != NULL);
    *plen = onnx__model_proto__get_packed_size(mp);
    packed = mlc_xmalloc(*plen + 1);
    onnx__model_proto__pack(mp, packed);
    p->domain = dom, p->op_type = op, p->attribute = attrs, p->n_attribute = n_attr;
  }
  onnx__model_proto__free_unpacked(mp, NULL);
  return packed;
}

/* The altered model with relu done by my_relu computes what the model
 * computes (reference executor and compiled kernels, against the
 * unaltered model's reference). */
static void test_onnx_extern(void) {
  const char *path = "tests/onnx/tiny_cnn.onnx";
  size_t len, plen = 0;
  mlc_error err;
  char *bytes = mlc_read_file(path, &len, &err);
  CHECK_MSG(bytes, "%s", err.msg);
  if (!bytes) return;
  mlc_gmodule *orig = mlc_graph_parse_onnx(path, bytes, len, NULL, &err);
  CHECK_MSG(orig, "%s", err.msg);
  const mlc_gfunc *of = orig ? mlc_graph_main(orig) : NULL;
  const mlc_gvar *relu = NULL;
  for (int i = 0; of && i < of->n_bindings && !relu; i++)
    if (of->bindings[i].kind == MLC_GCALL_OP && of->bindings[i].op == MLC_GOP_RELU)
      relu = of->bindings[i].var;
  CHECK(relu);
  uint8_t *packed = relu ? alter_cnn(bytes, len, "my_relu", relu->type.ndim,
                                     (int64_t *)relu->type.shape, NULL, &plen)
                         : NULL;
  CHECK(packed);
  mlc_gmodule *m = packed ? mlc_graph_parse_onnx(path, packed, plen, NULL, &err) : NULL;
  mlc_gmodule *r = packed ? mlc_graph_parse_onnx(path, packed, plen, NULL, &err) : NULL;
  CHECK_MSG(m && r, "%s", err.msg);
  if (m && r) {
    relu_numel = mlc_gtype_numel(&relu->type);
    CHECK(mlc_graph_define_extern(m, "my_relu", (void *)my_relu, &err) &&
          mlc_graph_define_extern(r, "my_relu", (void *)my_relu, &err));
    mlc_str s = {0};
    mlc_graph_print(&s, r, 0);
    CHECK_MSG(strstr(mlc_str_cstr(&s), "R.call_dps_packed(\"my_relu\", ("), "%s", mlc_str_cstr(&s));
    mlc_str_free(&s);
    CHECK_MSG(mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
    mlc_arena *a = mlc_arena_new();
    compiled c = {0};
    const mlc_gvar *xin = mlc_graph_main(orig)->params[0], *yout = mlc_graph_main(orig)->outputs[0];
    if (compile_kernels(m, a, &c)) {
      mlc_array *x = mlc_array_new(MLC_FLOAT32, xin->type.ndim, xin->type.shape);
      mlc_array *y = mlc_array_new(MLC_FLOAT32, yout->type.ndim, yout->type.shape);
      mlc_array *yr = mlc_array_new(MLC_FLOAT32, yout->type.ndim, yout->type.shape);
      mlc_array *want = mlc_array_new(MLC_FLOAT32, yout->type.ndim, yout->type.shape);
      mlc_pcg32 rng;
      mlc_pcg32_seed(&rng, 77, 0);
      mlc_array_fill_random(x, &rng);
      relu_calls = 0;
      CHECK_MSG(mlc_graph_reference(orig, &x, &want, &err), "%s", err.msg);
      CHECK_MSG(mlc_graph_reference(r, &x, &yr, &err), "%s", err.msg);
      CHECK_MSG(mlc_graph_execute(m, jit_kernel, &c, &x, &y, &err), "%s", err.msg);
      CHECK(relu_calls == 2);
      double e1 = 1, e2 = 1;
      CHECK_MSG(mlc_check_close(yr, want, MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e1), "reference %g", e1);
      CHECK_MSG(mlc_check_close(y, want, MLC_CHECK_RTOL, MLC_CHECK_ATOL, &e2), "compiled %g", e2);
      mlc_array_free(x);
      mlc_array_free(y);
      mlc_array_free(yr);
      mlc_array_free(want);
      mlc_jit_unload(c.lib);
    }
    mlc_arena_free(a);
  }
  mlc_graph_free(m);
  mlc_graph_free(r);
  mlc_free(packed);
  /* refusals, each naming the node */
  static const struct {
    const char *func, *extra, *want;
    int nd;
  } refused[] = {
      {"my_relu", NULL, "needs the ints attribute out_shape", 0},
      {"my-relu", NULL, "func \"my-relu\" is not a C identifier", 2},
      {"my_relu", "alpha", "alpha", 2},
  };
  for (int i = 0; relu && i < MLC_COUNTOF(refused); i++) {
    int64_t shape[2] = {2, 0};
    shape[1] = mlc_gtype_numel(&relu->type) / 2;
    packed = alter_cnn(bytes, len, refused[i].func, refused[i].nd, shape, refused[i].extra, &plen);
    m = packed ? mlc_graph_parse_onnx(path, packed, plen, NULL, &err) : NULL;
    CHECK_MSG(packed && !m && strstr(err.msg, refused[i].want) && strstr(err.msg, "node \""), "%s",
              m ? "loaded" : err.msg);
    mlc_graph_free(m);
    mlc_free(packed);
  }
  mlc_graph_free(orig);
  mlc_free(bytes);
}

int main(void) {
  test_model_errors();
  RUN(test_print_load);
  RUN(test_passes_leave_it);
  RUN(test_run_matches);
  RUN(test_fusion_around);
  RUN(test_run_refusals);
  RUN(test_header);
  RUN(test_verify);
  RUN(test_onnx_extern);
  return test_summary();
}
