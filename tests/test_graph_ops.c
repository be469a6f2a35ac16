/* graph/ ops one by one: each small model is lowered without fusion and
 * run in the interpreter, and run through the whole pipeline and compiled
 * with LLVM (default schedule); both must match the plain C reference of
 * the unlowered graph (graph/ref.c). Attribute variants get a case each.
 * Refusals: bad attributes and shapes, each message naming the op and the
 * operand. */
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "targets/targets.h"
#include "tests/test.h"
#include "tuner/tuner.h"

#include <math.h>
#include <stdlib.h>

/* ---- helpers --------------------------------------------------------------- */

#define MODEL(inputs, weights, nodes, outputs) \
  "{\"inputs\": [" inputs "], \"weights\": [" weights "], \"nodes\": [" nodes "], \"outputs\": [" outputs "]}"

static mlc_gmodule *parse(const char *json, mlc_error *err) {
  return mlc_graph_parse("t.json", json, strlen(json), NULL, err);
}

/* Seeded inputs in [-1, 1), or in [0.1, 1.1) when positive (sqrt, log). */
static mlc_array **make_inputs(const mlc_gmodule *m, uint64_t seed, bool positive) {
  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_array **in = mlc_xmalloc(sizeof *in * (size_t)f->n_params);
  for (int i = 0; i < f->n_params; i++) {
    in[i] = mlc_array_new(MLC_FLOAT32, f->params[i]->type.ndim, f->params[i]->type.shape);
    mlc_pcg32 r;
    mlc_pcg32_seed(&r, seed, (uint64_t)i);
    mlc_array_fill_random(in[i], &r);
    if (positive)
      for (int64_t k = 0; k < mlc_array_numel(in[i]); k++)
        mlc_array_set(in[i], k, fabs(mlc_array_get(in[i], k)) + 0.1);
  }
  return in;
}

static mlc_array **make_outputs(const mlc_gmodule *m) {
  const mlc_gfunc *f = mlc_graph_main(m);
  mlc_array **out = mlc_xmalloc(sizeof *out * (size_t)f->n_outputs);
  for (int i = 0; i < f->n_outputs; i++)
    out[i] = mlc_array_new(f->outputs[i]->type.dtype, f->outputs[i]->type.ndim, f->outputs[i]->type.shape);
  return out;
}

static void free_arrays(mlc_array **a, int n) {
  for (int i = 0; i < n; i++) mlc_array_free(a[i]);
  mlc_free(a);
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

/* Every prim_func of m with the default schedule, JIT-loaded. */
static bool compile_model(mlc_gmodule *m, mlc_arena *a, compiled *c, mlc_error *err) {
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
  if (!mlc_target_build(&t, c->n, sched, syms, NULL, &obj, err)) return false;
  c->lib = mlc_jit_load(&obj, err);
  mlc_object_free(&obj);
  if (!c->lib) return false;
  c->fns = MLC_NEW_ARRAY(a, mlc_kernel_fn, c->n);
  for (int i = 0; i < c->n; i++)
    if (!(c->fns[i] = mlc_jit_lookup(c->lib, syms[i], err))) return false;
  return true;
}

static bool all_close(mlc_array **got, mlc_array **want, int n, double rtol, double atol,
                      double *worst) {
  bool ok = true;
  *worst = 0;
  for (int i = 0; i < n; i++) {
    double e = 0;
    ok &= mlc_array_allclose(got[i], want[i], rtol, atol, &e);
    *worst = fmax(*worst, e);
  }
  return ok;
}

/* The model's unfused lowering in the interpreter, and its compiled
 * pipeline, each against the reference. */
static bool run_case(const char *json, bool positive, char *why, size_t why_n) {
  static int counter;
  mlc_error err = {{0}};
  mlc_gmodule *r = parse(json, &err), *a = parse(json, &err), *b = parse(json, &err);
  bool ok = r && a && b;
  if (!ok) snprintf(why, why_n, "load: %s", err.msg);
  mlc_arena *ar = mlc_arena_new();
  compiled c = {0};
  mlc_array **in = NULL, **want = NULL, **ya = NULL, **yb = NULL;
  int n_in = 0, n_out = 0;
  if (ok) {
    b->name = mlc_arena_printf(b->arena, "ops%d", counter++);
    ok = mlc_graph_lower(a, &err) && mlc_graph_run_pipeline(b, NULL, NULL, NULL, &err);
    if (!ok) snprintf(why, why_n, "passes: %s", err.msg);
  }
  if (ok) {
    ok = compile_model(b, ar, &c, &err);
    if (!ok) snprintf(why, why_n, "compile: %s", err.msg);
  }
  if (ok) {
    n_in = mlc_graph_main(r)->n_params, n_out = mlc_graph_main(r)->n_outputs;
    in = make_inputs(r, 11, positive);
    want = make_outputs(r), ya = make_outputs(r), yb = make_outputs(r);
    ok = mlc_graph_reference(r, in, want, &err) && mlc_graph_execute(a, NULL, NULL, in, ya, &err) &&
         mlc_graph_execute(b, jit_kernel, &c, in, yb, &err);
    if (!ok) snprintf(why, why_n, "run: %s", err.msg);
  }
  double e1 = 0, e2 = 0;
  if (ok && !all_close(ya, want, n_out, 1e-4, 1e-5, &e1)) {
    ok = false;
    snprintf(why, why_n, "interpreter vs reference: max abs error %g", e1);
  }
  if (ok && !all_close(yb, want, n_out, 1e-4, 1e-5, &e2)) {
    ok = false;
    snprintf(why, why_n, "compiled vs reference: max abs error %g", e2);
  }
  if (c.lib) mlc_jit_unload(c.lib);
  if (in) free_arrays(in, n_in);
  if (want) free_arrays(want, n_out), free_arrays(ya, n_out), free_arrays(yb, n_out);
  mlc_arena_free(ar);
  mlc_graph_free(r), mlc_graph_free(a), mlc_graph_free(b);
  return ok;
}

typedef struct op_case {
  const char *name, *json;
  bool positive; /* inputs > 0 (sqrt, log, fractional powers) */
} op_case;

static void run_cases(const char *prefix, const op_case *cs, int n) {
  for (int i = 0; i < n; i++) {
    char name[128], why[1200] = "";
    snprintf(name, sizeof name, "%s_%s", prefix, cs[i].name);
    test_report(name, run_case(cs[i].json, cs[i].positive, why, sizeof why), why);
  }
}

typedef struct bad_case {
  const char *name, *json, *want;
} bad_case;

static void run_bad(const char *prefix, const bad_case *cs, int n) {
  for (int i = 0; i < n; i++) {
    mlc_error err = {{0}};
    mlc_gmodule *m = parse(cs[i].json, &err);
    char name[128], why[1200];
    snprintf(name, sizeof name, "%s_%s", prefix, cs[i].name);
    snprintf(why, sizeof why, "%s: got \"%s\", want \"%s\"", m ? "accepted" : "wrong message",
             err.msg, cs[i].want);
    test_report(name, !m && strstr(err.msg, cs[i].want) != NULL, why);
    mlc_graph_free(m);
  }
}

/* ---- elementwise ------------------------------------------------------------ */

#define X23 "{\"name\": \"x\", \"shape\": [2, 3]}"
#define X234 "{\"name\": \"x\", \"shape\": [2, 3, 4]}"
#define UNARY(op, attrs) \
  MODEL(X234, "", "{\"name\": \"y\", \"op\": \"" op "\", \"inputs\": [\"x\"]" attrs "}", "\"y\"")
/* y = op(x, w) and z = op(w2, x): broadcasting on either side. */
#define BINARY(op)                                                                  \
  MODEL(X234, "{\"name\": \"w\", \"shape\": [3, 1]}, {\"name\": \"v\", \"shape\": [4]}", \
        "{\"name\": \"y\", \"op\": \"" op "\", \"inputs\": [\"x\", \"w\"]},"         \
        "{\"name\": \"z\", \"op\": \"" op "\", \"inputs\": [\"v\", \"y\"]}",         \
        "\"z\"")

static const op_case elemwise_cases[] = {
    {"subtract", BINARY("subtract"), false},
    {"divide", BINARY("divide"), true},
    {"maximum", BINARY("maximum"), false},
    {"minimum", BINARY("minimum"), false},
    {"power_2", UNARY("power", ", \"exponent\": 2"), false},
    {"power_3", UNARY("power", ", \"exponent\": 3"), false},
    {"power_half", UNARY("power", ", \"exponent\": 0.5"), true},
    {"power_neg1", UNARY("power", ", \"exponent\": -1"), true},
    {"power_1_7", UNARY("power", ", \"exponent\": 1.7"), true},
    /* x ** w with w [3, 1], then (x ** w) ** v with v [4]: the exponent
     * broadcast on either side (bases positive) */
    {"pow",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [3, 1]}, {\"name\": \"v\", \"shape\": [4]}",
           "{\"name\": \"y\", \"op\": \"pow\", \"inputs\": [\"x\", \"w\"]},"
           "{\"name\": \"z\", \"op\": \"pow\", \"inputs\": [\"y\", \"v\"]}",
           "\"z\""),
     true},
    /* a base broadcast against a full exponent */
    {"pow_base_bcast",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [4]}",
           "{\"name\": \"a\", \"op\": \"abs\", \"inputs\": [\"w\"]},"
           "{\"name\": \"y\", \"op\": \"pow\", \"inputs\": [\"a\", \"x\"]}",
           "\"y\""),
     false},
    {"sqrt", UNARY("sqrt", ""), true},
    {"exp", UNARY("exp", ""), false},
    {"erf", UNARY("erf", ""), false},
    {"tanh", UNARY("tanh", ""), false},
    {"sigmoid", UNARY("sigmoid", ""), false},
    {"leaky_relu", UNARY("leaky_relu", ""), false},
    {"leaky_relu_alpha", UNARY("leaky_relu", ", \"alpha\": 0.3"), false},
    {"clip", UNARY("clip", ", \"min\": -0.25, \"max\": 0.5"), false},
    {"clip_relu6", UNARY("clip", ", \"min\": 0, \"max\": 0.6"), false},
    {"clip_min_only", UNARY("clip", ", \"min\": 0.1"), false},
    {"clip_max_only", UNARY("clip", ", \"min\": \"-inf\", \"max\": 0.2"), false},
    {"hard_sigmoid", UNARY("hard_sigmoid", ""), false},
    {"hard_sigmoid_ab", UNARY("hard_sigmoid", ", \"alpha\": 1.5, \"beta\": 0.25"), false},
    {"hard_swish", UNARY("hard_swish", ""), false},
    {"negative", UNARY("negative", ""), false},
    {"abs", UNARY("abs", ""), false},
    {"log", UNARY("log", ""), true},
    {"floor", UNARY("floor", ""), false},
    {"ceil", UNARY("ceil", ""), false},
    /* x + x in [-2, 2): both ties (+-0.5, +-1.5) and plain values */
    {"round",
     MODEL(X234, "",
           "{\"name\": \"d\", \"op\": \"add\", \"inputs\": [\"x\", \"x\"]},"
           "{\"name\": \"y\", \"op\": \"round\", \"inputs\": [\"d\"]}",
           "\"y\""),
     false},
    {"sign", UNARY("sign", ""), false},
    {"sin", UNARY("sin", ""), false},
    {"cos", UNARY("cos", ""), false},
    {"tan", UNARY("tan", ""), false},
    {"asin", UNARY("asin", ""), false},
    {"acos", UNARY("acos", ""), false},
    {"atan", UNARY("atan", ""), false},
    {"sinh", UNARY("sinh", ""), false},
    {"cosh", UNARY("cosh", ""), false},
    {"asinh", UNARY("asinh", ""), false},
    /* exp(|x|) >= 1: acosh's domain */
    {"acosh",
     MODEL(X234, "",
           "{\"name\": \"a\", \"op\": \"abs\", \"inputs\": [\"x\"]},"
           "{\"name\": \"e\", \"op\": \"exp\", \"inputs\": [\"a\"]},"
           "{\"name\": \"y\", \"op\": \"acosh\", \"inputs\": [\"e\"]}",
           "\"y\""),
     false},
    {"atanh", UNARY("atanh", ""), false},
    {"thresholded_relu", UNARY("thresholded_relu", ""), false},
    {"thresholded_relu_alpha", UNARY("thresholded_relu", ", \"alpha\": -0.25"), false},
    {"shrink", UNARY("shrink", ""), false},
    {"shrink_bias", UNARY("shrink", ", \"lambd\": 0.25, \"bias\": 0.125"), false},
    /* a chain that fuses into one kernel: sigmoid(x) * x - tanh(x) */
    {"chain",
     MODEL(X23, "",
           "{\"name\": \"s\", \"op\": \"sigmoid\", \"inputs\": [\"x\"]},"
           "{\"name\": \"m\", \"op\": \"multiply\", \"inputs\": [\"s\", \"x\"]},"
           "{\"name\": \"t\", \"op\": \"tanh\", \"inputs\": [\"x\"]},"
           "{\"name\": \"y\", \"op\": \"subtract\", \"inputs\": [\"m\", \"t\"]}",
           "\"y\""),
     false},
};

static const bad_case elemwise_bad[] = {
    {"clip_range", UNARY("clip", ", \"min\": 1, \"max\": 0"), "node 'y': clip: min 1 is above max 0"},
    {"attr_not_number", UNARY("leaky_relu", ", \"alpha\": \"big\""),
     "node 'y': \"alpha\" must be a number"},
    {"attr_wrong_op", UNARY("relu", ", \"alpha\": 0.1"), "node 'y': relu takes no attribute \"alpha\""},
    {"shrink_alpha", UNARY("shrink", ", \"alpha\": 0.1"), "node 'y': shrink takes no attribute \"alpha\""},
    {"sin_attr", UNARY("sin", ", \"alpha\": 0.1"), "node 'y': sin takes no attribute \"alpha\""},
    {"binary_arity", UNARY("subtract", ""), "node 'y': subtract takes 2 inputs, got 1"},
    {"pow_arity", UNARY("pow", ", \"exponent\": 2"), "node 'y': pow takes 2 inputs, got 1"},
    {"broadcast",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [2]}", "{\"name\": \"y\", \"op\": \"divide\", \"inputs\": [\"x\", \"w\"]}",
           "\"y\""),
     "node 'y': divide: shapes (2, 3, 4) and (2,) do not broadcast"},
};

