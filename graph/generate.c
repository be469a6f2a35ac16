/* Greedy generation with a KV cache from two compiled modules of one size
 * each. Prefill takes the prompt as `input_ids` [1, seq] and gives logits
 * [1, seq, vocab] and, per layer and kind, a cache [1, seq, ...]; the
 * decode step takes `input_ids` and `position_ids` [1, 1] and the caches
 * [1, past, ...] and gives logits [1, 1, vocab] and the caches with one
 * row appended (append bindings: mlc_gbinding_appends), in the order of
 * prefill's. The generator allocates each cache once for the bound;
 * prefill writes its first rows and each step appends one in place, so no
 * step copies or allocates anything. */
#include "graph/graph_impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct gen_cache {
  int step_in, step_out; /* the step's param and output */
  int64_t row;           /* elements per position */
  float *data;           /* max_len rows */
} gen_cache;

struct mlc_ggen {
  const mlc_gmodule *prefill, *step;
  mlc_grunner *pr, *sr;
  int ids_param, pos_param; /* the step's */
  int n_caches;
  gen_cache *caches;
  int64_t vocab;
  int64_t max_prompt, max_len; /* prompt rows; rows a cache holds */
  float *logits;               /* max_prompt rows of vocab */
  void **in, **out;            /* the step's argument lists */
};

static int param_named(const mlc_gfunc *f, const char *name) {
  for (int i = 0; i < f->n_params; i++)
    if (strcmp(f->params[i]->name, name) == 0) return i;
  return -1;
}

/* Whether v is [1, n, ...] with n the module's size (coefficient 1) and the
 * other extents fixed; *row: the elements per position. */
static bool positions_of(const mlc_gvar *v, int64_t *row) {
  const mlc_gtype *t = &v->type;
  if (!v->dims || t->ndim < 2 || t->shape[0] != 1 || v->dims[1].coef[0] != 1) return false;
  *row = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (d != 1 && v->dims[d].coef[0] != 0) return false;
    if (d >= 2) *row *= t->shape[d];
  }
  return true;
}

/* Whether v's shape is the same at every size. */
static bool fixed(const mlc_gvar *v) {
  for (int d = 0; v->dims && d < v->type.ndim; d++)
    if (v->dims[d].coef[0]) return false;
  return true;
}

static bool one_id(const mlc_gfunc *f, int i, const char *name, mlc_error *err) {
  if (i < 0) return mlc_error_set(err, "the decode step has no input '%s'", name);
  const mlc_gtype *t = &f->params[i]->type;
  if (t->dtype != MLC_INT64 || mlc_gtype_numel(t) != 1 || !fixed(f->params[i]))
    return mlc_error_set(err, "the decode step's input '%s' is not one int64 ([1, 1])", name);
  return true;
}

/* The step's output k appends to its param *in; false if it is no append. */
static bool appended(const mlc_gfunc *f, int k, int *in) {
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    if (!mlc_gbinding_appends(b) || b->var != f->outputs[k]) continue;
    for (*in = 0; *in < f->n_params; (*in)++)
      if (f->params[*in] == b->args[0]) return true;
  }
  return false;
}

/* The logits output of a module: [1, n, vocab] (n its size: prefill) or
 * [1, 1, vocab] (the step). */
static bool logits_of(const mlc_gmodule *m, bool one_row, int64_t *vocab, mlc_error *err) {
  const mlc_gvar *v = mlc_graph_main(m)->outputs[0];
  int64_t row;
  bool ok = v->type.dtype == MLC_FLOAT32 && v->type.ndim == 3 &&
            (one_row ? fixed(v) && v->type.shape[0] == 1 && v->type.shape[1] == 1
                     : positions_of(v, &row));
  if (!ok)
    return mlc_error_set(err, "%s's first output (%s) is not the logits, float32 [1, %s, vocab]",
                         one_row ? "the decode step" : "prefill", v->name,
                         one_row ? "1" : m->sizes[0].name);
  *vocab = v->type.shape[2];
  return true;
}

