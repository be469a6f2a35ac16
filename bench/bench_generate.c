/* Generation with a KV cache (`make bench BENCH=generate`): GPT-2 small
 * (models/gpt2_small_prefill.onnx and _step.onnx from `make models`; with
 * --smoke the tiny one of tests/onnx/lm/) built once for every length up
 * to --max-len, as mlc-generate builds it, optionally tuned (--trials over
 * the kernels of both), greedily generating --tokens tokens after the
 * prompt PyTorch generated from when the models were exported.
 *
 * Rounds, each the machine's read bandwidth (2 threads of the runtime's
 * thread team summing a buffer far larger than the caches, the best of 3
 * passes), one generation of ours and one of PyTorch's
 * (bench/torch_generate.py: eager, its own KV cache, 2 threads), so that
 * all three see the same load: on a shared machine the bandwidth left to
 * us moves by half from minute to minute. Ours must give PyTorch's tokens (a step where
 * PyTorch's two largest logits lie within 1e-4 relative may differ, and
 * is reported) with every logit row within 1e-4 relative of PyTorch's.
 *
 * With the venv of `make bench-deps`, ONNX Runtime and OpenVINO generate in
 * the same rounds from the same two models (bench/engine_generate.py),
 * their tokens checked against the exported ones.
 *
 * Cases: prefill of the prompt (ms) and decode (ms per token) against
 * PyTorch's, and against each engine's; decode's bytes per second against
 * the read bandwidth, the
 * bytes of a step being the weights it reads (all of each weight but the
 * embedding tables that are only gathered: a row each) and the cache
 * rows its attention reads (2 per layer and position), averaged over the
 * steps. The goal: decode at 80% of the bandwidth or more. */
#include "bench/results.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "targets/runtime/mlcrt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 2

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_generate: %s: %s\n", what, msg);
  exit(1);
}

typedef struct setup {
  const char *prefix; /* the data: PREFIX prompt.npy, tokens.npy, logits.npy */
  const char *prefill, *step, *config, *name;
  int64_t max_len, tokens;
  int trials, rounds;
  int64_t bandwidth_bytes;
} setup;

static void parse_args(int argc, char **argv, setup *s, const char **results) {
  const char *env = getenv("MLC_BENCH_TRIALS");
  *s = (setup){"models/gpt2_small_gen_", "models/gpt2_small_prefill.onnx",
               "models/gpt2_small_step.onnx", "real", "gpt2_small", 256, 64,
               env && atoi(env) > 0 ? atoi(env) : 0, 5, INT64_C(1) << 30};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--smoke") == 0) {
      s->prefix = "tests/onnx/lm/gpt2_gen_";
      s->prefill = "tests/onnx/lm/gpt2_prefill_tiny.onnx";
      s->step = "tests/onnx/lm/gpt2_step_tiny.onnx";
      s->config = "tiny";
      s->name = "gpt2_tiny";
      s->max_len = 64;
      s->tokens = 57;
      s->bandwidth_bytes = INT64_C(1) << 28;
    } else if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) {
      *results = argv[++i];
    } else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) {
      s->trials = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      s->rounds = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench_generate [--smoke] [--trials N] [--rounds N] [--results FILE]\n");
      exit(2);
    }
  }
  if (s->rounds < 1) s->rounds = 1;
}

/* ---- read bandwidth ------------------------------------------------------------------------- */

typedef float vec8 __attribute__((vector_size(32)));

typedef struct reader {
  const vec8 *data;
  int64_t per_chunk; /* vectors */
  float sums[THREADS];
} reader;

static void read_chunk(int64_t i, void *closure) {
  reader *r = closure;
  const vec8 *p = r->data + i * r->per_chunk;
  vec8 a = {0}, b = {0}, c = {0}, d = {0};
  for (int64_t k = 0; k < r->per_chunk; k += 4) {
    a += p[k];
    b += p[k + 1];
    c += p[k + 2];
    d += p[k + 3];
  }
  vec8 s = a + b + c + d;
  r->sums[i] = s[0] + s[7];
}