/* ---- integer and bool values (made by astype from the float inputs) ------------- */

#define NODE(name, op, inputs, attrs) \
  "{\"name\": \"" name "\", \"op\": \"" op "\", \"inputs\": [" inputs "]" attrs "}"
/* x * 9 truncated to an integer dtype, divided by [3, -2, 0, 5] every way
 * (truncating, floor modulo, C fmod; 0 where the divisor is 0). */
#define INT_ARITH(dt)                                                                              \
  MODEL(X234, "{\"name\": \"s\", \"shape\": [1], \"values\": [9]}, "                            \
              "{\"name\": \"d\", \"shape\": [4], \"values\": [3, -2, 0, 5]}",                     \
        NODE("xs", "multiply", "\"x\", \"s\"", "") "," NODE("xi", "astype", "\"xs\"", ", \"to\": \"" dt "\"") \
        "," NODE("di", "astype", "\"d\"", ", \"to\": \"" dt "\"") "," NODE("q", "divide", "\"xi\", \"di\"", "") \
        "," NODE("r", "mod", "\"xi\", \"di\"", "") "," NODE("f", "fmod", "\"xi\", \"di\"", "")            \
        "," NODE("n", "negative", "\"q\"", "") "," NODE("a", "abs", "\"r\"", "")                          \
        "," NODE("m", "maximum", "\"n\", \"f\"", "") "," NODE("y", "add", "\"m\", \"a\"", ""),              \
        "\"y\", \"q\"")

static const op_case dtype_cases[] = {
    {"int64_arith", INT_ARITH("int64"), false},
    {"int32_arith", INT_ARITH("int32"), false},
    /* comparisons, logic, where, argmax (int64 out), a bool output */
    {"compare_where_argmax",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [4], \"values\": [0.1, -0.1, 0, 0.3]}",
           NODE("lt", "less", "\"x\", \"w\"", "") "," NODE("ge", "greater_equal", "\"x\", \"w\"", "")
           "," NODE("eq", "equal", "\"lt\", \"ge\"", "") "," NODE("nt", "logical_not", "\"eq\"", "")
           "," NODE("an", "logical_and", "\"nt\", \"lt\"", "") "," NODE("xo", "logical_xor", "\"an\", \"ge\"", "")
           "," NODE("o", "logical_or", "\"xo\", \"lt\"", "") "," NODE("y", "where", "\"o\", \"x\", \"w\"", "")
           "," NODE("am", "argmax", "\"x\"", ", \"axis\": 2, \"keepdims\": false")
           "," NODE("an2", "argmin", "\"y\"", ", \"axis\": 1, \"select_last_index\": true")
           "," NODE("b", "astype", "\"x\"", ", \"to\": \"bool\""),
           "\"y\", \"am\", \"an2\", \"b\", \"xo\""),
     false},
    /* gather_elements of float data by int64 indices (negative ones
     * too) and of int32 data (x * 9: ties) by topk's indices, smallest
     * first; topk of floats along axis 1 */
    {"gather_elements_topk",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [2, 2, 4], \"values\": [0, 1, 2, -1, -3, 2, 0, 1, 1, 1, -2, 0, 2, -1, -3, 0]}, "
                 "{\"name\": \"s\", \"shape\": [1], \"values\": [9]}",
           NODE("wi", "astype", "\"w\"", ", \"to\": \"int64\"")
           "," NODE("ge", "gather_elements", "\"x\", \"wi\"", ", \"axis\": 1")
           "," NODE("xs", "multiply", "\"x\", \"s\"", "") "," NODE("xi", "astype", "\"xs\"", ", \"to\": \"int32\"")
           "," NODE("tk", "topk", "\"xi\"", ", \"k\": 3, \"largest\": false")
           "," NODE("tv", "gather_elements", "\"xi\", \"tk\"", ", \"axis\": -1")
           "," NODE("tf", "topk", "\"x\"", ", \"axis\": 1, \"k\": 2"),
           "\"ge\", \"tk\", \"tv\", \"tf\""),
     false},
    /* integer powers (x * 9 truncated) by integer exponents (negative,
     * 0) and by float ones; a float to an int64; -1, 0 and 1 to exponents
     * past the width */
    {"pow_int",
     MODEL(X234, "{\"name\": \"s\", \"shape\": [1], \"values\": [9]}, "
                 "{\"name\": \"d\", \"shape\": [4], \"values\": [3, -2, 0, 5]}, "
                 "{\"name\": \"u\", \"shape\": [2, 3, 4], \"values\": [-1, 0, 1, -1, 1, -1, 0, 0, -1, -1, 1, 1, "
                 "0, 1, -1, 1, -1, 0, 1, -1, 0, 0, 1, -1]}, "
                 "{\"name\": \"g\", \"shape\": [4], \"values\": [63, 70, 101, -3]}, "
                 "{\"name\": \"f\", \"shape\": [4], \"values\": [0.5, 2, 1.5, 3]}",
           NODE("xs", "multiply", "\"x\", \"s\"", "") "," NODE("xi", "astype", "\"xs\"", ", \"to\": \"int64\"")
           "," NODE("xj", "astype", "\"xs\"", ", \"to\": \"int32\"")
           "," NODE("di", "astype", "\"d\"", ", \"to\": \"int64\"") "," NODE("dj", "astype", "\"d\"", ", \"to\": \"int32\"")
           "," NODE("p", "pow", "\"xi\", \"dj\"", "") "," NODE("q", "pow", "\"xj\", \"f\"", "")
           "," NODE("r", "pow", "\"x\", \"di\"", "")
           "," NODE("ux", "multiply", "\"u\", \"x\"", "") "," NODE("uc", "sign", "\"ux\"", "")
           "," NODE("ui", "astype", "\"uc\"", ", \"to\": \"int64\"") "," NODE("gi", "astype", "\"g\"", ", \"to\": \"int64\"")
           "," NODE("t", "pow", "\"ui\", \"gi\"", ""),
           "\"p\", \"q\", \"r\", \"t\""),
     false},
    /* scatter_nd: rows of 2 indices (a negative one), a repeated row
     * (the last wins), one row of 2 (no leading axes); add and mul onto
     * int32 and float data */
    {"scatter_nd",
     MODEL(X234, "{\"name\": \"i2\", \"shape\": [2, 2], \"values\": [1, -1, 0, 2]}, "
                 "{\"name\": \"i1\", \"shape\": [3, 1], \"values\": [1, 0, 1]}, "
                 "{\"name\": \"i0\", \"shape\": [2], \"values\": [-1, 1]}, "
                 "{\"name\": \"u2\", \"shape\": [2, 4]}, {\"name\": \"u1\", \"shape\": [3, 3, 4]}, "
                 "{\"name\": \"u0\", \"shape\": [4]}, {\"name\": \"s\", \"shape\": [1], \"values\": [9]}",
           NODE("j2", "astype", "\"i2\"", ", \"to\": \"int64\"") "," NODE("j1", "astype", "\"i1\"", ", \"to\": \"int32\"")
           "," NODE("j0", "astype", "\"i0\"", ", \"to\": \"int64\"")
           "," NODE("a", "scatter_nd", "\"x\", \"j2\", \"u2\"", "") "," NODE("b", "scatter_nd", "\"x\", \"j1\", \"u1\"", "")
           "," NODE("c", "scatter_nd_mul", "\"x\", \"j0\", \"u0\"", "")
           "," NODE("xs", "multiply", "\"x\", \"s\"", "") "," NODE("xi", "astype", "\"xs\"", ", \"to\": \"int32\"")
           "," NODE("us", "multiply", "\"u1\", \"s\"", "") "," NODE("ui", "astype", "\"us\"", ", \"to\": \"int32\"")
           "," NODE("d", "scatter_nd_add", "\"xi\", \"j1\", \"ui\"", ""),
           "\"a\", \"b\", \"c\", \"d\""),
     false},
    /* quantize to uint8 per tensor and to int8 per row (saturating at
     * both ends), ties to even (t / 1 + 128: 128.5, 129.5, 125.5, 428),
     * dequantize of both and of int32 values */
    {"quantize",
     MODEL(X234, "{\"name\": \"s1\", \"shape\": [1], \"values\": [0.01]}, "
                 "{\"name\": \"z1\", \"shape\": [1], \"values\": [128]}, "
                 "{\"name\": \"s2\", \"shape\": [3, 1], \"values\": [0.004, 0.008, 0.02]}, "
                 "{\"name\": \"z2\", \"shape\": [3, 1], \"values\": [-3, 0, 5]}, "
                 "{\"name\": \"one\", \"shape\": [1], \"values\": [1]}, "
                 "{\"name\": \"t\", \"shape\": [4], \"values\": [0.5, 1.5, -2.5, 300]}, "
                 "{\"name\": \"w\", \"shape\": [4], \"values\": [1000, -70000, 5, 0]}, "
                 "{\"name\": \"z3\", \"shape\": [1], \"values\": [7]}",
           NODE("zu", "astype", "\"z1\"", ", \"to\": \"uint8\"") "," NODE("zi", "astype", "\"z2\"", ", \"to\": \"int8\"")
           "," NODE("q1", "quantize", "\"x\", \"s1\", \"zu\"", "") "," NODE("d1", "dequantize", "\"q1\", \"s1\", \"zu\"", "")
           "," NODE("q2", "quantize", "\"x\", \"s2\", \"zi\"", "") "," NODE("d2", "dequantize", "\"q2\", \"s2\", \"zi\"", "")
           "," NODE("qt", "quantize", "\"t\", \"one\", \"zu\"", "")
           "," NODE("wi", "astype", "\"w\"", ", \"to\": \"int32\"") "," NODE("zj", "astype", "\"z3\"", ", \"to\": \"int32\"")
           "," NODE("d3", "dequantize", "\"wi\", \"s1\", \"zj\"", ""),
           "\"q1\", \"d1\", \"q2\", \"d2\", \"qt\", \"d3\""),
     false},
    /* qdense of uint8 values (|x| * 200) by an int8 weight packed
     * [N/16, K/4, 16, 4] (w * 120): int32 sums; im2col of a [1, 3, 5, 6]
     * input in its default 2 x 2 window */
    {"qdense_im2col",
     MODEL("{\"name\": \"x\", \"shape\": [3, 8]}, {\"name\": \"v\", \"shape\": [1, 3, 5, 6]}",
           "{\"name\": \"w\", \"shape\": [2, 2, 16, 4]}, {\"name\": \"s\", \"shape\": [1], \"values\": [200]}, "
           "{\"name\": \"t\", \"shape\": [1], \"values\": [120]}",
           NODE("xa", "abs", "\"x\"", "") "," NODE("xs", "multiply", "\"xa\", \"s\"", "")
           "," NODE("xu", "astype", "\"xs\"", ", \"to\": \"uint8\"")
           "," NODE("ws", "multiply", "\"w\", \"t\"", "") "," NODE("wi", "astype", "\"ws\"", ", \"to\": \"int8\"")
           "," NODE("y", "qdense", "\"xu\", \"wi\"", "") "," NODE("c", "im2col", "\"v\"", ""),
           "\"y\", \"c\""),
     false},
    /* running sums of integers (x * 9 truncated) */
    {"cumsum_int",
     MODEL(X234, "{\"name\": \"s\", \"shape\": [1], \"values\": [9]}",
           NODE("xs", "multiply", "\"x\", \"s\"", "") "," NODE("xi", "astype", "\"xs\"", ", \"to\": \"int32\"")
           "," NODE("xl", "astype", "\"xs\"", ", \"to\": \"int64\"")
           "," NODE("c", "cumsum", "\"xi\"", ", \"axis\": 1")
           "," NODE("d", "cumsum", "\"xl\"", ", \"axis\": -1, \"exclusive\": true, \"reverse\": true"),
           "\"c\", \"d\""),
     false},
};

