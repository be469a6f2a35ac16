/* graph/: model loading and its errors, .npy files, each pass's printed
 * output on small graphs, fusion refusing shared producers, FuseTIR checked
 * by the interpreter against the unfused graph, task extraction, the
 * default schedule, and the MLP and CNN examples compiled and run against
 * plain C references. */
#include "db/db.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "measure/measure.h"
#include "tasks/tasks.h"
#include "tests/test.h"
#include "tuner/tuner.h"
#include "tuner/tuner_internal.h"

#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------- */

static mlc_gmodule *parse(const char *json, mlc_error *err) {
  return mlc_graph_parse("t.json", json, strlen(json), NULL, err);
}

static char *print_graph(const mlc_gmodule *m) {
  mlc_str s = {0};
  mlc_graph_print(&s, m, 0);
  return mlc_str_take(&s);
}

static void check_text(const mlc_gmodule *m, const char *want) {
  char *got = print_graph(m);
  CHECK_MSG(strcmp(got, want) == 0, "printed:\n%s", got);
  if (strcmp(got, want) != 0) fprintf(stderr, "---- got:\n%s---- want:\n%s", got, want);
  mlc_free(got);
}

/* Seeded inputs for main's params. */
static mlc_array **make_inputs(const mlc_gmodule *m, uint64_t seed) {
  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_array **in = mlc_xmalloc(sizeof *in * (size_t)f->n_params);
  for (int i = 0; i < f->n_params; i++) {
    in[i] = mlc_array_new(MLC_FLOAT32, f->params[i]->type.ndim, f->params[i]->type.shape);
    mlc_pcg32 r;
    mlc_pcg32_seed(&r, seed, (uint64_t)i);
    mlc_array_fill_random(in[i], &r);
  }
  return in;
}

static mlc_array *make_output(const mlc_gmodule *m, int i) {
  const mlc_gvar *v = mlc_graph_main(m)->outputs[i];
  return mlc_array_new(MLC_FLOAT32, v->type.ndim, v->type.shape);
}

static void free_arrays(mlc_array **a, int n) {
  for (int i = 0; i < n; i++) mlc_array_free(a[i]);
  mlc_free(a);
}

/* ---- model JSON errors ---------------------------------------------------------- */

#define MODEL(inputs, weights, nodes, outputs) \
  "{\"inputs\": [" inputs "], \"weights\": [" weights "], \"nodes\": [" nodes "], \"outputs\": [" outputs "]}"
#define IN_X "{\"name\": \"x\", \"shape\": [2, 4]}"
#define W_W "{\"name\": \"w\", \"shape\": [3, 4]}"

typedef struct bad_case {
  const char *name, *json, *want;
} bad_case;

static const bad_case bad_models[] = {
    {"not_json", "{\"inputs\": [", "t.json: line"},
    {"not_object", "[1, 2]", "a model is a JSON object"},
    {"unknown_key", "{\"inputs\": [], \"nodez\": []}", "unknown key \"nodez\""},
    {"no_nodes_key", "{\"inputs\": [" IN_X "], \"outputs\": []}", "\"nodes\" must be an array"},
    {"unknown_op", MODEL(IN_X, "", "{\"name\": \"a\", \"op\": \"frobnicate\", \"inputs\": [\"x\"]}", "\"a\""),
     "node 'a': unknown op \"frobnicate\""},
    {"shape_mismatch",
     MODEL(IN_X, "{\"name\": \"w\", \"shape\": [5, 3]}",
           "{\"name\": \"mm\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]}", "\"mm\""),
     "node 'mm': matmul: operand 1 has shape (5, 3)"},
    {"undefined_input", MODEL(IN_X, "", "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"y\"]}", "\"r\""),
     "node 'r': input 0 \"y\" is not an input, weight or node"},
    {"cycle",
     MODEL(IN_X, "",
           "{\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"x\", \"b\"]},"
           "{\"name\": \"b\", \"op\": \"relu\", \"inputs\": [\"a\"]}",
           "\"b\""),
     "node 'a' is part of a cycle: 'a' -> 'b' -> 'a'"},
    {"unused_node",
     MODEL(IN_X, "",
           "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]},"
           "{\"name\": \"b\", \"op\": \"gelu\", \"inputs\": [\"x\"]}",
           "\"b\""),
     "node 'a': its result is never used"},
    {"duplicate_name",
     MODEL(IN_X, "{\"name\": \"x\", \"shape\": [4]}", "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]}", "\"a\""),
     "weight name \"x\" is used twice"},
    {"input_count", MODEL(IN_X, "", "{\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"x\"]}", "\"a\""),
     "node 'a': add takes 2 inputs, got 1"},
    {"output_not_node", MODEL(IN_X, "", "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]}", "\"x\""),
     "output \"x\" is not a node"},
    {"bad_dtype", MODEL("{\"name\": \"x\", \"shape\": [2], \"dtype\": \"float16\"}", "",
                        "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]}", "\"a\""),
     "input 'x': dtype \"float16\" is not one of float32, int64"},
    {"bad_shape", MODEL("{\"name\": \"x\", \"shape\": [2, 0]}", "",
                        "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]}", "\"a\""),
     "input 'x': entry 1 is not an integer >= 1"},
    {"huge_input", MODEL("{\"name\": \"x\", \"shape\": [1099511627776, 1099511627776, 65536, 65536, 65536, 65536, 65536, 65536]}", "",
                         "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]}", "\"a\""),
     "input 'x' has shape [1099511627776, 1099511627776, 65536, 65536, 65536, 65536, 65536, "
     "65536]: over the limit of 2^31 elements"},
    {"huge_result",
     MODEL("{\"name\": \"x\", \"shape\": [65536, 1]}", "{\"name\": \"w\", \"shape\": [65536]}",
           "{\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"x\", \"w\"]}", "\"a\""),
     "node 'a': add: the result has shape [65536, 65536]: over the limit of 2^31 elements"},
    {"bad_attr",
     MODEL("{\"name\": \"x\", \"shape\": [1, 1, 4, 4]}", "",
           "{\"name\": \"p\", \"op\": \"max_pool2d\", \"inputs\": [\"x\"], \"pool_size\": \"2\"}", "\"p\""),
     "node 'p': \"pool_size\" must be an integer"},
    {"broadcast",
     MODEL(IN_X, "{\"name\": \"b\", \"shape\": [3]}", "{\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"x\", \"b\"]}", "\"a\""),
     "node 'a': add: shapes (2, 4) and (3,) do not broadcast"},
    {"reshape_count",
     MODEL(IN_X, "", "{\"name\": \"a\", \"op\": \"reshape\", \"inputs\": [\"x\"], \"shape\": [3, 3]}", "\"a\""),
     "node 'a': reshape: operand 0 has shape (2, 4)"},
};

static void test_model_errors(void) {
  for (int i = 0; i < MLC_COUNTOF(bad_models); i++) {
    mlc_error err = {{0}};
    mlc_gmodule *m = parse(bad_models[i].json, &err);
    char name[96];
    snprintf(name, sizeof name, "model_error_%s", bad_models[i].name);
    bool ok = !m && strstr(err.msg, bad_models[i].want) != NULL;
    char why[1200];
    snprintf(why, sizeof why, "%s: got \"%s\"", m ? "accepted" : "wrong message", err.msg);
    test_report(name, ok, why);
    mlc_graph_free(m);
  }
}

/* ---- .npy ----------------------------------------------------------------------- */

static size_t npy_header(char *buf, const char *dict, int version) {
  size_t n = strlen(dict);
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (char)version;
  buf[7] = 0;
  if (version == 1) {
    buf[8] = (char)(n & 0xff), buf[9] = (char)(n >> 8);
    memcpy(buf + 10, dict, n);
    return 10 + n;
  }
  buf[8] = (char)(n & 0xff), buf[9] = (char)(n >> 8), buf[10] = buf[11] = 0;
  memcpy(buf + 12, dict, n);
  return 12 + n;
}

typedef struct npy_case {
  const char *name, *dict;
  int version, data_bytes;
  const char *want;
} npy_case;

#define GOOD_DICT "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n"

static const npy_case npy_cases[] = {
    {"ok", GOOD_DICT, 1, 24, NULL},
    {"ok_v2", GOOD_DICT, 2, 24, NULL},
    {"ok_key_order", "{'shape': (6,), 'fortran_order': False, 'descr': '<f4'}", 1, 24, NULL},
    {"float64", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 1, 48,
     "dtype '<f8' is not supported"},
    {"big_endian", "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 1, 24,
     "dtype '>f4'"},
    {"fortran", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 1, 24,
     "Fortran order is not supported"},
    {"truncated_data", GOOD_DICT, 1, 20, "truncated data: 20 bytes for 24"},
    {"trailing_data", GOOD_DICT, 1, 28, "4 trailing bytes"},
    {"missing_key", "{'descr': '<f4', 'shape': (2, 3), }", 1, 24, "needs 'descr'"},
    {"bad_shape", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 1, 24,
     "bad shape entry"},
    {"shape_not_tuple", "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 1, 24,
     "shape is not a tuple"},
    {"unknown_key", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", 1, 24,
     "unknown key 'x'"},
    {"version", GOOD_DICT, 9, 24, "unsupported .npy version 9.0"},
    {"not_dict", "('descr', '<f4')", 1, 24, "expected '{'"},
    /* element counts that overflow int64 (UBSan caught mlc_gtype_numel) */
    {"huge_shape",
     "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", 1,
     24, "bad .npy header: the array has shape [1099511627776, 1099511627776]: over the limit"},
    {"huge_shape_8d",
     "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536, 65536, 65536, 65536, "
     "65536, 65536, 65536), }",
     2, 24, "bad .npy header: the array has shape [65536, 65536, 65536, 65536, 65536, 65536, 65536, "
            "65536]: over the limit"},
};

static void test_npy_errors(void) {
  for (int i = 0; i < MLC_COUNTOF(npy_cases); i++) {
    const npy_case *c = &npy_cases[i];
    char buf[512];
    size_t n = npy_header(buf, c->dict, c->version);
    for (int k = 0; k < c->data_bytes; k++) buf[n++] = (char)k;
    mlc_gtype t;
    mlc_error err = {{0}};
    float *d = mlc_npy_parse("w.npy", buf, n, &t, &err);
    char name[96], why[1200];
    snprintf(name, sizeof name, "npy_%s", c->name);
    bool ok = c->want ? !d && strstr(err.msg, c->want) && strstr(err.msg, "w.npy")
                      : d && mlc_gtype_numel(&t) == 6;
    snprintf(why, sizeof why, "got \"%s\"", d ? "(accepted)" : err.msg);
    test_report(name, ok, why);
    mlc_free(d);
  }
}

/* Counting never overflows: -1 instead of a wrapped product. */
static void test_numel_overflow(void) {
  mlc_gtype t = {MLC_FLOAT32, 2, {INT64_C(1) << 40, INT64_C(1) << 40}};
  CHECK(mlc_gtype_numel(&t) == -1);
  t = (mlc_gtype){MLC_FLOAT32, 3, {INT64_C(1) << 31, 1 << 20, 1 << 11}};
  CHECK(mlc_gtype_numel(&t) == INT64_C(1) << 62);
  t.shape[2] = 1 << 12;
  CHECK(mlc_gtype_numel(&t) == -1);
  t.shape[1] = -1;
  CHECK(mlc_gtype_numel(&t) == -1);
}

/* Short files: the magic alone, a header longer than the file, a zip. */
static void test_npy_short(void) {
  mlc_error err;
  mlc_gtype t;
  CHECK(!mlc_npy_parse("s.npy", "\x93NUMPY", 6, &t, &err) && strstr(err.msg, "bad magic"));
  char buf[256];
  size_t n = npy_header(buf, GOOD_DICT, 1);
  CHECK(!mlc_npy_parse("s.npy", buf, n - 5, &t, &err) && strstr(err.msg, "truncated header"));
  CHECK(!mlc_npy_parse("s.npy", "PK\x03\x04 zip file", 15, &t, &err) &&
        strstr(err.msg, "not a .npy file"));
}

static void test_npy_roundtrip(void) {
  mlc_gtype t = {MLC_FLOAT32, 3, {2, 1, 5}};
  float v[10];
  for (int i = 0; i < 10; i++) v[i] = (float)i * 0.25f - 1;
  mlc_error err;
  const char *path = "/tmp/mlc_test_graph_rt.npy";
  CHECK(mlc_npy_write(path, &t, v, &err));
  mlc_gtype u;
  float *d = mlc_npy_read(path, &u, &err);
  CHECK(d && mlc_gtype_equal(&t, &u) && memcmp(d, v, sizeof v) == 0);
  mlc_free(d);
  unlink(path);
}

