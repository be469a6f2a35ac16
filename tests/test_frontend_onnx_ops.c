/* ONNX import of single nodes built here (protobuf-c structs, packed):
 * what the conformance data cannot check. Trilu and CumSum (their cases
 * there are int64 and float64, which we refuse) run against values worked
 * out by hand, in the interpreter and through the LLVM backend, as does
 * ReduceLogSumExp on values whose exp overflows float32, and Einsum's
 * equations (x as both operands; the conformance cases are float64); the
 * importer's refusals of new ops name the node and the reason. */
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "onnx/onnx.pb-c.h"
#include "targets/targets.h"
#include "tests/test.h"
#include "tuner/tuner.h"

#include <math.h>
#include <string.h>

enum { MAX_ATTRS = 4 };

typedef struct node_spec {
  const char *op;
  int opset;
  int64_t x_shape[4];
  int x_rank;
  /* a second input "p", an int64 initializer (n_p values; 0: none) */
  int64_t p[4];
  int n_p;
  bool x_twice; /* the node's inputs are x, x (Einsum); no p */
  struct {
    const char *name;
    bool is_string, is_float;
    int64_t i;
    float f;
    const char *s;
    int64_t ints[4]; /* an INTS attribute where n_ints > 0 */
    int n_ints;
  } attrs[MAX_ATTRS];
  int n_attrs;
} node_spec;