#define XI64 NODE("xi", "astype", "\"x\"", ", \"to\": \"int64\"")
static const bad_case dtype_bad[] = {
    {"mixed", MODEL(X234, "", XI64 "," NODE("y", "add", "\"xi\", \"x\"", ""), "\"y\""),
     "node 'y': add: operand 1 is float32, operand 0 int64 (one dtype expected)"},
    {"quantize_zero_point", MODEL(X234, "", XI64 "," NODE("y", "quantize", "\"x\", \"x\", \"xi\"", ""), "\"y\""),
     "node 'y': quantize: operand 2 is int64; a uint8 or int8 zero point expected"},
    {"qdense_float", MODEL(X23, "{\"name\": \"w\", \"shape\": [1, 1, 16, 4]}", NODE("y", "qdense", "\"x\", \"w\"", ""), "\"y\""),
     "node 'y': qdense: operand 0 is float32; uint8 expected"},
    {"dequantize_float", MODEL(X234, "", NODE("y", "dequantize", "\"x\", \"x\", \"x\"", ""), "\"y\""),
     "node 'y': dequantize: operand 0 is float32; uint8, int8 or int32 expected"},
    {"float_only", MODEL(X234, "", XI64 "," NODE("y", "exp", "\"xi\"", ""), "\"y\""),
     "node 'y': exp: operand 0 is int64; only float32 is supported"},
    {"where_cond", MODEL(X234, "", NODE("y", "where", "\"x\", \"x\", \"x\"", ""), "\"y\""),
     "node 'y': where: operand 0 is float32; a bool condition expected"},
    {"not_float", MODEL(X234, "", NODE("y", "logical_not", "\"x\"", ""), "\"y\""),
     "node 'y': logical_not: operand 0 is float32; bool expected"},
    {"less_bool",
     MODEL(X234, "", NODE("b", "astype", "\"x\"", ", \"to\": \"bool\"") "," NODE("y", "less", "\"b\", \"b\"", ""),
           "\"y\""),
     "node 'y': less: operand 0 is bool; float32, int64 or int32 expected"},
    {"astype_float16", MODEL(X234, "", NODE("y", "astype", "\"x\"", ", \"to\": \"float16\""), "\"y\""),
     "\"to\" must be one of float32, int64, int32, bool, uint8, int8"},
    {"gather_elements_rank",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [2, 3], \"values\": [0, 0, 0, 0, 0, 0]}",
           NODE("y", "gather_elements", "\"x\", \"w\"", ""), "\"y\""),
     "node 'y': gather_elements: operand 1 has shape (2, 3), expected operand 0's rank"},
    {"gather_elements_range",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [1, 1, 1], \"values\": [2]}",
           NODE("y", "gather_elements", "\"x\", \"w\"", ""), "\"y\""),
     "gather_elements: index 2 (element 0 of w) is not a whole number in [-2, 2)"},
    {"topk_k", MODEL(X234, "", NODE("y", "topk", "\"x\"", ", \"k\": 5"), "\"y\""),
     "node 'y': topk: k 5 is outside [1, 4] (axis 2's extent)"},
    {"topk_bool",
     MODEL(X234, "", NODE("b", "astype", "\"x\"", ", \"to\": \"bool\"") "," NODE("y", "topk", "\"b\"", ""),
           "\"y\""),
     "node 'y': topk: operand 0 is bool; float32, int64 or int32 expected"},
    {"scatter_nd_updates",
     MODEL(X234, "{\"name\": \"i\", \"shape\": [2, 2], \"values\": [0, 0, 1, 1]}, {\"name\": \"u\", \"shape\": [2, 3]}",
           NODE("j", "astype", "\"i\"", ", \"to\": \"int64\"") "," NODE("y", "scatter_nd", "\"x\", \"j\", \"u\"", ""),
           "\"y\""),
     "node 'y': scatter_nd: operand 2 has shape (2, 3), expected operand 1's leading dims, then operand 0's from k"},
    {"scatter_nd_float_indices",
     MODEL(X234, "{\"name\": \"i\", \"shape\": [2, 2], \"values\": [0, 0, 1, 1]}, {\"name\": \"u\", \"shape\": [2, 4]}",
           NODE("y", "scatter_nd_add", "\"x\", \"i\", \"u\"", ""), "\"y\""),
     "node 'y': scatter_nd_add: operand 1 is float32; int64 or int32 indices expected"},
    {"gather_bool_indices",
     MODEL(X234, "", NODE("b", "astype", "\"x\"", ", \"to\": \"bool\"") "," NODE("y", "gather", "\"x\", \"b\"", ""),
           "\"y\""),
     "node 'y': gather: operand 1 is bool; int64, int32 or float32 indices expected"},
};

/* ---- convolutions and max pooling ------------------------------------------ */

#define XC "{\"name\": \"x\", \"shape\": [2, 4, 7, 6]}"
#define CONV(w_shape, attrs)                                                        \
  MODEL(XC, "{\"name\": \"w\", \"shape\": " w_shape "}",                         \
        "{\"name\": \"y\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"]" attrs "}", \
        "\"y\"")
#define CONV_B(w_shape, k, attrs)                                                   \
  MODEL(XC, "{\"name\": \"w\", \"shape\": " w_shape "}, {\"name\": \"b\", \"shape\": [" k "]}", \
        "{\"name\": \"y\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\", \"b\"]" attrs "}", \
        "\"y\"")
#define CONVT(w_shape, attrs)                                                       \
  MODEL(XC, "{\"name\": \"w\", \"shape\": " w_shape "}, {\"name\": \"b\", \"shape\": [6]}", \
        "{\"name\": \"y\", \"op\": \"conv_transpose2d\", \"inputs\": [\"x\", \"w\"" attrs "}", \
        "\"y\"")
#define POOL(attrs) \
  MODEL(XC, "", "{\"name\": \"y\", \"op\": \"max_pool2d\", \"inputs\": [\"x\"]" attrs "}", "\"y\"")

static const op_case conv_cases[] = {
    {"task_form", CONV("[3, 4, 3, 3]", ", \"stride\": 2, \"padding\": 1"), false},
    {"strides_hw", CONV("[3, 4, 3, 2]", ", \"strides\": [2, 1]"), false},
    {"pads_per_side", CONV("[3, 4, 3, 3]", ", \"pads\": [1, 0, 2, 1]"), false},
    {"dilations", CONV("[3, 4, 3, 2]", ", \"dilations\": [2, 3], \"pads\": [2, 1, 2, 1]"), false},
    {"groups", CONV("[6, 2, 3, 3]", ", \"groups\": 2, \"padding\": 1"), false},
    {"depthwise", CONV("[4, 1, 3, 3]", ", \"groups\": 4, \"padding\": 1, \"stride\": 2"), false},
    {"depthwise_mult2", CONV("[8, 1, 3, 3]", ", \"groups\": 4, \"pads\": [0, 1, 1, 0]"), false},
    {"bias", CONV_B("[5, 4, 1, 1]", "5", ""), false},
    {"bias_all", CONV_B("[6, 2, 3, 3]", "6", ", \"groups\": 2, \"strides\": [1, 2], \"pads\": [1, 1, 0, 0], \"dilations\": [1, 2]"), false},
    {"transpose", CONVT("[4, 6, 3, 3]", "]"), false},
    {"transpose_stride", CONVT("[4, 6, 3, 3]", "], \"strides\": [2, 2], \"pads\": [1, 1, 1, 1]"), false},
    {"transpose_outpad", CONVT("[4, 6, 3, 2]", "], \"strides\": [2, 3], \"pads\": [0, 1, 1, 0], \"output_padding\": [1, 2]"), false},
    {"transpose_dilation", CONVT("[4, 6, 2, 3]", "], \"dilations\": [2, 1], \"pads\": [3, 0, 1, 2]"), false},
    {"transpose_groups_bias", CONVT("[4, 3, 3, 3]", ", \"b\"], \"groups\": 2, \"strides\": [2, 1], \"pads\": [1, 1, 0, 0]"), false},
    /* constant weights with 8 or 16 output channels: packed by the layout
     * pass, lowered to the blocked (NCHWc) kernel */
    {"packed", CONV("[8, 4, 3, 3]", ", \"padding\": 1"), false},
    {"packed_bias_all", CONV_B("[16, 4, 3, 2]", "16", ", \"strides\": [2, 1], \"pads\": [1, 0, 2, 1], \"dilations\": [1, 2]"), false},
    {"packed_fused_residual",
     MODEL("{\"name\": \"x\", \"shape\": [1, 16, 5, 4]}",
           "{\"name\": \"w\", \"shape\": [16, 16, 3, 3]}, {\"name\": \"b\", \"shape\": [16]}",
           "{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\", \"b\"], \"padding\": 1},"
           "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"c\"]},"
           "{\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"r\", \"x\"]}",
           "\"y\""),
     false},
    /* blocked operands given in the model (the layout pass's forms) */
    {"nchwc_input",
     MODEL("{\"name\": \"x\", \"shape\": [1, 2, 4, 5, 8]}",
           "{\"name\": \"w\", \"shape\": [1, 2, 3, 3, 8, 16]}, {\"name\": \"b\", \"shape\": [16]}",
           "{\"name\": \"y\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\", \"b\"], \"padding\": 1, \"stride\": 2}",
           "\"y\""),
     false},
    {"nchwc_max_pool",
     MODEL("{\"name\": \"x\", \"shape\": [2, 2, 5, 4, 8]}", "",
           "{\"name\": \"y\", \"op\": \"max_pool2d\", \"inputs\": [\"x\"], \"pool_size\": 3, \"stride\": 2, \"padding\": 1}",
           "\"y\""),
     false},
    {"nchwc_unpack",
     MODEL("{\"name\": \"x\", \"shape\": [2, 3, 2, 3, 8]}", "",
           "{\"name\": \"y\", \"op\": \"unpack_nchwc\", \"inputs\": [\"x\"]}", "\"y\""),
     false},
    {"max_pool", POOL(""), false},
    {"max_pool_k3s2p1", POOL(", \"pool_size\": 3, \"stride\": 2, \"padding\": 1"), false},
    {"max_pool_rect", POOL(", \"kernel\": [3, 2], \"strides\": [1, 2], \"pads\": [1, 0, 0, 1]"), false},
    {"max_pool_dilation", POOL(", \"kernel\": [2, 2], \"strides\": [1, 1], \"dilations\": [2, 2]"), false},
    {"max_pool_ceil", POOL(", \"kernel\": [3, 3], \"strides\": [2, 2], \"ceil_mode\": true"), false},
    {"max_pool_ceil_pad", POOL(", \"kernel\": [2, 3], \"strides\": [2, 2], \"pads\": [1, 1, 1, 1], \"ceil_mode\": true"), false},
    /* conv + bias input + relu fuse into one kernel */
    {"fused_bias_relu",
     MODEL(XC, "{\"name\": \"w\", \"shape\": [4, 1, 3, 3]}, {\"name\": \"b\", \"shape\": [4]}",
           "{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\", \"b\"], \"groups\": 4, \"padding\": 1},"
           "{\"name\": \"r\", \"op\": \"clip\", \"inputs\": [\"c\"], \"min\": 0, \"max\": 0.3},"
           "{\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"r\", \"x\"]}",
           "\"y\""),
     false},
};

static const bad_case conv_bad[] = {
    {"groups_channels", CONV("[6, 2, 3, 3]", ", \"groups\": 3"),
     "node 'y': conv2d: operand 0 has shape (2, 4, 7, 6), expected channels divisible by groups"},
    {"weight_channels", CONV("[6, 3, 3, 3]", ", \"groups\": 2"),
     "node 'y': conv2d: operand 1 has shape (6, 3, 3, 3), expected [K, C / groups, R, S]"},
    {"bias_shape", CONV_B("[5, 4, 1, 1]", "4", ""),
     "node 'y': conv2d: operand 2 has shape (4,), expected [K]"},
    {"window_too_big", CONV("[3, 4, 8, 3]", ""),
     "node 'y': conv2d: operand 0 has shape (2, 4, 7, 6), expected a spatial size that fits the window"},
    {"dilation_zero", CONV("[3, 4, 3, 3]", ", \"dilations\": [0, 1]"),
     "node 'y': \"dilations\" entry 0 must be an integer in [1, 4096]"},
    {"pads_count", CONV("[3, 4, 3, 3]", ", \"pads\": [1, 1]"),
     "node 'y': \"pads\" must be an array of 4 integers"},
    {"transpose_outpad", CONVT("[4, 6, 3, 3]", "], \"output_padding\": [1, 0]"),
     "node 'y': conv_transpose2d: output_padding must be >= 0 and below the stride or dilation"},
    {"transpose_weight", CONVT("[6, 4, 3, 3]", "]"),
     "node 'y': conv_transpose2d: operand 1 has shape (6, 4, 3, 3), expected [C, K / groups, R, S]"},
    {"pool_pad", POOL(", \"pool_size\": 2, \"padding\": 2"),
     "node 'y': max_pool2d: the window must be >= 1 and larger than the padding"},
    {"pool_attr", POOL(", \"groups\": 2"), "node 'y': max_pool2d takes no attribute \"groups\""},
    {"nchwc_plain_weight",
     MODEL("{\"name\": \"x\", \"shape\": [1, 2, 4, 4, 8]}", "{\"name\": \"w\", \"shape\": [16, 16, 3, 3]}",
           "{\"name\": \"y\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"]}", "\"y\""),
     "node 'y': conv2d: operand 1 has shape (16, 16, 3, 3), expected a packed weight (6 dims) for an NCHWc operand 0"},
    {"nchwc_block_mismatch",
     MODEL("{\"name\": \"x\", \"shape\": [1, 2, 4, 4, 8]}", "{\"name\": \"w\", \"shape\": [1, 1, 3, 3, 16, 16]}",
           "{\"name\": \"y\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"]}", "\"y\""),
     "expected [K/k, C/c, R, S, c, k] without groups (C: the input's channels, c: its block)"},
    {"unpack_rank", MODEL(XC, "", "{\"name\": \"y\", \"op\": \"unpack_nchwc\", \"inputs\": [\"x\"]}", "\"y\""),
     "node 'y': unpack_nchwc: operand 0 has shape (2, 4, 7, 6), expected 5 dims (NCHWc)"},
};

/* ---- 3-D windows (NCDHW) ------------------------------------------------------ */

#define XC3 "{\"name\": \"x\", \"shape\": [2, 4, 5, 6, 5]}"
#define CONV3(w_shape, attrs)                                                       \
  MODEL(XC3, "{\"name\": \"w\", \"shape\": " w_shape "}",                        \
        "{\"name\": \"y\", \"op\": \"conv3d\", \"inputs\": [\"x\", \"w\"]" attrs "}", \
        "\"y\"")
#define CONV3_B(w_shape, k, attrs)                                                  \
  MODEL(XC3, "{\"name\": \"w\", \"shape\": " w_shape "}, {\"name\": \"b\", \"shape\": [" k "]}", \
        "{\"name\": \"y\", \"op\": \"conv3d\", \"inputs\": [\"x\", \"w\", \"b\"]" attrs "}", \
        "\"y\"")
#define CONVT3(w_shape, attrs)                                                      \
  MODEL(XC3, "{\"name\": \"w\", \"shape\": " w_shape "}, {\"name\": \"b\", \"shape\": [6]}", \
        "{\"name\": \"y\", \"op\": \"conv_transpose3d\", \"inputs\": [\"x\", \"w\"" attrs "}", \
        "\"y\"")
#define POOL3(op, attrs) \
  MODEL(XC3, "", "{\"name\": \"y\", \"op\": \"" op "\", \"inputs\": [\"x\"]" attrs "}", "\"y\"")