/* Weight files: missing, wrong shape, damaged. */
static void test_weight_files(void) {
  const char *dir = "/tmp/mlc_test_graph_w";
  mkdir(dir, 0755);
  const char *json = MODEL(IN_X, W_W, "{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"]}", "\"d\"");
  mlc_error err;
  unlink("/tmp/mlc_test_graph_w/w.npy");
  mlc_gmodule *m = mlc_graph_parse("t.json", json, strlen(json), dir, &err);
  CHECK_MSG(!m && strstr(err.msg, "weight 'w'") && strstr(err.msg, "w.npy"), "%s", err.msg);
  float v[12] = {0};
  mlc_gtype wrong = {MLC_FLOAT32, 2, {4, 3}};
  CHECK(mlc_npy_write("/tmp/mlc_test_graph_w/w.npy", &wrong, v, &err));
  m = mlc_graph_parse("t.json", json, strlen(json), dir, &err);
  CHECK_MSG(!m && strstr(err.msg, "weight 'w'") && strstr(err.msg, "has shape (4, 3), the model says (3, 4)"),
            "%s", err.msg);
  int64_t ids[12] = {0};
  mlc_gtype ints = {MLC_INT64, 2, {3, 4}}; /* the right shape, not yet a weight's dtype */
  CHECK(mlc_npy_write("/tmp/mlc_test_graph_w/w.npy", &ints, ids, &err));
  m = mlc_graph_parse("t.json", json, strlen(json), dir, &err);
  CHECK_MSG(!m && strstr(err.msg, "weight 'w'") && strstr(err.msg, "w.npy holds int64, weights are float32"),
            "%s", err.msg);
  mlc_write_file("/tmp/mlc_test_graph_w/w.npy", "\x93NUMPY\x01\x00\x05\x00{'de", 15, &err);
  m = mlc_graph_parse("t.json", json, strlen(json), dir, &err);
  CHECK_MSG(!m && strstr(err.msg, "weight 'w'") && strstr(err.msg, "bad .npy header"), "%s", err.msg);
  mlc_gtype right = {MLC_FLOAT32, 2, {3, 4}};
  CHECK(mlc_npy_write("/tmp/mlc_test_graph_w/w.npy", &right, v, &err));
  m = mlc_graph_parse("t.json", json, strlen(json), dir, &err);
  CHECK_MSG(m != NULL, "%s", err.msg);
  mlc_graph_free(m);
  unlink("/tmp/mlc_test_graph_w/w.npy");
  rmdir(dir);
}

/* ---- passes, printed ------------------------------------------------------------- */

/* The notes' EwiseFMARewriter example. */
static void test_rewrite_fma(void) {
  mlc_error err;
  mlc_gmodule *m = parse(MODEL("{\"name\": \"x\", \"shape\": [3, 4]}, {\"name\": \"y\", \"shape\": [3, 4]}", "",
                               "{\"name\": \"lv0\", \"op\": \"multiply\", \"inputs\": [\"x\", \"y\"]},"
                               "{\"name\": \"gv0\", \"op\": \"add\", \"inputs\": [\"lv0\", \"y\"]}",
                               "\"gv0\""),
                         &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  check_text(m,
             "@I.ir_module\nclass Module:\n    @R.function\n"
             "    def main(x: R.Tensor((3, 4), dtype=\"float32\"), y: R.Tensor((3, 4), dtype=\"float32\")) -> R.Tensor((3, 4), dtype=\"float32\"):\n"
             "        with R.dataflow():\n"
             "            lv0: R.Tensor((3, 4), dtype=\"float32\") = R.multiply(x, y)\n"
             "            gv0: R.Tensor((3, 4), dtype=\"float32\") = R.add(lv0, y)\n"
             "            R.output(gv0)\n        return gv0\n");
  CHECK(mlc_graph_rewrite_fma(m, &err));
  check_text(m,
             "@I.ir_module\nclass Module:\n    @R.function\n"
             "    def main(x: R.Tensor((3, 4), dtype=\"float32\"), y: R.Tensor((3, 4), dtype=\"float32\")) -> R.Tensor((3, 4), dtype=\"float32\"):\n"
             "        with R.dataflow():\n"
             "            gv0: R.Tensor((3, 4), dtype=\"float32\") = R.ewise_fma(x, y, y)\n"
             "            R.output(gv0)\n        return gv0\n");
  mlc_graph_free(m);
}

/* A multiply with a second consumer stays: rewriting would compute it twice. */
static void test_rewrite_fma_shared(void) {
  mlc_error err;
  mlc_gmodule *m = parse(MODEL("{\"name\": \"x\", \"shape\": [4]}", "",
                               "{\"name\": \"p\", \"op\": \"multiply\", \"inputs\": [\"x\", \"x\"]},"
                               "{\"name\": \"s\", \"op\": \"add\", \"inputs\": [\"x\", \"p\"]},"
                               "{\"name\": \"t\", \"op\": \"add\", \"inputs\": [\"s\", \"p\"]}",
                               "\"t\""),
                         &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK(mlc_graph_rewrite_fma(m, &err));
  mlc_gfunc *f = mlc_graph_main(m);
  CHECK(f->n_bindings == 3);
  for (int i = 0; i < f->n_bindings; i++) CHECK(f->bindings[i].op != MLC_GOP_EWISE_FMA);
  mlc_graph_free(m);
}

static const char *dense_model =
    MODEL("{\"name\": \"x\", \"shape\": [2, 4]}",
          "{\"name\": \"w\", \"shape\": [3, 4]}, {\"name\": \"b\", \"shape\": [3]}",
          "{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"]},"
          "{\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"d\", \"b\"]},"
          "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"a\"]},"
          "{\"name\": \"s\", \"op\": \"softmax\", \"inputs\": [\"r\"]}",
          "\"s\"");

static void test_fuse_and_lower_text(void) {
  mlc_error err;
  mlc_gmodule *m = parse(dense_model, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK_MSG(mlc_graph_fuse(m, &err), "%s", err.msg);
  check_text(m,
             "@I.ir_module\nclass Module:\n    @R.function\n"
             "    def fused_dense_add_relu0(x: R.Tensor((2, 4), dtype=\"float32\"), w: R.Tensor((3, 4), dtype=\"float32\"), b: R.Tensor((3,), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
             "        R.func_attr({\"Primitive\": 1})\n"
             "        with R.dataflow():\n"
             "            d: R.Tensor((2, 3), dtype=\"float32\") = R.nn.dense(x, w)\n"
             "            a: R.Tensor((2, 3), dtype=\"float32\") = R.add(d, b)\n"
             "            r: R.Tensor((2, 3), dtype=\"float32\") = R.nn.relu(a)\n"
             "            R.output(r)\n        return r\n\n"
             "    @R.function\n"
             "    def main(x: R.Tensor((2, 4), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
             "        cls = Module\n"
             "        with R.dataflow():\n"
             "            r: R.Tensor((2, 3), dtype=\"float32\") = cls.fused_dense_add_relu0(x, metadata[\"w\"], metadata[\"b\"])\n"
             "            s: R.Tensor((2, 3), dtype=\"float32\") = R.nn.softmax(r)\n"
             "            R.output(s)\n        return s\n");
  CHECK_MSG(mlc_graph_lower(m, &err), "%s", err.msg);
  check_text(m,
             "@I.ir_module\nclass Module:\n    @R.function\n"
             "    def fused_dense_add_relu0(x: R.Tensor((2, 4), dtype=\"float32\"), w: R.Tensor((3, 4), dtype=\"float32\"), b: R.Tensor((3,), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
             "        R.func_attr({\"Primitive\": 1})\n"
             "        cls = Module\n"
             "        with R.dataflow():\n"
             "            d = R.call_tir(cls.dense, (x, w), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n"
             "            a = R.call_tir(cls.add, (d, b), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n"
             "            r = R.call_tir(cls.relu, (a,), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n"
             "            R.output(r)\n        return r\n\n"
             "    @R.function\n"
             "    def main(x: R.Tensor((2, 4), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
             "        cls = Module\n"
             "        with R.dataflow():\n"
             "            r: R.Tensor((2, 3), dtype=\"float32\") = cls.fused_dense_add_relu0(x, metadata[\"w\"], metadata[\"b\"])\n"
             "            s = R.call_tir(cls.softmax, (r,), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n"
             "            R.output(s)\n        return s\n");
  CHECK(m->tir->n_funcs == 4);
  CHECK_MSG(mlc_graph_fuse_tir(m, &err), "%s", err.msg);
  check_text(m,
             "@I.ir_module\nclass Module:\n    @R.function\n"
             "    def main(x: R.Tensor((2, 4), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
             "        cls = Module\n"
             "        with R.dataflow():\n"
             "            r = R.call_tir(cls.fused_dense_add_relu0, (x, metadata[\"w\"], metadata[\"b\"]), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n"
             "            s = R.call_tir(cls.softmax, (r,), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n"
             "            R.output(s)\n        return s\n");
  /* One prim_func per fused sub-function, the intermediates allocated inside. */
  CHECK(m->tir->n_funcs == 2);
  mlc_prim_func *f = mlc_module_find(m->tir, "fused_dense_add_relu0");
  CHECK(f && f->n_params == 4 && mlc_func_root(f)->n_allocs == 2);
  CHECK(mlc_verify_func(f, &err));
  mlc_graph_free(m);
}

/* What one run touches: the weights w (3x4) and b (3), the input x (2x4),
 * the output s (2x3) and the workspace (r, 2x3 floats in one 64-byte
 * line). */
static void test_run_bytes(void) {
  mlc_error err;
  mlc_gmodule *m = parse(dense_model, &err);
  CHECK_MSG(m && mlc_graph_fuse(m, &err), "%s", err.msg);
  if (!m) return;
  int64_t got = mlc_graph_run_bytes(m);
  CHECK_MSG(got == 4 * (12 + 3) + 4 * 8 + 4 * 6 + 64, "%lld bytes", (long long)got);
  mlc_graph_free(m);
}

/* d has two consumers: no group may take it in (it would be computed twice). */
static const char *shared_model =
    MODEL("{\"name\": \"x\", \"shape\": [2, 4]}",
          "{\"name\": \"w\", \"shape\": [3, 4]}, {\"name\": \"b\", \"shape\": [3]}",
          "{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"]},"
          "{\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"d\", \"b\"]},"
          "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"d\"]},"
          "{\"name\": \"g\", \"op\": \"gelu\", \"inputs\": [\"r\"]},"
          "{\"name\": \"o\", \"op\": \"multiply\", \"inputs\": [\"a\", \"g\"]}",
          "\"o\"");

static void test_fuse_refuses_shared_producer(void) {
  mlc_error err;
  mlc_gmodule *m = parse(shared_model, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK_MSG(mlc_graph_fuse(m, &err), "%s", err.msg);
  /* d stays alone in main; a takes in o (o's other input g comes from the
   * relu-gelu group, which is placed before it). */
  mlc_gfunc *f = mlc_graph_main(m);
  CHECK(f->bindings[0].kind == MLC_GCALL_OP && f->bindings[0].op == MLC_GOP_DENSE);
  for (int i = 0; i < m->n_funcs; i++)
    for (int j = 0; j < m->funcs[i]->n_bindings; j++)
      if (m->funcs[i]->primitive) CHECK(m->funcs[i]->bindings[j].op != MLC_GOP_DENSE);
  CHECK(mlc_graph_find_func(m, "fused_add_multiply0") != NULL);
  CHECK(mlc_graph_find_func(m, "fused_relu_gelu1") != NULL);
  CHECK(m->n_funcs == 3 && f->n_bindings == 3);
  mlc_graph_free(m);
}

/* An add consuming a result that is also an output is not fused either. */
static void test_fuse_refuses_output_producer(void) {
  mlc_error err;
  mlc_gmodule *m = parse(MODEL("{\"name\": \"x\", \"shape\": [2, 4]}", "{\"name\": \"w\", \"shape\": [3, 4]}",
                               "{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"]},"
                               "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"d\"]}",
                               "\"d\", \"r\""),
                         &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK(mlc_graph_fuse(m, &err));
  CHECK(m->n_funcs == 1 && mlc_graph_main(m)->n_bindings == 2);
  mlc_graph_free(m);
}

/* A reduction takes in front the elementwise chain only it consumes (an
 * RMS norm's square: one kernel, x read in place); a square another op
 * also reads stays its own kernel, and a dense layer takes no elementwise
 * input (each element would be computed once per output column). */
static const char rms_model[] = MODEL(
    "{\"name\": \"x\", \"shape\": [4, 32]}", "{\"name\": \"w\", \"shape\": [8, 32]}",
    "{\"name\": \"sq\", \"op\": \"multiply\", \"inputs\": [\"x\", \"x\"]},"
    "{\"name\": \"ms\", \"op\": \"reduce_mean\", \"inputs\": [\"sq\"], \"axes\": [-1], \"keepdims\": true},"
    "{\"name\": \"rt\", \"op\": \"sqrt\", \"inputs\": [\"ms\"]},"
    "{\"name\": \"n\", \"op\": \"divide\", \"inputs\": [\"x\", \"rt\"]},"
    "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"n\"]},"
    "{\"name\": \"y\", \"op\": \"dense\", \"inputs\": [\"r\", \"w\"]}",
    "\"y\"");

