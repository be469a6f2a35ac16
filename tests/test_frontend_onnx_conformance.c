/* ONNX's own backend tests (Debian's libonnx-testdata): every case under
 * data/node/, data/pytorch-converted/ and data/pytorch-operator/ whose
 * model we load runs through the pipeline mlc-compile uses
 * (mlc_graph_run_pipeline) and then the TensorIR interpreter
 * (mlc_graph_execute, kernel NULL: fast to start, no LLVM compile per
 * case); outputs must match output_K.pb within ONNX's backend rule
 * |got - want| <= atol + rtol * |want| (rtol 1e-3, atol 1e-7). A case we
 * refuse (an op, attribute or dtype we do not support) is counted apart;
 * a refusal must come from the loader, never a crash. Prints a PASS/FAIL
 * line per case run, a per-operator table, totals per directory and a
 * grand total.
 *
 * Many node cases feed an op's parameters (Clip's bounds, BatchNorm's
 * statistics, Reshape's shape, Slice's starts, Unsqueeze's axes, ...) as
 * graph inputs from input_K.pb, where exporters give constants. Our
 * importer needs those as constants, so before import the harness binds
 * such inputs to their test data as initializers: every integer input, and
 * the parameter inputs listed in param_inputs below. The data inputs stay
 * model inputs and are fed at run time. The summary counts the cases
 * that were bound this way.
 *
 * MLC_ONNX_TESTDATA names one data directory to run instead of the three;
 * MLC_ONNX_FILTER runs only the cases whose name contains it;
 * MLC_ONNX_VERBOSE=1 prints each refusal's reason and every operator. */
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "onnx/onnx.pb-c.h"
#include "tests/test.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#define DATA_ROOT "/usr/share/libonnx-testdata/data"
static const char *const data_dirs[] = {"node", "pytorch-converted", "pytorch-operator"};
#define MAX_INPUTS 256 /* model inputs a case may have */

typedef struct op_row {
  char op[64];
  int run, passed, refused, failed;
} op_row;

static op_row rows[512];
static int n_rows;
static int n_bound_cases; /* cases run with parameter inputs bound (see the top) */

static op_row *row(const char *op) {
  for (int i = 0; i < n_rows; i++)
    if (strcmp(rows[i].op, op) == 0) return &rows[i];
  if (n_rows == MLC_COUNTOF(rows)) return &rows[n_rows - 1];
  snprintf(rows[n_rows].op, sizeof rows[n_rows].op, "%s", op);
  return &rows[n_rows++];
}

/* The op a case tests: its node's op_type; for a graph of several nodes
 * (pytorch-converted and -operator models), the distinct op types other
 * than Constant joined with '+' ("Abs+Add+Div"; one name when they agree);
 * "(function body)" for node/'s *_expanded cases. */
static void case_op(const char *model, const char *name, char *op, size_t n) {
  size_t len;
  mlc_error err;
  snprintf(op, n, "(unreadable)");
  char *bytes = mlc_read_file(model, &len, &err);
  if (!bytes) return;
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
  const Onnx__GraphProto *g = mp ? mp->graph : NULL;
  if (g && strstr(name, "_expanded")) {
    snprintf(op, n, "(function body)");
  } else if (g) {
    size_t k = 0;
    op[0] = 0;
    for (size_t i = 0; i < g->n_node; i++) {
      const char *t = g->node[i]->op_type ? g->node[i]->op_type : "?";
      if (strcmp(t, "Constant") == 0 && g->n_node > 1) continue;
      bool seen = false;
      for (size_t j = 0; j < i; j++)
        seen |= g->node[j]->op_type && strcmp(g->node[j]->op_type, t) == 0;
      if (!seen && k < n)
        k += (size_t)snprintf(op + k, n - k, "%s%s", k ? "+" : "", t);
    }
  }
  if (mp) onnx__model_proto__free_unpacked(mp, NULL);
  mlc_free(bytes);
}

