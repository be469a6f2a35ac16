/* Trace values round trip exactly: strings with escaped characters and
 * list/dict/bool annotation values, through record, JSON, replay and the
 * Python-like print, and on into TVMScript and back. */
#include "schedule/schedule.h"
#include "targets/targets.h"
#include "tests/sched_util.h"
#include "tests/test.h"

#include <stdlib.h>

static const char *prog =
    "@T.prim_func\n"
    "def main(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
    "    for i in range(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(16, i)\n"
    "            B[vi] = A[vi] + T.float32(1)\n";

static mlc_prim_func *parse_prog(mlc_arena *a) {
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "p.py", prog, &err);
  if (!m) test_fail_(__FILE__, __LINE__, "parse: %s", err.msg);
  return m ? m->funcs[0] : NULL;
}

/* The trace of s through JSON and replay on a fresh state: the JSON reads
 * back and writes the same text, the replayed state has the same trace
 * JSON and prints the same IR, and that IR reparses to an equal function.
 * Returns the replayed state (or NULL); *json_out gets the JSON. */
static mlc_sched *round_trip_(mlc_sched *s, const mlc_prim_func *f, char **json_out, int line) {
  mlc_error err;
  char *json = trace_json(s);
  *json_out = json;
  mlc_arena *a = mlc_arena_new();
  mlc_trace *t = mlc_trace_from_json(a, json, strlen(json), &err);
  mlc_sched *r = NULL;
  if (!t) {
    test_fail_(__FILE__, line, "from_json: %s", err.msg);
    goto done;
  }
  mlc_str again = {0};
  mlc_trace_to_json(&again, t);
  if (strcmp(mlc_str_cstr(&again), json) != 0)
    test_fail_(__FILE__, line, "JSON changed: %s vs %s", json, mlc_str_cstr(&again));
  mlc_str_free(&again);
  r = mlc_sched_new(f, 1);
  if (!mlc_sched_replay(r, t, NULL, NULL, &err)) {
    test_fail_(__FILE__, line, "replay: %s", err.msg);
    mlc_sched_free(r);
    r = NULL;
    goto done;
  }
  char *rj = trace_json(r), *p1 = print_func(mlc_sched_func(s)), *p2 = print_func(mlc_sched_func(r));
  if (strcmp(rj, json) != 0) test_fail_(__FILE__, line, "replayed trace differs: %s", rj);
  if (strcmp(p1, p2) != 0) test_fail_(__FILE__, line, "replayed IR differs:\n%s\n%s", p1, p2);
  if (!mlc_func_struct_equal(mlc_sched_func(s), mlc_sched_func(r)))
    test_fail_(__FILE__, line, "replayed IR not structurally equal");
  mlc_module *m = mlc_parse_module(a, "re.py", p1, &err);
  if (!m) test_fail_(__FILE__, line, "printed IR does not parse: %s", err.msg);
  else if (!mlc_func_struct_equal(m->funcs[0], mlc_sched_func(s)))
    test_fail_(__FILE__, line, "printed IR reparses to a different function");
  free(rj), free(p1), free(p2);
done:
  mlc_arena_free(a);
  return r;
}
#define ROUND_TRIP(s, f, json) round_trip_((s), (f), (json), __LINE__)

static const mlc_ann *block_ann(const mlc_sched *s, const char *key) {
  mlc_rv b;
  mlc_error err;
  mlc_sched *c = mlc_sched_copy(s);
  const mlc_ann *x = NULL;
  if (mlc_sched_get_block(c, "B", "main", &b, &err)) {
    const mlc_block *blk = mlc_sched_rv_block(c, b);
    x = mlc_ann_find(blk->n_anns, blk->anns, key);
    if (x) {
      /* copy out of c, which is freed below */
      static mlc_arena *keep;
      if (!keep) keep = mlc_arena_new();
      mlc_ann *k = MLC_NEW(keep, mlc_ann);
      *k = mlc_ann_dup(keep, x);
      x = k;
    }
  }
  mlc_sched_free(c);
  return x;
}