/* json parsed and fused; NULL (the check failed) when either refuses. */
static mlc_gmodule *parse_fused(const char *json) {
  mlc_error err;
  mlc_gmodule *m = parse(json, &err);
  CHECK_MSG(m && mlc_graph_fuse(m, &err), "%s", err.msg);
  return m;
}

static void test_fuse_reduce_inputs(void) {
  mlc_gmodule *m = parse_fused(rms_model);
  if (!m) return;
  CHECK(mlc_graph_find_func(m, "fused_multiply_reduce_mean_sqrt_divide_relu0") != NULL);
  CHECK(m->n_funcs == 2 && mlc_graph_main(m)->n_bindings == 2);
  mlc_graph_free(m);
  m = parse_fused(MODEL("{\"name\": \"x\", \"shape\": [4, 32]}", "",
                        "{\"name\": \"sq\", \"op\": \"multiply\", \"inputs\": [\"x\", \"x\"]},"
                        "{\"name\": \"s\", \"op\": \"reduce_sum\", \"inputs\": [\"sq\"], \"axes\": [-1], \"keepdims\": true},"
                        "{\"name\": \"y\", \"op\": \"divide\", \"inputs\": [\"sq\", \"s\"]}",
                        "\"y\""));
  if (!m) return;
  CHECK(mlc_graph_find_func(m, "fused_reduce_sum_divide0") != NULL && mlc_graph_main(m)->n_bindings == 2 &&
        mlc_graph_main(m)->bindings[0].op == MLC_GOP_MULTIPLY);
  mlc_graph_free(m);
  m = parse_fused(MODEL("{\"name\": \"x\", \"shape\": [4, 32]}", "{\"name\": \"w\", \"shape\": [8, 32]}",
                        "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]},"
                        "{\"name\": \"y\", \"op\": \"dense\", \"inputs\": [\"r\", \"w\"]}",
                        "\"y\""));
  if (!m) return;
  CHECK(m->n_funcs == 1 && mlc_graph_main(m)->n_bindings == 2);
  mlc_graph_free(m);
}

static void check_fuse_tir_equal(const char *json);

/* Attention over 2 heads: scores q k^T (k transposed), scaled, softmax
 * over the keys, weighted sum over v. QROWS query rows; SOFTMAX_AXIS the
 * softmax's axis; EXTRA_OUT more outputs. */
#define ATTENTION(QROWS, SOFTMAX_AXIS, EXTRA_OUT)                                                    \
  MODEL("{\"name\": \"q\", \"shape\": [2, " QROWS ", 8]}, {\"name\": \"k\", \"shape\": [2, 16, 8]},"  \
        "{\"name\": \"v\", \"shape\": [2, 16, 8]}",                                                 \
        "{\"name\": \"c\", \"shape\": [1]}",                                                        \
        "{\"name\": \"kt\", \"op\": \"transpose\", \"inputs\": [\"k\"], \"axes\": [0, 2, 1]},"          \
        "{\"name\": \"s\", \"op\": \"matmul\", \"inputs\": [\"q\", \"kt\"]},"                            \
        "{\"name\": \"x\", \"op\": \"multiply\", \"inputs\": [\"s\", \"c\"]},"                           \
        "{\"name\": \"p\", \"op\": \"softmax\", \"inputs\": [\"x\"], \"axis\": " SOFTMAX_AXIS "},"       \
        "{\"name\": \"o\", \"op\": \"matmul\", \"inputs\": [\"p\", \"v\"]}",                             \
        "\"o\"" EXTRA_OUT)

/* Attention's matmul, scale, softmax and matmul become one kernel, which
 * computes what the ops do; not with one query row (a decode step), a
 * softmax over another axis, or probabilities that are an output too. */
static void test_fuse_attention(void) {
  mlc_gmodule *m = parse_fused(ATTENTION("16", "-1", ""));
  if (!m) return;
  CHECK_MSG(mlc_graph_find_func(m, "fused_attention0") != NULL &&
                m->n_funcs == 2 && mlc_graph_main(m)->n_bindings == 1,
            "not one kernel: %d functions", m->n_funcs);
  mlc_graph_free(m);
  check_fuse_tir_equal(ATTENTION("16", "-1", ""));
  const char *apart[] = {ATTENTION("1", "-1", ""), ATTENTION("16", "1", ""), ATTENTION("16", "-1", ", \"p\"")};
  for (int i = 0; i < MLC_COUNTOF(apart); i++) {
    if (!(m = parse_fused(apart[i]))) continue;
    bool softmax_with_matmul = false;
    for (int f = 0; f < m->n_funcs; f++)
      softmax_with_matmul |= m->funcs[f]->primitive && strstr(m->funcs[f]->name, "attention");
    CHECK_MSG(!softmax_with_matmul, "case %d: fused", i);
    mlc_graph_free(m);
  }
}

/* The lowered text of m's prim_func `name` (the caller frees it), or NULL. */
static char *tir_text(const mlc_gmodule *m, const char *name) {
  const mlc_prim_func *f = mlc_module_find(m->tir, name);
  if (!f) return NULL;
  mlc_str s = {0};
  mlc_print_func(&s, f);
  return s.data;
}

/* A float division by a value the same along the row (a row's sum, a
 * scalar constant) is lowered as a product with its reciprocal; one by a
 * value that changes along the row stays a division. */
static void test_lower_divide_by_row_value(void) {
  mlc_error err;
  mlc_gmodule *m = parse(MODEL("{\"name\": \"x\", \"shape\": [4, 32]}",
                               "{\"name\": \"g\", \"shape\": [32]}, {\"name\": \"c\", \"shape\": [1]}",
                               "{\"name\": \"s\", \"op\": \"reduce_sum\", \"inputs\": [\"x\"], \"axes\": [-1], \"keepdims\": true},"
                               "{\"name\": \"a\", \"op\": \"divide\", \"inputs\": [\"x\", \"s\"]},"
                               "{\"name\": \"b\", \"op\": \"divide\", \"inputs\": [\"a\", \"c\"]},"
                               "{\"name\": \"y\", \"op\": \"divide\", \"inputs\": [\"b\", \"g\"]}",
                               "\"y\""),
                         &err);
  CHECK_MSG(m && mlc_graph_lower(m, &err), "%s", err.msg);
  if (!m) return;
  static const struct { const char *func, *want; } cases[] = {
      {"divide", "x[v_i0, v_i1] * (T.float32(1) / s[v_i0, 0])"},
      {"divide1", "a[v_i0, v_i1] * (T.float32(1) / c[0])"},
      {"divide2", "b[v_i0, v_i1] / g[v_i1]"},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    char *t = tir_text(m, cases[i].func);
    CHECK_MSG(t && strstr(t, cases[i].want), "%s: want %s in\n%s", cases[i].func, cases[i].want,
              t ? t : "(no such function)");
    mlc_free(t);
  }
  mlc_graph_free(m);
  check_fuse_tir_equal(MODEL("{\"name\": \"x\", \"shape\": [4, 32]}", "{\"name\": \"g\", \"shape\": [32]}",
                             "{\"name\": \"s\", \"op\": \"reduce_sum\", \"inputs\": [\"x\"], \"axes\": [-1], \"keepdims\": true},"
                             "{\"name\": \"a\", \"op\": \"divide\", \"inputs\": [\"x\", \"s\"]},"
                             "{\"name\": \"y\", \"op\": \"divide\", \"inputs\": [\"a\", \"g\"]}",
                             "\"y\""));
}

/* Transposing a weight happens at compile time: the new constant holds
 * w^T and main reads it directly. */
static void test_fold_constants(void) {
  mlc_error err;
  mlc_gmodule *m = parse(MODEL("{\"name\": \"x\", \"shape\": [2, 4]}", W_W,
                               "{\"name\": \"t\", \"op\": \"transpose\", \"inputs\": [\"w\"]},"
                               "{\"name\": \"y\", \"op\": \"matmul\", \"inputs\": [\"x\", \"t\"]}",
                               "\"y\""),
                         &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  const float *w = m->consts[0]->data;
  CHECK_MSG(mlc_graph_fold_constants(m, &err), "%s", err.msg);
  check_text(m,
             "@I.ir_module\nclass Module:\n    @R.function\n"
             "    def main(x: R.Tensor((2, 4), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
             "        with R.dataflow():\n"
             "            y: R.Tensor((2, 3), dtype=\"float32\") = R.matmul(x, metadata[\"t\"])\n"
             "            R.output(y)\n        return y\n");
  CHECK(m->n_consts == 1 && strcmp(m->consts[0]->name, "t") == 0);
  const float *t = m->consts[0]->data;
  bool same = true;
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 4; k++) same &= t[k * 3 + i] == w[i * 4 + k];
  CHECK(same);
  mlc_graph_free(m);
}