static const op_case conv3d_cases[] = {
    {"plain", CONV3("[3, 4, 3, 3, 3]", ""), false},
    {"stride_padding", CONV3("[3, 4, 3, 3, 2]", ", \"stride\": 2, \"padding\": 1"), false},
    {"strides_pads_per_side", CONV3("[3, 4, 2, 3, 3]", ", \"strides\": [2, 1, 2], \"pads\": [1, 0, 2, 0, 1, 1]"), false},
    {"dilations", CONV3("[3, 4, 2, 2, 2]", ", \"dilations\": [2, 3, 1], \"pads\": [1, 2, 0, 1, 0, 1]"), false},
    {"groups_bias", CONV3_B("[6, 2, 3, 3, 3]", "6", ", \"groups\": 2, \"padding\": 1"), false},
    {"depthwise_all", CONV3_B("[8, 1, 3, 2, 3]", "8", ", \"groups\": 4, \"strides\": [1, 2, 2], \"pads\": [1, 0, 1, 1, 1, 0], \"dilations\": [1, 2, 1]"), false},
    {"transpose", CONVT3("[4, 6, 3, 3, 2]", "]"), false},
    {"transpose_stride_outpad", CONVT3("[4, 6, 2, 3, 2]", "], \"strides\": [2, 1, 3], \"pads\": [1, 0, 1, 0, 1, 0], \"output_padding\": [1, 0, 2]"), false},
    {"transpose_dilation", CONVT3("[4, 6, 2, 2, 3]", "], \"dilations\": [2, 1, 2], \"pads\": [1, 1, 0, 0, 0, 2]"), false},
    {"transpose_groups_bias", CONVT3("[4, 3, 3, 2, 3]", ", \"b\"], \"groups\": 2, \"strides\": [1, 2, 1], \"pads\": [1, 0, 1, 1, 1, 0]"), false},
    {"max_pool", POOL3("max_pool3d", ""), false},
    {"max_pool_k3s2p1", POOL3("max_pool3d", ", \"pool_size\": 3, \"stride\": 2, \"padding\": 1"), false},
    {"max_pool_dilation_ceil", POOL3("max_pool3d", ", \"kernel\": [2, 2, 3], \"strides\": [2, 1, 2], \"dilations\": [2, 2, 1], \"ceil_mode\": true"), false},
    {"max_pool_ceil_pad", POOL3("max_pool3d", ", \"kernel\": [2, 3, 2], \"strides\": [2, 2, 2], \"pads\": [1, 1, 0, 1, 1, 1], \"ceil_mode\": true"), false},
    {"avg_pool", POOL3("avg_pool3d", ""), false},
    {"avg_pool_pads", POOL3("avg_pool3d", ", \"kernel\": [3, 2, 3], \"strides\": [1, 2, 2], \"pads\": [1, 1, 0, 1, 0, 1]"), false},
    {"avg_pool_pads_include", POOL3("avg_pool3d", ", \"kernel\": [3, 2, 3], \"strides\": [1, 2, 2], \"pads\": [1, 1, 0, 1, 0, 1], \"count_include_pad\": true"), false},
    {"avg_pool_ceil", POOL3("avg_pool3d", ", \"kernel\": [2, 3, 2], \"strides\": [2, 2, 2], \"pads\": [0, 1, 1, 1, 1, 0], \"ceil_mode\": true"), false},
    {"avg_pool_ceil_include", POOL3("avg_pool3d", ", \"kernel\": [2, 3, 2], \"strides\": [2, 2, 2], \"pads\": [0, 1, 1, 1, 1, 0], \"ceil_mode\": true, \"count_include_pad\": true"), false},
};

static const bad_case conv3d_bad[] = {
    {"rank", MODEL(XC, "{\"name\": \"w\", \"shape\": [3, 4, 3, 3]}",
                   "{\"name\": \"y\", \"op\": \"conv3d\", \"inputs\": [\"x\", \"w\"]}", "\"y\""),
     "node 'y': conv3d: operand 0 has shape (2, 4, 7, 6), expected 5 dims (NCDHW)"},
    {"weight_channels", CONV3("[6, 3, 3, 3, 3]", ", \"groups\": 2"),
     "node 'y': conv3d: operand 1 has shape (6, 3, 3, 3, 3), expected [K, C / groups, T, R, S]"},
    {"groups_channels", CONV3("[6, 2, 3, 3, 3]", ", \"groups\": 3"),
     "node 'y': conv3d: operand 0 has shape (2, 4, 5, 6, 5), expected channels divisible by groups"},
    {"bias_shape", CONV3_B("[5, 4, 1, 1, 1]", "4", ""),
     "node 'y': conv3d: operand 2 has shape (4,), expected [K]"},
    {"window_too_big", CONV3("[3, 4, 6, 3, 3]", ""),
     "node 'y': conv3d: operand 0 has shape (2, 4, 5, 6, 5), expected a spatial size that fits the window"},
    {"pads_count", CONV3("[3, 4, 3, 3, 3]", ", \"pads\": [1, 1, 1, 1]"),
     "node 'y': \"pads\" must be an array of 6 integers"},
    {"strides_count", CONV3("[3, 4, 3, 3, 3]", ", \"strides\": [1, 1]"),
     "node 'y': \"strides\" must be an array of 3 integers"},
    {"transpose_outpad", CONVT3("[4, 6, 3, 3, 3]", "], \"output_padding\": [0, 1, 0]"),
     "node 'y': conv_transpose3d: output_padding must be >= 0 and below the stride or dilation"},
    {"transpose_weight", CONVT3("[6, 4, 3, 3, 3]", "]"),
     "node 'y': conv_transpose3d: operand 1 has shape (6, 4, 3, 3, 3), expected [C, K / groups, T, R, S]"},
    {"pool_pad", POOL3("max_pool3d", ", \"pool_size\": 2, \"pads\": [0, 0, 2, 0, 0, 0]"),
     "node 'y': max_pool3d: the window must be >= 1 and larger than the padding"},
    {"avg_pool_dilation", POOL3("avg_pool3d", ", \"dilations\": [1, 2, 1]"),
     "node 'y': avg_pool3d takes no attribute \"dilations\""},
};

/* A window op's reference (graph/ref.c) against loops written here from
 * the ONNX definitions: x [1, 4, 4, 5, 3] into conv3d (w [4, 2, 2, 3, 2],
 * groups 2, strides (1, 2, 1), pads (1, 0, 1 | 0, 1, 1), dilations
 * (2, 1, 1), bias) and avg_pool3d (kernel (2, 3, 2), strides 2, pads
 * (1, 1, 0 | 0, 1, 1), ceil_mode, count_include_pad either way). */
#define X3D "{\"name\": \"x\", \"shape\": [1, 4, 4, 5, 3]}"
static const int64_t cv_str[3] = {1, 2, 1}, cv_pad[6] = {1, 0, 1, 0, 1, 1}, cv_dil[3] = {2, 1, 1};
static const int64_t av_k[3] = {2, 3, 2}, av_pad[6] = {1, 1, 0, 0, 1, 1};

static float x3d_at(const float *x, int64_t c, const int64_t *p) {
  return x[((c * 4 + p[0]) * 5 + p[1]) * 3 + p[2]];
}

static bool x3d_inside(const int64_t *p) {
  return p[0] >= 0 && p[0] < 4 && p[1] >= 0 && p[1] < 5 && p[2] >= 0 && p[2] < 3;
}

/* conv3d's output element (k, o) by the definition. */
static double conv3d_direct(const float *x, const float *w, const float *b, int64_t k,
                            const int64_t *o) {
  double acc = b[k];
  for (int64_t c = 0; c < 2; c++)
    for (int64_t t = 0; t < 2; t++)
      for (int64_t r = 0; r < 3; r++)
        for (int64_t s = 0; s < 2; s++) {
          int64_t win[3] = {t, r, s}, p[3];
          for (int i = 0; i < 3; i++) p[i] = o[i] * cv_str[i] + win[i] * cv_dil[i] - cv_pad[i];
          if (x3d_inside(p))
            acc += (double)x3d_at(x, k / 2 * 2 + c, p) * w[((k * 2 + c) * 2 + t) * 6 + r * 2 + s];
        }
  return acc;
}

/* avg_pool3d's output element (c, o) by the definition. */
static double avg3d_direct(const float *x, bool include, int64_t c, const int64_t *o) {
  double sum = 0;
  int n = 0;
  for (int64_t t = 0; t < av_k[0]; t++)
    for (int64_t r = 0; r < av_k[1]; r++)
      for (int64_t s = 0; s < av_k[2]; s++) {
        int64_t win[3] = {t, r, s}, p[3], ext[3] = {4, 5, 3};
        bool padded = true;
        for (int i = 0; i < 3; i++) {
          p[i] = o[i] * 2 + win[i] - av_pad[i];
          padded &= p[i] < ext[i] + av_pad[3 + i];
        }
        if (x3d_inside(p)) sum += x3d_at(x, c, p);
        n += include ? padded : x3d_inside(p);
      }
  return sum / n;
}

/* Runs the one-node model's reference; every output element must match
 * direct(k, o). */
static bool check_direct(const char *json, const int64_t *want_shape, int kind, char *why,
                         size_t why_n) {
  mlc_error err = {{0}};
  mlc_gmodule *m = parse(json, &err);
  if (!m) return snprintf(why, why_n, "load: %s", err.msg), false;
  const mlc_gvar *y = mlc_graph_main(m)->outputs[0];
  bool ok = true;
  for (int d = 0; d < 5; d++) ok &= y->type.shape[d] == want_shape[d];
  if (!ok) snprintf(why, why_n, "output shape differs");
  mlc_array **in = make_inputs(m, 5, false), **out = make_outputs(m);
  if (ok && !mlc_graph_reference(m, in, out, &err)) ok = false, snprintf(why, why_n, "%s", err.msg);
  const float *x = in[0]->data, *yd = out[0]->data;
  const mlc_gfunc *f = mlc_graph_main(m);
  const float *w = f->bindings[0].n_args > 1 ? f->bindings[0].args[1]->data : NULL;
  const float *b = f->bindings[0].n_args > 2 ? f->bindings[0].args[2]->data : NULL;
  const int64_t *sh = want_shape;
  for (int64_t i = 0; ok && i < mlc_gtype_numel(&y->type); i++) {
    int64_t o[3] = {i / (sh[3] * sh[4]) % sh[2], i / sh[4] % sh[3], i % sh[4]};
    int64_t ch = i / (sh[2] * sh[3] * sh[4]);
    double want = kind == 0 ? conv3d_direct(x, w, b, ch, o) : avg3d_direct(x, kind == 2, ch, o);
    if (fabs(yd[i] - want) > 1e-4 * (1 + fabs(want))) {
      ok = false;
      snprintf(why, why_n, "element %lld: %g, want %g", (long long)i, yd[i], want);
    }
  }
  free_arrays(in, 1), free_arrays(out, 1);
  mlc_graph_free(m);
  return ok;
}

static void test_window3d_direct(void) {
  char why[1200] = "";
  /* D: (4 + 1 - 3) / 1 + 1 = 3; H: (5 + 1 - 3) / 2 + 1 = 2; W: (3 + 2 - 2) + 1 = 4 */
  const char *conv = MODEL(X3D, "{\"name\": \"w\", \"shape\": [4, 2, 2, 3, 2]}, {\"name\": \"b\", \"shape\": [4]}",
                           "{\"name\": \"y\", \"op\": \"conv3d\", \"inputs\": [\"x\", \"w\", \"b\"], \"groups\": 2,"
                           " \"strides\": [1, 2, 1], \"pads\": [1, 0, 1, 0, 1, 1], \"dilations\": [2, 1, 1]}",
                           "\"y\"");
  test_report("conv3d_direct", check_direct(conv, (const int64_t[]){1, 4, 3, 2, 4}, 0, why, sizeof why), why);
  /* ceil_mode: D ceil((4 + 1 - 2) / 2) + 1 = 3; H ceil((5 + 2 - 3) / 2) + 1 = 3; W ceil((3 + 1 - 2) / 2) + 1 = 2 */
#define AVG3D(include)                                                                            \
  MODEL(X3D, "", "{\"name\": \"y\", \"op\": \"avg_pool3d\", \"inputs\": [\"x\"], \"kernel\": [2, 3, 2]," \
                 " \"stride\": 2, \"pads\": [1, 1, 0, 0, 1, 1], \"ceil_mode\": true, \"count_include_pad\": " include "}", \
        "\"y\"")
  const int64_t avg_shape[5] = {1, 4, 3, 3, 2};
  test_report("avg_pool3d_direct", check_direct(AVG3D("false"), avg_shape, 1, why, sizeof why), why);
  test_report("avg_pool3d_include_direct", check_direct(AVG3D("true"), avg_shape, 2, why, sizeof why), why);
}

/* ---- matmul and dense ---------------------------------------------------- */

#define MM(xs, ws)                                                                              \
  MODEL("{\"name\": \"x\", \"shape\": " xs "}", "{\"name\": \"w\", \"shape\": " ws "}",      \
        "{\"name\": \"y\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]}", "\"y\"")

static const op_case matmul_cases[] = {
    {"2d", MM("[3, 5]", "[5, 4]"), false},
    {"batched_same", MM("[2, 3, 5]", "[2, 5, 4]"), false},
    {"batched_weight_2d", MM("[2, 3, 5]", "[5, 4]"), false},
    {"broadcast_4d", MM("[2, 1, 3, 5]", "[3, 5, 4]"), false},
    {"broadcast_x", MM("[3, 5]", "[2, 2, 5, 4]"), false},
    {"dense_bias",
     MODEL(X23, "{\"name\": \"w\", \"shape\": [4, 3]}, {\"name\": \"b\", \"shape\": [4]}",
           "{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\", \"b\"]},"
           "{\"name\": \"y\", \"op\": \"relu\", \"inputs\": [\"d\"]}",
           "\"y\""),
     false},
};

static const bad_case matmul_bad[] = {
    {"batch", MM("[2, 3, 5]", "[3, 5, 4]"),
     "node 'y': matmul: operand 1 has shape (3, 5, 4), expected batch dimensions that broadcast"},
    {"inner", MM("[2, 3, 5]", "[4, 4]"), "node 'y': matmul: operand 1 has shape (4, 4), expected inner"},
    {"1d", MM("[5]", "[5, 4]"), "node 'y': matmul: operand 0 has shape (5,), expected [..., M, K]"},
    {"dense_bias",
     MODEL(X23, "{\"name\": \"w\", \"shape\": [4, 3]}, {\"name\": \"b\", \"shape\": [3]}",
           "{\"name\": \"y\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\", \"b\"]}", "\"y\""),
     "node 'y': dense: operand 2 has shape (3,), expected [N]"},
};

/* ---- normalizations ---------------------------------------------------------- */

#define SM(op, axis) UNARY(op, ", \"axis\": " axis)
/* batch_norm's variance must be positive: exp of a weight. */
#define BN_WEIGHTS                                                                       \
  "{\"name\": \"s\", \"shape\": [4]}, {\"name\": \"bb\", \"shape\": [4]}, {\"name\": \"mu\", \"shape\": [4]}," \
  "{\"name\": \"lv\", \"shape\": [4]}"
