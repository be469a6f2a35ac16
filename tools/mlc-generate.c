/* mlc-generate: greedy text generation with a KV cache from a language
 * model exported as prefill + decode step (examples/lm_models.py's
 * export_generation), each compiled once for every length.
 *
 *   mlc-generate --prefill gpt2_prefill.onnx --step gpt2_step.onnx \
 *                --prompt-len 128 --tokens 64 [--max-len 256] [--db tuned.db]
 */
#include "frontend/frontend.h"
#include "targets/targets.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage_text =
    "usage: mlc-generate --prefill FILE.onnx --step FILE.onnx [options]\n"
    "\n"
    "Compiles a language model's prefill and decode step (ONNX, each with one\n"
    "dynamic axis: prefill's prompt length, the step's cached positions) once\n"
    "for every length up to --max-len, runs prefill on the prompt and then one\n"
    "decode step per token, choosing each token greedily (the largest logit),\n"
    "and prints the token ids and the speed of both phases. Prefill takes\n"
    "input_ids [1, seq] and gives logits [1, seq, vocab] and the per-layer\n"
    "key/value caches [1, seq, ...]; the step takes input_ids, position_ids\n"
    "[1, 1] and the caches [1, past, ...] and gives logits and the caches with\n"
    "its row appended. The caches are allocated once, for --max-len positions,\n"
    "and each step appends to them in place.\n"
    "\n"
    "Options:\n"
    "  --prefill FILE.onnx  the prefill model\n"
    "  --step FILE.onnx     the decode step model\n"
    "  --prompt IDS         the prompt's token ids, comma-separated (e.g. 464,3290)\n"
    "  --prompt-file F.npy  the prompt from an int64 .npy of shape [1, n] or [n]\n"
    "  --prompt-len N       a prompt of N token ids drawn from --seed (default 8,\n"
    "                       when no prompt is given)\n"
    "  --seed S             the seed of a drawn prompt (default 1)\n"
    "  --tokens N           tokens to generate (default 32)\n"
    "  --max-len N          positions the build and the caches serve: prompt and\n"
    "                       generated tokens (default 256)\n"
    "  --db PATH|URL        tuning database (default: $MLC_DB or ./mlc.db; kernels\n"
    "                       without records run their default schedule)\n"
    "  --logits FILE.npy    write the logits each token was chosen from,\n"
    "                       float32 [tokens, vocab]\n"
    "  --profile            after the timings, prefill's and the decode step's\n"
    "                       kernels: calls and time (per step), the weight bytes\n"
    "                       each reads and at what rate\n"
    "  --quiet              print the token ids only\n"
    "  -h, --help           show this help\n"
    "\n"
    "Output: a line `tokens: ID ...`, then prefill and decode timings (decode:\n"
    "tokens - 1 steps). Exit status: 0 success, 1 failure (a model that does not\n"
    "fit, a run error), 2 bad usage.\n";

typedef struct options {
  const char *prefill, *step, *prompt, *prompt_file, *db, *logits;
  long long prompt_len, seed, tokens, max_len;
  bool quiet, profile;
} options;

enum { OPT_PREFILL = 256, OPT_STEP, OPT_PROMPT, OPT_PROMPT_FILE, OPT_PROMPT_LEN, OPT_SEED,
       OPT_TOKENS, OPT_MAX_LEN, OPT_DB, OPT_LOGITS, OPT_QUIET, OPT_PROFILE };

static int usage_error(const char *msg) {
  fprintf(stderr, "mlc-generate: %s\n(see mlc-generate --help)\n", msg);
  return 2;
}

static bool read_count(const char *s, long long lo, long long hi, long long *v) {
  char *end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return end != s && !*end && !errno && *v >= lo && *v <= hi;
}