/* Two inputs, two outputs: the entry takes input0, input1, output0, output1. */
static void test_header_entry_multi(void) {
  mlc_error err;
  mlc_gmodule *m = parse(MODEL("{\"name\": \"x\", \"shape\": [4]}, {\"name\": \"y\", \"shape\": [4]}", "",
                               "{\"name\": \"s\", \"op\": \"add\", \"inputs\": [\"x\", \"y\"]},"
                               "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"s\"]},"
                               "{\"name\": \"g\", \"op\": \"gelu\", \"inputs\": [\"s\"]}",
                               "\"r\", \"g\""),
                         &err);
  CHECK_MSG(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  if (!m) return;
  m->name = "two";
  mlc_str s = {0};
  mlc_graph_write_entry(&s, m);
  const char *h = mlc_str_cstr(&s);
  CHECK_MSG(strstr(h, "static inline int32_t two_run(const float *input0, const float *input1, "
                      "float *output0, float *output1) {"),
            "%s", h);
  CHECK(strstr(h, "void *args[] = {(void *)input0, (void *)input1, (void *)v_s};"));
  CHECK(strstr(h, "void *args[] = {(void *)v_s, (void *)output0};"));
  CHECK(strstr(h, "#define TWO_WORKSPACE_FLOATS 16")); /* s: 4 floats in one 64-byte line */
  mlc_str_free(&s);
  mlc_graph_free(m);
}

/* ---- FuseTIR against the unfused graph, in the interpreter -------------------------- */

static bool run_interp(const mlc_gmodule *m, mlc_array **in, mlc_array *out) {
  mlc_error err;
  bool ok = mlc_graph_execute(m, NULL, NULL, in, &out, &err);
  CHECK_MSG(ok, "%s", err.msg);
  return ok;
}

static void check_fuse_tir_equal(const char *json) {
  mlc_error err;
  mlc_gmodule *a = parse(json, &err), *b = parse(json, &err), *r = parse(json, &err);
  CHECK_MSG(a && b && r, "%s", err.msg);
  if (!a || !b || !r) return;
  /* a: lowered without fusion; b: the whole pipeline. */
  CHECK(mlc_graph_lower(a, &err));
  CHECK_MSG(mlc_graph_run_pipeline(b, NULL, NULL, NULL, &err), "%s", err.msg);
  CHECK(mlc_graph_verify(b, &err));
  for (int i = 0; i < b->tir->n_funcs; i++) CHECK(mlc_verify_func(b->tir->funcs[i], &err));
  mlc_array **in = make_inputs(a, 7);
  mlc_array *ya = make_output(a, 0), *yb = make_output(a, 0), *yr = make_output(a, 0);
  double e1 = 1, e2 = 1;
  if (run_interp(a, in, ya) && run_interp(b, in, yb) &&
      mlc_graph_reference(r, in, &yr, &err)) {
    CHECK(mlc_array_allclose(yb, ya, 1e-5, 1e-6, &e1));
    CHECK_MSG(mlc_array_allclose(yb, yr, 1e-4, 1e-5, &e2), "err %g", e2);
  }
  CHECK_MSG(e1 <= 1e-5, "fused vs unfused: %g", e1);
  free_arrays(in, mlc_graph_main(a)->n_params);
  mlc_array_free(ya);
  mlc_array_free(yb);
  mlc_array_free(yr);
  mlc_graph_free(a);
  mlc_graph_free(b);
  mlc_graph_free(r);
}

static void test_fuse_tir_interp_dense(void) { check_fuse_tir_equal(dense_model); }
static void test_fuse_tir_interp_shared(void) { check_fuse_tir_equal(shared_model); }
static void test_fuse_tir_interp_reduce_inputs(void) { check_fuse_tir_equal(rms_model); }

static void test_fuse_tir_interp_ops(void) {
  /* Every op once: conv2d + add + relu fuse, pool, layernorm, gelu chain,
   * multiply + add -> ewise_fma, reshape, transpose. */
  check_fuse_tir_equal(MODEL(
      "{\"name\": \"x\", \"shape\": [1, 2, 6, 6]}",
      "{\"name\": \"cw\", \"shape\": [3, 2, 3, 3]}, {\"name\": \"cb\", \"shape\": [3, 1, 1]},"
      "{\"name\": \"g\", \"shape\": [12]}, {\"name\": \"be\", \"shape\": [12]},"
      "{\"name\": \"s\", \"shape\": [12]}, {\"name\": \"mw\", \"shape\": [12, 5]}",
      "{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"cw\"], \"stride\": 2, \"padding\": 1},"
      "{\"name\": \"ca\", \"op\": \"add\", \"inputs\": [\"c\", \"cb\"]},"
      "{\"name\": \"cr\", \"op\": \"relu\", \"inputs\": [\"ca\"]},"
      "{\"name\": \"p\", \"op\": \"max_pool2d\", \"inputs\": [\"cr\"], \"pool_size\": 2, \"stride\": 1, \"padding\": 1},"
      "{\"name\": \"f\", \"op\": \"reshape\", \"inputs\": [\"p\"], \"shape\": [4, -1]},"
      "{\"name\": \"ln\", \"op\": \"layernorm\", \"inputs\": [\"f\", \"g\", \"be\"]},"
      "{\"name\": \"ge\", \"op\": \"gelu\", \"inputs\": [\"ln\"]},"
      "{\"name\": \"sc\", \"op\": \"multiply\", \"inputs\": [\"ge\", \"s\"]},"
      "{\"name\": \"sh\", \"op\": \"add\", \"inputs\": [\"sc\", \"be\"]},"
      "{\"name\": \"mm\", \"op\": \"matmul\", \"inputs\": [\"sh\", \"mw\"]},"
      "{\"name\": \"t\", \"op\": \"transpose\", \"inputs\": [\"mm\"], \"axes\": [1, 0]},"
      "{\"name\": \"fl\", \"op\": \"flatten\", \"inputs\": [\"t\"]}",
      "\"fl\""));
}

/* Softmax and layernorm over the last axis of 1-d and 3-d tensors, another
 * epsilon: written here, not by the 2-d tasks. */
static void test_fuse_tir_interp_norms(void) {
  check_fuse_tir_equal(MODEL("{\"name\": \"x\", \"shape\": [2, 3, 5]}",
                             "{\"name\": \"g\", \"shape\": [5]}, {\"name\": \"b\", \"shape\": [5]}",
                             "{\"name\": \"s\", \"op\": \"softmax\", \"inputs\": [\"x\"]},"
                             "{\"name\": \"l\", \"op\": \"layernorm\", \"inputs\": [\"s\", \"g\", \"b\"], \"eps\": 0.001},"
                             "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"l\"]}",
                             "\"r\""));
  check_fuse_tir_equal(MODEL("{\"name\": \"x\", \"shape\": [7]}",
                             "{\"name\": \"g\", \"shape\": [7]}, {\"name\": \"b\", \"shape\": [7]}",
                             "{\"name\": \"l\", \"op\": \"layernorm\", \"inputs\": [\"x\", \"g\", \"b\"]},"
                             "{\"name\": \"s\", \"op\": \"softmax\", \"inputs\": [\"l\"]}",
                             "\"s\""));
}

/* A chain of 20 ewise_fma ops, each with two weights of its own: groups
 * stop at 16 ops, and a fused kernel takes 33 arguments. */
/* mlc_graph_compile without a database (a missing file): every kernel
 * untuned, each called once by main, all in one object under the
 * prefixed symbols. */
static void test_compile(void) {
  mlc_error err;
  mlc_gmodule *m = mlc_graph_load("examples/mlp.json", NULL, &err);
  CHECK_MSG(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  mlc_target t;
  CHECK(mlc_target_parse("llvm", &t, &err));
  mlc_gcompile_options o = {.db_path = "/nonexistent/mlc.db", .symbol_prefix = "v",
                            .with_weights = true};
  mlc_gcompiled c = {0};
  bool ok = m && mlc_graph_compile(m, &t, &o, &c, &err);
  CHECK_MSG(ok, "%s", err.msg);
  if (ok) {
    CHECK(c.n == m->tir->n_funcs && c.n_scheduled == c.n && !c.gpu && c.obj && c.obj->len > 0);
    for (int i = 0; i < c.n; i++) {
      CHECK(c.info[i].record_id == 0 && !c.skipped[i] && !c.fallback[i] && c.calls[i] == 1);
      CHECK(strncmp(c.symbols[i], "v_", 2) == 0 && c.src[i] == m->tir->funcs[i]);
    }
  }
  mlc_gcompiled_free(&c);
  mlc_graph_free(m);
}

static void test_long_chain(void) {
  mlc_str j = {0};
  mlc_str_puts(&j, "{\"inputs\": [{\"name\": \"x\", \"shape\": [3, 5]}], \"weights\": [");
  for (int i = 0; i < 20; i++)
    mlc_str_printf(&j, "%s{\"name\": \"a%d\", \"shape\": [5]}, {\"name\": \"b%d\", \"shape\": [3, 1]}",
                   i ? ", " : "", i, i);
  mlc_str_puts(&j, "], \"nodes\": [");
  for (int i = 0; i < 20; i++)
    mlc_str_printf(&j, "%s{\"name\": \"n%d\", \"op\": \"ewise_fma\", \"inputs\": [\"%s%d\", \"a%d\", \"b%d\"]}",
                   i ? ", " : "", i, i ? "n" : "x", i ? i - 1 : 0, i, i);
  mlc_str_puts(&j, "], \"outputs\": [\"n19\"]}");
  /* n0 reads x0, which is not a name: patch it to x. */
  char *t = (char *)mlc_str_cstr(&j), *p = strstr(t, "\"x0\"");
  if (p) memmove(p + 2, p + 3, strlen(p + 3) + 1);
  check_fuse_tir_equal(t);
  mlc_error err;
  mlc_gmodule *m = parse(t, &err);
  CHECK_MSG(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  if (m) {
    mlc_gfunc *f = mlc_graph_main(m);
    CHECK(f->n_bindings == 2 && f->bindings[0].n_args == 33 && f->bindings[1].n_args == 9);
  }
  mlc_graph_free(m);
  mlc_str_free(&j);
}

/* ---- tasks and the default schedule ------------------------------------------------- */

/* Two identical dense + add layers and a third of another shape. */
static const char *layers_model =
    MODEL("{\"name\": \"x\", \"shape\": [2, 8]}",
          "{\"name\": \"w1\", \"shape\": [8, 8]}, {\"name\": \"b1\", \"shape\": [8]},"
          "{\"name\": \"w2\", \"shape\": [8, 8]}, {\"name\": \"b2\", \"shape\": [8]},"
          "{\"name\": \"w3\", \"shape\": [4, 8]}, {\"name\": \"b3\", \"shape\": [4]}",
          "{\"name\": \"d1\", \"op\": \"dense\", \"inputs\": [\"x\", \"w1\"]},"
          "{\"name\": \"a1\", \"op\": \"add\", \"inputs\": [\"d1\", \"b1\"]},"
          "{\"name\": \"d2\", \"op\": \"dense\", \"inputs\": [\"a1\", \"w2\"]},"
          "{\"name\": \"a2\", \"op\": \"add\", \"inputs\": [\"d2\", \"b2\"]},"
          "{\"name\": \"d3\", \"op\": \"dense\", \"inputs\": [\"a2\", \"w3\"]},"
          "{\"name\": \"a3\", \"op\": \"add\", \"inputs\": [\"d3\", \"b3\"]}",
          "\"a3\"");

static void test_extract_tasks(void) {
  mlc_error err;
  mlc_gmodule *m = parse(layers_model, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK(mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err));
  mlc_gtask *ts;
  int n = mlc_graph_extract_tasks(m, &ts);
  CHECK_MSG(n == 2, "%d tasks", n);
  if (n == 2) {
    CHECK(ts[0].calls == 2 && ts[1].calls == 1);
    CHECK(strcmp(ts[0].func->name, "fused_dense_add0") == 0);
    CHECK(strcmp(ts[1].func->name, "fused_dense_add2") == 0);
  }
  /* dce sent both identical layers to one prim_func. */
  CHECK(m->tir->n_funcs == 2 && !mlc_module_find(m->tir, "fused_dense_add1"));
  mlc_gfunc *f = mlc_graph_main(m);
  CHECK(f->n_bindings == 3 && f->bindings[0].tir == f->bindings[1].tir);
  /* Sharing the kernel changes nothing in the results. */
  check_fuse_tir_equal(layers_model);
  mlc_free(ts);
  mlc_graph_free(m);
}

static int count_of(const char *text, const char *what) {
  int n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

/* Interpret f and s on the same seeded inputs; outputs must be equal
 * within rtol (0: bit for bit, as the default schedule keeps every
 * summation order but a row reduction's, which it sums by lanes). */
static void check_same_results(const mlc_prim_func *f, const mlc_prim_func *s, double rtol) {
  mlc_error err;
  int n = f->n_params;
  mlc_array *args[2][8], x[2][8];
  MLC_ASSERT(n <= 8);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < n; i++) {
      args[k][i] = mlc_array_for_buffer(f->params[i]);
      mlc_pcg32 r;
      mlc_pcg32_seed(&r, 3, (uint64_t)i);
      mlc_array_fill_random(args[k][i], &r);
      x[k][i] = *args[k][i];
    }
  CHECK(mlc_interp_run_n(f, n, x[0], &err) && mlc_interp_run_n(s, n, x[1], &err));
  double e = 1;
  CHECK_MSG(mlc_array_allclose(args[1][n - 1], args[0][n - 1], rtol, 0, &e), "err %g", e);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < n; i++) mlc_array_free(args[k][i]);
}

static void test_default_schedule(void) {
  mlc_error err;
  mlc_gmodule *m = parse(dense_model, &err);
  CHECK(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err));
  if (!m) return;
  mlc_arena *a = mlc_arena_new();
  /* Small: j moves below k and is vectorized, the init decomposed out of
   * k (vectorized too); too little work for threads. */
  mlc_prim_func *f = mlc_module_find(m->tir, "fused_dense_add_relu0");
  mlc_prim_func *s = mlc_tuner_cpu_default_schedule(a, f);
  mlc_str t = {0};
  mlc_print_func(&t, s);
  CHECK_MSG(strstr(mlc_str_cstr(&t), "for j_init in T.vectorized(3):") &&
                strstr(mlc_str_cstr(&t), "for k in range(4):\n            for j in T.vectorized(3):") &&
                !strstr(mlc_str_cstr(&t), "T.parallel"),
            "%s", mlc_str_cstr(&t));
  CHECK(mlc_verify_func(s, &err));
  check_same_results(f, s, 0);
  /* A matmul with 2^18 iterations: the register tile (tests/test_tuner_regtile.c
   * checks its accumulator), its outer loops fused and parallel. */
  f = mlc_task_build(a, mlc_task_find("matmul"), (int64_t[]){32, 128, 64});
  s = mlc_tuner_cpu_default_schedule(a, f);
  mlc_str_clear(&t);
  mlc_print_func(&t, s);
  CHECK_MSG(strstr(mlc_str_cstr(&t), "_fused in T.parallel(") &&
                strstr(mlc_str_cstr(&t), "C_global") && strstr(mlc_str_cstr(&t), "in T.unroll(") &&
                strstr(mlc_str_cstr(&t), "in T.vectorized("),
            "%s", mlc_str_cstr(&t));
  CHECK(mlc_verify_func(s, &err));
  check_same_results(f, s, 0);
  /* Row reductions (softmax's max and sum over 256 contiguous columns):
   * rfactor'd by four vectors, the partial sums vectorized along the row,
   * then combined by the write-back's loop vectorized over them (a tree of
   * lanes), four rows at a time; the small dense above (k = 4) is no such
   * row. */
  f = mlc_task_build(a, mlc_task_find("softmax"), (int64_t[]){64, 256});
  s = mlc_tuner_cpu_default_schedule(a, f);
  mlc_str_clear(&t);
  mlc_print_func(&t, s);
  CHECK_MSG(count_of(mlc_str_cstr(&t), "_rf = T.alloc_buffer((64, 64))") == 2 &&
                !strstr(mlc_str_cstr(&t), "_rf_1") && count_of(mlc_str_cstr(&t), "in T.vectorized(64):") == 6 &&
                strstr(mlc_str_cstr(&t), "for ax0 in T.vectorized(64):\n                with T.block(\"T_softmax_maxelem_update\")") &&
                strstr(mlc_str_cstr(&t), "for i_0 in T.parallel(16):\n        for ax1 in range(4):") &&
                strstr(mlc_str_cstr(&t), "in T.vectorized(16):"),
            "%s", mlc_str_cstr(&t));
  CHECK(mlc_verify_func(s, &err));
  check_same_results(f, s, 1e-5);
  /* A matrix times a vector (one output column): no lanes for the
   * register tile, so its rows are summed by lanes too. */
  f = mlc_task_build(a, mlc_task_find("matmul"), (int64_t[]){64, 1, 256});
  s = mlc_tuner_cpu_default_schedule(a, f);
  mlc_str_clear(&t);
  mlc_print_func(&t, s);
  CHECK_MSG(strstr(mlc_str_cstr(&t), "C_rf = T.alloc_buffer((64, 1, 16))") &&
                strstr(mlc_str_cstr(&t), "in T.vectorized(16):") && !strstr(mlc_str_cstr(&t), "C_global"),
            "%s", mlc_str_cstr(&t));
  check_same_results(f, s, 1e-5);
  /* A copy that transposes the last dimension (attention's keys): 16 x 16
   * tiles, the read's contiguous loop innermost, no gathering vectors;
   * one that keeps it (a head permute) stays vectorized along it. */
  static const char *const copies[2] = {"A[v2, v0, v1]", "A[v1, v0, v2]"};
  for (int c = 0; c < 2; c++) {
    char src[512];
    snprintf(src, sizeof src,
             "@T.prim_func\n"
             "def main(A: T.Buffer((64, 4, %d), \"float32\"), B: T.Buffer((4, %d, 64), \"float32\")):\n"
             "    for i0, i1, i2 in T.grid(4, %d, 64):\n"
             "        with T.block(\"T\"):\n"
             "            v0, v1, v2 = T.axis.remap(\"SSS\", [i0, i1, i2])\n"
             "            B[v0, v1, v2] = %s\n",
             c ? 64 : 32, c ? 64 : 32, c ? 64 : 32, copies[c]);
    mlc_module *tm = mlc_parse_module(a, "copy.py", src, &err);
    CHECK_MSG(tm, "%s", err.msg);
    if (!tm) continue;
    f = tm->funcs[0];
    s = mlc_tuner_cpu_default_schedule(a, f);
    mlc_str_clear(&t);
    mlc_print_func(&t, s);
    CHECK_MSG(c ? !strstr(mlc_str_cstr(&t), "i2_1") && strstr(mlc_str_cstr(&t), "in T.vectorized(64):")
                : strstr(mlc_str_cstr(&t), "for i0, i1_0, i2_0, i2_1, i1_1 in T.grid(4, 2, 4, 16, 16):") &&
                      !strstr(mlc_str_cstr(&t), "T.vectorized"),
              "%s", mlc_str_cstr(&t));
    check_same_results(f, s, 0);
  }
  mlc_str_free(&t);
  mlc_arena_free(a);
  mlc_graph_free(m);
}

/* The default schedule of kernel `name` of the one-op-chain model json
 * (its text into *t), checked to compute what the kernel does, with
 * about as much floating-point work (the partial sums of rfactor'd rows
 * add a few; a block recomputing rows would add a multiple). */
static mlc_prim_func *default_of(mlc_arena *a, const char *json, const char *name, mlc_str *t) {
  mlc_error err;
  mlc_gmodule *m = parse(json, &err);
  CHECK_MSG(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  mlc_prim_func *f = m ? mlc_module_find(m->tir, name) : NULL;
  CHECK_MSG(f, "no kernel %s", name);
  if (!f) {
    mlc_graph_free(m);
    return NULL;
  }
  f = mlc_func_copy(a, f);
  mlc_prim_func *s = mlc_tuner_cpu_default_schedule(a, f);
  mlc_str_clear(t);
  mlc_print_func(t, s);
  CHECK_MSG(mlc_verify_func(s, &err), "%s", err.msg);
  CHECK_MSG(mlc_func_flops(s) <= 1.25 * mlc_func_flops(f), "%s: %g flops scheduled, %g unscheduled", name,
            mlc_func_flops(s), mlc_func_flops(f));
  check_same_results(f, s, 1e-5);
  mlc_graph_free(m);
  return s;
}

/* Row-wise kernels run row by row: every block under one parallel loop
 * over the rows (softmax's max, exps, sum and quotient; an elementwise
 * chain, inlined into its last block), the row reductions summed by lanes; a kernel that changes the
 * layout (an unpack after a pool) or whose consumer reads windows of its
 * producer's rows (a max pool over a ReLU: rows would be recomputed) keeps
 * a nest per block. */
static void test_default_schedule_rows(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_str t = {0};
  const char *softmax = "{\"name\": \"s\", \"inputs\": [{\"name\": \"x\", \"shape\": [1, 12, 128, 64]}],"
                        " \"nodes\": [{\"name\": \"y\", \"op\": \"softmax\", \"inputs\": [\"x\"]}],"
                        " \"outputs\": [\"y\"]}";
  if (default_of(a, softmax, "softmax", &t))
    CHECK_MSG(count_of(t.data, "T.parallel(") == 1 && strstr(t.data, "_fused in T.parallel(384):") &&
                  count_of(t.data, "_rf = T.alloc_buffer((1, 12, 128, 16))") == 2 &&
                  count_of(t.data, "in T.vectorized(16):") >= 4,
              "%s", t.data);
  const char *add_relu = "{\"name\": \"ar\", \"inputs\": [{\"name\": \"x\", \"shape\": [1, 64, 56, 56]},"
                         " {\"name\": \"r\", \"shape\": [1, 64, 56, 56]}], \"nodes\": ["
                         "{\"name\": \"s\", \"op\": \"add\", \"inputs\": [\"x\", \"r\"]},"
                         "{\"name\": \"y\", \"op\": \"relu\", \"inputs\": [\"s\"]}], \"outputs\": [\"y\"]}";
  if (default_of(a, add_relu, "fused_add_relu0", &t))
    CHECK_MSG(count_of(t.data, "T.parallel(") == 1 && strstr(t.data, "_fused in T.parallel(3584):") &&
                  !strstr(t.data, "T_add_intermediate"),
              "%s", t.data);
  /* an RMS norm: the square inlined into the row's sum, the quotient into
   * the scaling; the row's root stays a value of its own (inlined, it
   * would be computed per element) */
  if (default_of(a, rms_model, "fused_multiply_reduce_mean_sqrt_divide_relu0", &t))
    CHECK_MSG(!strstr(t.data, "T_multiply_intermediate") && !strstr(t.data, "T_divide_intermediate") &&
                  strstr(t.data, "T_sqrt_intermediate = T.alloc_buffer((4, 1))"),
              "%s", t.data);
  /* Each row of C reads two rows of B: computed row by row, B's rows
   * would be computed twice. */
  static const char two_rows[] = "@T.prim_func\n"
                                 "def main(A: T.Buffer((129, 256), \"float32\"), C: T.Buffer((128, 256), \"float32\")):\n"
                                 "    B = T.alloc_buffer((129, 256))\n"
                                 "    for i, j in T.grid(129, 256):\n"
                                 "        with T.block(\"B\"):\n"
                                 "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                                 "            B[vi, vj] = A[vi, vj] * T.float32(2)\n"
                                 "    for i, j in T.grid(128, 256):\n"
                                 "        with T.block(\"C\"):\n"
                                 "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                                 "            C[vi, vj] = B[vi, vj] + B[vi + 1, vj]\n";
  mlc_error err;
  mlc_module *tm = mlc_parse_module(a, "two_rows.py", two_rows, &err);
  CHECK_MSG(tm && tm->n_funcs == 1, "%s", err.msg);
  if (tm) {
    mlc_prim_func *s = mlc_tuner_cpu_default_schedule(a, tm->funcs[0]);
    mlc_str_clear(&t);
    mlc_print_func(&t, s);
    CHECK_MSG(mlc_func_flops(s) == mlc_func_flops(tm->funcs[0]) && strstr(t.data, "in T.grid(129, "),
              "%s", t.data);
    check_same_results(tm->funcs[0], s, 0);
  }
  const char *pool_unpack = "{\"name\": \"pu\", \"inputs\": [{\"name\": \"x\", \"shape\": [1, 32, 28, 28]}],"
                            " \"weights\": [{\"name\": \"w\", \"shape\": [32, 32, 1, 1]}], \"nodes\": ["
                            "{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"]},"
                            "{\"name\": \"y\", \"op\": \"max_pool2d\", \"inputs\": [\"c\"], \"pool_size\": 3,"
                            " \"stride\": 2, \"padding\": 1}], \"outputs\": [\"y\"]}";
  if (default_of(a, pool_unpack, "fused_max_pool2d_unpack_nchwc0", &t))
    CHECK_MSG(strstr(t.data, "T_pool_max_intermediate_global"), "%s", t.data);
  mlc_str_free(&t);
  mlc_arena_free(a);
}