/* Escaped characters in string values and keys: the value after replay is
 * the value recorded, byte for byte. */
static void test_escaped_strings(void) {
  static const char *const vals[] = {
      "\"", "\\", "a\nb", "\t\x01\x1f\x7f", "\xc3\xa9\xf0\x9f\x98\x80", "\"x\"", "\\\"",
      "", "\"", "'", "/", "a\\u00e9",
  };
  static const char *const keys[] = {"k0", "k\"1", "k\\2", "k\n3", "k4"};
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_prog(a);
  if (!f) goto out;
  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  mlc_rv b;
  CHECK(mlc_sched_get_block(s, "B", "main", &b, &err));
  for (int i = 0; i < MLC_COUNTOF(vals); i++)
    CHECK_MSG(mlc_sched_annotate(s, b, keys[i % MLC_COUNTOF(keys)], MLC_OP_STR(vals[i]), &err), "%s",
              err.msg);
  char *json;
  mlc_sched *r = ROUND_TRIP(s, f, &json);
  /* The last value written to each key is the one the block carries. */
  for (int k = 0; k < MLC_COUNTOF(keys); k++) {
    int last = -1;
    for (int i = 0; i < MLC_COUNTOF(vals); i++)
      if (i % MLC_COUNTOF(keys) == k) last = i;
    const mlc_ann *x = r ? block_ann(r, keys[k]) : NULL;
    CHECK_MSG(x && x->kind == MLC_ANN_STRING && strcmp(x->s, vals[last]) == 0, "key %d: \"%s\"", k,
              x && x->s ? x->s : "(none)");
  }
  /* The JSON as TVM writes it: the literal in quotes, JSON escaping over it. */
  CHECK(strstr(json, "[\"Annotate\",[\"b0\",\"\\\"\\\\\\\"\\\"\"],{\"ann_key\":\"k0\"},[]]"));
  CHECK(strstr(json, "[\"Annotate\",[\"b0\",\"\\\"\\\\\\\\\\\"\"],{\"ann_key\":\"k\\\"1\"},[]]"));
  CHECK(strstr(json, "[\"Annotate\",[\"b0\",\"\\\"\\\\\\\\\\\\\\\"\\\"\"],{\"ann_key\":\"k\\\"1\"},[]]"));
  /* The Python-like print reads as Python: the same characters. */
  char *py = print_trace(s);
  CHECK_MSG(strstr(py, "sch.annotate(block_or_loop=b0, ann_key=\"k0\", ann_val=\"\\\"\")"), "%s", py);
  CHECK_MSG(strstr(py, "ann_key=\"k\\\"1\", ann_val=\"\\\\\")"), "%s", py);
  CHECK_MSG(strstr(py, "ann_key=\"k\\n3\", ann_val=\"\\t\\u0001\\u001f\x7f\")"), "%s", py);
  free(py), free(json);
  mlc_sched_free(r);
  mlc_sched_free(s);
out:
  mlc_arena_free(a);
}

/* TVM-written JSON with \u escapes and a surrogate pair replays to the
 * decoded characters, and a value annotated from TVMScript with Python
 * escapes carries the same text through the trace. */