#define BN_NODES(x)                                                                      \
  "{\"name\": \"v\", \"op\": \"exp\", \"inputs\": [\"lv\"]},"                              \
  "{\"name\": \"y\", \"op\": \"batch_norm\", \"inputs\": [\"" x "\", \"s\", \"bb\", \"mu\", \"v\"], \"eps\": 0.001}"
#define X4 "{\"name\": \"x\", \"shape\": [2, 4, 3, 3]}"

static const op_case norm_cases[] = {
    {"softmax_axis0", SM("softmax", "0"), false},
    {"softmax_axis1", SM("softmax", "1"), false},
    {"softmax_axis_neg1", SM("softmax", "-1"), false},
    {"softmax_2d_axis0", MODEL(X23, "", "{\"name\": \"y\", \"op\": \"softmax\", \"inputs\": [\"x\"], \"axis\": 0}", "\"y\""), false},
    {"log_softmax", UNARY("log_softmax", ""), false},
    {"log_softmax_axis1", SM("log_softmax", "1"), false},
    {"layernorm_axis1",
     MODEL(X234, "{\"name\": \"g\", \"shape\": [3, 4]}, {\"name\": \"b\", \"shape\": [3, 4]}",
           "{\"name\": \"y\", \"op\": \"layernorm\", \"inputs\": [\"x\", \"g\", \"b\"], \"axis\": 1}", "\"y\""),
     false},
    {"layernorm_no_beta",
     MODEL(X234, "{\"name\": \"g\", \"shape\": [4]}",
           "{\"name\": \"y\", \"op\": \"layernorm\", \"inputs\": [\"x\", \"g\"], \"eps\": 0.01}", "\"y\""),
     false},
    {"batch_norm", MODEL(X4, BN_WEIGHTS, BN_NODES("x"), "\"y\""), false},
    {"batch_norm_2d",
     MODEL("{\"name\": \"x\", \"shape\": [3, 4]}", BN_WEIGHTS, BN_NODES("x"), "\"y\""), false},
    /* folded into the conv's weights and bias by the fold pass */
    {"conv_batch_norm",
     MODEL(X4, BN_WEIGHTS ", {\"name\": \"w\", \"shape\": [4, 2, 3, 3]}",
           "{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\"], \"groups\": 2, \"padding\": 1}," BN_NODES("c"),
           "\"y\""),
     false},
    {"conv_bias_batch_norm_relu",
     MODEL(X4, BN_WEIGHTS ", {\"name\": \"w\", \"shape\": [4, 4, 1, 1]}, {\"name\": \"cb\", \"shape\": [4]}",
           "{\"name\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\", \"w\", \"cb\"]}," BN_NODES("c") ","
           "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"y\"]}",
           "\"r\""),
     false},
};

static const bad_case norm_bad[] = {
    {"softmax_axis", SM("softmax", "3"), "node 'y': softmax: axis 3 is out of range for a 3-d operand 0"},
    {"layernorm_gamma",
     MODEL(X234, "{\"name\": \"g\", \"shape\": [3]}",
           "{\"name\": \"y\", \"op\": \"layernorm\", \"inputs\": [\"x\", \"g\"]}", "\"y\""),
     "node 'y': layernorm: operand 1 has shape (3,), expected operand 0's normalized (trailing) dims"},
    {"batch_norm_param",
     MODEL(X4, BN_WEIGHTS ", {\"name\": \"z\", \"shape\": [3]}",
           "{\"name\": \"y\", \"op\": \"batch_norm\", \"inputs\": [\"x\", \"s\", \"z\", \"mu\", \"lv\"]}", "\"y\""),
     "node 'y': batch_norm: operand 2 has shape (3,), expected [C]"},
};

/* The fold pass leaves no batch_norm: the conv computes it. */
static void test_fold_batch_norm(void) {
  mlc_error err;
  mlc_gmodule *m = parse(norm_cases[MLC_COUNTOF(norm_cases) - 1].json, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK_MSG(mlc_graph_fold_constants(m, &err), "%s", err.msg);
  const mlc_gfunc *f = mlc_graph_main(m);
  CHECK_MSG(f->n_bindings == 2, "%d bindings", f->n_bindings);
  CHECK(f->bindings[0].op == MLC_GOP_CONV2D && f->bindings[0].n_args == 3);
  CHECK(strcmp(f->bindings[0].var->name, "y") == 0 && f->bindings[1].op == MLC_GOP_RELU);
  CHECK(strcmp(f->bindings[0].args[1]->name, "y_weight") == 0 &&
        strcmp(f->bindings[0].args[2]->name, "y_bias") == 0);
  CHECK(m->n_consts == 2);
  mlc_graph_free(m);
}

/* The layout pass packs a conv2d's constant weight [K, C, R, S] into
 * [K/k, C/c, R, S, c, k] (k = 8 here: K is 8; c = C = 4) and leaves a
 * weight whose K takes no vector block (3) as it is. */
static void test_pack_weights(void) {
  static const char *const models[] = {CONV("[8, 4, 3, 3]", ", \"padding\": 1"),
                                       CONV("[3, 4, 3, 3]", ", \"padding\": 1")};
  for (int i = 0; i < 2; i++) {
    mlc_error err;
    mlc_gmodule *m = parse(models[i], &err);
    CHECK_MSG(m, "%s", err.msg);
    if (!m) return;
    CHECK_MSG(mlc_graph_pack_weights(m, &err), "%s", err.msg);
    const mlc_gvar *w = mlc_graph_main(m)->bindings[0].args[1];
    if (i == 0) {
      CHECK_MSG(w->type.ndim == 6, "%d dims", w->type.ndim);
      static const int64_t want[6] = {1, 1, 3, 3, 4, 8};
      for (int d = 0; d < 6 && w->type.ndim == 6; d++) CHECK(w->type.shape[d] == want[d]);
      CHECK(m->n_consts == 1); /* the unpacked weight is gone */
    } else {
      CHECK(w->type.ndim == 4 && w->type.shape[0] == 3);
    }
    mlc_graph_free(m);
  }
}

/* ---- average pooling and reductions ------------------------------------------ */

#define AVG(attrs) \
  MODEL(XC, "", "{\"name\": \"y\", \"op\": \"avg_pool2d\", \"inputs\": [\"x\"]" attrs "}", "\"y\"")

static const op_case reduce_cases[] = {
    {"avg_pool", AVG(""), false},
    {"avg_pool_k3s2p1", AVG(", \"pool_size\": 3, \"stride\": 2, \"padding\": 1"), false},
    {"avg_pool_k3s2p1_incl", AVG(", \"pool_size\": 3, \"stride\": 2, \"padding\": 1, \"count_include_pad\": true"), false},
    {"avg_pool_rect_pads", AVG(", \"kernel\": [3, 2], \"strides\": [1, 2], \"pads\": [1, 0, 2, 1]"), false},
    {"avg_pool_ceil", AVG(", \"kernel\": [3, 3], \"strides\": [2, 2], \"ceil_mode\": true"), false},
    {"avg_pool_ceil_incl", AVG(", \"kernel\": [3, 2], \"strides\": [2, 2], \"pads\": [1, 1, 1, 1], \"ceil_mode\": true, \"count_include_pad\": true"), false},
    {"global_avg_pool", MODEL(XC, "", "{\"name\": \"y\", \"op\": \"global_avg_pool2d\", \"inputs\": [\"x\"]}", "\"y\""), false},
    {"reduce_sum_all", UNARY("reduce_sum", ""), false},
    {"reduce_sum_axis1", UNARY("reduce_sum", ", \"axes\": [1]"), false},
    {"reduce_mean_neg", UNARY("reduce_mean", ", \"axes\": [-1], \"keepdims\": false"), false},
    {"reduce_mean_02", UNARY("reduce_mean", ", \"axes\": [0, 2]"), false},
    {"reduce_max_01_nokeep", UNARY("reduce_max", ", \"axes\": [1, 0], \"keepdims\": false"), false},
    {"reduce_prod_all", UNARY("reduce_prod", ""), false},
    {"reduce_prod_neg_nokeep", UNARY("reduce_prod", ", \"axes\": [-1], \"keepdims\": false"), false},
    {"reduce_prod_02", UNARY("reduce_prod", ", \"axes\": [0, 2]"), false},
    {"hardmax", UNARY("hardmax", ""), false},
    {"hardmax_axis0", UNARY("hardmax", ", \"axis\": 0"), false},
    {"hardmax_axis1", UNARY("hardmax", ", \"axis\": -2"), false},
    {"cumsum", UNARY("cumsum", ""), false},
    {"cumsum_axis0", UNARY("cumsum", ", \"axis\": 0"), false},
    {"cumsum_axis1_excl", UNARY("cumsum", ", \"axis\": 1, \"exclusive\": true"), false},
    {"cumsum_rev", UNARY("cumsum", ", \"axis\": -1, \"reverse\": true"), false},
    {"cumsum_rev_excl", UNARY("cumsum", ", \"axis\": 2, \"exclusive\": true, \"reverse\": true"), false},
};

static const bad_case reduce_bad[] = {
    {"axis_range", UNARY("reduce_sum", ", \"axes\": [3]"),
     "node 'y': reduce_sum: axis 3 is out of range or repeated for a 3-d operand 0"},
    {"axis_repeat", UNARY("reduce_max", ", \"axes\": [1, -2]"),
     "node 'y': reduce_max: axis -2 is out of range or repeated"},
    {"prod_axis_range", UNARY("reduce_prod", ", \"axes\": [-4]"),
     "node 'y': reduce_prod: axis -4 is out of range or repeated for a 3-d operand 0"},
    {"cumsum_axis", UNARY("cumsum", ", \"axis\": 3"),
     "node 'y': cumsum: axis 3 is out of range for a 3-d operand 0"},
    {"cumsum_flag", UNARY("cumsum", ", \"reverse\": 1"), "node 'y': \"reverse\" must be true or false"},
    {"avg_dilation", AVG(", \"dilations\": [2, 2]"), "node 'y': avg_pool2d takes no attribute \"dilations\""},
    {"avg_pad", AVG(", \"pool_size\": 2, \"pads\": [0, 0, 2, 0]"),
     "node 'y': avg_pool2d: the window must be >= 1 and larger than the padding"},
    {"global_rank", UNARY("global_avg_pool2d", ""),
     "node 'y': global_avg_pool2d: operand 0 has shape (2, 3, 4), expected 4 dims (NCHW)"},
};

/* ---- data movement ------------------------------------------------------------- */

#define SLICE(attrs) UNARY("slice", ", " attrs)

static const op_case move_cases[] = {
    /* [.., 3, 4] matrices: diagonals inside, at the edge and past it */
    {"tril", UNARY("tril", ""), false},
    {"tril_k1", UNARY("tril", ", \"k\": 1"), false},
    {"tril_kneg2", UNARY("tril", ", \"k\": -2"), false},
    {"tril_kneg9", UNARY("tril", ", \"k\": -9"), false},
    {"triu", UNARY("triu", ""), false},
    {"triu_k3", UNARY("triu", ", \"k\": 3"), false},
    {"triu_kneg1", UNARY("triu", ", \"k\": -1"), false},
    {"triu_k99", UNARY("triu", ", \"k\": 99"), false},
    {"concat_axis1",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [2, 1, 4]}, {\"name\": \"v\", \"shape\": [2, 2, 4]}",
           "{\"name\": \"y\", \"op\": \"concat\", \"inputs\": [\"x\", \"w\", \"v\", \"x\"], \"axis\": 1}", "\"y\""),
     false},
    {"concat_last", MODEL(X234, "{\"name\": \"w\", \"shape\": [2, 3, 2]}",
                          "{\"name\": \"y\", \"op\": \"concat\", \"inputs\": [\"w\", \"x\"], \"axis\": -1}", "\"y\""),
     false},
    {"concat_one", MODEL(X234, "", "{\"name\": \"y\", \"op\": \"concat\", \"inputs\": [\"x\"], \"axis\": 0}", "\"y\""), false},
    {"slice", SLICE("\"axes\": [1], \"starts\": [1], \"ends\": [3]"), false},
    {"slice_steps", SLICE("\"axes\": [2, 0], \"starts\": [0, 1], \"ends\": [4, 2], \"steps\": [2, 1]"), false},
    {"slice_negative", SLICE("\"axes\": [-1], \"starts\": [-3], \"ends\": [1099511627776]"), false},
    {"slice_backwards", SLICE("\"axes\": [2, 1], \"starts\": [-1, 2], \"ends\": [-1099511627776, 0], \"steps\": [-2, -1]"), false},
};

#define PAD(attrs) UNARY("pad", ", " attrs)
#define FLATTEN(axis) UNARY("flatten", axis)
/* y = gather(x, idx) along axis, idx a constant of the given shape and
 * values. */
#define GATHER(axis, ishape, values)                                                     \
  MODEL(X234, "{\"name\": \"idx\", \"shape\": " ishape ", \"values\": " values "}",       \
        "{\"name\": \"y\", \"op\": \"gather\", \"inputs\": [\"x\", \"idx\"], \"axis\": " axis "}", \
        "\"y\"")

