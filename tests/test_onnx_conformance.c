/* ONNX's own backend tests (Debian's libonnx-testdata): every node case
 * under data/node/ whose model we load runs through the pipeline mlc-compile
 * uses (mlc_graph_run_pipeline) and then the TensorIR interpreter
 * (mlc_graph_execute, kernel NULL: fast to start, no LLVM compile per
 * case); outputs must match output_K.pb within ONNX's backend rule
 * |got - want| <= atol + rtol * |want| (rtol 1e-3, atol 1e-7). A case we
 * refuse (an op, attribute or dtype we do not support) is counted apart;
 * a refusal must come from the loader, never a crash. Prints a PASS/FAIL
 * line per case run and a per-operator table.
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
 * MLC_ONNX_TESTDATA overrides the data directory; MLC_ONNX_FILTER runs
 * only the cases whose name contains it. */
#include "graph/graph.h"
#include "onnx/onnx.pb-c.h"
#include "tests/test.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#define DATA_DIR "/usr/share/libonnx-testdata/data/node"
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

/* The op a case tests: its node's op_type, "(function body)" for the
 * *_expanded cases of several nodes. */
static void case_op(const char *model, char *op, size_t n) {
  size_t len;
  mlc_error err;
  snprintf(op, n, "(unreadable)");
  char *bytes = mlc_read_file(model, &len, &err);
  if (!bytes) return;
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
  if (mp && mp->graph && mp->graph->n_node == 1 && mp->graph->node[0]->op_type)
    snprintf(op, n, "%s", mp->graph->node[0]->op_type);
  else if (mp && mp->graph)
    snprintf(op, n, "(function body)");
  if (mp) onnx__model_proto__free_unpacked(mp, NULL);
  mlc_free(bytes);
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
    {"ReduceL1", 1},           {"ReduceL2", 1}, {"ReduceLogSum", 1}, {"ReduceLogSumExp", 1},
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
  float **want = mlc_xmalloc(sizeof *want * (size_t)(no + 1));
  outcome r = C_PASS;
  for (int i = 0; i < ni && r == C_PASS; i++) {
    mlc_gtype t;
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, data_index[i]);
    float *d = mlc_onnx_tensor_read(path, &t, &err);
    const mlc_gtype *p = &f->params[i]->type;
    if (!d) {
      snprintf(why, wn, "%s", err.msg);
      r = C_REFUSED; /* an input dtype we do not read */
    } else if (mlc_gtype_numel(&t) != mlc_gtype_numel(p)) {
      snprintf(why, wn, "input %d: %lld elements, the model says %lld", i,
               (long long)mlc_gtype_numel(&t), (long long)mlc_gtype_numel(p));
      r = C_FAIL;
    } else {
      in[i] = mlc_array_new(MLC_FLOAT32, p->ndim, p->shape);
      memcpy(in[i]->data, d, sizeof(float) * (size_t)mlc_gtype_numel(p));
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
    } else if (mlc_gtype_numel(&t) != mlc_gtype_numel(p)) {
      snprintf(why, wn, "output %d: %lld elements expected, the model gives %lld", i,
               (long long)mlc_gtype_numel(&t), (long long)mlc_gtype_numel(p));
      r = C_FAIL;
    } else {
      out[i] = mlc_array_new(MLC_FLOAT32, p->ndim, p->shape);
    }
  }
  if (r == C_PASS && (!mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err) ||
                      !mlc_graph_execute(m, NULL, NULL, in, out, &err))) {
    snprintf(why, wn, "%s", err.msg);
    r = C_FAIL;
  }
  for (int i = 0; i < no && r == C_PASS; i++)
    if (!close_enough(out[i], want[i], mlc_array_numel(out[i]), why, wn)) r = C_FAIL;
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

/* Cases that must run (a refusal fails them): name prefixes of the
 * operators and attribute variants the importer supports, so that support
 * cannot silently turn into refusals. Pow with a tensor exponent (float,
 * or integer constants), LayerNormalization with its Mean and InvStdDev
 * outputs. */
static const char *const must_run[] = {
    "test_pow_bcast_", "test_pow_example", "test_pow_types_float32_int",
    "test_layer_normalization_2d", "test_layer_normalization_3d", "test_layer_normalization_4d",
    "test_layer_normalization_default_axis",
};

static bool must_run_case(const char *name) {
  if (strstr(name, "_expanded")) return false; /* function bodies: other ops */
  if (strcmp(name, "test_pow") == 0) return true;
  for (size_t i = 0; i < MLC_COUNTOF(must_run); i++)
    if (strncmp(name, must_run[i], strlen(must_run[i])) == 0) return true;
  return false;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_row(const void *a, const void *b) {
  return strcmp(((const op_row *)a)->op, ((const op_row *)b)->op);
}

static void print_table(int verbose) {
  qsort(rows, (size_t)n_rows, sizeof rows[0], cmp_row);
  int t[4] = {0};
  printf("# %-28s %5s %6s %7s %6s\n", "operator", "run", "passed", "refused", "failed");
  for (int i = 0; i < n_rows; i++) {
    const op_row *r = &rows[i];
    t[0] += r->run, t[1] += r->passed, t[2] += r->refused, t[3] += r->failed;
    if (verbose || r->run)
      printf("# %-28s %5d %6d %7d %6d\n", r->op, r->run, r->passed, r->refused, r->failed);
  }
  printf("# %-28s %5d %6d %7d %6d   (operators with no case run: %s)\n", "total", t[0], t[1],
         t[2], t[3], verbose ? "listed" : "not listed; MLC_ONNX_VERBOSE=1 lists them");
}

int main(void) {
  const char *data = getenv("MLC_ONNX_TESTDATA") ? getenv("MLC_ONNX_TESTDATA") : DATA_DIR;
  const char *filter = getenv("MLC_ONNX_FILTER");
  DIR *d = opendir(data);
  if (!d) {
    printf("SKIP onnx_conformance: %s not found (Debian package libonnx-testdata)\n", data);
    return test_summary();
  }
  char **names = NULL;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || (filter && !strstr(e->d_name, filter))) continue;
    names = mlc_xrealloc(names, sizeof *names * (size_t)(n + 1));
    names[n++] = mlc_xstrdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    char dir[1024], model[1100], op[64], why[1024] = "", name[300];
    snprintf(dir, sizeof dir, "%s/%s", data, names[i]);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    struct stat st;
    if (stat(model, &st) != 0) continue;
    case_op(model, op, sizeof op);
    op_row *r = row(op);
    int bound = 0;
    outcome o = run_case(dir, why, sizeof why, &bound);
    if (o != C_REFUSED && bound) n_bound_cases++;
    snprintf(name, sizeof name, "onnx_%s", names[i]);
    if (o == C_REFUSED) {
      r->refused++;
      if (getenv("MLC_ONNX_VERBOSE")) printf("# refused %s: %s\n", names[i], why);
      if (must_run_case(names[i])) test_report(name, false, why);
    } else {
      r->run++;
      r->passed += o == C_PASS;
      r->failed += o == C_FAIL;
      test_report(name, o == C_PASS, why);
    }
    mlc_free(names[i]);
  }
  mlc_free(names);
  print_table(getenv("MLC_ONNX_VERBOSE") != NULL);
  printf("# %d of the cases run had parameter inputs (integer inputs, Clip bounds, BatchNorm\n"
         "# statistics, Reshape shapes, Slice starts, ...) bound to their test data as constants\n",
         n_bound_cases);
  return test_summary();
}