static void test_json_escapes_replay(void) {
  const char *json =
      "{\"insts\":[[\"GetBlock\",[],{\"name\":\"B\",\"func_name\":\"main\"},[\"b0\"]],"
      "[\"Annotate\",[\"b0\",\"\\\"\\u00e9\\ud83d\\ude00\\/\\\"\\\"\"],{\"ann_key\":\"k\\u0022\"},[]]],"
      "\"decisions\":{},\"version\":1}";
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_prog(a);
  mlc_error err;
  mlc_trace *t = f ? mlc_trace_from_json(a, json, strlen(json), &err) : NULL;
  CHECK_MSG(t, "%s", err.msg);
  if (t) {
    mlc_sched *s = mlc_sched_new(f, 1);
    CHECK_MSG(mlc_sched_replay(s, t, NULL, NULL, &err), "%s", err.msg);
    const mlc_ann *x = block_ann(s, "k\"");
    CHECK(x && x->kind == MLC_ANN_STRING && strcmp(x->s, "\xc3\xa9\xf0\x9f\x98\x80/\"") == 0);
    char *p = print_func(mlc_sched_func(s));
    CHECK_MSG(strstr(p, "T.block_attr({\"k\\\"\": \"\xc3\xa9\xf0\x9f\x98\x80/\\\"\"})"), "%s", p);
    free(p);
    char *j2;
    mlc_sched_free(ROUND_TRIP(s, f, &j2));
    free(j2);
    mlc_sched_free(s);
  }
  /* From TVMScript written with Python escapes: \u00e9, \x41, \" */
  const char *text =
      "@T.prim_func\n"
      "def main(A: T.Buffer((16,), \"float32\"), B: T.Buffer((16,), \"float32\")):\n"
      "    for i in range(16):\n"
      "        with T.block(\"B\"):\n"
      "            vi = T.axis.spatial(16, i)\n"
      "            T.block_attr({\"k\": \"\\u00e9\\x41\\\"\\\\\"})\n"
      "            B[vi] = A[vi] + T.float32(1)\n";
  mlc_module *m = mlc_parse_module(a, "e.py", text, &err);
  CHECK_MSG(m, "%s", m ? "" : err.msg);
  if (m) {
    mlc_sched *s = mlc_sched_new(m->funcs[0], 1);
    const mlc_ann *x = block_ann(s, "k");
    CHECK(x && x->kind == MLC_ANN_STRING && strcmp(x->s, "\xc3\xa9" "A\"\\") == 0);
    mlc_rv b;
    CHECK(mlc_sched_get_block(s, "B", "main", &b, &err));
    CHECK(mlc_sched_annotate(s, b, "k2", MLC_OP_STR(x ? x->s : ""), &err));
    char *j3;
    mlc_sched *r = ROUND_TRIP(s, m->funcs[0], &j3);
    const mlc_ann *y = r ? block_ann(r, "k2") : NULL;
    CHECK(y && x && strcmp(y->s, x->s) == 0);
    mlc_sched_free(r);
    mlc_sched_free(s);
    free(j3);
  }
  mlc_arena_free(a);
}

/* TVM's test_apply_annotation_from_json: a trace JSON as TVM writes it
 * (GetBlock, then Annotate with the string as a quoted literal, escaped
 * inside) replays on TVM's elementwise function to the block annotated with
 * exactly that string. The first four values are TVM's; the last two add
 * backslashes next to quotes, and bytes that TVM writes as \xHH. Each must
 * equal TVM's expected function structurally, compute what the original
 * computes (interpreter and LLVM), record the JSON it was given and round
 * trip. */
static const char *elementwise =
    "@T.prim_func\n"
    "def main(A: T.Buffer((128, 128), \"float32\"), C: T.Buffer((128, 128), \"float32\")):\n"
    "    B = T.alloc_buffer((128, 128))\n"
    "    for i, j in T.grid(128, 128):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "%s"
    "            B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "    for i, j in T.grid(128, 128):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            C[vi, vj] = B[vi, vj] + T.float32(1)\n";

static mlc_prim_func *parse_elementwise(mlc_arena *a, const char *attr_value) {
  char line[256] = "", text[2048];
  if (attr_value)
    snprintf(line, sizeof line,
             "            T.block_attr({\"meta_schedule.auto_tensorize\": %s})\n", attr_value);
  snprintf(text, sizeof text, elementwise, line);
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "elementwise.py", text, &err);
  if (!m) test_fail_(__FILE__, __LINE__, "parse: %s", err.msg);
  return m ? m->funcs[0] : NULL;
}