static const op_case shape_cases[] = {
    {"pad", PAD("\"pad_before\": [0, 1, 2], \"pad_after\": [1, 0, 3], \"pad_value\": 0.5"), false},
    {"pad_zero_default", PAD("\"pad_before\": [1, 0, 0], \"pad_after\": [0, 0, 1]"), false},
    {"pad_negative", PAD("\"pad_before\": [0, -1, 2], \"pad_after\": [-1, 2, -3]"), false},
    /* the Pad + Conv pair exporters emit for asymmetric padding */
    {"pad_conv",
     MODEL(XC, "{\"name\": \"w\", \"shape\": [3, 4, 3, 3]}",
           "{\"name\": \"p\", \"op\": \"pad\", \"inputs\": [\"x\"], \"pad_before\": [0, 0, 1, 0], \"pad_after\": [0, 0, 2, 1]},"
           "{\"name\": \"y\", \"op\": \"conv2d\", \"inputs\": [\"p\", \"w\"], \"stride\": 2}",
           "\"y\""),
     false},
    {"gather_axis1_2d", GATHER("1", "[2, 2]", "[2, 0, -1, 1]"), false},
    {"gather_last_neg", GATHER("-1", "[3]", "[3, 0, -4]"), false},
    {"gather_axis0_one", GATHER("0", "[1]", "[-1]"), false},
    {"gather_repeat", GATHER("2", "[5]", "[1, 1, 3, -2, 0]"), false},
    /* an embedding table (a weight) looked up by constant ids, then used */
    {"gather_embedding",
     MODEL(X234, "{\"name\": \"emb\", \"shape\": [6, 4]}, {\"name\": \"ids\", \"shape\": [2, 3], \"values\": [5, 0, 2, 2, -6, 3]}",
           "{\"name\": \"e\", \"op\": \"gather\", \"inputs\": [\"emb\", \"ids\"]},"
           "{\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"e\", \"x\"]}",
           "\"y\""),
     false},
    /* indices computed at run time (inputs in [0.1, 1.1): rows 0 and 1) */
    {"gather_runtime_indices",
     MODEL("{\"name\": \"ids\", \"shape\": [2, 3]}", "{\"name\": \"emb\", \"shape\": [2, 4]}",
           "{\"name\": \"y\", \"op\": \"gather\", \"inputs\": [\"emb\", \"ids\"]}", "\"y\""),
     true},
    {"flatten_default", FLATTEN(""), false},
    {"flatten_axis0", FLATTEN(", \"axis\": 0"), false},
    {"flatten_axis2", FLATTEN(", \"axis\": 2"), false},
    {"flatten_axis_neg1", FLATTEN(", \"axis\": -1"), false},
    {"flatten_axis_rank", FLATTEN(", \"axis\": 3"), false},
};

static const bad_case shape_bad[] = {
    {"pad_count", PAD("\"pad_before\": [0, 1], \"pad_after\": [1, 0]"),
     "node 'y': pad: 2 pads per side for a 3-d operand 0 (one per axis)"},
    {"pad_sides", PAD("\"pad_before\": [0, 1, 0], \"pad_after\": [1, 0]"),
     "node 'y': \"pad_before\" has 3 entries, \"pad_after\" 2"},
    {"pad_missing", UNARY("pad", ""), "node 'y': pad needs \"pad_before\" and \"pad_after\""},
    {"pad_empty", PAD("\"pad_before\": [0, -2, 0], \"pad_after\": [0, -1, 0]"),
     "node 'y': pad: operand 0 has shape (2, 3, 4), expected pads that leave at least one element"},
    {"gather_range", GATHER("1", "[2]", "[0, 3]"),
     "gather: index 3 (element 1 of idx) is not a whole number in [-3, 3)"},
    {"gather_range_neg", GATHER("2", "[1]", "[-5]"),
     "gather: index -5 (element 0 of idx) is not a whole number in [-4, 4)"},
    {"gather_fraction", GATHER("0", "[1]", "[0.5]"),
     "gather: index 0.5 (element 0 of idx) is not a whole number in [-2, 2)"},
    {"gather_axis", GATHER("3", "[1]", "[0]"),
     "node 'y': gather: axis 3 is out of range for a 3-d operand 0"},
    {"gather_values_count", GATHER("0", "[2]", "[0]"),
     "weight 'idx': \"values\" must be an array of 2 numbers"},
    {"flatten_axis", FLATTEN(", \"axis\": 4"), "node 'y': flatten: axis 4 is out of range for a 3-d operand 0"},
};

static const bad_case move_bad[] = {
    {"tril_rank", MODEL("{\"name\": \"x\", \"shape\": [5]}", "", "{\"name\": \"y\", \"op\": \"tril\", \"inputs\": [\"x\"]}", "\"y\""),
     "node 'y': tril: operand 0 has shape (5,), expected at least 2 dims"},
    {"triu_k", UNARY("triu", ", \"k\": 0.5"), "node 'y': \"k\" must be an integer"},
    {"concat_shape",
     MODEL(X234, "{\"name\": \"w\", \"shape\": [2, 2, 3]}",
           "{\"name\": \"y\", \"op\": \"concat\", \"inputs\": [\"x\", \"w\"], \"axis\": 1}", "\"y\""),
     "node 'y': concat: operand 1 has shape (2, 2, 3), expected operand 0's shape but along the axis"},
    {"slice_empty", SLICE("\"axes\": [1], \"starts\": [2], \"ends\": [1]"),
     "node 'y': slice: operand 0 has shape (2, 3, 4), expected a slice with at least one element"},
    {"slice_step0", SLICE("\"axes\": [1], \"starts\": [0], \"ends\": [2], \"steps\": [0]"),
     "node 'y': slice: a step is 0"},
    {"slice_counts", SLICE("\"axes\": [1, 2], \"starts\": [0], \"ends\": [2, 2]"),
     "node 'y': \"starts\" has 1 entries for 2 axes"},
};

/* pad, gather and flatten print their attributes as Relax does. */
static void test_print_shape_ops(void) {
  static const char *json = MODEL(
      X234, "{\"name\": \"idx\", \"shape\": [2], \"values\": [1, -1]}",
      "{\"name\": \"p\", \"op\": \"pad\", \"inputs\": [\"x\"], \"pad_before\": [0, 1, 2], \"pad_after\": [1, 0, -1], \"pad_value\": 0.5},"
      "{\"name\": \"g\", \"op\": \"gather\", \"inputs\": [\"p\", \"idx\"], \"axis\": -1},"
      "{\"name\": \"y\", \"op\": \"flatten\", \"inputs\": [\"g\"], \"axis\": 2},"
      "{\"name\": \"t\", \"op\": \"triu\", \"inputs\": [\"y\"], \"k\": -1},"
      "{\"name\": \"c\", \"op\": \"cumsum\", \"inputs\": [\"t\"], \"axis\": 0, \"reverse\": true}",
      "\"c\"");
  mlc_error err;
  mlc_gmodule *m = parse(json, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  mlc_str out = {0};
  mlc_graph_print(&out, m, 0);
  CHECK_MSG(strstr(out.data, "p: R.Tensor((3, 4, 5), dtype=\"float32\") = R.nn.pad(x, pad_width=[0, 1, 1, 0, 2, -1], pad_value=0.5)"), "%s", out.data);
  CHECK_MSG(strstr(out.data, "g: R.Tensor((3, 4, 2), dtype=\"float32\") = R.take(p, metadata[\"idx\"], axis=-1)"), "%s", out.data);
  CHECK_MSG(strstr(out.data, "y: R.Tensor((12, 2), dtype=\"float32\") = R.flatten(g, axis=2)"), "%s", out.data);
  CHECK_MSG(strstr(out.data, "t: R.Tensor((12, 2), dtype=\"float32\") = R.triu(y, k=-1)"), "%s", out.data);
  CHECK_MSG(strstr(out.data, "R.cumsum(t, axis=0, exclusive=False, reverse=True)"), "%s", out.data);
  mlc_str_free(&out);
  mlc_graph_free(m);
}

/* tril, triu and cumsum on x = [[1, 2, 3], [4, 5, 6]], against values
 * worked out by hand, in the reference and in the lowered graph. */
static void test_trilu_cumsum_values(void) {
  static const struct {
    const char *op, *attrs;
    float want[6];
  } cs[] = {
      {"tril", "", {1, 0, 0, 4, 5, 0}},
      {"tril", ", \"k\": -1", {0, 0, 0, 4, 0, 0}},
      {"triu", ", \"k\": 1", {0, 2, 3, 0, 0, 6}},
      {"triu", ", \"k\": -1", {1, 2, 3, 4, 5, 6}},
      {"cumsum", ", \"axis\": 1", {1, 3, 6, 4, 9, 15}},
      {"cumsum", ", \"axis\": 1, \"exclusive\": true, \"reverse\": true", {5, 3, 0, 11, 6, 0}},
      {"cumsum", ", \"axis\": 0, \"exclusive\": true", {0, 0, 0, 1, 2, 3}},
  };
  for (int i = 0; i < MLC_COUNTOF(cs); i++) {
    char json[600];
    snprintf(json, sizeof json,
             MODEL(X23, "", "{\"name\": \"y\", \"op\": \"%s\", \"inputs\": [\"x\"]%s}", "\"y\""),
             cs[i].op, cs[i].attrs);
    mlc_error err = {{0}};
    mlc_gmodule *r = parse(json, &err), *m = parse(json, &err);
    CHECK_MSG(r && m && mlc_graph_lower(m, &err), "%s: %s", cs[i].op, err.msg);
    if (!r || !m) {
      mlc_graph_free(r), mlc_graph_free(m);
      continue;
    }
    mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){2, 3});
    mlc_array *y[2] = {mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){2, 3}),
                       mlc_array_new(MLC_FLOAT32, 2, (int64_t[]){2, 3})};
    for (int k = 0; k < 6; k++) mlc_array_set(x, k, k + 1);
    CHECK_MSG(mlc_graph_reference(r, &x, &y[0], &err) && mlc_graph_execute(m, NULL, NULL, &x, &y[1], &err),
              "%s", err.msg);
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 6; k++)
        CHECK_MSG(mlc_array_get(y[j], k) == cs[i].want[k], "%s%s (%s): element %d is %g, want %g",
                  cs[i].op, cs[i].attrs, j ? "lowered" : "reference", k, mlc_array_get(y[j], k),
                  cs[i].want[k]);
    mlc_array_free(x), mlc_array_free(y[0]), mlc_array_free(y[1]);
    mlc_graph_free(r), mlc_graph_free(m);
  }
}

/* The emitted header declares every weight, with its shape, as an array
 * the object defines (mlc-compile builds the object with the values under
 * mlc_graph_weight_symbol's name); it spells no values. */
static void test_entry_weights_extern(void) {
  static const char *json = MODEL(
      X23, "{\"name\": \"w\", \"shape\": [3], \"values\": [0, 2, -1.5]}",
      "{\"name\": \"y\", \"op\": \"add\", \"inputs\": [\"x\", \"w\"]}", "\"y\"");
  mlc_error err;
  mlc_gmodule *m = parse(json, &err);
  CHECK_MSG(m, "%s", err.msg);
  if (!m) return;
  CHECK_MSG(mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  mlc_str out = {0};
  mlc_graph_write_entry(&out, m);
  CHECK_MSG(strstr(out.data, "/* w: float32(3,) */\nextern const float model_w_w[3];"), "%s", out.data);
  CHECK_MSG(!strstr(out.data, "static const float") && !strstr(out.data, "1.5f"), "%s", out.data);
  mlc_arena *a = mlc_arena_new();
  CHECK_STREQ(mlc_graph_weight_symbol(a, m, m->consts[0]), "model_w_w");
  mlc_arena_free(a);
  mlc_str_free(&out);
  mlc_graph_free(m);
}

/* ---- pattern rewrites and fusion -------------------------------------------------- */

/* main's bindings as "op op ...", a fused call as "[op,op,...]". */
static void main_ops(const mlc_gmodule *m, char *buf, size_t n) {
  const mlc_gfunc *f = mlc_graph_main(m);
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < f->n_bindings && k < n; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (i) k += (size_t)snprintf(buf + k, n - k, " ");
    if (b->kind == MLC_GCALL_OP) {
      k += (size_t)snprintf(buf + k, n - k, "%s", mlc_gop_name(b->op));
      continue;
    }
    if (b->kind != MLC_GCALL_FUNC) continue;
    for (int j = 0; j < b->callee->n_bindings && k < n; j++)
      k += (size_t)snprintf(buf + k, n - k, "%s%s", j ? "," : "[",
                            mlc_gop_name(b->callee->bindings[j].op));
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "]");
  }
}

typedef struct pass_case {
  const char *name, *json;
  const char *want; /* main_ops after the passes */
} pass_case;

/* The passes of the pipeline up to and including `last`. */
static bool run_until(mlc_gmodule *m, const char *last, mlc_error *err) {
  for (int i = 0; i < mlc_graph_pass_count(); i++) {
    const mlc_gpass *p = mlc_graph_pass_at(i);
    if (!p->run(m, err)) return false;
    if (strcmp(p->name, last) == 0) return true;
  }
  return mlc_error_set(err, "no pass %s", last);
}

/* Each case: main's ops after the passes up to `last`, and the whole
 * pipeline compiled against the reference of the graph as loaded. */
static void run_pass_cases(const char *prefix, const char *last, const pass_case *cs, int n) {
  for (int i = 0; i < n; i++) {
    char name[128], why[1200] = "", got[512] = "";
    mlc_error err = {{0}};
    snprintf(name, sizeof name, "%s_%s", prefix, cs[i].name);
    mlc_gmodule *m = parse(cs[i].json, &err);
    bool ok = m && run_until(m, last, &err);
    if (!ok) snprintf(why, sizeof why, "%s", err.msg);
    if (ok) main_ops(m, got, sizeof got);
    if (ok && strcmp(got, cs[i].want) != 0) {
      ok = false;
      snprintf(why, sizeof why, "after %s: got \"%s\", want \"%s\"", last, got, cs[i].want);
    }
    if (ok) ok = run_case(cs[i].json, true, why, sizeof why);
    test_report(name, ok, why);
    mlc_graph_free(m);
  }
}

#define SCALAR(name, v) "{\"name\": \"" name "\", \"shape\": [1], \"values\": [" v "]}"
/* torch.onnx's LayerNorm (opset < 17) over the last axis; the eps add and
 * the gamma multiply given as add_eps / mul_gamma. */
#define LN_NODES(axes, square, add_eps, mul_gamma)                                   \
  NODE("mean", "reduce_mean", "\"x\"", ", \"axes\": " axes) ","                      \
  NODE("d", "subtract", "\"x\", \"mean\"", "") "," square ","                          \
  NODE("var", "reduce_mean", "\"p\"", ", \"axes\": " axes) "," add_eps ","            \
  NODE("s", "sqrt", "\"ve\"", "") "," NODE("n", "divide", "\"d\", \"s\"", "") "," mul_gamma