/* Whether a tile's output columns are unrolled several at a time. */
static bool several_rows(const char *text) {
  const char *p = strstr(text, "for x_1 in T.unroll(");
  return p && atoi(p + strlen("for x_1 in T.unroll(")) > 1;
}

/* A depthwise convolution (both operands carry the channel lanes: no
 * broadcast) is register-tiled over several output columns, one vector
 * load each, the weights loaded once for them; its bias and ReLU6 (the
 * blocks after it) are computed per tile after its write-back, not in nests of
 * their own over the whole output; its padding is read in place, not
 * copied into a padded input first. A max pool's window gets several
 * columns too. */
static void test_default_schedule_epilogue(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_str t = {0};
  const char *dw =
      "{\"name\": \"dw\", \"inputs\": [{\"name\": \"x\", \"shape\": [1, 32, 28, 28]}], \"weights\": ["
      "{\"name\": \"w1\", \"shape\": [32, 32, 1, 1]}, {\"name\": \"wd\", \"shape\": [32, 1, 3, 3]},"
      " {\"name\": \"bd\", \"shape\": [32, 1, 1]}, {\"name\": \"w2\", \"shape\": [16, 32, 1, 1]}], \"nodes\": ["
      "{\"name\": \"e\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w1\"]},"
      "{\"name\": \"d\", \"op\": \"conv2d\", \"inputs\": [\"e\", \"wd\"], \"padding\": 1, \"groups\": 32},"
      "{\"name\": \"db\", \"op\": \"add\", \"inputs\": [\"d\", \"bd\"]},"
      "{\"name\": \"dr\", \"op\": \"clip\", \"inputs\": [\"db\"], \"min\": 0, \"max\": 6},"
      "{\"name\": \"y\", \"op\": \"conv2d\", \"inputs\": [\"dr\", \"w2\"]}], \"outputs\": [\"y\"]}";
  if (default_of(a, dw, "fused_conv2d_add_clip0", &t))
    CHECK_MSG(several_rows(t.data) && !strstr(t.data, "T_add_intermediate") && !strstr(t.data, "data_pad =") &&
                  !strstr(t.data, "in T.grid(1, 2, 28, 28)"),
              "%s", t.data);
  const char *pool = "{\"name\": \"mp\", \"inputs\": [{\"name\": \"x\", \"shape\": [1, 32, 56, 56]}],"
                     " \"weights\": [{\"name\": \"w\", \"shape\": [32, 32, 1, 1]},"
                     " {\"name\": \"w2\", \"shape\": [32, 32, 1, 1]}], \"nodes\": ["
                     "{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"]},"
                     "{\"name\": \"p\", \"op\": \"max_pool2d\", \"inputs\": [\"c\"], \"pool_size\": 3, \"stride\": 2,"
                     " \"padding\": 1}, {\"name\": \"y\", \"op\": \"conv2d\", \"inputs\": [\"p\", \"w2\"]}],"
                     " \"outputs\": [\"y\"]}";
  if (default_of(a, pool, "max_pool2d", &t))
    CHECK_MSG(several_rows(t.data), "%s", t.data);
  mlc_str_free(&t);
  mlc_arena_free(a);
}

/* ---- the task scheduler (model tuning) ----------------------------------------------- */

/* A fake runner: each task's kernel has a base time (by its workload text),
 * varied by the trace; it remembers the traces it saw. */
typedef struct sched_fake {
  const char *text[2]; /* workload TVMScript of each task */
  double base[2];
  int per_task[2];     /* candidates measured per task */
  int repeats, n_seen;
  uint64_t seen[512];
  int seen_task[512];
} sched_fake;

static bool sched_measure(void *ud, int n, const struct mlc_measure_cand *c,
                          struct mlc_measure_result *out, mlc_error *err) {
  sched_fake *F = ud;
  for (int i = 0; i < n; i++) {
    int t = strcmp(c[i].workload, F->text[0]) == 0 ? 0 : strcmp(c[i].workload, F->text[1]) == 0 ? 1 : -1;
    if (t < 0) return mlc_error_set(err, "fake runner: unknown workload");
    F->per_task[t]++;
    uint64_t h = mlc_hash_str(c[i].trace ? c[i].trace : "", (uint64_t)t);
    for (int j = 0; j < F->n_seen; j++) F->repeats += F->seen[j] == h;
    if (F->n_seen < 512) F->seen_task[F->n_seen] = t, F->seen[F->n_seen++] = h;
    mlc_measure_result x = {.status = MLC_MEASURE_OK, .n_secs = 1};
    x.secs[0] = x.mean_sec = F->base[t] * (1 + (double)(h % 97) / 97);
    mlc_measure_result_publish(&out[i], &x, i);
  }
  return true;
}