/* GB/s of the best of `passes` reads of r's buffer (bytes) by THREADS
 * threads. */
static double read_bandwidth(reader *r, int64_t bytes, int passes) {
  double best = 0;
  for (int p = 0; p < passes; p++) {
    double t0 = bench_now_ms();
    mlc_parallel_for(THREADS, read_chunk, r, THREADS, INT64_C(1) << 30);
    double ms = bench_now_ms() - t0;
    if (ms > 0 && (double)bytes / ms / 1e6 > best) best = (double)bytes / ms / 1e6;
  }
  return best;
}

/* ---- ours ----------------------------------------------------------------------------------- */

typedef struct built {
  mlc_gmodule *m;
  mlc_gcompiled c;
  mlc_grunner *r;
} built;

static void build(built *b, const char *path, const char *prefix, int64_t hi, const mlc_target *t,
                  const char *db) {
  mlc_error err;
  b->m = mlc_graph_load_dynamic(path, 1, hi, 0, &err);
  mlc_gcompile_options o = {.db_path = db, .symbol_prefix = prefix};
  if (!b->m || !mlc_graph_compile(b->m, t, &o, &b->c, &err) ||
      !(b->r = mlc_graph_runner_new(b->m, &b->c, &err)))
    die(path, err.msg);
}

static void unbuild(built *b) {
  mlc_graph_runner_free(b->r);
  mlc_gcompiled_free(&b->c);
  mlc_graph_free(b->m);
}

/* Bytes of weights one run of m reads: each weight a kernel reads, whole,
 * but a table a gather reads (its rows: the result's bytes). */
static int64_t weight_bytes(const mlc_gmodule *m) {
  const mlc_gfunc *f = mlc_graph_main(m);
  int64_t n = 0;
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *b = &f->bindings[i];
    for (int j = 0; j < b->n_args; j++) {
      const mlc_gvar *v = mlc_gfunc_storage(f, b->args[j]);
      if (v->kind != MLC_GVAR_CONST) continue;
      n += b->op == MLC_GOP_GATHER && j == 0 ? mlc_gtype_bytes(&b->var->type) : mlc_gtype_bytes(&v->type);
    }
  }
  return n;
}

/* Bytes of cache one position holds across the step's caches. */
static int64_t cache_row_bytes(const mlc_gmodule *m) {
  const mlc_gfunc *f = mlc_graph_main(m);
  int64_t n = 0;
  for (int i = 0; i < f->n_bindings; i++)
    if (mlc_gbinding_appends(&f->bindings[i])) {
      const mlc_gtype *t = &f->bindings[i].args[0]->type;
      n += mlc_gtype_bytes(t) / t->shape[1];
    }
  return n;
}

/* ---- PyTorch -------------------------------------------------------------------------------- */

typedef struct torch {
  bench_coprocess cp;
  char version[64];
  bool tokens_match;
} torch;

static bool torch_start(torch *t, const setup *s) {
  char tokens[32], threads[16], line[512];
  snprintf(tokens, sizeof tokens, "%lld", (long long)s->tokens);
  snprintf(threads, sizeof threads, "%d", THREADS);
  char *argv[] = {"/usr/bin/python3", MLC_SOURCE_DIR "/bench/torch_generate.py", "--data",
                  (char *)s->prefix, "--config", (char *)s->config, "--tokens", tokens,
                  "--threads", threads, NULL};
  memset(t, 0, sizeof *t);
  if (!bench_coprocess_start(&t->cp, argv, NULL, NULL, line, sizeof line)) return false;
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *j = mlc_json_parse(a, line, strlen(line), &err);
  if (!j) die("torch_generate.py", err.msg);
  const mlc_json *v = mlc_json_get(j, "torch");
  snprintf(t->version, sizeof t->version, "%s", v && v->kind == MLC_JSON_STRING ? v->str : "?");
  v = mlc_json_get(j, "tokens_match");
  t->tokens_match = v && v->kind == MLC_JSON_BOOL && v->boolean;
  mlc_arena_free(a);
  return true;
}