static int parse_args(int argc, char **argv, options *o) {
  static const struct option longs[] = {
      {"prefill", required_argument, 0, OPT_PREFILL}, {"step", required_argument, 0, OPT_STEP},
      {"prompt", required_argument, 0, OPT_PROMPT},
      {"prompt-file", required_argument, 0, OPT_PROMPT_FILE},
      {"prompt-len", required_argument, 0, OPT_PROMPT_LEN}, {"seed", required_argument, 0, OPT_SEED},
      {"tokens", required_argument, 0, OPT_TOKENS}, {"max-len", required_argument, 0, OPT_MAX_LEN},
      {"db", required_argument, 0, OPT_DB}, {"logits", required_argument, 0, OPT_LOGITS},
      {"quiet", no_argument, 0, OPT_QUIET}, {"profile", no_argument, 0, OPT_PROFILE},
      {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  *o = (options){.prompt_len = 0, .seed = 1, .tokens = 32, .max_len = 256};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (c) {
    case OPT_PREFILL: o->prefill = optarg; break;
    case OPT_STEP: o->step = optarg; break;
    case OPT_PROMPT: o->prompt = optarg; break;
    case OPT_PROMPT_FILE: o->prompt_file = optarg; break;
    case OPT_PROMPT_LEN:
      if (!read_count(optarg, 1, INT32_MAX, &o->prompt_len)) return usage_error("--prompt-len takes a count >= 1");
      break;
    case OPT_SEED:
      if (!read_count(optarg, 0, INT64_MAX, &o->seed)) return usage_error("--seed takes a number >= 0");
      break;
    case OPT_TOKENS:
      if (!read_count(optarg, 1, INT32_MAX, &o->tokens)) return usage_error("--tokens takes a count >= 1");
      break;
    case OPT_MAX_LEN:
      if (!read_count(optarg, 2, INT32_MAX, &o->max_len)) return usage_error("--max-len takes a count >= 2");
      break;
    case OPT_DB: o->db = optarg; break;
    case OPT_LOGITS: o->logits = optarg; break;
    case OPT_QUIET: o->quiet = true; break;
    case OPT_PROFILE: o->profile = true; break;
    case 'h': fputs(usage_text, stdout); exit(0);
    default: return usage_error(optopt ? "unknown or incomplete option" : "unknown option");
    }
  }
  if (optind < argc) return usage_error("unexpected argument (every input is an option)");
  if (!o->prefill || !o->step) return usage_error("--prefill and --step are both required");
  if ((o->prompt != NULL) + (o->prompt_file != NULL) + (o->prompt_len != 0) > 1)
    return usage_error("give the prompt one way: --prompt, --prompt-file or --prompt-len");
  if (!o->prompt && !o->prompt_file && !o->prompt_len) o->prompt_len = 8;
  if (!o->db) o->db = getenv("MLC_DB") && *getenv("MLC_DB") ? getenv("MLC_DB") : "mlc.db";
  return 0;
}

typedef struct built {
  mlc_gmodule *m;
  mlc_gcompiled c;
  mlc_grunner *r;
} built;

static bool build(built *b, const char *path, const char *prefix, int64_t lo, int64_t hi,
                  const mlc_target *t, const options *o, mlc_error *err) {
  mlc_gcompile_options co = {.db_path = o->db, .symbol_prefix = prefix};
  bool ok = (b->m = mlc_graph_load_dynamic(path, lo, hi, 0, err)) &&
            mlc_graph_compile(b->m, t, &co, &b->c, err) &&
            (b->r = mlc_graph_runner_new(b->m, &b->c, err));
  return ok || mlc_error_prefix(err, "%s", path);
}

static void unbuild(built *b) {
  mlc_graph_runner_free(b->r);
  if (b->c.arena) mlc_gcompiled_free(&b->c);
  mlc_graph_free(b->m);
}

/* The prompt's ids into *ids (mlc_free), their count *n. */
static bool read_prompt(const options *o, int64_t vocab, int64_t **ids, int64_t *n, mlc_error *err) {
  if (o->prompt_file) {
    mlc_gtype t;
    *ids = mlc_npy_read(o->prompt_file, &t, err);
    if (!*ids) return false;
    *n = mlc_gtype_numel(&t);
    if (t.dtype != MLC_INT64 || t.ndim > 2 || (t.ndim == 2 && t.shape[0] != 1))
      return mlc_error_set(err, "%s: the prompt is int64 [1, n] or [n]", o->prompt_file);
    return true;
  }
  if (o->prompt) {
    *ids = mlc_xmalloc(sizeof **ids * (strlen(o->prompt) / 2 + 1));
    *n = 0;
    for (const char *p = o->prompt; *p;) {
      char *end;
      errno = 0;
      long long v = strtoll(p, &end, 10);
      if (end == p || errno || (*end && *end != ','))
        return mlc_error_set(err, "--prompt %s: expected token ids separated by commas", o->prompt);
      (*ids)[(*n)++] = v;
      p = *end ? end + 1 : end;
    }
    return *n > 0 || mlc_error_set(err, "--prompt is empty");
  }
  *n = o->prompt_len;
  *ids = mlc_xmalloc(sizeof **ids * (size_t)*n);
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, (uint64_t)o->seed, 1);
  for (int64_t i = 0; i < *n; i++) (*ids)[i] = mlc_pcg32_bounded(&rng, (uint32_t)vocab);
  return true;
}

static void print_stats(const mlc_ggen_stats *st) {
  printf("prefill: %lld tokens in %.2f ms (%.1f tokens/s)\n", (long long)st->n_prompt,
         st->prefill_s * 1e3, (double)st->n_prompt / st->prefill_s);
  if (st->n_decoded)
    printf("decode: %lld steps in %.2f ms (%.2f ms/token, %.1f tokens/s)\n",
           (long long)st->n_decoded, st->decode_s * 1e3, st->decode_s * 1e3 / (double)st->n_decoded,
           (double)st->n_decoded / st->decode_s);
}