/* Integer and bool outputs: equal element by element. */
static bool same_values(const mlc_array *got, const void *want, char *why, size_t wn) {
  for (int64_t k = 0; k < mlc_array_numel(got); k++) {
    double g = mlc_gdata_get(got->dtype, got->data, k), w = mlc_gdata_get(got->dtype, want, k);
    if (g != w) {
      snprintf(why, wn, "element %lld is %.17g, want %.17g", (long long)k, g, w);
      return false;
    }
  }
  return true;
}

static bool close_enough(const mlc_array *got, const float *want, int64_t n, char *why,
                         size_t wn) {
  for (int64_t i = 0; i < n; i++) {
    double g = mlc_array_get(got, i), w = want[i];
    if (isnan(w) && isnan(g)) continue;
    if (isinf(w) && g == w) continue;
    if (!(fabs(g - w) <= 1e-7 + 1e-3 * fabs(w))) {
      snprintf(why, wn, "element %lld: got %.9g, want %.9g", (long long)i, g, w);
      return false;
    }
  }
  return true;
}

typedef enum { C_PASS, C_FAIL, C_REFUSED } outcome;

/* Inputs from `first` on of these ops are parameters (constant in models
 * exporters write). */
static const struct {
  const char *op;
  int first;
} param_inputs[] = {
    {"BatchNormalization", 1}, {"Clip", 1}, {"ConstantOfShape", 0}, {"Dropout", 1},
    {"Expand", 1},             {"Gather", 1}, {"Pad", 1},           {"Pow", 1},
    {"QuantizeLinear", 1},     {"ReduceL1", 1},           {"ReduceL2", 1}, {"ReduceLogSum", 1}, {"ReduceLogSumExp", 1},
    {"ReduceMax", 1},          {"ReduceMean", 1}, {"ReduceMin", 1},  {"ReduceProd", 1},
    {"ReduceSum", 1},          {"ReduceSumSquare", 1}, {"Reshape", 1}, {"Resize", 1},
    {"Slice", 1},              {"Split", 1},    {"Squeeze", 1},     {"Tile", 1},
    {"TopK", 1},               {"Unsqueeze", 1},
};

static bool is_param_input(const Onnx__GraphProto *g, const char *name) {
  for (size_t k = 0; k < g->n_node; k++) {
    const Onnx__NodeProto *p = g->node[k];
    for (int i = 0; i < MLC_COUNTOF(param_inputs); i++) {
      if (!p->op_type || strcmp(p->op_type, param_inputs[i].op) != 0) continue;
      for (size_t j = (size_t)param_inputs[i].first; j < p->n_input; j++)
        if (p->input[j] && strcmp(p->input[j], name) == 0) return true;
    }
  }
  return false;
}

static bool is_integer_type(int32_t t) {
  switch (t) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
  case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return true;
  default: return false;
  }
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
  for (size_t k = 0; k < g->n_initializer; k++)
    if (g->initializer[k]->name && strcmp(g->initializer[k]->name, name) == 0) return true;
  return false;
}

/* The model of case dir with its parameter inputs bound to their test
 * data (see the top); data_index[k]: the input_K.pb of the k-th model
 * input left. NULL with a message when the model or data does not parse
 * (the loader then reports it). */