/* On the same random inputs, g interpreted and g compiled by the LLVM
 * backend give what f interpreted gives. */
static bool same_results(const mlc_prim_func *f, const mlc_prim_func *g, char *why, size_t wn) {
  int n = f->n_params;
  mlc_array *x[3];
  for (int k = 0; k < 3; k++) {
    mlc_pcg32 rng;
    mlc_pcg32_seed(&rng, 5, 1);
    x[k] = mlc_xmalloc(sizeof(mlc_array) * (size_t)n);
    for (int i = 0; i < n; i++) {
      mlc_array *t = mlc_array_for_buffer(f->params[i]);
      mlc_array_fill_random(t, &rng);
      x[k][i] = *t;
      mlc_free(t); /* keeps t->data, now owned by x[k][i] */
    }
  }
  mlc_error e = {{0}};
  mlc_target host;
  mlc_object obj = {0};
  mlc_target_host(&host);
  bool ok = mlc_interp_run(f, x[0], &e) && mlc_interp_run(g, x[1], &e);
  if (!ok) snprintf(why, wn, "interp: %.200s", e.msg);
  bool built = ok && mlc_target_build(&host, 1, &g, NULL, NULL, &obj, &e);
  mlc_jit_lib *lib = built ? mlc_jit_load(&obj, &e) : NULL;
  mlc_kernel_fn fn = lib ? mlc_jit_lookup(lib, g->name, &e) : NULL;
  if (ok && !fn) snprintf(why, wn, "llvm: %.200s", e.msg), ok = false;
  if (ok && mlc_kernel_call(fn, n, x[2]) != 0) snprintf(why, wn, "kernel failed"), ok = false;
  for (int k = 1; ok && k < 3; k++)
    for (int i = 0; ok && i < n; i++) {
      double m;
      if (!mlc_array_allclose(&x[k][i], &x[0][i], 1e-5, 1e-5, &m))
        snprintf(why, wn, "%s: param %d differs by %g", k == 1 ? "interp" : "llvm", i, m), ok = false;
    }
  if (lib) mlc_jit_unload(lib);
  if (built) mlc_object_free(&obj);
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < n; i++) mlc_free(x[k][i].data);
    mlc_free(x[k]);
  }
  return ok;
}