static bool match_modules(mlc_ggen *g, mlc_error *err) {
  const mlc_gfunc *pf = mlc_graph_main(g->prefill), *sf = mlc_graph_main(g->step);
  if (g->prefill->n_sizes != 1 || g->step->n_sizes != 1)
    return mlc_error_set(err, "prefill and the decode step are each built for one size (the "
                              "prompt's length; the positions cached)");
  int64_t row, sv;
  if (pf->n_params != 1 || pf->params[0]->type.dtype != MLC_INT64 ||
      !positions_of(pf->params[0], &row) || row != 1)
    return mlc_error_set(err, "prefill takes one input, the token ids: int64 [1, %s]",
                         g->prefill->sizes[0].name);
  if (!logits_of(g->prefill, false, &g->vocab, err) || !logits_of(g->step, true, &sv, err))
    return false;
  if (sv != g->vocab)
    return mlc_error_set(err, "prefill's vocabulary is %lld, the decode step's %lld",
                         (long long)g->vocab, (long long)sv);
  g->ids_param = param_named(sf, "input_ids");
  g->pos_param = param_named(sf, "position_ids");
  if (!one_id(sf, g->ids_param, "input_ids", err) || !one_id(sf, g->pos_param, "position_ids", err))
    return false;
  g->n_caches = pf->n_outputs - 1;
  if (g->n_caches < 1 || sf->n_outputs != pf->n_outputs || sf->n_params != g->n_caches + 2)
    return mlc_error_set(err, "prefill gives %d caches and the decode step %d outputs and %d "
                              "inputs: expected logits and the same caches out of both, and the "
                              "caches, input_ids and position_ids into the step",
                         pf->n_outputs - 1, sf->n_outputs, sf->n_params);
  g->caches = mlc_xmalloc(sizeof *g->caches * (size_t)g->n_caches);
  for (int c = 0; c < g->n_caches; c++) {
    gen_cache *k = &g->caches[c];
    int64_t srow;
    k->step_out = c + 1;
    if (!positions_of(pf->outputs[c + 1], &k->row) ||
        pf->outputs[c + 1]->type.dtype != MLC_FLOAT32)
      return mlc_error_set(err, "prefill's output %s is no cache: float32 [1, %s, ...]",
                           pf->outputs[c + 1]->name, g->prefill->sizes[0].name);
    if (!appended(sf, c + 1, &k->step_in))
      return mlc_error_set(err, "the decode step's output %s does not append to an input (the "
                                "append pass makes a concat of a cache input and the new rows "
                                "one)", sf->outputs[c + 1]->name);
    if (!positions_of(sf->params[k->step_in], &srow) || srow != k->row)
      return mlc_error_set(err, "the decode step's cache %s holds rows of %lld elements, "
                                "prefill's %s of %lld", sf->params[k->step_in]->name,
                           (long long)srow, pf->outputs[c + 1]->name, (long long)k->row);
  }
  return true;
}

static bool alloc_buffers(mlc_ggen *g, mlc_error *err) {
  g->max_prompt = g->prefill->sizes[0].hi;
  g->max_len = g->step->sizes[0].hi + 1;
  if (g->max_prompt > g->max_len) g->max_len = g->max_prompt;
  g->logits = malloc(sizeof(float) * (size_t)(g->max_prompt * g->vocab));
  bool ok = g->logits != NULL;
  for (int c = 0; ok && c < g->n_caches; c++)
    ok = (g->caches[c].data = malloc(sizeof(float) * (size_t)(g->max_len * g->caches[c].row)));
  const mlc_gfunc *sf = mlc_graph_main(g->step);
  g->in = mlc_xmalloc(sizeof *g->in * (size_t)sf->n_params);
  g->out = mlc_xmalloc(sizeof *g->out * (size_t)sf->n_outputs);
  return ok || mlc_error_set(err, "out of memory: caches of %lld positions", (long long)g->max_len);
}

mlc_ggen *mlc_graph_generator_new(const mlc_gmodule *prefill, mlc_grunner *pr,
                                  const mlc_gmodule *step, mlc_grunner *sr, mlc_error *err) {
  mlc_ggen *g = mlc_xmalloc(sizeof *g);
  *g = (mlc_ggen){.prefill = prefill, .step = step, .pr = pr, .sr = sr};
  if (!match_modules(g, err) || !alloc_buffers(g, err)) {
    mlc_graph_generator_free(g);
    return NULL;
  }
  return g;
}