static mlc_gmodule *load_bound(const char *dir, int *data_index, int *n_bound, mlc_error *err) {
  char path[1200];
  size_t len;
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  *n_bound = 0;
  char *bytes = mlc_read_file(path, &len, err);
  if (!bytes) return NULL;
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
  if (!mp || !mp->graph) {
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    mlc_gmodule *m = mlc_graph_parse_onnx(path, bytes, len, NULL, err);
    mlc_free(bytes);
    return m;
  }
  Onnx__GraphProto *g = mp->graph;
  size_t n0 = g->n_initializer, cap = n0 + g->n_input + 1;
  Onnx__TensorProto **inits = mlc_xmalloc(sizeof *inits * cap), **orig = g->initializer;
  Onnx__TensorProto **bound = mlc_xmalloc(sizeof *bound * cap);
  char **names = mlc_xmalloc(sizeof *names * cap);
  if (n0) memcpy(inits, orig, sizeof *inits * n0);
  int left = 0, data_k = 0;
  for (size_t i = 0; i < g->n_input && left < MAX_INPUTS; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    const char *name = vi->name ? vi->name : "";
    if (is_initializer(g, name)) continue;
    const Onnx__TypeProto *tp = vi->type;
    int32_t dt = tp && tp->tensor_type ? tp->tensor_type->elem_type : 0;
    int k = data_k++;
    if (!is_integer_type(dt) && !(dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && is_param_input(g, name))) {
      data_index[left++] = k;
      continue;
    }
    size_t tl;
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
    char *tb = mlc_read_file(path, &tl, err);
    Onnx__TensorProto *t = tb ? onnx__tensor_proto__unpack(NULL, tl, (const uint8_t *)tb) : NULL;
    mlc_free(tb);
    if (!t) { /* left as an input: the loader or the run reports it */
      data_index[left++] = k;
      continue;
    }
    names[*n_bound] = t->name;
    t->name = (char *)name;
    bound[(*n_bound)++] = t;
    inits[n0 + (size_t)*n_bound - 1] = t;
  }
  g->initializer = inits;
  g->n_initializer = n0 + (size_t)*n_bound;
  size_t plen = onnx__model_proto__get_packed_size(mp);
  uint8_t *packed = mlc_xmalloc(plen + 1);
  onnx__model_proto__pack(mp, packed);
  g->initializer = orig;
  g->n_initializer = n0;
  for (int i = 0; i < *n_bound; i++) {
    bound[i]->name = names[i];
    onnx__tensor_proto__free_unpacked(bound[i], NULL);
  }
  onnx__model_proto__free_unpacked(mp, NULL);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  mlc_gmodule *m = mlc_graph_parse_onnx(path, packed, plen, NULL, err);
  mlc_free(packed);
  mlc_free(inits);
  mlc_free(bound);
  mlc_free(names);
  mlc_free(bytes);
  return m;
}

/* Loads data set 0's input_K.pb / output_K.pb into arrays. */
static outcome run_case(const char *dir, char *why, size_t wn, int *n_bound) {
  char path[1200];
  mlc_error err;
  int data_index[MAX_INPUTS];
  mlc_gmodule *m = load_bound(dir, data_index, n_bound, &err);
  if (!m) {
    snprintf(why, wn, "%s", err.msg);
    return C_REFUSED;
  }
  const mlc_gfunc *f = mlc_graph_main(m);
  int ni = f->n_params, no = f->n_outputs;
  if (ni > MAX_INPUTS) {
    mlc_graph_free(m);
    snprintf(why, wn, "more than %d inputs", MAX_INPUTS);
    return C_REFUSED;
  }
  mlc_array **in = mlc_xmalloc(sizeof *in * (size_t)(ni + 1));
  mlc_array **out = mlc_xmalloc(sizeof *out * (size_t)(no + 1));
  void **want = mlc_xmalloc(sizeof *want * (size_t)(no + 1));
  outcome r = C_PASS;
  for (int i = 0; i < ni && r == C_PASS; i++) {
    mlc_gtype t;
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, data_index[i]);
    void *d = mlc_onnx_tensor_read(path, &t, &err);
    const mlc_gtype *p = &f->params[i]->type;
    if (!d || t.dtype != p->dtype) {
      if (d) snprintf(why, wn, "input %d: %s, the model takes %s", i, mlc_dtype_name(t.dtype),
                      mlc_dtype_name(p->dtype));
      else snprintf(why, wn, "%s", err.msg);
      r = C_REFUSED; /* an input dtype we do not read */
    } else if (mlc_gtype_numel(&t) != mlc_gtype_numel(p)) {
      snprintf(why, wn, "input %d: %lld elements, the model says %lld", i,
               (long long)mlc_gtype_numel(&t), (long long)mlc_gtype_numel(p));
      r = C_FAIL;
    } else {
      in[i] = mlc_array_new(p->dtype, p->ndim, p->shape);
      memcpy(in[i]->data, d, (size_t)mlc_gtype_bytes(p));
    }
    mlc_free(d);
  }
  for (int i = 0; i < no && r == C_PASS; i++) {
    mlc_gtype t;
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, i);
    want[i] = mlc_onnx_tensor_read(path, &t, &err);
    const mlc_gtype *p = &f->outputs[i]->type;
    if (!want[i]) {
      snprintf(why, wn, "%s", err.msg);
      r = C_FAIL;
    } else if (t.dtype != p->dtype) {
      snprintf(why, wn, "output %d: %s expected, the model gives %s", i, mlc_dtype_name(t.dtype),
               mlc_dtype_name(p->dtype));
      r = C_FAIL;
    } else if (mlc_gtype_numel(&t) != mlc_gtype_numel(p)) {
      snprintf(why, wn, "output %d: %lld elements expected, the model gives %lld", i,
               (long long)mlc_gtype_numel(&t), (long long)mlc_gtype_numel(p));
      r = C_FAIL;
    } else {
      out[i] = mlc_array_new(p->dtype, p->ndim, p->shape);
    }
  }
  if (r == C_PASS && (!mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err) ||
                      !mlc_graph_execute(m, NULL, NULL, in, out, &err))) {
    snprintf(why, wn, "%s", err.msg);
    r = C_FAIL;
  }
  for (int i = 0; i < no && r == C_PASS; i++)
    if (!(out[i]->dtype == MLC_FLOAT32 ? close_enough(out[i], want[i], mlc_array_numel(out[i]), why, wn)
                                       : same_values(out[i], want[i], why, wn)))
      r = C_FAIL;
  for (int i = 0; i < ni; i++) mlc_array_free(in[i]);
  for (int i = 0; i < no; i++) {
    mlc_array_free(out[i]);
    mlc_free(want[i]);
  }
  mlc_free(in);
  mlc_free(out);
  mlc_free(want);
  mlc_graph_free(m);
  return r;
}