/* The model: graph input x (float32, x_shape), node op(x[, p]) -> y. */
static uint8_t *pack_model(const node_spec *s, size_t *len) {
  Onnx__TensorShapeProto__Dimension dims[4], *dimp[4];
  for (int d = 0; d < s->x_rank; d++) {
    Onnx__TensorShapeProto__Dimension z = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
    dims[d] = z;
    dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dims[d].dim_value = s->x_shape[d];
    dimp[d] = &dims[d];
  }
  Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = (size_t)s->x_rank;
  shape.dim = dimp;
  Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
  tt.has_elem_type = 1;
  tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  tt.shape = &shape;
  Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
  type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  type.tensor_type = &tt;
  Onnx__ValueInfoProto xin = ONNX__VALUE_INFO_PROTO__INIT, yout = ONNX__VALUE_INFO_PROTO__INIT;
  xin.name = "x";
  xin.type = &type;
  yout.name = "y";
  Onnx__ValueInfoProto *ins[1] = {&xin}, *outs[1] = {&yout};

  Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT, *inits[1] = {&p};
  int64_t p_len = s->n_p;
  p.name = "p";
  p.has_data_type = 1;
  p.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
  p.n_dims = 1;
  p.dims = &p_len;
  p.n_int64_data = (size_t)s->n_p;
  p.int64_data = (int64_t *)s->p;

  Onnx__AttributeProto attrs[MAX_ATTRS], *attrp[MAX_ATTRS];
  for (int i = 0; i < s->n_attrs; i++) {
    Onnx__AttributeProto z = ONNX__ATTRIBUTE_PROTO__INIT;
    attrs[i] = z;
    attrs[i].name = (char *)s->attrs[i].name;
    attrs[i].has_type = 1;
    if (s->attrs[i].is_string) {
      attrs[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
      attrs[i].has_s = 1;
      attrs[i].s.data = (uint8_t *)s->attrs[i].s;
      attrs[i].s.len = strlen(s->attrs[i].s);
    } else if (s->attrs[i].n_ints) {
      attrs[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
      attrs[i].n_ints = (size_t)s->attrs[i].n_ints;
      attrs[i].ints = (int64_t *)s->attrs[i].ints;
    } else if (s->attrs[i].is_float) {
      attrs[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
      attrs[i].has_f = 1;
      attrs[i].f = s->attrs[i].f;
    } else {
      attrs[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
      attrs[i].has_i = 1;
      attrs[i].i = s->attrs[i].i;
    }
    attrp[i] = &attrs[i];
  }
  char *node_in[2] = {"x", s->x_twice ? "x" : "p"}, *node_out[1] = {"y"};
  Onnx__NodeProto node = ONNX__NODE_PROTO__INIT, *nodes[1] = {&node};
  node.name = "n";
  node.op_type = (char *)s->op;
  node.n_input = s->n_p || s->x_twice ? 2 : 1;
  node.input = node_in;
  node.n_output = 1;
  node.output = node_out;
  node.n_attribute = (size_t)s->n_attrs;
  node.attribute = attrp;

  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  g.name = "g";
  g.n_node = 1;
  g.node = nodes;
  g.n_input = 1;
  g.input = ins;
  g.n_output = 1;
  g.output = outs;
  g.n_initializer = s->n_p ? 1 : 0;
  g.initializer = inits;
  Onnx__OperatorSetIdProto ops = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsp[1] = {&ops};
  ops.domain = "";
  ops.has_version = 1;
  ops.version = s->opset;
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  m.has_ir_version = 1;
  m.ir_version = 8;
  m.graph = &g;
  m.n_opset_import = 1;
  m.opset_import = opsp;
  *len = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = mlc_xmalloc(*len + 1);
  onnx__model_proto__pack(&m, buf);
  return buf;
}

static mlc_gmodule *load(const node_spec *s, mlc_error *err) {
  size_t len;
  uint8_t *bytes = pack_model(s, &len);
  mlc_gmodule *m = mlc_graph_parse_onnx("node.onnx", bytes, len, NULL, err);
  mlc_free(bytes);
  return m;
}

static bool jit_kernel(void *ud, const mlc_prim_func *f, int n, mlc_array *args, mlc_error *err) {
  mlc_jit_lib *lib = ud;
  mlc_kernel_fn fn = mlc_jit_lookup(lib, f->name, err);
  return fn && mlc_kernel_call(fn, n, args) == 0;
}

/* m's lowered kernels with the default schedule, built for the host and
 * loaded (NULL with err set). */
static mlc_jit_lib *compile(mlc_gmodule *m, mlc_error *err) {
  mlc_target t;
  mlc_target_host(&t);
  mlc_arena *a = mlc_arena_new();
  int n = m->tir->n_funcs;
  const mlc_prim_func **fs = MLC_NEW_ARRAY(a, const mlc_prim_func *, n);
  for (int i = 0; i < n; i++) fs[i] = mlc_tuner_cpu_default_schedule(a, m->tir->funcs[i]);
  mlc_object obj;
  mlc_jit_lib *lib = NULL;
  if (mlc_target_build(&t, n, fs, NULL, NULL, &obj, err)) {
    lib = mlc_jit_load(&obj, err);
    mlc_object_free(&obj);
  }
  mlc_arena_free(a);
  return lib;
}

/* x = xv (NULL: 1, 2, ...), run in the interpreter and compiled; both
 * must give want (of y_shape; NULL: x's) within tol. */
static void check_run(const char *name, const node_spec *s, const float *xv, int y_rank,
                      const int64_t *y_shape, const float *want, double tol) {
  mlc_error err = {{0}};
  char why[1200] = "";
  mlc_gmodule *m = load(s, &err);
  bool ok = m && mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err);
  if (!ok) snprintf(why, sizeof why, "load: %s", err.msg);
  mlc_jit_lib *lib = ok ? compile(m, &err) : NULL;
  if (ok && !lib) ok = (snprintf(why, sizeof why, "compile: %s", err.msg), false);
  mlc_array *x = mlc_array_new(MLC_FLOAT32, s->x_rank, s->x_shape);
  if (!y_shape) y_rank = s->x_rank, y_shape = s->x_shape;
  mlc_array *y[2] = {mlc_array_new(MLC_FLOAT32, y_rank, y_shape),
                     mlc_array_new(MLC_FLOAT32, y_rank, y_shape)};
  for (int64_t k = 0; k < mlc_array_numel(x); k++) mlc_array_set(x, k, xv ? xv[k] : (double)(k + 1));
  int64_t n = mlc_array_numel(y[0]);
  if (ok && !(mlc_graph_execute(m, NULL, NULL, &x, &y[0], &err) &&
              mlc_graph_execute(m, jit_kernel, lib, &x, &y[1], &err)))
    ok = (snprintf(why, sizeof why, "run: %s", err.msg), false);
  for (int j = 0; j < 2 && ok; j++)
    for (int64_t k = 0; k < n && ok; k++)
      if (!(fabs(mlc_array_get(y[j], k) - want[k]) <= tol))
        ok = (snprintf(why, sizeof why, "%s: element %lld is %g, want %g",
                       j ? "compiled" : "interpreter", (long long)k, mlc_array_get(y[j], k),
                       want[k]),
              false);
  test_report(name, ok, why);
  if (lib) mlc_jit_unload(lib);
  mlc_array_free(x), mlc_array_free(y[0]), mlc_array_free(y[1]);
  mlc_graph_free(m);
}

/* x = 1, 2, ...; want exactly (sums of small whole numbers). */
static void check_values(const char *name, const node_spec *s, const float *want) {
  check_run(name, s, NULL, 0, NULL, want, 0);
}

#define X23 .x_shape = {2, 3}, .x_rank = 2
#define X34 .x_shape = {3, 4}, .x_rank = 2
#define IATTR(n, v) {.name = n, .i = v}
#define FATTR(n, v) {.name = n, .is_float = true, .f = v}
#define SATTR(n, v) {.name = n, .is_string = true, .s = v}

static void test_trilu_cumsum(void) {
  /* x = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]] */
  node_spec tril = {"Trilu", 14, X34, .p = {-1}, .n_p = 1, .attrs = {IATTR("upper", 0)}, .n_attrs = 1};
  check_values("trilu_lower_k_neg1", &tril, (float[]){0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  node_spec triu = {"Trilu", 14, X34, .p = {2}, .n_p = 1};
  check_values("trilu_upper_k2", &triu, (float[]){0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0});
  node_spec triu0 = {"Trilu", 14, X34};
  check_values("trilu_upper_default", &triu0, (float[]){1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  node_spec tril_far = {"Trilu", 14, X34, .p = {-7}, .n_p = 1, .attrs = {IATTR("upper", 0)}, .n_attrs = 1};
  check_values("trilu_lower_k_past", &tril_far, (float[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  /* x = [[1, 2, 3], [4, 5, 6]] */
  node_spec cs = {"CumSum", 14, X23, .p = {1}, .n_p = 1};
  check_values("cumsum_axis1", &cs, (float[]){1, 3, 6, 4, 9, 15});
  node_spec cs_rev = {"CumSum", 14, X23, .p = {-1}, .n_p = 1,
                      .attrs = {IATTR("exclusive", 1), IATTR("reverse", 1)}, .n_attrs = 2};
  check_values("cumsum_exclusive_reverse", &cs_rev, (float[]){5, 3, 0, 11, 6, 0});
  node_spec cs0 = {"CumSum", 11, X23, .p = {0}, .n_p = 1, .attrs = {IATTR("reverse", 1)}, .n_attrs = 1};
  check_values("cumsum_axis0_reverse", &cs0, (float[]){5, 7, 9, 4, 5, 6});
}

/* ReduceLogSumExp: m + log(sum(exp(x - m))), finite where exp(x)
 * overflows float32 (x = 100). */
static void test_log_sum_exp(void) {
  static const float x[6] = {1, 2, 3, 100, 101, 102};
  double l3 = log(exp(-2.0) + exp(-1.0) + 1); /* log(e^1 + e^2 + e^3) - 3 */
  node_spec rows = {"ReduceLogSumExp", 13, X23, .attrs = {{.name = "axes", .ints = {1}, .n_ints = 1},
                                                       IATTR("keepdims", 0)}, .n_attrs = 2};
  check_run("log_sum_exp_rows", &rows, x, 1, (int64_t[]){2}, (float[]){(float)(3 + l3), (float)(102 + l3)},
            1e-4);
  node_spec all = {"ReduceLogSumExp", 13, X23};
  double big = 102 + log(1 + exp(-1.0) + exp(-2.0) + exp(-99.0) + exp(-100.0) + exp(-101.0));
  check_run("log_sum_exp_all", &all, x, 2, (int64_t[]){1, 1}, (float[]){(float)big}, 1e-4);
}

/* Hardmax: 1 at the first of tied maxima. */
static void test_hardmax(void) {
  static const float x[6] = {1, 3, 3, 2, 2, 1};
  node_spec rows = {"Hardmax", 13, X23};
  check_run("hardmax_ties", &rows, x, 0, NULL, (float[]){0, 1, 0, 1, 0, 0}, 0);
  node_spec cols = {"Hardmax", 13, X23, .attrs = {IATTR("axis", 0)}, .n_attrs = 1};
  check_run("hardmax_axis0_ties", &cols, x, 0, NULL, (float[]){0, 1, 1, 1, 0, 0}, 0);
  /* opset 11: over the flattened [1, 6] */
  node_spec flat = {"Hardmax", 11, X23, .attrs = {IATTR("axis", 0)}, .n_attrs = 1};
  check_run("hardmax_opset11_flat", &flat, x, 0, NULL, (float[]){0, 1, 0, 0, 0, 0}, 0);
}

/* Einsum with x as both operands (x = 1, 2, ...), against sums worked
 * out here: attention's two batched matmuls, a transpose, sums, the
 * inner product and an implicit output that sums a batch letter. */
static void test_einsum(void) {
  float want[64] = {0}, x[64];
  for (int k = 0; k < 64; k++) x[k] = (float)(k + 1);
  /* q k^T: y[h, i, j] = sum_d x[h, i, d] x[h, j, d], x [1, 2, 3, 2] */
  for (int h = 0; h < 2; h++)
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        for (int d = 0; d < 2; d++) want[(h * 3 + i) * 3 + j] += x[(h * 3 + i) * 2 + d] * x[(h * 3 + j) * 2 + d];
  node_spec qk = {"Einsum", 12, .x_shape = {1, 2, 3, 2}, .x_rank = 4, .x_twice = true,
                  .attrs = {SATTR("equation", "bhid,bhjd->bhij")}, .n_attrs = 1};
  check_run("einsum_qk", &qk, NULL, 4, (int64_t[]){1, 2, 3, 3}, want, 0);
  /* p v: y[h, i, d] = sum_j x[h, i, j] x[h, j, d], x [1, 2, 3, 3] */
  memset(want, 0, sizeof want);
  for (int h = 0; h < 2; h++)
    for (int i = 0; i < 3; i++)
      for (int d = 0; d < 3; d++)
        for (int j = 0; j < 3; j++) want[(h * 3 + i) * 3 + d] += x[(h * 3 + i) * 3 + j] * x[(h * 3 + j) * 3 + d];
  node_spec pv = {"Einsum", 12, .x_shape = {1, 2, 3, 3}, .x_rank = 4, .x_twice = true,
                  .attrs = {SATTR("equation", "bhij, bhjd -> bhid")}, .n_attrs = 1};
  check_run("einsum_pv", &pv, NULL, 4, (int64_t[]){1, 2, 3, 3}, want, 0);
  /* implicit output "ik": b and j both summed, x [2, 3, 3] */
  memset(want, 0, sizeof want);
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 3; i++)
      for (int k = 0; k < 3; k++)
        for (int j = 0; j < 3; j++) want[i * 3 + k] += x[(b * 3 + i) * 3 + j] * x[(b * 3 + j) * 3 + k];
  node_spec imp = {"Einsum", 12, .x_shape = {2, 3, 3}, .x_rank = 3, .x_twice = true,
                   .attrs = {SATTR("equation", "bij,bjk")}, .n_attrs = 1};
  check_run("einsum_implicit_batch_sum", &imp, NULL, 2, (int64_t[]){3, 3}, want, 0);
  node_spec tr = {"Einsum", 12, X23, .attrs = {SATTR("equation", "ij->ji")}, .n_attrs = 1};
  check_run("einsum_transpose", &tr, NULL, 2, (int64_t[]){3, 2}, (float[]){1, 4, 2, 5, 3, 6}, 0);
  node_spec rows = {"Einsum", 12, X23, .attrs = {SATTR("equation", "ij->i")}, .n_attrs = 1};
  check_run("einsum_row_sums", &rows, NULL, 1, (int64_t[]){2}, (float[]){6, 15}, 0);
  node_spec all = {"Einsum", 12, X23, .attrs = {SATTR("equation", "ij->")}, .n_attrs = 1};
  check_run("einsum_sum", &all, NULL, 1, (int64_t[]){1}, (float[]){21}, 0);
  node_spec dot = {"Einsum", 12, .x_shape = {3}, .x_rank = 1, .x_twice = true,
                   .attrs = {SATTR("equation", "i,i")}, .n_attrs = 1};
  check_run("einsum_inner", &dot, NULL, 1, (int64_t[]){1}, (float[]){14}, 0);
  node_spec outer = {"Einsum", 12, .x_shape = {2}, .x_rank = 1, .x_twice = true,
                     .attrs = {SATTR("equation", "i,j->ij")}, .n_attrs = 1};
  check_run("einsum_outer", &outer, NULL, 2, (int64_t[]){2, 2}, (float[]){1, 2, 2, 4}, 0);
}

typedef struct refusal {
  const char *name;
  node_spec s;
  const char *want;
} refusal;

static const refusal refusals[] = {
    {"shrink_negative_lambd", {"Shrink", 13, X23, .attrs = {FATTR("lambd", -1)}, .n_attrs = 1},
     "(op Shrink, opset 13): lambd -1 is negative"},
    {"celu_alpha_zero", {"Celu", 12, X23, .attrs = {FATTR("alpha", 0)}, .n_attrs = 1},
     "alpha 0 (must be nonzero and finite)"},
    {"sin_attribute", {"Sin", 7, X23, .attrs = {FATTR("alpha", 1)}, .n_attrs = 1}, "alpha"},
    {"tile_repeats_rank", {"Tile", 13, X23, .p = {2}, .n_p = 1}, "repeats has 1 entries for rank 2"},
    {"tile_repeats_zero", {"Tile", 13, X23, .p = {1, 0}, .n_p = 2},
     "repeats 0 along axis 1 (must be >= 1)"},
    {"tile_huge", {"Tile", 13, X23, .p = {1, INT64_MAX}, .n_p = 2},
     "axis 1 would have more than 16777216 elements"},
    {"expand_no_broadcast", {"Expand", 13, X23, .p = {2, 5}, .n_p = 2}, "shapes do not broadcast"},
    {"depth_to_space_rank", {"DepthToSpace", 13, X23, .attrs = {IATTR("blocksize", 2)}, .n_attrs = 1},
     "the input must be 4-D (N, C, H, W)"},
    {"depth_to_space_mode",
     {"DepthToSpace", 13, .x_shape = {1, 4, 2, 2}, .x_rank = 4,
      .attrs = {IATTR("blocksize", 2), SATTR("mode", "XYZ")}, .n_attrs = 2},
     "mode \"XYZ\" is not supported"},
    {"depth_to_space_channels",
     {"DepthToSpace", 13, .x_shape = {1, 6, 2, 2}, .x_rank = 4, .attrs = {IATTR("blocksize", 2)}, .n_attrs = 1},
     "C 6 is not a multiple of blocksize^2"},
    {"space_to_depth_extent",
     {"SpaceToDepth", 13, .x_shape = {1, 1, 3, 4}, .x_rank = 4, .attrs = {IATTR("blocksize", 2)}, .n_attrs = 1},
     "H and W must be multiples of blocksize"},
    {"trilu_rank", {"Trilu", 14, .x_shape = {5}, .x_rank = 1}, "at least 2 dimensions"},
    {"cumsum_axis", {"CumSum", 14, X23, .p = {2}, .n_p = 1}, "axis 2 is out of range for rank 2"},
    {"cumsum_axes", {"CumSum", 14, X23, .p = {0, 1}, .n_p = 2}, "axis must be a single value"},
    {"einsum_diagonal", {"Einsum", 12, .x_shape = {3, 3}, .x_rank = 2, .attrs = {SATTR("equation", "ii->i")}, .n_attrs = 1},
     "letter 'i' repeats in operand 0 (diagonals are not supported)"},
    {"einsum_ellipsis", {"Einsum", 12, X23, .attrs = {SATTR("equation", "...j->j")}, .n_attrs = 1},
     "ellipsis (...) is not supported"},
    {"einsum_extents", {"Einsum", 12, X23, .x_twice = true, .attrs = {SATTR("equation", "ij,jk->ik")}, .n_attrs = 1},
     "letter 'j' has extents 3 and 2 (broadcasting is not supported)"},
    {"einsum_rank", {"Einsum", 12, X23, .attrs = {SATTR("equation", "ijk->k")}, .n_attrs = 1},
     "term 0 has 3 letters for an input of rank 2"},
    {"einsum_output_letter", {"Einsum", 12, X23, .attrs = {SATTR("equation", "ij->z")}, .n_attrs = 1},
     "output letter 'z' is in no input"},
    {"instance_norm_rank", {"InstanceNormalization", 6, X23}, "InstanceNormalization"},
    {"lrn_size", {"LRN", 13, .x_shape = {1, 4, 2, 2}, .x_rank = 4}, "size 0 is out of range"},
    {"lrn_rank", {"LRN", 13, X23, .attrs = {IATTR("size", 3)}, .n_attrs = 1}, "rank 3 or more"},
    {"mvn_default_axes", {"MeanVarianceNormalization", 13, .x_shape = {2, 3, 4}, .x_rank = 3},
     "the default axes (0, 2, 3) need a 4-D input"},
};

static void test_refusals(void) {
  for (int i = 0; i < MLC_COUNTOF(refusals); i++) {
    mlc_error err = {{0}};
    mlc_gmodule *m = load(&refusals[i].s, &err);
    char name[96], why[1400];
    snprintf(name, sizeof name, "refuse_%s", refusals[i].name);
    snprintf(why, sizeof why, "%s: got \"%s\", want \"%s\"", m ? "accepted" : "wrong message",
             err.msg, refusals[i].want);
    test_report(name, !m && strstr(err.msg, refusals[i].want), why);
    mlc_graph_free(m);
  }
}

int main(void) {
  test_trilu_cumsum();
  test_log_sum_exp();
  test_hardmax();
  test_einsum();
  test_refusals();
  return test_summary();
}