void mlc_graph_generator_free(mlc_ggen *g) {
  if (!g) return;
  for (int c = 0; g->caches && c < g->n_caches; c++) free(g->caches[c].data);
  mlc_free(g->caches);
  free(g->logits);
  mlc_free(g->in);
  mlc_free(g->out);
  mlc_free(g);
}

int64_t mlc_graph_generator_vocab(const mlc_ggen *g) { return g->vocab; }

void mlc_graph_generator_bounds(const mlc_ggen *g, int64_t *max_prompt, int64_t *max_len) {
  *max_prompt = g->max_prompt;
  *max_len = g->step->sizes[0].hi + 1;
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The first largest element's index (torch.argmax's choice among ties). */
static int64_t argmax(const float *x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

static bool prefill(mlc_ggen *g, const int64_t *prompt, int64_t n, mlc_error *err) {
  const mlc_gfunc *pf = mlc_graph_main(g->prefill);
  void **out = mlc_xmalloc(sizeof *out * (size_t)pf->n_outputs);
  out[0] = g->logits;
  for (int c = 0; c < g->n_caches; c++) out[c + 1] = g->caches[c].data;
  void *in[1] = {(void *)prompt};
  bool ok = mlc_graph_runner_run_at(g->pr, &n, in, out, err);
  mlc_free(out);
  return ok || mlc_error_prefix(err, "prefill");
}

/* One decode step: token at position pos (past = pos rows cached) into
 * logits. */
static bool step(mlc_ggen *g, int64_t token, int64_t pos, float *logits, mlc_error *err) {
  int64_t ids[1] = {token}, where[1] = {pos};
  g->in[g->ids_param] = ids;
  g->in[g->pos_param] = where;
  g->out[0] = logits;
  for (int c = 0; c < g->n_caches; c++) {
    g->in[g->caches[c].step_in] = g->caches[c].data;
    g->out[g->caches[c].step_out] = g->caches[c].data;
  }
  return mlc_graph_runner_run_at(g->sr, &pos, g->in, g->out, err) ||
         mlc_error_prefix(err, "decode step at position %lld", (long long)pos);
}

bool mlc_graph_generate(mlc_ggen *g, const int64_t *prompt, int64_t n_prompt, int64_t n_tokens,
                        int64_t *tokens, float *logits, mlc_ggen_stats *st, mlc_error *err) {
  *st = (mlc_ggen_stats){0};
  if (n_prompt < 1 || n_prompt > g->max_prompt)
    return mlc_error_set(err, "a prompt of %lld tokens: prefill is built for 1..%lld",
                         (long long)n_prompt, (long long)g->max_prompt);
  int64_t last = n_prompt + n_tokens - 2; /* the last step's position */
  if (n_tokens < 1 || (n_tokens > 1 && (last < g->step->sizes[0].lo || last > g->step->sizes[0].hi)))
    return mlc_error_set(err, "%lld tokens after a prompt of %lld: the decode step is built for "
                              "positions %lld..%lld",
                         (long long)n_tokens, (long long)n_prompt, (long long)g->step->sizes[0].lo,
                         (long long)g->step->sizes[0].hi);
  if (n_tokens > 1 && n_prompt < g->step->sizes[0].lo)
    return mlc_error_set(err, "a prompt of %lld tokens: the decode step starts at position %lld",
                         (long long)n_prompt, (long long)g->step->sizes[0].lo);
  double t0 = seconds();
  if (!prefill(g, prompt, n_prompt, err)) return false;
  st->prefill_s = seconds() - t0;
  st->n_prompt = n_prompt;
  const float *row = g->logits + (n_prompt - 1) * g->vocab;
  if (logits) memcpy(logits, row, sizeof(float) * (size_t)g->vocab);
  tokens[0] = argmax(row, g->vocab);
  float *buf = g->logits; /* prefill's rows are read; the steps reuse the first */
  t0 = seconds();
  for (int64_t t = 1; t < n_tokens; t++) {
    float *out = logits ? logits + t * g->vocab : buf;
    if (!step(g, tokens[t - 1], n_prompt + t - 1, out, err)) return false;
    tokens[t] = argmax(out, g->vocab);
    st->n_decoded++;
  }
  st->decode_s = seconds() - t0;
  return true;
}