/* Cases that must run (a refusal fails them): name prefixes (an exact
 * name where the entry ends in '$') of the operators and attribute
 * variants the importer supports, so that support cannot silently turn
 * into refusals. Pow with a tensor exponent (float, or integer
 * constants), LayerNormalization with its Mean and InvStdDev outputs, 1-D
 * convolutions and pools (run as 2-D), 3-D ones (conv3d, conv_transpose3d,
 * max_pool3d, avg_pool3d), a scalar Gemm C, Dropout in
 * training mode with ratio 0, models without inputs, opset 6's BatchNormalization is_test and
 * Gemm/Add broadcast, the activations composed of graph ops, the
 * elementwise math ops (Floor .. Atanh, Sign, Round, Reciprocal, Celu,
 * ThresholdedRelu, Shrink), Mean and ReduceProd, DepthToSpace,
 * SpaceToDepth, Tile, Expand, InstanceNormalization, LRN,
 * MeanVarianceNormalization, Hardmax, QuantizeLinear and DequantizeLinear. */
static const char *const must_run[] = {
    "test_pow_bcast_", "test_pow_example", "test_pow_types_float32_int",
    "test_layer_normalization_2d", "test_layer_normalization_3d", "test_layer_normalization_4d",
    "test_layer_normalization_default_axis",
    "test_Conv1d", "test_MaxPool1d", "test_AvgPool1d", "test_maxpool_1d_default$",
    "test_averagepool_1d_default$", "test_convtranspose_1d$", "test_Conv3d", "test_MaxPool3d",
    "test_AvgPool3d", "test_maxpool_3d_default$", "test_averagepool_3d_default$",
    "test_convtranspose_3d$", "test_gemm_default_scalar_bias$",
    "test_training_dropout_zero_ratio$", "test_BatchNorm1d_3d_input_eval$",
    "test_BatchNorm2d_eval$", "test_BatchNorm3d_eval$", "test_Linear$", "test_operator_mm$",
    "test_operator_addmm$", "test_Softsign$", "test_PReLU_", "test_ELU$", "test_SELU$",
    "test_Softplus$", "test_constant$", "test_constantofshape_float_ones$", "test_elu", "test_selu", "test_softplus", "test_softsign", "test_prelu_",
    /* elementwise math, Mean and ReduceProd */
    "test_floor", "test_ceil", "test_round$", "test_sign$", "test_reciprocal", "test_sin", "test_cos",
    "test_tan", "test_asin", "test_acos", "test_atan", "test_celu$", "test_thresholdedrelu",
    "test_shrink_", "test_mean_", "test_reduce_prod_",
    /* data movement and InstanceNormalization composed of graph ops */
    "test_depthtospace_", "test_spacetodepth", "test_tile", "test_expand_dim_",
    "test_instancenorm_", "test_operator_repeat", "test_operator_symbolic_override$",
    "test_lrn", "test_mvn$", "test_hardmax_",
    /* quantization: per tensor and per axis */
    "test_quantizelinear", "test_dequantizelinear",
};