typedef struct sched_env {
  mlc_gmodule *m;
  mlc_arena *a;
  mlc_tuner_task tasks[2];
  sched_fake fake;
  mlc_db *db;
  char path[64];
  int progress_calls, progress_bad;
} sched_env;

static void sched_progress(void *ud, const mlc_tuner_sched_progress *p) {
  sched_env *E = ud;
  E->progress_calls++;
  int sum = p->state[0].trials + p->state[1].trials;
  if (p->round != E->progress_calls || sum != p->trials_done || p->task < 0 || p->task > 1)
    E->progress_bad++;
}

/* The two tasks of layers_model (fused_dense_add0 called twice, base time
 * base0; fused_dense_add2 once, base1) and a fresh database. */
static bool sched_env_open(sched_env *E, const char *name, double base0, double base1) {
  memset(E, 0, sizeof *E);
  mlc_error err;
  E->m = parse(layers_model, &err);
  if (!E->m || !mlc_graph_run_pipeline(E->m, NULL, NULL, NULL, &err)) return false;
  E->a = mlc_arena_new();
  mlc_tuner_task *ts;
  int n = mlc_graph_tuner_tasks(E->a, E->m, &ts);
  for (int i = 0; i < 2 && n == 2; i++) {
    E->tasks[i] = ts[i];
    mlc_str s = {0};
    mlc_print_func(&s, ts[i].func);
    E->fake.text[i] = mlc_arena_strdup(E->a, mlc_str_cstr(&s));
    mlc_str_free(&s);
  }
  CHECK(n == 2 && ts[0].weight == 2 && ts[1].weight == 1 && strcmp(ts[0].func->name, "main") == 0);
  CHECK_MSG(n == 2 && strcmp(ts[1].name, "model_fused_dense_add2") == 0, "%s", ts[1].name);
  E->fake.base[0] = base0;
  E->fake.base[1] = base1;
  snprintf(E->path, sizeof E->path, "/tmp/mlc_test_graph_%s_%d.db", name, (int)getpid());
  unlink(E->path);
  E->db = mlc_db_open(E->path, MLC_DB_CREATE, &err);
  return n == 2 && E->db;
}

static void sched_env_close(sched_env *E) {
  if (E->db) mlc_db_close(E->db);
  unlink(E->path);
  char more[80];
  snprintf(more, sizeof more, "%s-wal", E->path);
  unlink(more);
  snprintf(more, sizeof more, "%s-shm", E->path);
  unlink(more);
  mlc_arena_free(E->a);
  mlc_graph_free(E->m);
}

static void sched_opts(sched_env *E, mlc_tuner_sched_opts *o, mlc_tuner_task_sched kind, int trials) {
  mlc_tuner_sched_opts_default(o);
  o->kind = kind;
  o->trials = trials;
  o->trials_per_round = 8;
  o->progress = sched_progress;
  o->progress_ud = E;
  o->tune.cost_model = "random";
  o->tune.measure = sched_measure;
  o->tune.measure_ud = &E->fake;
  o->tune.search.num_cores = 2;
  o->tune.search.population = 24;
  o->tune.search.generations = 2;
  o->tune.search.seed = 3;
  o->tune.remeasure_top = 0; /* counts of measurements stay the rounds' (test_sched_remeasure) */
}

/* Records of a task in the database, by an independent query. */
static int db_trials(sched_env *E, int i, double *best) {
  mlc_error err;
  int64_t wid;
  char target[512];
  *best = 0;
  if (mlc_db_find_workload(E->db, E->tasks[i].func, &wid, &err) != 1) return 0;
  mlc_db_normalize_target("llvm", target, sizeof target);
  mlc_arena *a = mlc_arena_new();
  mlc_db_record *r;
  int n = mlc_db_records(E->db, wid, target, a, &r, &err);
  for (int k = 0; k < n; k++)
    if (r[k].mean_sec > 0 && (*best == 0 || r[k].mean_sec < *best)) *best = r[k].mean_sec;
  mlc_arena_free(a);
  return n;
}

/* Round-robin splits the budget evenly; the database holds exactly it. */
static void test_sched_round_robin(void) {
  sched_env E;
  CHECK(sched_env_open(&E, "rr", 1e-4, 1e-5));
  mlc_tuner_sched_opts o;
  sched_opts(&E, &o, MLC_TUNER_SCHED_ROUND_ROBIN, 48);
  mlc_tuner_task_state st[2];
  mlc_tuner_sched_result r;
  mlc_error err;
  CHECK_MSG(mlc_tuner_schedule_tasks(E.db, 2, E.tasks, &o, st, &r, &err), "%s", err.msg);
  double b0, b1;
  int n0 = db_trials(&E, 0, &b0), n1 = db_trials(&E, 1, &b1);
  CHECK_MSG(n0 == 24 && n1 == 24 && st[0].trials == 24 && st[1].trials == 24, "%d %d", n0, n1);
  CHECK(r.rounds == 6 && r.measured == 48 && st[0].rounds == 3 && st[1].rounds == 3);
  CHECK(E.fake.per_task[0] == 24 && E.fake.per_task[1] == 24 && E.fake.repeats == 0);
  CHECK(st[0].best_sec == b0 && st[1].best_sec == b1 && st[0].best_record_id > 0);
  CHECK_MSG(fabs(r.est_sec - (2 * b0 + b1)) < 1e-12, "est %g", r.est_sec);
  CHECK(E.progress_calls == 6 && E.progress_bad == 0);
  sched_env_close(&E);
}

/* At the end, each tuned task's best two records and its default
 * schedule's are measured again (their run times joining the records),
 * and its best is chosen on those. */
static void test_sched_remeasure(void) {
  sched_env E;
  CHECK(sched_env_open(&E, "rm", 1e-4, 1e-5));
  mlc_tuner_sched_opts o;
  sched_opts(&E, &o, MLC_TUNER_SCHED_ROUND_ROBIN, 32);
  o.tune.remeasure_top = 2;
  mlc_tuner_task_state st[2];
  mlc_tuner_sched_result r;
  mlc_error err;
  CHECK_MSG(mlc_tuner_schedule_tasks(E.db, 2, E.tasks, &o, st, &r, &err), "%s", err.msg);
  CHECK_MSG(r.measured == 32 && E.fake.repeats >= 4 && E.fake.repeats <= 6,
            "%d measured, %d measured again", r.measured, E.fake.repeats);
  for (int i = 0; i < 2; i++) {
    mlc_db_record rec;
    double b;
    db_trials(&E, i, &b);
    CHECK(mlc_db_get_record(E.db, st[i].best_record_id, E.a, &rec, &err) == 1);
    CHECK_MSG(rec.n_secs == 2 && st[i].best_sec == b, "task %d: best has %d times", i, rec.n_secs);
    CHECK(st[i].default_sec >= st[i].best_sec);
  }
  CHECK_MSG(r.est_default_sec >= r.est_sec && r.est_sec > 0, "untuned %g, tuned %g", r.est_default_sec,
            r.est_sec);
  sched_env_close(&E);
}

/* The gradient scheduler gives the trials to the kernel that dominates
 * the model (2 calls x 10x the time): after one warm-up round each, the
 * light task gets none while the heavy one improves. A rerun with the same
 * budget does nothing; a larger one tops up without measuring twice. */
static void test_sched_gradient(void) {
  sched_env E;
  CHECK(sched_env_open(&E, "grad", 1e-4, 1e-5));
  mlc_tuner_sched_opts o;
  sched_opts(&E, &o, MLC_TUNER_SCHED_GRADIENT, 64);
  mlc_tuner_task_state st[2];
  mlc_tuner_sched_result r;
  mlc_error err;
  CHECK_MSG(mlc_tuner_schedule_tasks(E.db, 2, E.tasks, &o, st, &r, &err), "%s", err.msg);
  double b0, b1;
  int n0 = db_trials(&E, 0, &b0), n1 = db_trials(&E, 1, &b1);
  CHECK_MSG(n0 + n1 == 64 && n0 == st[0].trials && n1 == st[1].trials, "%d %d", n0, n1);
  /* the light task's warm-up round is all it gets, unless the heavy one's
   * space runs out: then it gets the rest */
  CHECK_MSG(st[0].done ? n0 >= 32 && n1 == 64 - n0 : n1 == 8 && n0 == 56, "heavy %d, light %d trials",
            n0, n1);
  CHECK(st[0].gradient > 0 && st[1].gradient > 0);
  CHECK_MSG(fabs(r.est_sec - (2 * b0 + b1)) < 1e-12, "est %g", r.est_sec);
  CHECK(E.progress_calls == r.rounds && r.rounds >= 8 && E.progress_bad == 0);
  mlc_tuner_sched_result r2;
  CHECK(mlc_tuner_schedule_tasks(E.db, 2, E.tasks, &o, st, &r2, &err));
  CHECK(r2.nothing_to_do && r2.measured == 0 && strstr(r2.message, "nothing to do"));
  CHECK(st[0].trials == n0 && st[1].trials == n1 && st[0].best_sec == b0);
  E.progress_calls = 0;
  o.trials = 96;
  CHECK(mlc_tuner_schedule_tasks(E.db, 2, E.tasks, &o, st, &r2, &err));
  /* (4 rounds, or 5 when the heavy task's small space runs out: then the
   * light one gets the rest) */
  CHECK_MSG(r2.measured == 32 && r2.rounds >= 4 && st[0].trials + st[1].trials == 96,
            "%d measured in %d rounds: %d + %d; %s", r2.measured, r2.rounds, st[0].trials,
            st[1].trials, r2.message);
  n0 = db_trials(&E, 0, &b0), n1 = db_trials(&E, 1, &b1);
  CHECK(n0 == st[0].trials && n1 == st[1].trials && n0 + n1 == 96);
  CHECK(E.fake.repeats == 0 && E.progress_calls == r2.rounds && E.progress_bad == 0);
  sched_env_close(&E);
}

/* Weighting is by calls x time: equal times, but task 0 runs twice per
 * model run, so it gets more rounds than task 1 (and task 1 some). */
static void test_sched_weights(void) {
  sched_env E;
  CHECK(sched_env_open(&E, "w", 1e-4, 1e-4));
  mlc_tuner_sched_opts o;
  sched_opts(&E, &o, MLC_TUNER_SCHED_GRADIENT, 48);
  mlc_tuner_task_state st[2];
  mlc_tuner_sched_result r;
  mlc_error err;
  CHECK_MSG(mlc_tuner_schedule_tasks(E.db, 2, E.tasks, &o, st, &r, &err), "%s", err.msg);
  /* about 2:1 (equal shares without the weights) */
  CHECK_MSG(2 * st[0].trials >= 3 * st[1].trials && st[1].trials > 8, "%d %d", st[0].trials,
            st[1].trials);
  CHECK(st[0].trials + st[1].trials == 48);
  sched_env_close(&E);
}

/* The specializations of a kernel of size vars (sym_dense at n = 16, the
 * anchor, and at its bound 160, the lead) tune as a family: the warm-up
 * measures the anchor only; the lead then starts from its time scaled by
 * the work, which is the model's estimate; the lead takes the next round
 * (the larger time of equal weights: each member weighs by the lead's
 * untuned time over its own), which measures, after its default schedule,
 * the anchor's best carried to its size. */
