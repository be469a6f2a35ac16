/* libFuzzer harness for the ONNX loader and what runs on a model that
 * loads: any bytes must load or be refused with a message, never crash,
 * leak, overflow an integer or read out of bounds. A model that loads is
 * run by the reference executor (inputs filled with a pattern), then
 * through every graph pass, each verified: a shape the importer got wrong
 * shows up there as an out-of-bounds access (arena allocations are
 * poisoned past their end under ASan).
 *
 *   make fuzz                       # build-fuzz/fuzz_onnx, seeds in build-fuzz/corpus
 *   build-fuzz/fuzz_onnx -max_total_time=600 build-fuzz/corpus/fuzz_onnx
 *
 * Seeds: the conformance models (libonnx-testdata), tests/onnx/ and
 * tests/onnx/overflow/ (integer shape chains: Reshape, Gather, Slice,
 * Concat, Expand, Tile, ConstantOfShape), and the committed corpus. */
#include "fuzz.h"
#include "frontend/frontend.h"
#include "graph/graph.h"

/* The reference executor's work is at most, per binding, its result's
 * elements times all its operands' (a matmul or conv reads fewer); past
 * this the model is only lowered, so each input runs in milliseconds. */
#define REFERENCE_WORK (INT64_C(1) << 24)

static bool small_enough(const mlc_gfunc *f) {
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    int64_t in = 0, out = mlc_gtype_numel(&b->var->type), work;
    for (int j = 0; j < b->n_args; j++) in += mlc_gtype_numel(&b->args[j]->type);
    if (out < 0 || mlc_mul_overflow(out, in, &work) || work > REFERENCE_WORK) return false;
  }
  return true;
}

static void free_arrays(mlc_array **v, int n) {
  for (int i = 0; i < n; i++) mlc_array_free(v[i]);
}

/* Every input filled with a pattern, the outputs allocated: false when
 * one is past the limits (the model then is not run). */
static bool make_arrays(const mlc_gfunc *f, mlc_array **in, mlc_array **out) {
  mlc_error err;
  bool ok = true;
  for (int i = 0; i < f->n_params; i++) {
    const mlc_gtype *t = &f->params[i]->type;
    in[i] = ok ? mlc_array_try_new(t->dtype, t->ndim, t->shape, "input", &err) : NULL;
    ok = in[i] != NULL;
    for (int64_t k = 0; ok && k < mlc_gtype_numel(t); k++)
      mlc_array_set(in[i], k, t->dtype == MLC_FLOAT32 ? (double)(k % 7) * 0.25 - 0.5 : k % 7 - 3);
  }
  for (int i = 0; i < f->n_outputs; i++) {
    const mlc_gtype *t = &f->outputs[i]->type;
    out[i] = ok ? mlc_array_try_new(t->dtype, t->ndim, t->shape, "output", &err) : NULL;
    ok = out[i] != NULL;
  }
  return ok;
}

/* call_extern bindings have no function here: the reference refuses them
 * with a message, which is fine. */
static void run_reference(const mlc_gmodule *m) {
  const mlc_gfunc *f = mlc_graph_main(m);
  if (!small_enough(f)) return;
  mlc_array **in = mlc_xmalloc(sizeof(mlc_array *) * (size_t)(f->n_params + 1));
  mlc_array **out = mlc_xmalloc(sizeof(mlc_array *) * (size_t)(f->n_outputs + 1));
  memset(in, 0, sizeof(mlc_array *) * (size_t)(f->n_params + 1));
  memset(out, 0, sizeof(mlc_array *) * (size_t)(f->n_outputs + 1));
  mlc_error err;
  if (make_arrays(f, in, out)) mlc_graph_reference(m, in, out, &err);
  free_arrays(in, f->n_params);
  free_arrays(out, f->n_outputs);
  mlc_free(in);
  mlc_free(out);
}

/* The model as given, else with the shape of a symbolic input named x or
 * input, or the token inputs of a language model: each --input-shape
 * must name an input of the model, so one list naming them all would
 * refuse nearly every model before its first node. */
static mlc_gmodule *load(const uint8_t *data, size_t size, mlc_error *err) {
  static const char *const shapes[][4] = {
      {NULL}, {"x=1,4", NULL}, {"input=1,3,8,8", NULL}, {"input_ids=1,4", NULL},
      {"input_ids=1,4", "token_type_ids=1,4", "attention_mask=1,4", NULL}};
  mlc_gmodule *m = NULL;
  for (int i = 0; !m && i < MLC_COUNTOF(shapes); i++) {
    m = mlc_graph_parse_onnx("fuzz.onnx", data, size, i ? shapes[i] : NULL, err);
    if (!m && !strstr(err->msg, "--input-shape")) break; /* refused for another reason */
  }
  return m;
}

/* The declared input shapes (what `--dim` alone completes shapes from):
 * each "name=d0,d1,..." with a '=' and no empty extent. */
static void declared_shapes(const uint8_t *data, size_t size) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  const char **decl = mlc_graph_onnx_declared_shapes(a, "fuzz.onnx", data, size, &err);
  for (int i = 0; decl && decl[i]; i++) {
    const char *eq = strchr(decl[i], '=');
    MLC_ASSERT(eq && !strstr(eq, ",,"));
  }
  mlc_arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlc_error err;
  declared_shapes(data, size);
  mlc_gmodule *m = load(data, size, &err);
  if (m) {
    run_reference(m);
    if (mlc_graph_run_pipeline(m, NULL, NULL, NULL, &err)) mlc_graph_verify(m, &err);
  }
  mlc_graph_free(m);
  return 0;
}