static bool must_run_case(const char *name) {
  if (strstr(name, "_expanded")) return false; /* function bodies: other ops */
  if (strcmp(name, "test_pow") == 0) return true;
  for (size_t i = 0; i < MLC_COUNTOF(must_run); i++) {
    size_t len = strlen(must_run[i]);
    bool exact = must_run[i][len - 1] == '$';
    if (strncmp(name, must_run[i], len - exact) == 0 && (!exact || name[len - 1] == 0))
      return true;
  }
  return false;
}

/* Cases that must be refused, with (part of) the message: refusals stay
 * clear, and an unsupported variant never runs to a wrong answer. */
static const struct {
  const char *name, *msg;
} must_refuse[] = {
    {"test_cast_DOUBLE_to_FLOAT", "input 'input' has dtype float64; inputs may be float32, int64, int32, bool, uint8, int8"},
    {"test_cast_FLOAT_to_FLOAT16", "cast to dtype float16 is not supported"},
    {"test_clip_default_int8_inbounds", "clip: operand 0 is int8; only float32 is supported"},
    {"test_training_dropout", "training mode with ratio 0.75 is not supported"},
    {"test_batchnorm_example_training_mode", "training_mode is not supported"},
    {"test_maxpool_with_argmax_2d_precomputed_pads", "the Indices output is not supported"},
    {"test_slice_start_out_of_bounds", "at least one element"},
};

/* NULL: no refusal expected; else the message a refusal must contain. */
static const char *refusal_expected(const char *name) {
  for (size_t i = 0; i < MLC_COUNTOF(must_refuse); i++)
    if (strcmp(name, must_refuse[i].name) == 0) return must_refuse[i].msg;
  return NULL;
}

static int cmp_row(const void *a, const void *b) {
  return strcmp(((const op_row *)a)->op, ((const op_row *)b)->op);
}

static void print_row(const char *what, const int *t) {
  printf("# %-28s %5d %6d %7d %6d\n", what, t[0], t[1], t[2], t[3]);
}

static void print_table(int verbose) {
  qsort(rows, (size_t)n_rows, sizeof rows[0], cmp_row);
  printf("# %-28s %5s %6s %7s %6s\n", "operator", "run", "passed", "refused", "failed");
  for (int i = 0; i < n_rows; i++) {
    const op_row *r = &rows[i];
    if (verbose || r->run) print_row(r->op, (int[]){r->run, r->passed, r->refused, r->failed});
  }
  printf("#   (operators with no case run: %s)\n",
         verbose ? "listed" : "not listed; MLC_ONNX_VERBOSE=1 lists them");
}

/* Runs every case of directory data; adds to the operator rows and to
 * totals (run, passed, refused, failed). */