static void test_sched_family(void) {
  sched_env E;
  memset(&E, 0, sizeof E);
  mlc_error err;
  E.a = mlc_arena_new();
  char *text = mlc_read_file("tests/kernels/sym_dense.py", NULL, &err);
  mlc_module *m = text ? mlc_parse_module(E.a, "sym_dense.py", text, &err) : NULL;
  mlc_free(text);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return mlc_arena_free(E.a);
  const int64_t at[2] = {16, 160};
  for (int i = 0; i < 2; i++) {
    mlc_prim_func *g = mlc_func_specialize(E.a, m->funcs[0], &at[i], &err);
    E.tasks[i] = (mlc_tuner_task){"sym_dense", g, 1, 0, i ? "n=160" : "n=16", 1, i ? 1 : 0.1, i == 0};
    mlc_str t = {0};
    mlc_print_func(&t, g);
    E.fake.text[i] = mlc_arena_strdup(E.a, mlc_str_cstr(&t));
    mlc_str_free(&t);
  }
  E.fake.base[0] = 1e-5;
  E.fake.base[1] = 1e-4;
  snprintf(E.path, sizeof E.path, "/tmp/mlc_test_graph_family_%d.db", (int)getpid());
  unlink(E.path);
  E.db = mlc_db_open(E.path, MLC_DB_CREATE, &err);
  CHECK_MSG(E.db, "%s", err.msg);
  mlc_tuner_sched_opts o;
  mlc_tuner_task_state st[2];
  mlc_tuner_sched_result r;
  sched_opts(&E, &o, MLC_TUNER_SCHED_GRADIENT, 1);
  o.progress = NULL;
  CHECK_MSG(E.db && mlc_tuner_schedule_tasks(E.db, 2, E.tasks, &o, st, &r, &err), "%s", err.msg);
  CHECK_MSG(st[0].trials == 1 && st[1].trials == 0 && st[0].default_sec > 0, "%d + %d trials",
            st[0].trials, st[1].trials);
  CHECK_MSG(fabs(r.est_sec - 10 * st[0].best_sec) <= 1e-9 * r.est_sec, "estimate %g, the anchor's %g",
            r.est_sec, st[0].best_sec);
  mlc_db_record best;
  CHECK(mlc_db_get_record(E.db, st[0].best_record_id, E.a, &best, &err) == 1);
  o.trials = 9;
  CHECK_MSG(mlc_tuner_schedule_tasks(E.db, 2, E.tasks, &o, st, &r, &err), "%s", err.msg);
  CHECK_MSG(st[0].trials == 1 && st[1].trials == 8 && r.rounds == 1, "%d + %d trials in %d rounds",
            st[0].trials, st[1].trials, r.rounds);
  /* the lead's second measurement: the anchor's best, carried */
  mlc_trace *tr = mlc_trace_from_json(E.a, best.trace, strlen(best.trace), &err);
  mlc_sched *c = tr ? tuner_carry_trace(E.tasks[1].func, tr, &o.tune.search, true, &err) : NULL;
  CHECK_MSG(c, "%s", err.msg);
  int k = 0, nth = 0;
  while (k < E.fake.n_seen && !(E.fake.seen_task[k] == 1 && ++nth == 2)) k++;
  if (c) {
    mlc_str js = {0};
    mlc_trace_to_json(&js, mlc_sched_trace(c));
    CHECK_MSG(k < E.fake.n_seen && E.fake.seen[k] == mlc_hash_str(mlc_str_cstr(&js), 1),
              "the lead's second candidate is not the anchor's best carried");
    mlc_str_free(&js);
    mlc_sched_free(c);
  }
  mlc_db_close(E.db);
  E.db = NULL;
  sched_env_close(&E);
}

/* ---- replay from the tuning database ---------------------------------------------- */

/* A record for the MLP's second kernel (stored as the task "main", as the
 * tuner stores workloads) is replayed for it; the other kernel stays
 * untuned; a record that does not replay falls back with a note. */
static void test_replay_from_db(void) {
  mlc_error err;
  const char *path = "/tmp/mlc_test_graph_replay.db";
  unlink(path);
  mlc_gmodule *m = mlc_graph_load("examples/mlp.json", NULL, &err);
  CHECK_MSG(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  mlc_db *db = mlc_db_open(path, MLC_DB_CREATE, &err);
  CHECK_MSG(db, "%s", err.msg);
  if (!m || !db) return;
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = mlc_module_find(m->tir, "fused_matmul_add1");
  mlc_gtask gt = {f, mlc_func_struct_hash(f), 1};
  mlc_prim_func *task = mlc_graph_task_func(a, &gt);
  CHECK(strcmp(task->name, "main") == 0 && mlc_func_struct_equal(task, f));
  /* The trace: split j of the matmul block by 2 and parallelize the outer part. */
  mlc_sched *s = mlc_sched_new(task, 1);
  mlc_rv b, *loops, parts[2];
  CHECK(mlc_sched_get_block(s, "C", "main", &b, &err));
  CHECK(mlc_sched_get_loops(s, b, &loops, &err) == 3);
  mlc_rv j = loops[1];
  CHECK(mlc_sched_split(s, j, 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(2)}, true, parts, &err));
  CHECK(mlc_sched_parallel(s, parts[0], &err));
  mlc_str json = {0};
  mlc_trace_to_json(&json, mlc_sched_trace(s));
  int64_t wid = mlc_db_add_workload(db, "mlp_kernel", "", task, &err);
  CHECK_MSG(wid > 0, "%s", err.msg);
  mlc_target t;
  mlc_target_host(&t);
  double secs[2] = {1e-6, 1.2e-6};
  char h[17];
  CHECK_MSG(mlc_db_replay_trace(a, task, mlc_str_cstr(&json), NULL, h, &err), "%s", err.msg);
  mlc_db_record r = {.workload_id = wid, .target = t.str, .trace = mlc_str_cstr(&json),
                     .n_secs = 2, .secs = secs, .round = 1, .sched_hash = h};
  CHECK_MSG(mlc_db_commit(db, 1, &r, NULL, &err), "%s", err.msg);
  mlc_gkernel k0, k1;
  CHECK(mlc_graph_schedule_kernel(a, db, t.str, f, true, &k1, &err));
  CHECK(mlc_graph_schedule_kernel(a, db, t.str, mlc_module_find(m->tir, "fused_dense_add_relu0"),
                                  true, &k0, &err));
  CHECK_MSG(k1.record_id > 0 && fabs(k1.record_sec - 1.1e-6) < 1e-12, "%s", k1.note);
  CHECK(k0.record_id == 0 && k0.note[0] == 0);
  CHECK(strcmp(k1.sched->name, "fused_matmul_add1") == 0);
  mlc_str txt = {0};
  mlc_print_func(&txt, k1.sched);
  CHECK_MSG(strstr(mlc_str_cstr(&txt), "for j_0 in T.parallel(5):"), "%s", mlc_str_cstr(&txt));
  check_same_results(f, k1.sched, 0);
  /* Another target has no record: untuned. */
  mlc_gkernel k2;
  CHECK(mlc_graph_schedule_kernel(a, db, "llvm -mcpu=core2 -num-cores=1", f, true, &k2, &err));
  CHECK(k2.record_id == 0);
  /* A better record whose trace names a block that does not exist: it is
   * skipped, with a note naming it, and the next best record is used. */
  mlc_str bad = {0};
  mlc_str_puts(&bad, "{\"insts\":[[\"GetBlock\",[],{\"name\":\"nope\",\"func_name\":\"main\"},[\"b0\"]]],"
                     "\"decisions\":{},\"version\":1}");
  double fast[1] = {1e-7};
  mlc_db_record r2 = {.workload_id = wid, .target = t.str, .trace = mlc_str_cstr(&bad),
                      .n_secs = 1, .secs = fast, .round = 2, .sched_hash = "0123456789abcdef"};
  CHECK_MSG(mlc_db_commit(db, 1, &r2, NULL, &err), "%s", err.msg);
  CHECK(mlc_graph_schedule_kernel(a, db, t.str, f, true, &k2, &err));
  CHECK_MSG(k2.record_id == k1.record_id && strstr(k2.note, "did not replay"), "%s", k2.note);
  /* A still better record without a scheduled-function hash (a row written
   * around mlc-tune) is not trusted, though its trace replays: skipped. */
  mlc_sched_free(s);
  s = mlc_sched_new(task, 1);
  CHECK(mlc_sched_get_block(s, "C", "main", &b, &err));
  CHECK(mlc_sched_get_loops(s, b, &loops, &err) == 3);
  CHECK(mlc_sched_split(s, loops[1], 2, (mlc_operand[]){MLC_OP_NONE, MLC_OP_INT(5)}, true, parts,
                        &err));
  mlc_str nohash = {0};
  mlc_trace_to_json(&nohash, mlc_sched_trace(s));
  double faster[1] = {1e-9};
  mlc_db_record r3 = {.workload_id = wid, .target = t.str, .trace = mlc_str_cstr(&nohash),
                      .n_secs = 1, .secs = faster, .round = 3};
  CHECK_MSG(mlc_db_commit(db, 1, &r3, NULL, &err), "%s", err.msg);
  CHECK(mlc_graph_schedule_kernel(a, db, t.str, f, true, &k2, &err));
  CHECK_MSG(k2.record_id == k1.record_id && strstr(k2.note, "has no scheduled-function hash") &&
                strstr(k2.note, "record 3 "),
            "%s", k2.note);
  mlc_str_free(&nohash);
  mlc_str_free(&bad);
  mlc_str_free(&txt);
  mlc_str_free(&json);
  mlc_sched_free(s);
  mlc_db_close(db);
  unlink(path);
  unlink("/tmp/mlc_test_graph_replay.db-wal");
  unlink("/tmp/mlc_test_graph_replay.db-shm");
  mlc_arena_free(a);
  mlc_graph_free(m);
}

/* ---- examples compiled and run ----------------------------------------------------- */

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

/* Compile every prim_func of m with the default schedule and load it. */
static bool compile_model(mlc_gmodule *m, mlc_arena *a, compiled *c) {
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
  for (int i = 0; i < c->n; i++) {
    c->fns[i] = mlc_jit_lookup(c->lib, syms[i], &err);
    CHECK_MSG(c->fns[i], "%s", err.msg);
    if (!c->fns[i]) return false;
  }
  return true;
}

/* relu(x @ w0^T + b0) @ w1^T + b1, straight from the .npy files. */
static void mlp_reference(const float *x, const float *w0, const float *b0, const float *w1,
                          const float *b1, float *y) {
  float h[128];
  for (int j = 0; j < 128; j++) {
    double acc = b0[j];
    for (int k = 0; k < 784; k++) acc += (double)x[k] * w0[j * 784 + k];
    h[j] = acc > 0 ? (float)acc : 0;
  }
  for (int j = 0; j < 10; j++) {
    double acc = b1[j];
    for (int k = 0; k < 128; k++) acc += (double)h[k] * w1[j * 128 + k];
    y[j] = (float)acc;
  }
}