/* One generation of a coprocess: cmd sent to it (who: its script, for
 * messages), its answer's prefill ms and decode ms in all. */
static void coprocess_run(bench_coprocess *cp, const char *who, const char *cmd, double *prefill_ms,
                          double *decode_ms) {
  fprintf(cp->to, "%s\n", cmd);
  fflush(cp->to);
  char line[512];
  if (!fgets(line, sizeof line, cp->from)) die(who, "no answer");
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *j = mlc_json_parse(a, line, strlen(line), &err);
  const mlc_json *p = j ? mlc_json_get(j, "prefill_ms") : NULL, *d = j ? mlc_json_get(j, "decode_ms") : NULL;
  if (!p || !d || p->kind != MLC_JSON_NUMBER || d->kind != MLC_JSON_NUMBER) die(who, line);
  *prefill_ms = p->number;
  *decode_ms = d->number;
  mlc_arena_free(a);
}

/* ---- ONNX Runtime and OpenVINO ------------------------------------------------------------- */

/* bench/engine_generate.py in the venv of `make bench-deps`, on the same
 * prefill and step models: per engine (ort, ov) whether it runs and gave
 * the exported tokens, else why not. */
enum { N_ENGINES = 2 };
static const char *const engine_cmd[N_ENGINES] = {"ort", "ov"};
static const char *const engine_label[N_ENGINES] = {"onnxruntime", "openvino"};

typedef struct engines {
  bench_coprocess cp;
  bool started, have[N_ENGINES];
  char version[N_ENGINES][96], note[N_ENGINES][256];
} engines;

/* The venv's python, next to the build's bench/ directory; NULL without it. */
static const char *venv_python(mlc_arena *a) {
  char build[4096];
  if (!bench_build_dir(build, sizeof build)) return NULL;
  const char *py = mlc_arena_printf(a, "%s/bench-venv/bin/python", build);
  return access(py, X_OK) == 0 ? py : NULL;
}

static void engines_start(engines *e, const setup *s, mlc_arena *a) {
  memset(e, 0, sizeof *e);
  for (int k = 0; k < N_ENGINES; k++)
    snprintf(e->note[k], sizeof e->note[k], "not installed (make bench-deps)");
  const char *py = venv_python(a);
  if (!py) return;
  char tokens[32], threads[16], line[2048];
  snprintf(tokens, sizeof tokens, "%lld", (long long)s->tokens);
  snprintf(threads, sizeof threads, "%d", THREADS);
  char *argv[] = {(char *)py, MLC_SOURCE_DIR "/bench/engine_generate.py", "--prefill",
                  (char *)s->prefill, "--step", (char *)s->step, "--data", (char *)s->prefix,
                  "--tokens", tokens, "--threads", threads, NULL};
  if (!(e->started = bench_coprocess_start(&e->cp, argv, NULL, NULL, line, sizeof line))) {
    for (int k = 0; k < N_ENGINES; k++)
      snprintf(e->note[k], sizeof e->note[k], "engine_generate.py failed to start");
    return;
  }
  mlc_error err;
  mlc_json *j = mlc_json_parse(a, line, strlen(line), &err);
  if (!j) die("engine_generate.py", err.msg);
  for (int k = 0; k < N_ENGINES; k++) {
    const mlc_json *v = mlc_json_get(j, mlc_arena_printf(a, "%s_version", engine_cmd[k]));
    const mlc_json *ok = mlc_json_get(j, mlc_arena_printf(a, "%s_tokens_match", engine_cmd[k]));
    const mlc_json *why = mlc_json_get(j, mlc_arena_printf(a, "%s_error", engine_cmd[k]));
    /* "2026.4.1-22982-..." -> "2026.4.1" */
    snprintf(e->version[k], sizeof e->version[k], "%.*s",
             v && v->kind == MLC_JSON_STRING ? (int)strcspn(v->str, "-") : 1,
             v && v->kind == MLC_JSON_STRING ? v->str : "?");
    e->have[k] = ok && ok->kind == MLC_JSON_BOOL && ok->boolean;
    snprintf(e->note[k], sizeof e->note[k], "%s",
             e->have[k]                                ? ""
             : why && why->kind == MLC_JSON_STRING ? why->str
                                                   : "its tokens are not the exported ones");
  }
}