static void test_tvm_annotation_from_json(void) {
  static const struct {
    const char *name, *value;
    const char *operand; /* the Annotate input as TVM's trace JSON holds it */
    const char *script;  /* the value in TVMScript */
  } cases[] = {
      {"SSRSSR", "SSRSSR",
       "\"\\\"SSRSSR\\\"\"",
       "\"SSRSSR\""},
      {"the empty string", "",
       "\"\\\"\\\"\"",
       "\"\""},
      {"two quotation marks", "\"\"",
       "\"\\\"\\\\\\\"\\\\\\\"\\\"\"",
       "\"\\\"\\\"\""},
      {"one quotation mark", "\"",
       "\"\\\"\\\\\\\"\\\"\"",
       "\"\\\"\""},
      {"quotes and backslashes", "\\\"a\\\\\"\\",
       "\"\\\"\\\\\\\\\\\\\\\"a\\\\\\\\\\\\\\\\\\\\\\\"\\\\\\\\\\\"\"",
       "\"\\\\\\\"a\\\\\\\\\\\"\\\\\""},
      {"non-ASCII and control bytes", "\xc3\xa9\t\xf0\x9f\x98\x80\n",
       "\"\\\"\\\\xC3\\\\xA9\\\\t\\\\xF0\\\\x9F\\\\x98\\\\x80\\\\n\\\"\"",
       "\"\xc3\xa9\\t\xf0\x9f\x98\x80\\n\""},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    test_case_failed_ = 0;
    test_first_failure_[0] = 0;
    char json[512], why[300] = "";
    snprintf(json, sizeof json,
             "{\"insts\":[[\"GetBlock\",[],{\"name\":\"B\",\"func_name\":\"main\"},[\"b0\"]],"
             "[\"Annotate\",[\"b0\",%s],{\"ann_key\":\"meta_schedule.auto_tensorize\"},[]]],"
             "\"decisions\":{},\"version\":1}",
             cases[i].operand);
    mlc_arena *a = mlc_arena_new();
    mlc_prim_func *f = parse_elementwise(a, NULL), *want = parse_elementwise(a, cases[i].script);
    mlc_error err;
    mlc_trace *t = f && want ? mlc_trace_from_json(a, json, strlen(json), &err) : NULL;
    CHECK_MSG(t, "%s", f && want ? err.msg : "parse");
    mlc_sched *s = t ? mlc_sched_new(f, 1) : NULL;
    bool ok = s && mlc_sched_replay(s, t, NULL, NULL, &err);
    CHECK_MSG(!s || ok, "replay: %s", err.msg);
    if (ok) {
      const mlc_ann *x = block_ann(s, "meta_schedule.auto_tensorize");
      CHECK_MSG(x && x->kind == MLC_ANN_STRING && strcmp(x->s, cases[i].value) == 0, "value \"%s\"",
                x && x->kind == MLC_ANN_STRING ? x->s : "(none)");
      CHECK_MSG(mlc_func_struct_equal(mlc_sched_func(s), want), "differs from TVM's expected function");
      CHECK_MSG(same_results(f, mlc_sched_func(s), why, sizeof why), "%s", why);
      char *again = trace_json(s);
      CHECK_MSG(strcmp(again, json) == 0, "recorded %s", again);
      free(again);
      char *j2;
      mlc_sched_free(ROUND_TRIP(s, f, &j2));
      free(j2);
    }
    mlc_sched_free(s);
    mlc_arena_free(a);
    char label[96];
    snprintf(label, sizeof label, "tvm annotation from json: %s", cases[i].name);
    test_report(label, !test_case_failed_, test_first_failure_);
  }
}

/* A value built in C: [[0, 0, 16, 8]], {"pragma_auto_unroll_max_step": 16,
 * "list": [1, 2], "s": "x\"y", "f": 0.5, "nested": {"t": [true]}}, True. */
static mlc_ann ints(mlc_arena *a, int n, const int64_t *v) {
  mlc_ann l = {.kind = MLC_ANN_LIST, .n = n, .items = MLC_NEW_ARRAY(a, mlc_ann, n)};
  for (int i = 0; i < n; i++) l.items[i] = (mlc_ann){.kind = MLC_ANN_INT, .i = v[i]};
  return l;
}