#define LN_POW NODE("p", "power", "\"d\"", ", \"exponent\": 2")
#define LN_EPS NODE("ve", "add", "\"var\", \"eps\"", "")
#define LN_WEIGHTS(gshape) \
  SCALAR("eps", "1e-5") ", {\"name\": \"g\", \"shape\": " gshape "}, {\"name\": \"b\", \"shape\": " gshape "}"

static const pass_case layernorm_cases[] = {
    {"last_axis",
     MODEL(X234, LN_WEIGHTS("[4]"),
           LN_NODES("[-1]", LN_POW, LN_EPS, NODE("m", "multiply", "\"n\", \"g\"", "")) ","
           NODE("y", "add", "\"m\", \"b\"", ""), "\"y\""),
     "layernorm"},
    /* d * d, eps and gamma on the left, no beta, two trailing axes */
    {"two_axes_no_beta",
     MODEL(X234, LN_WEIGHTS("[3, 4]"),
           LN_NODES("[1, 2]", NODE("p", "multiply", "\"d\", \"d\"", ""),
                    NODE("ve", "add", "\"eps\", \"var\"", ""), NODE("y", "multiply", "\"g\", \"n\"", "")),
           "\"y\""),
     "layernorm"},
    /* a beta add after the gamma multiply that broadcasts to more rows
     * stays an add */
    {"then_add",
     MODEL(X234, LN_WEIGHTS("[4]") ", {\"name\": \"c\", \"shape\": [3, 4]}",
           LN_NODES("[2]", LN_POW, LN_EPS, NODE("m", "multiply", "\"n\", \"g\"", "")) ","
           NODE("y", "add", "\"c\", \"m\"", ""), "\"y\""),
     "layernorm add"},
    /* not a layer norm: the mean is over a leading axis */
    {"leading_axis_kept",
     MODEL(X234, LN_WEIGHTS("[4]"),
           LN_NODES("[0]", LN_POW, LN_EPS, NODE("y", "multiply", "\"n\", \"g\"", "")), "\"y\""),
     "reduce_mean subtract power reduce_mean add sqrt divide multiply"},
    /* d is also an output: computing it inside layernorm would lose it */
    {"shared_kept",
     MODEL(X234, LN_WEIGHTS("[4]"),
           LN_NODES("[-1]", LN_POW, LN_EPS, NODE("y", "multiply", "\"n\", \"g\"", "")), "\"y\", \"d\""),
     "reduce_mean subtract power reduce_mean add sqrt divide multiply"},
};

#define GELU_WEIGHTS SCALAR("r2", "1.4142135381698608") "," SCALAR("one", "1") "," SCALAR("half", "0.5")
#define GELU_HEAD(div)                                      \
  div "," NODE("e", "erf", "\"dx\"", "") ","                  \
  NODE("a", "add", "\"e\", \"one\"", "")

static const pass_case gelu_cases[] = {
    /* torch.onnx's nn.GELU: Div, Erf, Add, Mul, Mul */
    {"torch",
     MODEL(X234, GELU_WEIGHTS,
           GELU_HEAD(NODE("dx", "divide", "\"x\", \"r2\"", "")) ","
           NODE("m", "multiply", "\"x\", \"a\"", "") "," NODE("y", "multiply", "\"m\", \"half\"", ""),
           "\"y\""),
     "gelu"},
    /* x * 0.5 first, x * (1 / sqrt(2)), 1 + erf */
    {"half_first",
     MODEL(X234, GELU_WEIGHTS ", " SCALAR("rr2", "0.70710678"),
           NODE("h", "multiply", "\"half\", \"x\"", "") ","
           NODE("dx", "multiply", "\"x\", \"rr2\"", "") "," NODE("e", "erf", "\"dx\"", "") ","
           NODE("a", "add", "\"one\", \"e\"", "") "," NODE("y", "multiply", "\"h\", \"a\"", ""),
           "\"y\""),
     "gelu"},
    {"half_of_sum",
     MODEL(X234, GELU_WEIGHTS,
           GELU_HEAD(NODE("dx", "divide", "\"x\", \"r2\"", "")) ","
           NODE("m", "multiply", "\"a\", \"half\"", "") "," NODE("y", "multiply", "\"x\", \"m\"", ""),
           "\"y\""),
     "gelu"},
    /* x / sqrt(3) is no GELU */
    {"wrong_constant_kept",
     MODEL(X234, SCALAR("r2", "1.7320508") "," SCALAR("one", "1") "," SCALAR("half", "0.5"),
           GELU_HEAD(NODE("dx", "divide", "\"x\", \"r2\"", "")) ","
           NODE("m", "multiply", "\"x\", \"a\"", "") "," NODE("y", "multiply", "\"m\", \"half\"", ""),
           "\"y\""),
     "divide erf add multiply multiply"},
};

/* What fuse makes of the blocks real networks repeat. */
/* x [1, 4, 8] as rows [4, 8], times w [8, 16], reshaped back to [1, 4, 16]
 * as name: the way exporters write a matmul over a sequence. */
#define ROWS_MATMUL(name)                                                                          \
  NODE("x2", "reshape", "\"x\"", ", \"shape\": [4, 8]") "," NODE("h", "matmul", "\"x2\", \"w\"", "") "," \
  NODE(name, "reshape", "\"h\"", ", \"shape\": [1, 4, 16]")

static const pass_case fuse_cases[] = {
    /* ResNet's conv + bias + relu + residual add */
    {"conv_bias_relu_residual",
     MODEL("{\"name\": \"x\", \"shape\": [1, 4, 5, 5]}",
           "{\"name\": \"w\", \"shape\": [4, 4, 3, 3]}, {\"name\": \"b\", \"shape\": [4, 1, 1]}",
           NODE("c", "conv2d", "\"x\", \"w\"", ", \"padding\": 1") "," NODE("cb", "add", "\"c\", \"b\"", "") ","
           NODE("r", "relu", "\"cb\"", "") "," NODE("y", "add", "\"r\", \"x\"", ""),
           "\"y\""),
     "[conv2d,add,relu,add]"},
    /* conv + batch_norm (folded into the conv) + relu, then the second
     * conv + batch_norm + residual add + relu of a basic block */
    {"conv_bn_relu_block",
     MODEL("{\"name\": \"x\", \"shape\": [1, 4, 5, 5]}",
           "{\"name\": \"w\", \"shape\": [4, 4, 3, 3]}, {\"name\": \"w2\", \"shape\": [4, 4, 3, 3]}," BN_WEIGHTS,
           NODE("v", "exp", "\"lv\"", "") ","
           NODE("c", "conv2d", "\"x\", \"w\"", ", \"padding\": 1") ","
           NODE("bn", "batch_norm", "\"c\", \"s\", \"bb\", \"mu\", \"v\"", "") ","
           NODE("r", "relu", "\"bn\"", "") ","
           NODE("c2", "conv2d", "\"r\", \"w2\"", ", \"padding\": 1") ","
           NODE("bn2", "batch_norm", "\"c2\", \"s\", \"bb\", \"mu\", \"v\"", "") ","
           NODE("sum", "add", "\"bn2\", \"x\"", "") "," NODE("y", "relu", "\"sum\"", ""),
           "\"y\""),
     "[conv2d,relu] [conv2d,add,relu]"},
    /* MobileNetV2's depthwise conv + ReLU6, and a hard_swish tail */
    {"depthwise_relu6_hard_swish",
     MODEL("{\"name\": \"x\", \"shape\": [1, 4, 5, 5]}",
           "{\"name\": \"w\", \"shape\": [4, 1, 3, 3]}, {\"name\": \"cb\", \"shape\": [4]}," SCALAR("k", "0.5"),
           NODE("c", "conv2d", "\"x\", \"w\", \"cb\"", ", \"padding\": 1, \"groups\": 4") ","
           NODE("r", "clip", "\"c\"", ", \"min\": 0, \"max\": 6") ","
           NODE("m", "multiply", "\"r\", \"k\"", "") "," NODE("y", "hard_swish", "\"m\"", ""),
           "\"y\""),
     "[conv2d,clip,multiply,hard_swish]"},
    /* a transformer MLP: matmul + bias + exported GELU, matmul + bias +
     * residual add; the weights' transposes folded, the matmuls by them
     * dense layers over the packed weights */
    {"mlp_gelu_residual",
     MODEL("{\"name\": \"x\", \"shape\": [4, 8]}",
           "{\"name\": \"w1\", \"shape\": [16, 8]}, {\"name\": \"b1\", \"shape\": [16]},"
           "{\"name\": \"w2\", \"shape\": [8, 16]}, {\"name\": \"b2\", \"shape\": [8]}," GELU_WEIGHTS,
           NODE("t1", "transpose", "\"w1\"", "") "," NODE("h", "matmul", "\"x\", \"t1\"", "") ","
           NODE("hb", "add", "\"h\", \"b1\"", "") ","
           NODE("dx", "divide", "\"hb\", \"r2\"", "") "," NODE("e", "erf", "\"dx\"", "") ","
           NODE("a", "add", "\"e\", \"one\"", "") "," NODE("m", "multiply", "\"hb\", \"a\"", "") ","
           NODE("g", "multiply", "\"m\", \"half\"", "") ","
           NODE("t2", "transpose", "\"w2\"", "") "," NODE("o", "matmul", "\"g\", \"t2\"", "") ","
           NODE("ob", "add", "\"o\", \"b2\"", "") "," NODE("y", "add", "\"ob\", \"x\"", ""),
           "\"y\""),
     "[dense,add,gelu] [dense,add,add]"},
    /* an exporter's matmul over the rows of a [1, 4, 8] input, reshaped
     * back to [1, 4, 16] before its bias and activation: the reshape
     * sinks below the bias (a constant [1, 1, 16] copied as [1, 16]) and
     * the relu, and the chain fuses whole */
    {"reshape_sunk",
     MODEL("{\"name\": \"x\", \"shape\": [1, 4, 8]}",
           "{\"name\": \"w\", \"shape\": [8, 16]}, {\"name\": \"b\", \"shape\": [1, 1, 16]}",
           ROWS_MATMUL("h3") "," NODE("hb", "add", "\"h3\", \"b\"", "") "," NODE("y", "relu", "\"hb\"", ""),
           "\"y\""),
     "reshape [dense,add,relu] reshape"},
    /* the same with a residual input of the reshaped shape: the input
     * is reshaped too (a view, no kernel), and the add fuses; the names
     * the pass makes (hz_unreshaped, z_view) avoid the model's own */
    {"reshape_sunk_residual",
     MODEL("{\"name\": \"x\", \"shape\": [1, 4, 8]}, {\"name\": \"z\", \"shape\": [1, 4, 16]}",
           "{\"name\": \"w\", \"shape\": [8, 16]}",
           ROWS_MATMUL("z_view") "," NODE("hz", "add", "\"z_view\", \"z\"", "") ","
           NODE("hz_unreshaped", "relu", "\"hz\"", ""),
           "\"hz_unreshaped\""),
     "reshape reshape [dense,add,relu] reshape"},
    /* a reshape that regroups the last dim ([4, 16] as [1, 2, 32]): the
     * bias over 32 columns reads what the rows before it do not have, so
     * the reshape stays and the add + relu fuse on their own */
    {"reshape_regrouped",
     MODEL("{\"name\": \"x\", \"shape\": [4, 8]}",
           "{\"name\": \"w\", \"shape\": [8, 16]}, {\"name\": \"b\", \"shape\": [32]}",
           NODE("h", "matmul", "\"x\", \"w\"", "") ","
           NODE("h3", "reshape", "\"h\"", ", \"shape\": [1, 2, 32]") ","
           NODE("hb", "add", "\"h3\", \"b\"", "") "," NODE("y", "relu", "\"hb\"", ""),
           "\"y\""),
     "dense reshape [add,relu]"},
    /* dense with bias + sigmoid gate */
    {"dense_sigmoid",
     MODEL(X23, "{\"name\": \"w\", \"shape\": [5, 3]}, {\"name\": \"b\", \"shape\": [5]}",
           NODE("d", "dense", "\"x\", \"w\", \"b\"", "") "," NODE("s", "sigmoid", "\"d\"", "") ","
           NODE("y", "multiply", "\"d\", \"s\"", ""),
           "\"y\""),
     "dense [sigmoid,multiply]"},
};

/* conv3d + bias + relu fuse into one kernel, printed with 3-entry windows. */
static void test_conv3d_fuse_print(void) {
  const char *json = MODEL(XC3, "{\"name\": \"w\", \"shape\": [4, 1, 3, 3, 3]}, {\"name\": \"b\", \"shape\": [4, 1, 1, 1]}",
                           "{\"name\": \"c\", \"op\": \"conv3d\", \"inputs\": [\"x\", \"w\"], \"groups\": 4, \"padding\": 1},"
                           "{\"name\": \"cb\", \"op\": \"add\", \"inputs\": [\"c\", \"b\"]},"
                           "{\"name\": \"y\", \"op\": \"relu\", \"inputs\": [\"cb\"]}",
                           "\"y\"");
  mlc_error err = {{0}};
  mlc_gmodule *m = parse(json, &err);
  mlc_str s = {0};
  bool ok = m != NULL;
  if (ok) mlc_graph_print(&s, m, 0);
  CHECK_MSG(ok && strstr(s.data, "R.nn.conv3d(x, metadata[\"w\"], strides=[1, 1, 1], padding=[1, 1, 1, 1, 1, 1], "
                                  "dilation=[1, 1, 1], groups=4)"),
            "%s", ok ? s.data : err.msg);
  char got[256] = "";
  ok = ok && run_until(m, "fuse", &err);
  if (ok) main_ops(m, got, sizeof got);
  CHECK_MSG(ok && strcmp(got, "[conv3d,add,relu]") == 0, "got \"%s\" (%s)", got, err.msg);
  char why[1200] = "";
  CHECK_MSG(run_case(json, false, why, sizeof why), "%s", why);
  mlc_str_free(&s);
  mlc_graph_free(m);
}

/* ---- layout: NCHWc values between blocked convs ------------------------------- */

#define W(name, shape) "{\"name\": \"" name "\", \"shape\": " shape "}"
/* A matmul whose constant weight has 70 columns: one of 64 (tiled), one of
 * 6, their concat (GPT-2's 50257-column output embedding); 64 columns
 * stay one matmul. */