/* Weight bytes the kernel of symbol sym reads in one run of m: each
 * weight an argument of a call of it (a gathered table: its rows). */
static int64_t kernel_weight_bytes(const built *b, const char *sym) {
  const mlc_gfunc *f = mlc_graph_main(b->m);
  int64_t n = 0;
  for (int i = 0; i < f->n_bindings; i++) {
    const mlc_gbinding *bd = &f->bindings[i];
    int k = 0;
    while (k < b->c.n && !(bd->kind == MLC_GCALL_TIR && b->c.src[k] == bd->tir)) k++;
    if (k == b->c.n || strcmp(b->c.symbols[k], sym) != 0) continue;
    for (int j = 0; j < bd->n_args; j++) {
      const mlc_gvar *v = mlc_gfunc_storage(f, bd->args[j]);
      if (v->kind == MLC_GVAR_CONST)
        n += bd->op == MLC_GOP_GATHER && j == 0 ? mlc_gtype_bytes(&bd->var->type) : mlc_gtype_bytes(&v->type);
    }
  }
  return n;
}

static int by_time(const void *x, const void *y) {
  double a = ((const mlc_gprofile *)x)->seconds, b = ((const mlc_gprofile *)y)->seconds;
  return (a < b) - (a > b);
}

static void print_profile(const built *b, const char *what) {
  mlc_gprofile *p = mlc_xmalloc(sizeof *p * (size_t)(b->c.n + 1));
  int n = mlc_graph_runner_profile_get(b->r, p, b->c.n + 1);
  double total = 0;
  for (int i = 0; i < n; i++) total += p[i].seconds;
  qsort(p, (size_t)n, sizeof *p, by_time);
  printf("%s kernels:\n%-44s %5s %9s %6s %10s %8s\n", what, "kernel", "calls", "ms", "share",
         "weight MB", "GB/s");
  for (int i = 0; i < n; i++) {
    double mb = (double)kernel_weight_bytes(b, p[i].symbol) / 1e6;
    printf("%-44s %5d %9.3f %5.1f%% %10.2f", p[i].symbol, p[i].calls, p[i].seconds * 1e3,
           100 * p[i].seconds / total, mb);
    if (mb > 0) printf(" %8.1f", mb / 1e3 / p[i].seconds);
    printf("\n");
  }
  mlc_free(p);
}

static int generate(const options *o, const mlc_target *t) {
  mlc_error err;
  built pre = {0}, step = {0};
  mlc_ggen *g = NULL;
  int64_t *prompt = NULL, *tokens = NULL, n_prompt = 0;
  float *logits = NULL;
  mlc_ggen_stats st;
  bool ok = build(&pre, o->prefill, "prefill", 1, o->max_len, t, o, &err) &&
            build(&step, o->step, "step", 1, o->max_len - 1, t, o, &err) &&
            (g = mlc_graph_generator_new(pre.m, pre.r, step.m, step.r, &err)) &&
            read_prompt(o, mlc_graph_generator_vocab(g), &prompt, &n_prompt, &err);
  if (ok) {
    int64_t vocab = mlc_graph_generator_vocab(g);
    tokens = mlc_xmalloc(sizeof *tokens * (size_t)o->tokens);
    if (o->logits) logits = mlc_xmalloc(sizeof *logits * (size_t)(o->tokens * vocab));
    mlc_graph_runner_profile(pre.r, o->profile);
    mlc_graph_runner_profile(step.r, o->profile);
    ok = mlc_graph_generate(g, prompt, n_prompt, o->tokens, tokens, logits, &st, &err);
    mlc_gtype lt = {.dtype = MLC_FLOAT32, .ndim = 2, .shape = {o->tokens, vocab}};
    if (ok && o->logits) ok = mlc_npy_write(o->logits, &lt, logits, &err);
  }
  if (ok) {
    printf("tokens:");
    for (long long i = 0; i < o->tokens; i++) printf(" %lld", (long long)tokens[i]);
    printf("\n");
    if (!o->quiet) print_stats(&st);
    if (o->profile) print_profile(&pre, "prefill");
    if (o->profile && st.n_decoded) print_profile(&step, "decode step (per step, averaged)");
  } else {
    fprintf(stderr, "mlc-generate: error: %s\n", err.msg);
  }
  mlc_free(prompt);
  mlc_free(tokens);
  mlc_free(logits);
  mlc_graph_generator_free(g);
  unbuild(&step);
  unbuild(&pre);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  options o;
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  mlc_target t;
  mlc_error err;
  if (!mlc_target_parse("llvm", &t, &err)) {
    fprintf(stderr, "mlc-generate: error: %s\n", err.msg);
    return 1;
  }
  return generate(&o, &t);
}