static void test_list_dict_values(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = parse_prog(a);
  if (!f) goto out;
  mlc_ann align = {.kind = MLC_ANN_LIST, .n = 1, .items = MLC_NEW_ARRAY(a, mlc_ann, 1)};
  align.items[0] = ints(a, 4, (int64_t[]){0, 0, 16, 8});
  mlc_ann nested = {.kind = MLC_ANN_DICT, .n = 1, .items = MLC_NEW_ARRAY(a, mlc_ann, 1)};
  nested.items[0] = (mlc_ann){.key = "t", .kind = MLC_ANN_LIST, .n = 1,
                              .items = MLC_NEW_ARRAY(a, mlc_ann, 1)};
  nested.items[0].items[0] = (mlc_ann){.kind = MLC_ANN_BOOL, .i = 1};
  mlc_ann d = {.kind = MLC_ANN_DICT, .n = 5, .items = MLC_NEW_ARRAY(a, mlc_ann, 5)};
  d.items[0] = (mlc_ann){.key = "pragma_auto_unroll_max_step", .kind = MLC_ANN_INT, .i = 16};
  d.items[1] = ints(a, 2, (int64_t[]){1, 2});
  d.items[1].key = "list";
  d.items[2] = (mlc_ann){.key = "s", .kind = MLC_ANN_STRING, .s = "x\"y"};
  d.items[3] = (mlc_ann){.key = "f", .kind = MLC_ANN_FLOAT, .f = 0.5};
  d.items[4] = nested;
  d.items[4].key = "nested";
  mlc_ann strs = {.kind = MLC_ANN_LIST, .n = 2, .items = MLC_NEW_ARRAY(a, mlc_ann, 2)};
  strs.items[0] = (mlc_ann){.kind = MLC_ANN_STRING, .s = "a"};
  strs.items[1] = (mlc_ann){.kind = MLC_ANN_FLOAT, .f = 2.0};
  mlc_ann yes = {.kind = MLC_ANN_BOOL, .i = 1};
  mlc_ann scalar = {.kind = MLC_ANN_INT, .i = 7};

  mlc_sched *s = mlc_sched_new(f, 1);
  mlc_error err;
  mlc_rv b, *loops = NULL;
  CHECK(mlc_sched_get_block(s, "B", "main", &b, &err));
  CHECK(mlc_sched_get_loops(s, b, &loops, &err) == 1);
  CHECK_MSG(mlc_sched_annotate(s, b, "buffer_dim_align", MLC_OP_ANN(&align), &err), "%s", err.msg);
  CHECK_MSG(mlc_sched_annotate(s, loops[0], "d", MLC_OP_ANN(&d), &err), "%s", err.msg);
  CHECK_MSG(mlc_sched_annotate(s, b, "strs", MLC_OP_ANN(&strs), &err), "%s", err.msg);
  CHECK_MSG(mlc_sched_annotate(s, b, "yes", MLC_OP_ANN(&yes), &err), "%s", err.msg);
  CHECK_MSG(mlc_sched_annotate(s, b, "seven", MLC_OP_ANN(&scalar), &err), "%s", err.msg);
  /* The state holds its own copy: changing the caller's value changes nothing. */
  align.items[0].items[2].i = 99;
  char *p = print_func(mlc_sched_func(s));
  CHECK_MSG(strstr(p, "T.block_attr({\"buffer_dim_align\": [[0, 0, 16, 8]], \"strs\": [\"a\", 2.0], "
                      "\"yes\": True, \"seven\": 7})"),
            "%s", p);
  CHECK_MSG(strstr(p, "for i in T.serial(16, annotations={\"d\": {\"pragma_auto_unroll_max_step\": 16, "
                      "\"list\": [1, 2], \"s\": \"x\\\"y\", \"f\": 0.5, \"nested\": {\"t\": [True]}}}):"),
            "%s", p);
  char *json;
  mlc_sched *r = ROUND_TRIP(s, f, &json);
  /* As TVM writes them: strings in lists quoted, a dict as it is. */
  CHECK_MSG(strstr(json, "[\"Annotate\",[\"b0\",[[0,0,16,8]]],{\"ann_key\":\"buffer_dim_align\"},[]]"),
            "%s", json);
  CHECK_MSG(strstr(json, "[\"Annotate\",[\"l1\",{\"pragma_auto_unroll_max_step\":16,\"list\":[1,2],"
                         "\"s\":\"x\\\"y\",\"f\":0.5,\"nested\":{\"t\":[true]}}],{\"ann_key\":\"d\"},[]]"),
            "%s", json);
  CHECK_MSG(strstr(json, "[\"b0\",[\"\\\"a\\\"\",2.0]]"), "%s", json);
  CHECK_MSG(strstr(json, "[\"b0\",true]"), "%s", json);
  CHECK_MSG(strstr(json, "[\"b0\",7]"), "%s", json); /* a scalar ANN is the plain operand */
  const mlc_ann *x = r ? block_ann(r, "buffer_dim_align") : NULL;
  CHECK(x && x->kind == MLC_ANN_LIST && x->n == 1 && x->items[0].n == 4 && x->items[0].items[2].i == 16);
  char *py = print_trace(s);
  CHECK_MSG(strstr(py, "sch.annotate(block_or_loop=b0, ann_key=\"buffer_dim_align\", "
                       "ann_val=[[0, 0, 16, 8]])"),
            "%s", py);
  CHECK_MSG(strstr(py, "ann_key=\"d\", ann_val={\"pragma_auto_unroll_max_step\": 16, \"list\": [1, 2], "
                       "\"s\": \"x\\\"y\", \"f\": 0.5, \"nested\": {\"t\": [True]}})"),
            "%s", py);
  CHECK_MSG(strstr(py, "ann_val=[\"a\", 2.0])") && strstr(py, "ann_val=True)"), "%s", py);
  /* A copied trace is deep: it outlives the state. */
  mlc_arena *a2 = mlc_arena_new();
  mlc_trace *tc = mlc_trace_copy(a2, mlc_sched_trace(s));
  mlc_sched_free(s);
  s = NULL;
  mlc_str cj = {0};
  mlc_trace_to_json(&cj, tc);
  CHECK_STREQ(mlc_str_cstr(&cj), json);
  mlc_str_free(&cj);
  mlc_arena_free(a2);
  free(p), free(py), free(json);
  mlc_sched_free(r);
out:
  mlc_arena_free(a);
}