static const pass_case ragged_cases[] = {
    {"70_columns",
     MODEL("{\"name\": \"x\", \"shape\": [2, 3, 8]}", W("w", "[8, 70]"),
           NODE("y", "matmul", "\"x\", \"w\"", ""), "\"y\""),
     "matmul matmul concat"},
    {"64_columns",
     MODEL("{\"name\": \"x\", \"shape\": [2, 3, 8]}", W("w", "[8, 64]"),
           NODE("y", "matmul", "\"x\", \"w\"", ""), "\"y\""),
     "matmul"},
};

/* Each case: main's ops after fuse (the unpacks left, fused after their
 * producers), and the compiled pipeline against the reference. */
static const pass_case layout_cases[] = {
    /* conv, relu, max pool, conv with a residual add, a strided 1x1 conv
     * to 24 channels (block 8): blocked from the first conv to the output */
    {"chain_residual_pool",
     MODEL("{\"name\": \"x\", \"shape\": [1, 8, 9, 7]}",
           W("w1", "[16, 8, 3, 3]") "," W("b1", "[16]") "," W("w2", "[16, 16, 3, 3]") "," W("w3", "[24, 16, 1, 1]"),
           NODE("c1", "conv2d", "\"x\", \"w1\", \"b1\"", ", \"padding\": 1") ","
           NODE("r1", "relu", "\"c1\"", "") ","
           NODE("p", "max_pool2d", "\"r1\"", ", \"pool_size\": 3, \"stride\": 2, \"padding\": 1") ","
           NODE("c2", "conv2d", "\"p\", \"w2\"", ", \"padding\": 1") ","
           NODE("a", "add", "\"c2\", \"p\"", "") "," NODE("r2", "relu", "\"a\"", "") ","
           NODE("y", "conv2d", "\"r2\", \"w3\"", ", \"stride\": 2"),
           "\"y\""),
     "[conv2d,relu] max_pool2d [conv2d,add,relu] [conv2d,unpack_nchwc]"},
    /* 3 input channels (one block of 3), then a conv to 5 channels (no
     * block: NCHW, so the value before it is unpacked), then 5 -> 8 */
    {"odd_channels",
     MODEL("{\"name\": \"x\", \"shape\": [1, 3, 10, 10]}",
           W("w1", "[16, 3, 3, 3]") "," W("w2", "[5, 16, 1, 1]") "," W("w3", "[8, 5, 3, 3]"),
           NODE("c1", "conv2d", "\"x\", \"w1\"", ", \"stride\": 2, \"padding\": 1") ","
           NODE("r1", "relu", "\"c1\"", "") "," NODE("c2", "conv2d", "\"r1\", \"w2\"", "") ","
           NODE("r2", "relu", "\"c2\"", "") ","
           NODE("y", "conv2d", "\"r2\", \"w3\"", ", \"pads\": [1, 0, 2, 1]"),
           "\"y\""),
     "[conv2d,relu,unpack_nchwc] [conv2d,relu] [conv2d,unpack_nchwc]"},
    /* MobileNetV2's expand, depthwise (strided, bias), project, then
     * global pooling: a mean over each block's plane, its [1, 1, 1, 1,
     * 16] result unpacked (the same bytes as NCHW) */
    {"depthwise_global_pool",
     MODEL("{\"name\": \"x\", \"shape\": [1, 16, 8, 8]}",
           W("w1", "[32, 16, 1, 1]") "," W("b1", "[32]") "," W("wd", "[32, 1, 3, 3]") "," W("bd", "[32]") ","
           W("w3", "[16, 32, 1, 1]"),
           NODE("c1", "conv2d", "\"x\", \"w1\", \"b1\"", "") ","
           NODE("r1", "clip", "\"c1\"", ", \"min\": 0, \"max\": 0.5") ","
           NODE("d", "conv2d", "\"r1\", \"wd\", \"bd\"", ", \"groups\": 32, \"stride\": 2, \"padding\": 1") ","
           NODE("r2", "clip", "\"d\"", ", \"min\": 0, \"max\": 0.5") ","
           NODE("c3", "conv2d", "\"r2\", \"w3\"", "") ","
           NODE("y", "global_avg_pool2d", "\"c3\"", ""),
           "\"y\""),
     "[conv2d,clip] [conv2d,clip] conv2d [reduce_mean,unpack_nchwc]"},
    /* a depthwise conv on the model input (packed in the kernel), 8 channels */
    {"depthwise_input",
     MODEL("{\"name\": \"x\", \"shape\": [2, 8, 5, 6]}", W("wd", "[8, 1, 3, 3]"),
           NODE("d", "conv2d", "\"x\", \"wd\"", ", \"groups\": 8, \"pads\": [0, 1, 1, 0], \"dilations\": [1, 2]") ","
           NODE("y", "relu", "\"d\"", ""),
           "\"y\""),
     "[conv2d,relu,unpack_nchwc]"},
    /* quantize and dequantize (scalar scale, uint8 zero point) between
     * two convs stay blocked: their uint8 value too */
    {"quantized_chain",
     MODEL("{\"name\": \"x\", \"shape\": [1, 8, 6, 6]}",
           W("w1", "[16, 8, 3, 3]") "," W("w2", "[16, 16, 1, 1]") ","
           SCALAR("s", "0.25") "," SCALAR("z", "3"),
           NODE("c1", "conv2d", "\"x\", \"w1\"", ", \"padding\": 1") ","
           NODE("zu", "astype", "\"z\"", ", \"to\": \"uint8\"") ","
           NODE("q", "quantize", "\"c1\", \"s\", \"zu\"", "") ","
           NODE("d", "dequantize", "\"q\", \"s\", \"zu\"", "") ","
           NODE("y", "conv2d", "\"d\", \"w2\"", ""),
           "\"y\""),
     "[conv2d,quantize,dequantize] [conv2d,unpack_nchwc]"},
    /* a blocked value read by a conv, by an NCHW op and as an output: one
     * unpack for the NCHW readers */
    {"shared_value",
     MODEL("{\"name\": \"x\", \"shape\": [1, 8, 6, 6]}", W("w1", "[8, 8, 3, 3]") "," W("w2", "[16, 8, 1, 1]"),
           NODE("c1", "conv2d", "\"x\", \"w1\"", ", \"padding\": 1") "," NODE("r", "relu", "\"c1\"", "") ","
           NODE("c2", "conv2d", "\"r\", \"w2\"", "") ","
           NODE("s", "reduce_sum", "\"r\"", ", \"axes\": [1]"),
           "\"c2\", \"s\", \"r\""),
     "[conv2d,relu] unpack_nchwc [conv2d,unpack_nchwc] reduce_sum"},
    /* elementwise ops with a scalar operand stay blocked; one with an
     * NCHW operand of full shape (the input) reads NCHW */
    {"scalar_and_nchw_operands",
     MODEL("{\"name\": \"x\", \"shape\": [1, 16, 4, 4]}",
           W("w1", "[16, 16, 3, 3]") "," SCALAR("h", "0.5") "," W("w2", "[16, 16, 1, 1]"),
           NODE("c1", "conv2d", "\"x\", \"w1\"", ", \"padding\": 1") ","
           NODE("m", "multiply", "\"c1\", \"h\"", "") ","
           NODE("l", "leaky_relu", "\"m\"", ", \"alpha\": 0.1") ","
           NODE("c2", "conv2d", "\"l\", \"w2\"", "") "," NODE("y", "add", "\"c2\", \"x\"", ""),
           "\"y\""),
     "[conv2d,multiply,leaky_relu] [conv2d,unpack_nchwc,add]"},
    /* per-channel constants ([C, 1, 1], [1, C, 1, 1]) are packed to the
     * block; a [C] one broadcasts along W (here W = C) and reads NCHW */
    {"per_channel_constants",
     MODEL("{\"name\": \"x\", \"shape\": [1, 8, 5, 8]}",
           W("w1", "[16, 8, 3, 3]") "," W("b", "[16, 1, 1]") "," W("w2", "[8, 16, 1, 1]") ","
           W("s", "[1, 8, 1, 1]") "," W("t", "[8]"),
           NODE("c1", "conv2d", "\"x\", \"w1\"", ", \"padding\": 1") ","
           NODE("a", "add", "\"c1\", \"b\"", "") "," NODE("r", "relu", "\"a\"", "") ","
           NODE("c2", "conv2d", "\"r\", \"w2\"", "") ","
           NODE("m", "multiply", "\"c2\", \"s\"", "") "," NODE("y", "subtract", "\"m\", \"t\"", ""),
           "\"y\""),
     "[conv2d,add,relu] [conv2d,multiply,unpack_nchwc,subtract]"},
};

/* The layout pass's graph (blocked convs, pools, elementwise ops and
 * unpacks) in the plain C reference: the same outputs as the graph as
 * loaded, so ref.c's blocked forms agree with the NCHW ones. */
static void test_layout_reference(void) {
  for (int i = 0; i < MLC_COUNTOF(layout_cases); i++) {
    mlc_error err = {{0}};
    mlc_gmodule *r = parse(layout_cases[i].json, &err), *m = parse(layout_cases[i].json, &err);
    bool ok = r && m && run_until(m, "layout", &err);
    int n_out = ok ? mlc_graph_main(r)->n_outputs : 0;
    mlc_array **in = ok ? make_inputs(r, 3, false) : NULL;
    mlc_array **want = ok ? make_outputs(r) : NULL, **got = ok ? make_outputs(r) : NULL;
    ok = ok && mlc_graph_reference(r, in, want, &err) && mlc_graph_reference(m, in, got, &err);
    double e = 0;
    bool close = ok && all_close(got, want, n_out, 1e-5, 1e-6, &e);
    int unpacks = 0;
    for (int j = 0; ok && j < mlc_graph_main(m)->n_bindings; j++)
      unpacks += mlc_graph_main(m)->bindings[j].op == MLC_GOP_UNPACK_NCHWC;
    char name[128], why[1200];
    snprintf(name, sizeof name, "layout_reference_%s", layout_cases[i].name);
    snprintf(why, sizeof why, "%s: max abs error %g, %d unpacks", err.msg, e, unpacks);
    test_report(name, close && unpacks > 0, why);
    if (in) free_arrays(in, mlc_graph_main(r)->n_params);
    if (want) free_arrays(want, n_out), free_arrays(got, n_out);
    mlc_graph_free(r), mlc_graph_free(m);
  }
}

/* A model that quantizes says so, and each kernel that quantizes carries
 * the check tolerance of its rounding boundaries (the tuner's result
 * check reads it); the others carry none. */
static void test_quantized_check_atol(void) {
  const char *json = NULL;
  for (int i = 0; i < MLC_COUNTOF(layout_cases); i++)
    if (strcmp(layout_cases[i].name, "quantized_chain") == 0) json = layout_cases[i].json;
  mlc_error err = {{0}};
  mlc_gmodule *m = parse(json, &err), *plain = parse(layout_cases[0].json, &err);
  CHECK_MSG(m && plain, "%s", err.msg);
  if (!m || !plain) return mlc_graph_free(m), mlc_graph_free(plain);
  CHECK(mlc_graph_is_quantized(m) && !mlc_graph_is_quantized(plain));
  CHECK_MSG(mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err), "%s", err.msg);
  int quantized = 0;
  for (int i = 0; i < m->tir->n_funcs; i++) {
    double atol = mlc_func_check_atol(m->tir->funcs[i], 0);
    bool q = strstr(m->tir->funcs[i]->name, "quantize") != NULL;
    CHECK_MSG(atol == (q ? MLC_GRAPH_QUANT_ATOL : 0), "%s: %g", m->tir->funcs[i]->name, atol);
    quantized += q;
  }
  CHECK(quantized == 1);
  mlc_graph_free(m);
  mlc_graph_free(plain);
}

int main(void) {
  run_cases("elemwise", elemwise_cases, MLC_COUNTOF(elemwise_cases));
  run_bad("elemwise_refuse", elemwise_bad, MLC_COUNTOF(elemwise_bad));
  run_cases("dtype", dtype_cases, MLC_COUNTOF(dtype_cases));
  run_bad("dtype_refuse", dtype_bad, MLC_COUNTOF(dtype_bad));
  run_cases("conv", conv_cases, MLC_COUNTOF(conv_cases));
  run_bad("conv_refuse", conv_bad, MLC_COUNTOF(conv_bad));
  run_cases("conv3d", conv3d_cases, MLC_COUNTOF(conv3d_cases));
  run_bad("conv3d_refuse", conv3d_bad, MLC_COUNTOF(conv3d_bad));
  test_window3d_direct();
  run_cases("matmul", matmul_cases, MLC_COUNTOF(matmul_cases));
  run_bad("matmul_refuse", matmul_bad, MLC_COUNTOF(matmul_bad));
  run_cases("norm", norm_cases, MLC_COUNTOF(norm_cases));
  run_bad("norm_refuse", norm_bad, MLC_COUNTOF(norm_bad));
  RUN(test_fold_batch_norm);
  RUN(test_pack_weights);
  run_cases("reduce", reduce_cases, MLC_COUNTOF(reduce_cases));
  run_bad("reduce_refuse", reduce_bad, MLC_COUNTOF(reduce_bad));
  run_cases("move", move_cases, MLC_COUNTOF(move_cases));
  run_bad("move_refuse", move_bad, MLC_COUNTOF(move_bad));
  run_cases("shape", shape_cases, MLC_COUNTOF(shape_cases));
  run_bad("shape_refuse", shape_bad, MLC_COUNTOF(shape_bad));
  RUN(test_print_shape_ops);
  RUN(test_trilu_cumsum_values);
  RUN(test_entry_weights_extern);
  RUN(test_conv3d_fuse_print);
  run_pass_cases("rewrite_layernorm", "patterns", layernorm_cases, MLC_COUNTOF(layernorm_cases));
  run_pass_cases("rewrite_gelu", "patterns", gelu_cases, MLC_COUNTOF(gelu_cases));
  run_pass_cases("fuse", "fuse", fuse_cases, MLC_COUNTOF(fuse_cases));
  run_pass_cases("layout", "fuse", layout_cases, MLC_COUNTOF(layout_cases));
  run_pass_cases("ragged", "fuse", ragged_cases, MLC_COUNTOF(ragged_cases));
  test_layout_reference();
  RUN(test_quantized_check_atol);
  return test_summary();
}