/* ---- checks --------------------------------------------------------------------------------- */

static void *read_npy(const char *prefix, const char *name, mlc_gtype *t) {
  char path[512];
  mlc_error err;
  snprintf(path, sizeof path, "%s%s.npy", prefix, name);
  void *d = mlc_npy_read(path, t, &err);
  if (!d) die(path, err.msg);
  return d;
}

/* Our tokens and logits against PyTorch's: a differing token only where
 * PyTorch's two largest logits are within 1e-4 relative (counted in
 * *near_ties), and then nothing after it is compared; the largest
 * relative error of the logits rows compared. */
static double check_against_pytorch(const setup *s, const int64_t *tokens, const float *logits,
                                    int64_t vocab, int *near_ties) {
  mlc_gtype tt, lt;
  int64_t *want = read_npy(s->prefix, "tokens", &tt);
  float *ref = read_npy(s->prefix, "logits", &lt);
  if (mlc_gtype_numel(&tt) < s->tokens || mlc_gtype_numel(&lt) < s->tokens * vocab)
    die(s->prefix, "fewer reference tokens than --tokens");
  double worst = 0;
  *near_ties = 0;
  for (int64_t t = 0; t < s->tokens; t++) {
    const float *row = ref + t * vocab, *got = logits + t * vocab;
    double scale = 0, e = 0, top = -INFINITY, second = -INFINITY;
    for (int64_t k = 0; k < vocab; k++) {
      scale = fmax(scale, fabs(row[k]));
      if (row[k] > top) second = top, top = row[k];
      else if (row[k] > second) second = row[k];
    }
    for (int64_t k = 0; k < vocab; k++) e = fmax(e, fabs(got[k] - row[k]) / scale);
    worst = fmax(worst, e);
    if (tokens[t] != want[t]) {
      if ((top - second) > 1e-4 * fabs(top)) {
        fprintf(stderr, "bench_generate: token %lld is %lld, PyTorch's %lld\n", (long long)t,
                (long long)tokens[t], (long long)want[t]);
        die("generation", "a token differs from PyTorch's where its logits are no near tie");
      }
      (*near_ties)++;
      printf("# token %lld: %lld vs PyTorch's %lld at a near tie; the rest not compared\n",
             (long long)t, (long long)tokens[t], (long long)want[t]);
      break;
    }
  }
  mlc_free(want);
  mlc_free(ref);
  return worst;
}