/* Malformed values in trace JSON are refused with the instruction named. */
static void test_bad_values(void) {
  static const struct {
    const char *input, *phrase;
  } cases[] = {
      {"[\"x\"]", "a string in a list must be a quoted literal"},
      {"[1,null]", "null inside a value"},
      {"{\"a\":1,\"a\":2}", "key \"a\" appears twice"},
      {"\"\\\"\\\\q\\\"\"", "bad escape at byte 1"},     /* "\q" */
      {"[\"\\\"\\\\x00\\\"\"]", "bad escape at byte 1"}, /* ["\x00"] */
      {"\"\\\"ab\\\\\\\"\"", "bad escape at byte 3"},    /* "ab\" */
  };
  mlc_arena *a = mlc_arena_new();
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"insts\":[[\"GetBlock\",[],{\"name\":\"B\",\"func_name\":\"main\"},[\"b0\"]],"
             "[\"Annotate\",[\"b0\",%s],{\"ann_key\":\"k\"},[]]],\"version\":1}",
             cases[i].input);
    mlc_error err;
    mlc_trace *t = mlc_trace_from_json(a, json, strlen(json), &err);
    CHECK_MSG(!t && strstr(err.msg, cases[i].phrase) && strstr(err.msg, "insts[1]"),
              "%s: %s", cases[i].input, t ? "accepted" : err.msg);
  }
  /* A split factor cannot be a list. */
  mlc_prim_func *f = parse_prog(a);
  if (f) {
    mlc_sched *s = mlc_sched_new(f, 1);
    mlc_error err;
    mlc_rv b, *loops = NULL, out[2];
    mlc_ann l = {.kind = MLC_ANN_LIST};
    CHECK(mlc_sched_get_block(s, "B", "main", &b, &err) && mlc_sched_get_loops(s, b, &loops, &err) == 1);
    char *before = print_func(mlc_sched_func(s));
    mlc_operand fs[2] = {MLC_OP_ANN(&l), MLC_OP_INT(4)};
    CHECK(loops && !mlc_sched_split(s, loops[0], 2, fs, true, out, &err) && strstr(err.msg, "not an integer"));
    char *after = print_func(mlc_sched_func(s));
    CHECK_STREQ(before, after);
    free(before), free(after);
    mlc_sched_free(s);
  }
  mlc_arena_free(a);
}

int main(void) {
  RUN(test_escaped_strings);
  RUN(test_json_escapes_replay);
  test_tvm_annotation_from_json();
  RUN(test_list_dict_values);
  RUN(test_bad_values);
  return test_summary();
}