static void run_dir(const char *data, const char *label, const char *filter, int *totals) {
  DIR *d = opendir(data);
  if (!d) {
    printf("SKIP onnx_conformance %s: %s not found (Debian package libonnx-testdata)\n", label,
           data);
    return;
  }
  char **names = NULL;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || (filter && !strstr(e->d_name, filter))) continue;
    names = mlc_xrealloc(names, sizeof *names * (size_t)(n + 1));
    names[n++] = mlc_xstrdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, test_cmp_str);
  for (int i = 0; i < n; i++) {
    char dir[1024], model[1100], op[64], why[1024] = "", name[400];
    snprintf(dir, sizeof dir, "%s/%s", data, names[i]);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    struct stat st;
    if (stat(model, &st) != 0) {
      mlc_free(names[i]);
      continue;
    }
    case_op(model, names[i], op, sizeof op);
    op_row *r = row(op);
    int bound = 0;
    outcome o = run_case(dir, why, sizeof why, &bound);
    if (o != C_REFUSED && bound) n_bound_cases++;
    /* node/'s cases keep their old names; the others carry the folder */
    if (strcmp(label, "node") == 0) snprintf(name, sizeof name, "onnx_%s", names[i]);
    else snprintf(name, sizeof name, "onnx_%s_%s", label, names[i]);
    const char *want = refusal_expected(names[i]);
    if (want) {
      char rname[440], rwhy[1200];
      snprintf(rname, sizeof rname, "onnx_refuses_%s", names[i]);
      snprintf(rwhy, sizeof rwhy, "%s; want a refusal saying \"%s\"",
               o == C_REFUSED ? why : "it ran", want);
      test_report(rname, o == C_REFUSED && strstr(why, want), rwhy);
    }
    if (o == C_REFUSED) {
      r->refused++;
      totals[2]++;
      if (getenv("MLC_ONNX_VERBOSE")) printf("# refused %s/%s: %s\n", label, names[i], why);
      if (must_run_case(names[i])) test_report(name, false, why);
    } else {
      r->run++;
      r->passed += o == C_PASS;
      r->failed += o == C_FAIL;
      totals[0]++;
      totals[1] += o == C_PASS;
      totals[3] += o == C_FAIL;
      test_report(name, o == C_PASS, why);
    }
    mlc_free(names[i]);
  }
  mlc_free(names);
}

/* ---- refusals of altered models ------------------------------------------------ */

static Onnx__AttributeProto *find_attr(Onnx__ModelProto *mp, const char *op, const char *name) {
  const Onnx__GraphProto *g = mp->graph;
  for (size_t k = 0; g && k < g->n_node; k++) {
    if (!g->node[k]->op_type || strcmp(g->node[k]->op_type, op) != 0) continue;
    for (size_t i = 0; i < g->node[k]->n_attribute; i++)
      if (strcmp(g->node[k]->attribute[i]->name, name) == 0) return g->node[k]->attribute[i];
  }
  return NULL;
}

/* Each alters its model in place (values, or fewer entries: the unpacked
 * message is still freed as protobuf-c allocated it); false: the model is
 * not the one expected. */
static bool gemm_no_broadcast(Onnx__ModelProto *mp) {
  Onnx__AttributeProto *a = find_attr(mp, "Gemm", "broadcast");
  return a && (a->i = 0, true);
}

static bool add_no_broadcast(Onnx__ModelProto *mp) {
  Onnx__AttributeProto *a = find_attr(mp, "Add", "broadcast");
  return a && (a->i = 0, true);
}

static bool add_axis_no_broadcast(Onnx__ModelProto *mp) {
  Onnx__AttributeProto *a = find_attr(mp, "Add", "broadcast");
  return a && (strcpy(a->name, "axis"), a->i = 0, true);
}

static bool bn_training(Onnx__ModelProto *mp) {
  Onnx__AttributeProto *a = find_attr(mp, "BatchNormalization", "is_test");
  return a && (a->i = 0, true);
}

static bool conv1d_short_pads(Onnx__ModelProto *mp) {
  Onnx__AttributeProto *a = find_attr(mp, "Conv", "pads");
  return a && a->n_ints == 2 && (a->n_ints = 1, true);
}

static bool conv3d_short_pads(Onnx__ModelProto *mp) {
  Onnx__AttributeProto *a = find_attr(mp, "Conv", "pads");
  return a && a->n_ints == 6 && (a->n_ints = 4, true);
}

static bool maxpool1d_no_kernel(Onnx__ModelProto *mp) {
  Onnx__AttributeProto *a = find_attr(mp, "MaxPool", "kernel_shape");
  return a && a->n_ints == 1 && (strcpy(a->name, "strides"), true); /* kernel_shape gone */
}

/* PRelu's slope [C] on [N, C, L]: per channel at opset 6, no numpy
 * broadcast at opset 7. */
static bool prelu_opset7(Onnx__ModelProto *mp) {
  return mp->n_opset_import == 1 && (mp->opset_import[0]->version = 7, true);
}