int main(int argc, char **argv) {
  const char *results = "bench/results.json";
  setup s;
  parse_args(argc, argv, &s, &results);
  if (access(s.prefill, R_OK) != 0 || access(s.step, R_OK) != 0) {
    printf("bench_generate: skipped: %s missing (`make models` exports it; needs python3-torch)\n",
           s.prefill);
    return 0;
  }
  mlc_error err;
  mlc_target t;
  if (!mlc_target_parse("llvm", &t, &err)) die("llvm", err.msg);
  vec8 *buf = aligned_alloc(64, (size_t)s.bandwidth_bytes);
  if (!buf) die("bandwidth", "out of memory");
  memset(buf, 1, (size_t)s.bandwidth_bytes);
  reader rd = {buf, s.bandwidth_bytes / (int64_t)sizeof(vec8) / THREADS, {0}};
  printf("# %s: read bandwidth now %.1f GB/s (%d threads, %lld MiB, best of 3)\n", s.name,
         read_bandwidth(&rd, s.bandwidth_bytes, 3), THREADS, (long long)(s.bandwidth_bytes >> 20));
  fflush(stdout);

  char db[96];
  snprintf(db, sizeof db, "/tmp/bench_generate_%d.db", (int)getpid());
  built pre = {0}, step = {0};
  double t0 = bench_now_ms();
  build(&pre, s.prefill, "prefill", s.max_len, &t, "/nonexistent/untuned.db");
  build(&step, s.step, "step", s.max_len - 1, &t, "/nonexistent/untuned.db");
  double tune_s = 0;
  if (s.trials > 0) { /* tuned: both modules into one database, then built from it */
    bench_remove_db(db);
    double t1 = bench_now_ms();
    if (!bench_tune_model(db, pre.m, &t, s.trials, "bench_generate", &err) ||
        !bench_tune_model(db, step.m, &t, s.trials, "bench_generate", &err))
      die("tuning", err.msg);
    tune_s = (bench_now_ms() - t1) / 1e3;
    unbuild(&pre);
    unbuild(&step);
    build(&pre, s.prefill, "prefill", s.max_len, &t, db);
    build(&step, s.step, "step", s.max_len - 1, &t, db);
    bench_remove_db(db);
  }
  printf("# built in %.1f s (tuning %.1f s, %d trials per model)\n",
         (bench_now_ms() - t0) / 1e3 - tune_s, tune_s, s.trials);
  mlc_ggen *g = mlc_graph_generator_new(pre.m, pre.r, step.m, step.r, &err);
  if (!g) die("generator", err.msg);
  int64_t vocab = mlc_graph_generator_vocab(g);
  mlc_gtype pt;
  int64_t *prompt = read_npy(s.prefix, "prompt", &pt), n_prompt = mlc_gtype_numel(&pt);
  int64_t *tokens = mlc_xmalloc(sizeof *tokens * (size_t)s.tokens);
  float *logits = mlc_xmalloc(sizeof *logits * (size_t)(s.tokens * vocab));
  mlc_ggen_stats st;
  if (!mlc_graph_generate(g, prompt, n_prompt, s.tokens, tokens, logits, &st, &err))
    die("generation", err.msg);
  int near_ties;
  double rel = check_against_pytorch(&s, tokens, logits, vocab, &near_ties);
  if (rel > 1e-4) die("generation", "logits differ from PyTorch's by more than 1e-4 relative");
  printf("# tokens: PyTorch's%s; logits within %.2g relative of PyTorch's\n",
         near_ties ? " up to a near tie" : ", all of them", rel);

  torch tc;
  bool have_torch = torch_start(&tc, &s);
  if (have_torch && !tc.tokens_match) die("torch_generate.py", "PyTorch's tokens are not those exported");
  mlc_arena *a = mlc_arena_new();
  engines eng;
  engines_start(&eng, &s, a);
  double *ours_p = mlc_xmalloc(sizeof(double) * (size_t)s.rounds * (5 + 2 * N_ENGINES));
  double *ours_d = ours_p + s.rounds, *torch_p = ours_d + s.rounds, *torch_d = torch_p + s.rounds;
  double *bws = torch_d + s.rounds, *eng_p = bws + s.rounds, *eng_d = eng_p + N_ENGINES * s.rounds;
  for (int r = 0; r < s.rounds; r++) {
    bws[r] = read_bandwidth(&rd, s.bandwidth_bytes, 3);
    if (!mlc_graph_generate(g, prompt, n_prompt, s.tokens, tokens, NULL, &st, &err))
      die("generation", err.msg);
    ours_p[r] = st.prefill_s * 1e3;
    ours_d[r] = st.decode_s * 1e3 / (double)st.n_decoded;
    if (have_torch) {
      coprocess_run(&tc.cp, "torch_generate.py", "run", &torch_p[r], &torch_d[r]);
      torch_d[r] /= (double)st.n_decoded;
    }
    for (int k = 0; k < N_ENGINES; k++)
      if (eng.have[k]) {
        coprocess_run(&eng.cp, "engine_generate.py", mlc_arena_printf(a, "run %s", engine_cmd[k]),
                      &eng_p[k * s.rounds + r], &eng_d[k * s.rounds + r]);
        eng_d[k * s.rounds + r] /= (double)st.n_decoded;
      }
  }
  free(buf);
  double op = bench_median(ours_p, s.rounds), od = bench_median(ours_d, s.rounds);
  double bw = bench_median(bws, s.rounds);
  double tp = have_torch ? bench_median(torch_p, s.rounds) : 0;
  double td = have_torch ? bench_median(torch_d, s.rounds) : 0;
  /* a step at position p reads the weights and p + 1 rows of every cache */
  double avg_rows = (double)n_prompt + (double)(s.tokens - 2) / 2.0 + 1.0;
  double bytes = (double)weight_bytes(step.m) + avg_rows * (double)cache_row_bytes(step.m);
  double gbs = bytes / od / 1e6;
  const char *torch_name = have_torch ? mlc_arena_printf(a, "torch_%s_eager_2t", tc.version) : NULL;
  bench_case cases[3 + 2 * N_ENGINES] = {
      {mlc_arena_printf(a, "generate_%s_prefill%lld", s.name, (long long)n_prompt), op, "ms",
       torch_name, tp,
       mlc_arena_printf(a, "prefill of a %lld-token prompt, built for 1..%lld, %d trials; median of "
                           "%d rounds interleaved with PyTorch's", (long long)n_prompt,
                        (long long)s.max_len, s.trials, s.rounds)},
      {mlc_arena_printf(a, "generate_%s_decode", s.name), od, "ms", torch_name, td,
       mlc_arena_printf(a, "ms per decode step, %lld steps after the prompt (KV cache in place); "
                           "median of %d rounds", (long long)(s.tokens - 1), s.rounds)},
      {mlc_arena_printf(a, "generate_%s_decode_bandwidth", s.name), gbs, "GB/s", "read_bandwidth_2t",
       bw,
       mlc_arena_printf(a, "bytes a decode step reads (%.1f MB: weights, a gathered table's rows "
                           "only, and the cache rows) per step time, against %d threads reading "
                           "%lld MiB in the same rounds (median)", bytes / 1e6, THREADS,
                        (long long)(s.bandwidth_bytes >> 20))},
  };
  int n_cases = 3;
  for (int k = 0; k < N_ENGINES; k++) {
    if (!eng.have[k]) {
      printf("# %s: %s\n", engine_label[k], eng.note[k]);
      continue;
    }
    const char *base = mlc_arena_printf(a, "%s_%s_2t", engine_label[k], eng.version[k]);
    double ep = bench_median(eng_p + k * s.rounds, s.rounds);
    double ed = bench_median(eng_d + k * s.rounds, s.rounds);
    cases[n_cases++] = (bench_case){
        mlc_arena_printf(a, "generate_%s_prefill%lld_vs_%s", s.name, (long long)n_prompt,
                         engine_label[k]),
        op, "ms", base, ep, "prefill, as above; the engine on the same ONNX model, its tokens checked"};
    cases[n_cases++] = (bench_case){
        mlc_arena_printf(a, "generate_%s_decode_vs_%s", s.name, engine_label[k]), od, "ms", base, ed,
        "ms per decode step, as above; the engine feeds each step's presents back as its pasts "
        "(new arrays every step)"};
  }
  for (int i = 0; i < n_cases; i++) bench_print(&cases[i]);
  printf("# decode at %.0f%% of the read bandwidth; tokens/s %.1f (PyTorch %s)\n", 100 * gbs / bw,
         1e3 / od, have_torch ? mlc_arena_printf(a, "%.1f", 1e3 / td) : "not run");
  if (!bench_write_results(results, n_cases, cases, &err)) die(results, err.msg);
  if (have_torch) bench_coprocess_stop(&tc.cp);
  if (eng.started) bench_coprocess_stop(&eng.cp);
  mlc_arena_free(a);
  mlc_free(ours_p);
  mlc_free(prompt);
  mlc_free(tokens);
  mlc_free(logits);
  mlc_graph_generator_free(g);
  unbuild(&step);
  unbuild(&pre);
  return 0;
}