static void test_mlp_end_to_end(void) {
  mlc_error err;
  mlc_gmodule *m = mlc_graph_load("examples/mlp.json", NULL, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  mlc_gtype t;
  float *w0 = mlc_npy_read("examples/mlp/w0.npy", &t, &err);
  float *b0 = mlc_npy_read("examples/mlp/b0.npy", &t, &err);
  float *w1 = mlc_npy_read("examples/mlp/w1.npy", &t, &err);
  float *b1 = mlc_npy_read("examples/mlp/b1.npy", &t, &err);
  CHECK(w0 && b0 && w1 && b1);
  CHECK_MSG(mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  /* The notes' shape: two fused kernels, matmul + add (+ relu); the first
   * layer's matmul a dense over its packed weight. */
  CHECK(mlc_module_find(m->tir, "fused_dense_add_relu0") && mlc_module_find(m->tir, "fused_matmul_add1"));
  CHECK(m->tir->n_funcs == 2);
  mlc_arena *a = mlc_arena_new();
  compiled c = {0};
  if (w0 && b0 && w1 && b1 && compile_model(m, a, &c)) {
    double worst = 0;
    int argmax_agree = 0;
    for (int s = 0; s < 20; s++) {
      mlc_array **in = make_inputs(m, 100 + (uint64_t)s);
      mlc_array *y = make_output(m, 0);
      float want[10];
      mlp_reference(in[0]->data, w0, b0, w1, b1, want);
      CHECK(mlc_graph_execute(m, jit_kernel, &c, in, &y, &err));
      int am = 0, bm = 0;
      for (int j = 0; j < 10; j++) {
        float got = ((float *)y->data)[j];
        worst = fmax(worst, fabs(got - want[j]));
        if (got > ((float *)y->data)[am]) am = j;
        if (want[j] > want[bm]) bm = j;
      }
      argmax_agree += am == bm;
      free_arrays(in, 1);
      mlc_array_free(y);
    }
    CHECK_MSG(worst < 1e-5, "max abs error %g", worst);
    CHECK(argmax_agree == 20);
    mlc_jit_unload(c.lib);
  }
  mlc_free(w0), mlc_free(b0), mlc_free(w1), mlc_free(b1);
  mlc_arena_free(a);
  mlc_graph_free(m);
}

static void test_cnn_end_to_end(void) {
  mlc_error err;
  mlc_gmodule *m = mlc_graph_load("examples/cnn.json", NULL, &err);
  mlc_gmodule *r = mlc_graph_load("examples/cnn.json", NULL, &err);
  CHECK_MSG(m && r, "%s", err.msg);
  if (!m || !r) return;
  CHECK_MSG(mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  /* the convs, bias adds, ReLUs and pools in NCHWc, one unpack (fused
   * after the last pool) before flatten */
  CHECK(mlc_module_find(m->tir, "fused_conv2d_add_relu0") &&
        mlc_module_find(m->tir, "fused_max_pool2d_unpack_nchwc2") &&
        mlc_module_find(m->tir, "fused_dense_ewise_fma3"));
  mlc_arena *a = mlc_arena_new();
  compiled c = {0};
  if (compile_model(m, a, &c)) {
    for (int s = 0; s < 3; s++) {
      mlc_array **in = make_inputs(m, 200 + (uint64_t)s);
      mlc_array *y = make_output(m, 0), *want = make_output(m, 0);
      double e = 1;
      CHECK(mlc_graph_execute(m, jit_kernel, &c, in, &y, &err));
      CHECK(mlc_graph_reference(r, in, &want, &err));
      CHECK_MSG(mlc_array_allclose(y, want, 1e-4, 1e-6, &e), "max abs error %g", e);
      free_arrays(in, 1);
      mlc_array_free(y);
      mlc_array_free(want);
    }
    mlc_jit_unload(c.lib);
  }
  mlc_arena_free(a);
  mlc_graph_free(m);
  mlc_graph_free(r);
}

/* ---- dense weights packed by the layout pass ------------------------------------ */

/* y = relu(dense(x, w) + b) (w a weight, or with w_input an input), and
 * with two_layers a second dense over the same w: y2 = dense(y1, w). */
static char *dense_json(int M, int N, int K, bool w_input, bool two_layers) {
  mlc_str s = {0};
  mlc_str_printf(&s, "{\"inputs\": [{\"name\": \"x\", \"shape\": [%d, %d]}", M, K);
  if (w_input) mlc_str_printf(&s, ", {\"name\": \"w\", \"shape\": [%d, %d]}", N, K);
  mlc_str_printf(&s, "], \"weights\": [");
  if (!w_input) mlc_str_printf(&s, "{\"name\": \"w\", \"shape\": [%d, %d]}, ", N, K);
  mlc_str_printf(&s, "{\"name\": \"b\", \"shape\": [%d]}], \"nodes\": ["
                     "{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"]},"
                     "{\"name\": \"a\", \"op\": \"add\", \"inputs\": [\"d\", \"b\"]},"
                     "{\"name\": \"y\", \"op\": \"relu\", \"inputs\": [\"a\"]}", N);
  if (two_layers)
    mlc_str_printf(&s, ", {\"name\": \"y2\", \"op\": \"dense\", \"inputs\": [\"y\", \"w\"]}");
  mlc_str_printf(&s, "], \"outputs\": [\"%s\"]}", two_layers ? "y2" : "y");
  return mlc_str_take(&s);
}

static const mlc_gvar *find_const(const mlc_gmodule *m, const char *name) {
  for (int i = 0; i < m->n_consts; i++)
    if (strcmp(m->consts[i]->name, name) == 0) return m->consts[i];
  return NULL;
}

/* The weight main reads after the passes: w_packed [N/n, K, n] holding
 * w[j, k] at [j / n, k, j % n] (n: `block`), or w itself when block is 0
 * (or an input: neither). Compiled with the default schedule, the model
 * computes what the reference run of the unpacked graph does. */
typedef struct pack_case {
  const char *name;
  int M, N, K;
  bool w_input, two_layers;
  int block; /* 0: not packed */
} pack_case;

static const pack_case pack_cases[] = {
    {"n16", 4, 48, 32, false, false, 16},
    {"n8", 3, 40, 24, false, false, 8},   /* 40: a multiple of 8, not of 16 */
    {"odd_n", 4, 20, 32, false, false, 0}, /* not a multiple of 8: refused, not padded */
    {"w_input", 4, 48, 32, true, false, 0},
    {"shared", 2, 32, 32, false, true, 16}, /* two layers, one packed copy */
};

/* The reference run of the graph just after the layout pass (the dense
 * over its packed weight: ref.c unpacks it) gives want too. */
static void check_packed_reference(const pack_case *c, mlc_array **in, const mlc_array *want) {
  mlc_error err;
  char *json = dense_json(c->M, c->N, c->K, c->w_input, c->two_layers);
  mlc_gmodule *m = parse(json, &err);
  mlc_free(json);
  mlc_array *y = make_output(m, 0);
  double e = 1;
  CHECK_MSG(mlc_graph_fold_constants(m, &err) && mlc_graph_pack_weights(m, &err) &&
                mlc_graph_reference(m, in, &y, &err),
            "%s: %s", c->name, err.msg);
  CHECK_MSG(mlc_array_allclose(y, want, 1e-5, 1e-6, &e), "%s: packed reference differs by %g", c->name, e);
  mlc_array_free(y);
  mlc_graph_free(m);
}

static void check_pack_case(const pack_case *c) {
  mlc_error err;
  char *json = dense_json(c->M, c->N, c->K, c->w_input, c->two_layers);
  mlc_gmodule *m = parse(json, &err), *r = parse(json, &err);
  mlc_free(json);
  CHECK_MSG(m && r && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s: %s", c->name, err.msg);
  if (!m || !r || test_case_failed_) goto done;
  const mlc_gvar *p = find_const(m, "w_packed"), *w = find_const(r, "w");
  int n_packed = 0;
  for (int i = 0; i < m->n_consts; i++) n_packed += strstr(m->consts[i]->name, "packed") != NULL;
  if (c->block) {
    bool shape = p && p->type.ndim == 3 && p->type.shape[0] == c->N / c->block &&
                 p->type.shape[1] == c->K && p->type.shape[2] == c->block;
    CHECK_MSG(shape && n_packed == 1 && !find_const(m, "w"), "%s: %d packed weights", c->name, n_packed);
    bool same = shape;
    for (int j = 0; same && j < c->N; j++)
      for (int k = 0; k < c->K; k++)
        same &= ((float *)p->data)[((j / c->block) * c->K + k) * c->block + j % c->block] == ((float *)w->data)[j * c->K + k];
    CHECK_MSG(same, "%s: packed values differ", c->name);
  } else {
    CHECK_MSG(n_packed == 0 && (c->w_input || find_const(m, "w")), "%s: packed", c->name);
  }
  mlc_arena *a = mlc_arena_new();
  compiled k = {0};
  if (compile_model(m, a, &k)) {
    int n_in = mlc_graph_main(m)->n_params;
    mlc_array **in = make_inputs(m, 300), *y = make_output(m, 0), *want = make_output(m, 0);
    double e = 1;
    CHECK_MSG(mlc_graph_execute(m, jit_kernel, &k, in, &y, &err), "%s: %s", c->name, err.msg);
    CHECK_MSG(mlc_graph_reference(r, in, &want, &err), "%s: %s", c->name, err.msg);
    CHECK_MSG(mlc_array_allclose(y, want, 1e-4, 1e-5, &e), "%s: max abs error %g", c->name, e);
    check_packed_reference(c, in, want);
    free_arrays(in, n_in);
    mlc_array_free(y);
    mlc_array_free(want);
    mlc_jit_unload(k.lib);
  }
  mlc_arena_free(a);
done:
  if (m) mlc_graph_free(m);
  if (r) mlc_graph_free(r);
}

static void test_pack_dense(void) {
  for (int i = 0; i < MLC_COUNTOF(pack_cases); i++) check_pack_case(&pack_cases[i]);
}

/* The packed form is what the graph's checks and reference take too: a
 * dense over [N/n, K, n] gives [M, N]; a bias must have N elements. */
static void test_pack_dense_infer(void) {
  mlc_gtype a[3] = {{MLC_FLOAT32, 2, {5, 32}}, {MLC_FLOAT32, 3, {3, 32, 16}}, {MLC_FLOAT32, 1, {48}}}, t;
  mlc_gattrs at;
  mlc_gattrs_init(MLC_GOP_DENSE, &at);
  mlc_error err;
  CHECK_MSG(mlc_gop_infer(MLC_GOP_DENSE, &at, 3, a, &t, &err) && t.ndim == 2 && t.shape[0] == 5 &&
                t.shape[1] == 48,
            "%s", err.msg);
  a[2].shape[0] = 3;
  CHECK(!mlc_gop_infer(MLC_GOP_DENSE, &at, 3, a, &t, &err) && strstr(err.msg, "[N] (one bias"));
  a[1].shape[1] = 31;
  CHECK(!mlc_gop_infer(MLC_GOP_DENSE, &at, 2, a, &t, &err) && strstr(err.msg, "packed [N/n, K, n]"));
}

static void test_header_entry(void) {
  mlc_error err;
  mlc_gmodule *m = mlc_graph_load("examples/mlp.json", NULL, &err);
  CHECK(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err));
  if (!m) return;
  mlc_str s = {0};
  mlc_graph_write_entry(&s, m);
  const char *h = mlc_str_cstr(&s);
  CHECK(strstr(h, "static inline int32_t mlp_run(const float *input, float *output)"));
  CHECK(strstr(h, "mlp_run_ws(const float *input, float *output, float *workspace)"));
  CHECK(strstr(h, "extern const float mlp_w_lv0_packed[100352];"));
  CHECK(strstr(h, "#define MLP_WORKSPACE_FLOATS 128"));
  CHECK(strstr(h, "mlp_fused_matmul_add1(args)"));
  mlc_str_free(&s);
  mlc_graph_free(m);
}

/* A reshape in main is a view: no kernel, and in the emitted entry its
 * pointer is its operand's; the operand's workspace stays live until the
 * view's last use, so exp(x), computed while only the view is left to
 * read relu(x), gets other memory. The executor reads the view the same
 * way (its result equals the reference). */
static void test_reshape_view(void) {
  const char *json =
      "{\"inputs\": [{\"name\": \"x\", \"shape\": [2, 6]}], \"weights\": [],"
      " \"nodes\": [{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"]},"
      " {\"name\": \"v\", \"op\": \"reshape\", \"inputs\": [\"a\"], \"shape\": [12]},"
      " {\"name\": \"b\", \"op\": \"exp\", \"inputs\": [\"x\"]},"
      " {\"name\": \"c\", \"op\": \"reshape\", \"inputs\": [\"b\"], \"shape\": [12]},"
      " {\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"v\", \"c\"]}],"
      " \"outputs\": [\"y\"]}";
  mlc_error err;
  mlc_gmodule *m = parse(json, &err);
  CHECK_MSG(m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  if (!m) return;
  const mlc_gfunc *f = mlc_graph_main(m);
  int views = 0;
  for (int i = 0; i < f->n_bindings; i++) views += mlc_gbinding_is_view(f, &f->bindings[i]);
  CHECK_MSG(views == 2, "%d views", views);
  mlc_str s = {0};
  mlc_graph_write_entry(&s, m);
  const char *h = mlc_str_cstr(&s);
  CHECK_MSG(!strstr(h, "reshape") && !strstr(h, "v_v ") && !strstr(h, "v_c "), "%s", h);
  const char *pa = strstr(h, "*v_a = (float *)((char *)workspace + "), *pb = strstr(h, "*v_b = (float *)((char *)workspace + ");
  CHECK_MSG(pa && pb && atoi(pa + strlen("*v_a = (float *)((char *)workspace + ")) !=
                            atoi(pb + strlen("*v_b = (float *)((char *)workspace + ")),
            "a and b share memory while the view of a is live:\n%s", h);
  CHECK_MSG(strstr(h, "(void *)v_a, (void *)v_b, (void *)output"), "the add reads the views' operands:\n%s", h);
  float xs[12];
  mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){2, 6});
  for (int i = 0; i < 12; i++) ((float *)x->data)[i] = xs[i] = (float)(i - 6) / 4;
  mlc_array *y = mlc_array_new(MLC_FLOAT32, 1, (int64_t[]){12});
  CHECK_MSG(mlc_graph_execute(m, NULL, NULL, &x, &y, &err), "%s", err.msg);
  for (int i = 0; i < 12; i++) {
    float want = (xs[i] > 0 ? xs[i] : 0) + expf(xs[i]);
    CHECK_MSG(fabsf(((float *)y->data)[i] - want) < 1e-5f, "y[%d] = %g, want %g", i, ((float *)y->data)[i], want);
  }
  mlc_array_free(x);
  mlc_array_free(y);
  mlc_str_free(&s);
  mlc_graph_free(m);
}

int main(void) {
  test_model_errors();
  test_npy_errors();
  RUN(test_npy_short);
  RUN(test_numel_overflow);
  RUN(test_npy_roundtrip);
  RUN(test_weight_files);
  RUN(test_rewrite_fma);
  RUN(test_rewrite_fma_shared);
  RUN(test_fold_constants);
  RUN(test_fuse_and_lower_text);
  RUN(test_fuse_refuses_shared_producer);
  RUN(test_fuse_refuses_output_producer);
  RUN(test_fuse_reduce_inputs);
  RUN(test_fuse_attention);
  RUN(test_run_bytes);
  RUN(test_lower_divide_by_row_value);
  RUN(test_fuse_tir_interp_dense);
  RUN(test_fuse_tir_interp_shared);
  RUN(test_fuse_tir_interp_reduce_inputs);
  RUN(test_fuse_tir_interp_ops);
  RUN(test_fuse_tir_interp_norms);
  RUN(test_long_chain);
  RUN(test_compile);
  RUN(test_extract_tasks);
  RUN(test_default_schedule);
  RUN(test_default_schedule_rows);
  RUN(test_default_schedule_epilogue);
  RUN(test_header_entry);
  RUN(test_header_entry_multi);
  RUN(test_reshape_view);
  RUN(test_sched_round_robin);
  RUN(test_sched_remeasure);
  RUN(test_sched_gradient);
  RUN(test_sched_weights);
  RUN(test_sched_family);
  RUN(test_replay_from_db);
  RUN(test_mlp_end_to_end);
  RUN(test_cnn_end_to_end);
  RUN(test_pack_dense);
  RUN(test_pack_dense_infer);
  return test_summary();
}