static const struct {
  const char *dir, *name;
  bool (*alter)(Onnx__ModelProto *);
  const char *want;
} mutations[] = {
    {"pytorch-converted", "test_Linear", gemm_no_broadcast, "C is not [4, 8] and broadcast is 0"},
    {"pytorch-converted", "test_Softsign", add_no_broadcast, "the shapes differ and broadcast is 0"},
    {"pytorch-converted", "test_Softsign", add_axis_no_broadcast, "axis without broadcast"},
    {"pytorch-converted", "test_BatchNorm2d_eval", bn_training, "is_test 0"},
    {"pytorch-converted", "test_Conv1d", conv1d_short_pads, "pads must have 2 entries (a 1-D window)"},
    {"pytorch-converted", "test_MaxPool1d", maxpool1d_no_kernel, "kernel_shape is required"},
    {"pytorch-converted", "test_Conv3d_stride_padding", conv3d_short_pads, "pads must have 6 entries (a 3-D window)"},
    {"pytorch-converted", "test_PReLU_1d_multiparam", prelu_opset7, "shapes do not broadcast"},
};

/* Each model loads as it is and is refused, with the message, once
 * altered. */
static void run_mutations(const char *root) {
  for (size_t i = 0; i < MLC_COUNTOF(mutations); i++) {
    char path[1024], name[300], why[1200] = "";
    snprintf(path, sizeof path, "%s/%s/%s/model.onnx", root, mutations[i].dir, mutations[i].name);
    snprintf(name, sizeof name, "onnx_refuses_altered_%s_%zu", mutations[i].name, i);
    size_t len;
    mlc_error err;
    char *bytes = mlc_read_file(path, &len, &err);
    if (!bytes) {
      printf("SKIP %s: %s\n", name, err.msg);
      continue;
    }
    mlc_gmodule *m = mlc_graph_parse_onnx(path, bytes, len, NULL, &err);
    bool ok = m != NULL;
    if (!m) snprintf(why, sizeof why, "the unaltered model is refused: %s", err.msg);
    mlc_graph_free(m);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
    if (ok && !(mp && mutations[i].alter(mp))) {
      ok = false;
      snprintf(why, sizeof why, "the model is not as expected");
    }
    if (ok) {
      size_t plen = onnx__model_proto__get_packed_size(mp);
      uint8_t *packed = mlc_xmalloc(plen + 1);
      onnx__model_proto__pack(mp, packed);
      m = mlc_graph_parse_onnx(path, packed, plen, NULL, &err);
      ok = !m && strstr(err.msg, mutations[i].want);
      if (!ok) snprintf(why, sizeof why, "%s; want a refusal saying \"%s\"", m ? "loaded" : err.msg,
                        mutations[i].want);
      mlc_graph_free(m);
      mlc_free(packed);
    }
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    mlc_free(bytes);
    test_report(name, ok, why);
  }
}

int main(void) {
  const char *one = getenv("MLC_ONNX_TESTDATA");
  const char *filter = getenv("MLC_ONNX_FILTER");
  int n_dirs = one ? 1 : MLC_COUNTOF(data_dirs);
  int totals[MLC_COUNTOF(data_dirs)][4] = {{0}}, grand[4] = {0};
  for (int k = 0; k < n_dirs; k++) {
    char path[512];
    const char *label = one ? (strrchr(one, '/') ? strrchr(one, '/') + 1 : one) : data_dirs[k];
    if (one) snprintf(path, sizeof path, "%s", one);
    else snprintf(path, sizeof path, "%s/%s", DATA_ROOT, data_dirs[k]);
    run_dir(path, label, filter, totals[k]);
  }
  if (!one && !filter) run_mutations(DATA_ROOT);
  print_table(getenv("MLC_ONNX_VERBOSE") != NULL);
  printf("# %-28s %5s %6s %7s %6s\n", "directory", "run", "passed", "refused", "failed");
  for (int k = 0; k < n_dirs; k++) {
    print_row(one ? one : data_dirs[k], totals[k]);
    for (int j = 0; j < 4; j++) grand[j] += totals[k][j];
  }
  print_row("total", grand);
  printf("# %d of the cases run had parameter inputs (integer inputs, Clip bounds, BatchNorm\n"
         "# statistics, Reshape shapes, Slice starts, ...) bound to their test data as constants\n",
         n_bound_cases);
  return test_summary();
}
