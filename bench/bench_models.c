/* Real networks against PyTorch: ResNet-18, MobileNetV2 and the
 * transformer encoder of examples/export_models.py (`make models`), batch 1,
 * float32, and its three language models (examples/lm_models.py): BERT-base
 * (input_ids, token_type_ids, attention_mask -> last_hidden_state,
 * pooler_output), GPT-2 small and the 125M Llama (input_ids -> logits),
 * int64 token ids at sequence 128 (a 128-token prompt), set by
 * `--input-shape NAME=1,128` per input to mlc-tune and mlc-compile (they
 * were exported at 16 with the sequence dynamic). And ResNet-18 and the
 * encoder quantized to int8 as users quantize them (resnet18_int8,
 * encoder_int8: `make models-int8`, bench/quantize_model.py: ONNX
 * Runtime's quantize_static, QDQ): the same columns but PyTorch's, the
 * engines running the int8 file, the reference ONNX Runtime's int8 output,
 * every output within MLC_GRAPH_QUANT_ATOL (1/16) of the largest |value|
 * where the float models' must be within 1e-4. Each in one run:
 *   <model>_tuned        `mlc-tune --model` (budget: --trials, default
 *                        $MLC_BENCH_TRIALS or 200, in a fresh database),
 *                        then `mlc-compile --model --db`
 *   <model>_curve_<T>_2t the tuning curve: the budget is spent in steps of
 *                        64, 128, 256, ... trials and then N (for N under
 *                        64: N/8, N/4, N/2 and N, rounded, distinct, at
 *                        least 1), each `mlc-tune --trials <step>` on the
 *                        same database (--trials is the total the database
 *                        should hold, so a step continues the last one and
 *                        measures nothing twice); after each step the model
 *                        is compiled from the database and timed through
 *                        its C entry point in CURVE_ROUNDS rounds, each
 *                        running the untuned build, the previous point's
 *                        and this one once, in rotating order: the median,
 *                        the p10-p90 band, and the medians of the
 *                        round-by-round ratios to the untuned build and to
 *                        the previous point (a shared 2-vCPU guest loses
 *                        its second CPU for seconds at a time, doubling a
 *                        run: ratios within a round see the same spell).
 *                        T: the trials measured so far; notes: the tuning
 *                        wall seconds so far and the kernels from records.
 *                        The last step's build is the tuned model below.
 *                        Printed per model after the summary table.
 *   <model>_untuned      `mlc-compile --model` without records (the
 *                        default schedule)
 *   <model>_torch_eager / <model>_torchscript
 *                        bench/torch_baseline.py (PyTorch at 2 threads;
 *                        TorchScript frozen + optimize_for_inference)
 *   <model>_onnxruntime / <model>_openvino
 *                        bench/engine_baseline.py in build/bench-venv
 *                        (`make bench-deps`): ONNX Runtime (ORT_ENABLE_ALL,
 *                        intra_op 2, inter_op 1, sequential) and OpenVINO
 *                        (CPU, INFERENCE_NUM_THREADS 2, NUM_STREAMS 1,
 *                        LATENCY, f32) on the same .onnx and inputs; each
 *                        output is checked against PyTorch's and ours tuned
 *                        (rel error <= 1e-4, else the run fails); versions
 *                        and the kernels each chose are printed:
 *                        OpenVINO's primitiveType per layer (oneDNN's
 *                        implementation), ONNX Runtime's node op types
 *                        after fusion (one profiled run, not timed). Without the venv the columns say so.
 * A language model's PyTorch is the module rebuilt from lm_models.py with
 * the export's config and seed (TorchScript traces all its inputs).
 * Ours run through the C entry point mlc-compile writes (<model>_run_ws,
 * every input and output in the ONNX graph's order, each of its dtype):
 * the header is compiled with the object into a shared object and loaded.
 * The weights are constant data in the object; the header declares them.
 * Latency: median of all timed runs (at least 20), taken in rounds that
 * interleave the six variants (10 rounds of 2 runs), each round in a
 * shuffled order, each variant after a 20 ms pause (engines' pool
 * threads spin on after a run) and one untimed run (PyTorch and the
 * engines run in coprocesses kept alive across rounds). Outputs are checked against PyTorch's
 * models/<model>_out.npy (a language model's: every output,
 * models/<model>_s128_<output>.npy): max abs error / max |reference|
 * <= 1e-4, the largest over the outputs.
 * Peak memory: ours is the workspace the entry point declares (every
 * intermediate, sharing storage by liveness; weights, input and output
 * excluded); PyTorch's is the growth of peak RSS over one run.
 * Per layer, for every model but MobileNetV2: every distinct convolution
 * kernel is also timed against oneDNN (its own choice of algorithm and
 * layouts, bias and the kernel's fused ReLU / residual sum as post-ops;
 * layouts converted once, outside the timing) and every dense / matmul
 * kernel against OpenBLAS sgemm (one call per batch), 2 threads, each
 * kernel alone on synthetic data, ours and the baseline in alternating
 * rounds.
 *
 *   bench_models [--results FILE] [--trials N] [--only NAME,...] [--rounds R]
 *                [--quick] [--smoke] [--reuse]
 * --only (or MLC_BENCH_ONLY): those models (resnet18, mobilenet_v2, encoder,
 * bert_base, gpt2_small, llama_100m, resnet18_int8, encoder_int8; under
 * --smoke also bert_tiny, ...).
 * --reuse: a model whose database the last run left is not tuned again
 * (its tuning log gives the trials; tuning wall time shows 0; no curve).
 * --quick (or MLC_BENCH_QUICK=1): 16 trials per model, 4 rounds of 5 runs
 * (the floor of 20 runs).
 * --smoke (or MLC_BENCH_SMOKE=1): the language models only (unless --only
 * names others), each its tiny export tests/onnx/lm/<kind>_tiny.onnx at
 * sequence 12 (results named <kind>_tiny_...), 4 trials (unless
 * MLC_BENCH_TRIALS or --trials), 4 rounds of 5 runs: the whole path in
 * about 30 seconds, without `make models`.
 */
#include "bench/onednn.h"
#include "bench/results.h"
#include "frontend/frontend.h"
#include "graph/graph.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { THREADS = 2, MAX_ARGS = 8, MAX_LAYERS = 128 };
/* Tuning curve: at most MAX_STEPS budgets, each point timed in
 * CURVE_ROUNDS rounds. */
enum { MAX_STEPS = 12, CURVE_ROUNDS = 20 };

/* Inputs and outputs of a model at most (BERT: three token-id inputs,
 * two outputs). */
enum { MAX_IO = 4 };

/* A model of the bench. The image models and the encoder take one float32
 * input, models/<name>_in.npy, and give one output, models/<name>_out.npy.
 * The language models of examples/lm_models.py take int64 token ids at
 * sequence LM_SEQ (set by --input-shape NAME=1,LM_SEQ on the dynamic axes
 * they were exported with) and give one output or more, as
 * models/<name>_s128_<input or output name>.npy. */
typedef struct model_spec {
  const char *name;  /* models/<name>.onnx */
  const char *lm;    /* lm_models.py's kind (bert, gpt2, llama); NULL: not a language model */
  bool per_layer;    /* its conv / dense / matmul kernels timed against oneDNN / OpenBLAS */
  int n_in, n_out;
  /* the .npy tags (file <prefix><tag>.npy), in the order of the ONNX
   * graph's inputs and outputs, which the C entry point keeps */
  const char *ins[MAX_IO], *outs[MAX_IO];
  /* made by bench/quantize_model.py (`make models-int8`): its reference is
   * ONNX Runtime's int8 output, there is no PyTorch, and outputs agree
   * within MLC_GRAPH_QUANT_ATOL of the largest |value| (sums a rounding
   * apart land a step apart once quantized) */
  bool quantized;
} model_spec;

static const model_spec MODELS[] = {
    {"resnet18", NULL, true, 1, 1, {"in"}, {"out"}, false},
    {"mobilenet_v2", NULL, false, 1, 1, {"in"}, {"out"}, false},
    {"encoder", NULL, true, 1, 1, {"in"}, {"out"}, false},
    {"bert_base", "bert", true, 3, 2, {"input_ids", "token_type_ids", "attention_mask"},
     {"last_hidden_state", "pooler_output"}, false},
    {"gpt2_small", "gpt2", true, 1, 1, {"input_ids"}, {"logits"}, false},
    {"llama_100m", "llama", true, 1, 1, {"input_ids"}, {"logits"}, false},
    {"resnet18_int8", NULL, false, 1, 1, {"in"}, {"out"}, true},
    {"encoder_int8", NULL, false, 1, 1, {"in"}, {"out"}, true},
};

/* The largest error (max abs / max |reference|) outputs may have. */
static double tolerance(const model_spec *s) { return s->quantized ? MLC_GRAPH_QUANT_ATOL : 1e-4; }
enum { N_MODELS = sizeof MODELS / sizeof MODELS[0] };
/* The language models' sequence: the bench's, and --smoke's (the tiny
 * exports of tests/onnx/lm at the length they were checked at). */
enum { LM_SEQ = 128, LM_SMOKE_SEQ = 12 };

/* Where one model's files are: models/ (the real ones) or, for a language
 * model under --smoke, tests/onnx/lm/<kind>_tiny.onnx. */
typedef struct model_files {
  const model_spec *spec;
  const char *name;   /* the ONNX file's base name: the entry's prefix, the results' names */
  const char *onnx;   /* path of the .onnx */
  const char *prefix; /* the .npy files: <prefix><tag>.npy */
  const char *shapes; /* mlc-tune / mlc-compile options fixing the shapes ("" none needed) */
  const char *size;   /* lm_models.py's config: "real" or "tiny" (language models) */
} model_files;

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_models: error: %s: %s\n", what, msg);
  exit(1);
}

/* ---- paths and commands ------------------------------------------------ */

/* The build directory holding this program (<B>/bench/bench_models), and
 * the program's own directory (the models' work directories go there). */
static char build_dir[4096], exe_dir[4096 + 8];
/* Paths and commands, freed at exit. */
static mlc_arena *strs;
#define STR(...) mlc_arena_printf(strs, __VA_ARGS__)

static void find_build_dir(void) {
  if (!bench_build_dir(build_dir, sizeof build_dir))
    die("/proc/self/exe", "this program is not under <build>/bench/");
  snprintf(exe_dir, sizeof exe_dir, "%s/bench", build_dir);
}

/* The files of spec: models/ or, for a language model under --smoke, its
 * tiny export in tests/onnx/lm (run at LM_SMOKE_SEQ). */
static void model_files_of(const model_spec *spec, bool smoke, model_files *mf) {
  mf->spec = spec;
  mf->name = spec->name;
  mf->onnx = STR("models/%s.onnx", spec->name);
  mf->prefix = STR("models/%s_", spec->name);
  mf->shapes = "";
  mf->size = "real";
  if (!spec->lm) return;
  int seq = LM_SEQ;
  if (smoke) {
    seq = LM_SMOKE_SEQ;
    mf->name = STR("%s_tiny", spec->lm);
    mf->onnx = STR("tests/onnx/lm/%s_tiny.onnx", spec->lm);
    mf->prefix = STR("tests/onnx/lm/%s_s%d_", spec->lm, seq);
    mf->size = "tiny";
  } else {
    mf->prefix = STR("models/%s_s%d_", spec->name, seq);
  }
  for (int i = 0; i < spec->n_in; i++) mf->shapes = STR("%s --input-shape %s=1,%d", mf->shapes, spec->ins[i], seq);
}

/* The first of mf's files that cannot be read, NULL when all can. */
static const char *missing_file(const model_files *mf) {
  if (access(mf->onnx, R_OK) != 0) return mf->onnx;
  for (int i = 0; i < mf->spec->n_in + mf->spec->n_out; i++) {
    const char *tag = i < mf->spec->n_in ? mf->spec->ins[i] : mf->spec->outs[i - mf->spec->n_in];
    const char *path = STR("%s%s.npy", mf->prefix, tag);
    if (access(path, R_OK) != 0) return path;
  }
  return NULL;
}

/* Runs a shell command, its output appended to log; dies on failure. */
static void run_cmd(const char *cmd, const char *log) {
  char *full = mlc_xmalloc(strlen(cmd) + strlen(log) + 32);
  sprintf(full, "%s >>%s 2>&1", cmd, log);
  int rc = system(full);
  mlc_free(full);
  if (rc != 0) {
    fprintf(stderr, "bench_models: failed (see %s): %s\n", log, cmd);
    exit(1);
  }
}

/* ---- our compiled model: header -> shared object ----------------------- */

typedef struct ours {
  void *so;
  int (*run)(void *const *in, void *const *out, float *ws); /* the model's inputs, outputs in order */
  float *ws;
  long long ws_floats;
} ours;

/* Writes work/<tag>_entry.c, the header plus the functions the bench looks
 * up, builds work/<tag>.so with the object (which holds the weights) and
 * loads it. bm_run passes its arrays to <model>_run_ws in order (void *
 * converts to each input's and output's own type). */
static void load_ours(const char *work, const char *tag, const model_files *mf, ours *o) {
  const char *model = mf->name;
  memset(o, 0, sizeof *o);
  char up[128];
  snprintf(up, sizeof up, "%s", model);
  for (char *c = up; *c; c++) *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
  mlc_str src = {0};
  mlc_str_printf(&src,
                 "#include \"%s.h\"\n"
                 "long long bm_workspace_floats(void) { return %s_WORKSPACE_FLOATS; }\n"
                 "int bm_run(void *const *in, void *const *out, float *ws) {\n  return %s_run_ws(",
                 tag, up, model);
  for (int i = 0; i < mf->spec->n_in; i++) mlc_str_printf(&src, "in[%d], ", i);
  for (int i = 0; i < mf->spec->n_out; i++) mlc_str_printf(&src, "out[%d], ", i);
  mlc_str_puts(&src, "ws);\n}\n");
  const char *path = STR("%s/%s_entry.c", work, tag);
  FILE *f = fopen(path, "w");
  if (!f || fputs(mlc_str_cstr(&src), f) < 0 || fclose(f) != 0) die(path, "cannot write");
  mlc_str_free(&src);
  run_cmd(STR("cc -O2 -fPIC -shared -w -I%s -o %s/%s.so %s %s/%s.o %s/libmlcrt.a -fopenmp -lm", work,
             work, tag, path, work, tag, build_dir),
          STR("%s/%s.log", work, tag));
  path = STR("%s/%s.so", work, tag);
  o->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!o->so) die(path, dlerror());
  long long (*wsf)(void) = (long long (*)(void))dlsym(o->so, "bm_workspace_floats");
  o->run = (int (*)(void *const *, void *const *, float *))dlsym(o->so, "bm_run");
  if (!wsf || !o->run) die(path, "entry symbols");
  o->ws_floats = wsf();
  o->ws = mlc_xmalloc(sizeof(float) * (size_t)o->ws_floats);
}

/* The shared object stays loaded: the worker threads of its runtime
 * (libmlcrt's parallel_for pool, linked into it) keep running its code
 * after a call, and dlclose would unmap it under them (a tuning curve step
 * crashed so). */
static void free_ours(ours *o) {
  mlc_free(o->ws);
}

/* ---- PyTorch coprocess ---------------------------------------------------- */

typedef struct torch {
  bench_coprocess cp;
  double eager_err, script_err, eager_peak, script_peak; /* peak: bytes, -1 unknown */
  bool have_script;  /* TorchScript traced and ran (else script_note says why) */
  char version[64], script_note[256];
} torch;

static double json_num(const mlc_json *j, const char *key) {
  const mlc_json *v = mlc_json_get(j, key);
  return v && v->kind == MLC_JSON_NUMBER ? v->number : -1;
}

/* Starts bench/torch_baseline.py on the model; false when it fails to start
 * (no PyTorch): the torch columns are then left out. A language model is
 * rebuilt from examples/lm_models.py (its kind and config) and run on the
 * .npy inputs at prefix. */
static bool torch_start(torch *t, const model_files *mf) {
  memset(t, 0, sizeof *t);
  char threads[16], line[4096];
  snprintf(threads, sizeof threads, "%d", THREADS);
  char *lm[] = {"/usr/bin/python3", MLC_SOURCE_DIR "/bench/torch_baseline.py", (char *)mf->name,
                "--lm", (char *)mf->spec->lm, "--config", (char *)mf->size, "--data",
                (char *)mf->prefix, "--threads", threads, NULL};
  char *cnn[] = {"/usr/bin/python3", MLC_SOURCE_DIR "/bench/torch_baseline.py", (char *)mf->name,
                 "--models", "models", "--threads", threads, NULL};
  /* A fixed mmap threshold: freed tensors leave the resident set, so the
   * peak RSS of a run measures what it holds at once. */
  if (!bench_coprocess_start(&t->cp, mf->spec->lm ? lm : cnn, "MALLOC_MMAP_THRESHOLD_", "65536",
                             line, sizeof line))
    return false;
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *j = mlc_json_parse(a, line, strlen(line), &err);
  if (!j) die("torch_baseline.py", err.msg);
  t->eager_err = json_num(j, "eager_rel_error");
  t->script_err = json_num(j, "torchscript_rel_error");
  t->eager_peak = json_num(j, "eager_peak_bytes");
  t->script_peak = json_num(j, "torchscript_peak_bytes");
  t->have_script = mlc_json_get(j, "torchscript_rel_error") != NULL;
  const mlc_json *v = mlc_json_get(j, "torch");
  snprintf(t->version, sizeof t->version, "%s", v && v->kind == MLC_JSON_STRING ? v->str : "?");
  v = mlc_json_get(j, "torchscript_error");
  snprintf(t->script_note, sizeof t->script_note, "%s", v && v->kind == MLC_JSON_STRING ? v->str : "");
  mlc_arena_free(a);
  return true;
}

/* k timed runs of mode ("eager", "torchscript"), their ms appended to ms. */
static void torch_time(torch *t, const char *mode, int k, double *ms, int *n) {
  char line[16384];
  fprintf(t->cp.to, "time %s %d\n", mode, k);
  fflush(t->cp.to);
  if (!fgets(line, sizeof line, t->cp.from)) die("torch_baseline.py", "no answer");
  char *p = line, *end;
  for (int i = 0; i < k; i++, p = end) {
    ms[(*n)++] = strtod(p, &end);
    if (end == p) die("torch_baseline.py", line);
  }
}

/* ---- ONNX Runtime and OpenVINO coprocess ---------------------------------- */

/* bench/engine_baseline.py in the venv of `make bench-deps`; it speaks
 * torch_baseline.py's protocol (time MODE K / quit) with modes ort and ov. */
typedef struct engines {
  torch cp;                   /* the coprocess (its torch-specific fields unused) */
  bool have_ort, have_ov;     /* the engine loaded and ran */
  double ort_err, ov_err;     /* against PyTorch's exported outputs (the largest over outputs) */
  char ort_version[64], ov_version[96], ov_kernels[1024], ort_kernels[1024], ort_note[256], ov_note[256];
} engines;

static const char *json_str(const mlc_json *j, const char *key, const char *dflt) {
  const mlc_json *v = mlc_json_get(j, key);
  return v && v->kind == MLC_JSON_STRING ? v->str : dflt;
}

/* The venv's python, NULL (and why in note) when `make bench-deps` has not run. */
static const char *venv_python(void) {
  const char *py = STR("%s/bench-venv/bin/python", build_dir);
  return access(py, X_OK) == 0 ? py : NULL;
}

/* "a,b,c" of n tags. */
static const char *tag_list(const char *const *tags, int n) {
  const char *s = tags[0];
  for (int i = 1; i < n; i++) s = STR("%s,%s", s, tags[i]);
  return s;
}

/* Starts the coprocess on the model (its outputs written to work as
 * <name>_<engine>_<output tag>.npy); false when the venv is missing or it
 * fails to start: e's notes say why. */
static bool engines_start(engines *e, const model_files *mf, const char *work) {
  memset(e, 0, sizeof *e);
  const char *py = venv_python();
  const char *why = "not installed (make bench-deps)";
  snprintf(e->ort_note, sizeof e->ort_note, "%s", why);
  snprintf(e->ov_note, sizeof e->ov_note, "%s", why);
  if (!py) return false;
  const char *ins = tag_list(mf->spec->ins, mf->spec->n_in), *outs = tag_list(mf->spec->outs, mf->spec->n_out);
  char threads[16], line[8192];
  snprintf(threads, sizeof threads, "%d", THREADS);
  /* argv[0] is the venv's path: python finds its venv (pyvenv.cfg) from
   * it; a bare "python" is looked up on PATH and misses the venv. */
  char *argv[] = {(char *)py, MLC_SOURCE_DIR "/bench/engine_baseline.py", (char *)mf->name, "--onnx",
                  (char *)mf->onnx, "--data", (char *)mf->prefix, "--inputs", (char *)ins, "--outputs",
                  (char *)outs, "--threads", threads, "--out", (char *)work, NULL};
  if (!bench_coprocess_start(&e->cp.cp, argv, NULL, NULL, line, sizeof line)) {
    snprintf(e->ort_note, sizeof e->ort_note, "engine_baseline.py failed to start");
    snprintf(e->ov_note, sizeof e->ov_note, "engine_baseline.py failed to start");
    return false;
  }
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *j = mlc_json_parse(a, line, strlen(line), &err);
  if (!j) die("engine_baseline.py", err.msg);
  e->have_ort = mlc_json_get(j, "ort_rel_error") != NULL;
  e->have_ov = mlc_json_get(j, "ov_rel_error") != NULL;
  e->ort_err = json_num(j, "ort_rel_error");
  e->ov_err = json_num(j, "ov_rel_error");
  snprintf(e->ort_version, sizeof e->ort_version, "%s", json_str(j, "ort_version", "?"));
  snprintf(e->ov_version, sizeof e->ov_version, "%s", json_str(j, "ov_version", "?"));
  snprintf(e->ov_kernels, sizeof e->ov_kernels, "%s", json_str(j, "ov_kernels", "?"));
  snprintf(e->ort_kernels, sizeof e->ort_kernels, "%s", json_str(j, "ort_kernels", "?"));
  snprintf(e->ort_note, sizeof e->ort_note, "%s", e->have_ort ? "" : json_str(j, "ort_error", "failed"));
  snprintf(e->ov_note, sizeof e->ov_note, "%s", e->have_ov ? "" : json_str(j, "ov_error", "failed"));
  mlc_arena_free(a);
  return true;
}

/* ---- one model ------------------------------------------------------------ */

/* One point of the tuning curve: the model compiled after a tuning step. */
typedef struct curve_point {
  int trials;                /* measured so far, in the database */
  double tune_s;             /* tuning wall seconds so far */
  double ms, p10, p90;       /* median and band of its CURVE_ROUNDS runs */
  /* medians of the round-by-round ratios: to the untuned build, to the
   * previous point's (0 for the first) */
  double vs_untuned, vs_prev;
  int n_kernels, n_records;  /* kernels of the compile; those from a record */
} curve_point;

typedef struct model_result {
  const char *name;
  double tol;      /* tolerance() of its spec */
  const char *ref; /* whose output is the reference: "PyTorch", or ONNX Runtime's int8 one */
  double tuned_ms, untuned_ms, eager_ms, script_ms; /* medians; < 0: not run */
  /* ours' 10th percentiles: the machine's fast spells, where the runners
   * keep their per-kernel timings (a slow one is re-timed) */
  double tuned_p10, untuned_p10;
  double ort_ms, ov_ms;                              /* ONNX Runtime, OpenVINO; < 0: not run */
  double tuned_err, untuned_err;
  double ort_err, ov_err;       /* engine vs the reference output (ref); < 0: not run */
  double ort_vs_ours, ov_vs_ours; /* engine's output vs ours tuned; < 0: not compared */
  char ort_note[256], ov_note[256]; /* why an engine's column is empty */
  char script_note[256];            /* why TorchScript's column is empty (torch ran) */
  char ort_version[64], ov_version[96], ov_kernels[1024], ort_kernels[1024];
  long long ws_bytes;
  double eager_peak, script_peak;
  int trials, runs;
  int n_kernels, n_records; /* kernels of the tuned model; those from a record */
  double tune_s, load_before, load_after;
  /* mlc-tune's estimates (sum of calls x per-kernel time): with the best
   * records, with the default schedules; 0: not in its log */
  double est_tuned_ms, est_untuned_ms;
  curve_point curve[MAX_STEPS]; /* empty with --reuse */
  int n_curve;
} model_result;

static double rel_error(const float *y, const float *want, int64_t n) {
  double scale = 0, e = 0;
  for (int64_t i = 0; i < n; i++) {
    scale = fmax(scale, fabs(want[i]));
    e = fmax(e, fabs((double)y[i] - want[i]));
  }
  return e / (scale > 0 ? scale : 1);
}

/* A model's data: its inputs (any dtype), PyTorch's outputs (float32)
 * and room for ours. */
typedef struct model_io {
  int n_in, n_out;
  void *in[MAX_IO];
  float *want[MAX_IO], *out[MAX_IO];
  int64_t n_elems[MAX_IO]; /* of each output */
} model_io;

/* The largest relative error over the outputs: max abs error / max |want|
 * of each (ys: one array per output, shaped as io's). */
static double rel_error_all(float *const *ys, const model_io *io) {
  double e = 0;
  for (int i = 0; i < io->n_out; i++) e = fmax(e, rel_error(ys[i], io->want[i], io->n_elems[i]));
  return e;
}

static double run_ours_ms(ours *o, model_io *io) {
  double t0 = bench_now_ms();
  if (o->run(io->in, (void *const *)io->out, o->ws) != 0) die("model run", "a kernel failed");
  return bench_now_ms() - t0;
}

/* The last line of text starting with start ("\n..."), or NULL. */
static const char *last_line(const char *text, const char *start) {
  const char *p = NULL;
  for (const char *q = text ? strstr(text, start) : NULL; q; q = strstr(q + 1, start)) p = q;
  return p;
}

/* The trials the database holds after mlc-tune, from its last summary
 * line "trials: B before, M measured now ..." in log (the log holds one
 * per tuning step; want when there is none). */
static int measured_trials(const char *log, int want) {
  char *text = mlc_read_file(log, NULL, NULL);
  const char *p = last_line(text, "\ntrials: ");
  int before, now;
  if (p && sscanf(p, "\ntrials: %d before, %d measured now", &before, &now) == 2) want = before + now;
  mlc_free(text);
  return want;
}

/* mlc-tune's last estimate of the model's latency in ms (its per-kernel
 * times x calls), from the summary line starting with start; 0 if none. */
static double tune_estimate_ms(const char *log, const char *start) {
  char *text = mlc_read_file(log, NULL, NULL);
  const char *p = last_line(text, start);
  double us = 0;
  if (p && sscanf(p + strlen(start), "%lf us", &us) != 1) us = 0;
  mlc_free(text);
  return us / 1e3;
}

/* Kernels of the tuned compile replaying a record, from mlc-compile's
 * listing ("... record N (...)" or "... untuned (...)" per kernel). */
static void count_records(const char *log, int *n_kernels, int *n_records) {
  char *text = mlc_read_file(log, NULL, NULL);
  *n_kernels = *n_records = 0;
  for (const char *p = text ? strstr(text, "  calls ") : NULL; p; p = strstr(p + 1, "  calls ")) {
    ++*n_kernels;
    const char *eol = strchr(p, '\n'), *rec = strstr(p, "  record ");
    *n_records += rec && (!eol || rec < eol);
  }
  mlc_free(text);
}

/* Compiles the model from db into work/<tag>.o and <tag>.h and counts
 * its kernels that replay a record. */
static void compile_tuned(const char *work, const model_files *mf, const char *db, const char *tag,
                          int *n_kernels, int *n_records) {
  const char *clog = STR("%s/compile_%s.log", work, tag);
  run_cmd(STR("rm -f %s; %s/bin/mlc-compile --model %s%s --db %s -o %s/%s.o --header %s/%s.h", clog, build_dir,
              mf->onnx, mf->shapes, db, work, tag, work, tag),
          clog);
  count_records(clog, n_kernels, n_records);
}

/* The budgets of the tuning steps: 64, 128, 256, ... below N, then N
 * (at most MAX_STEPS); for N under 64, N/8, N/4, N/2 and N rounded, at
 * least 1, without repeats. Returns how many. */
static int curve_budgets(int trials, int budget[MAX_STEPS]) {
  int n = 0;
  if (trials >= 64) {
    for (int t = 64; t < trials && n < MAX_STEPS - 1; t *= 2) budget[n++] = t;
    budget[n++] = trials;
    return n;
  }
  for (int d = 8; d >= 1; d /= 2) {
    int t = (trials + d / 2) / d;
    if (t < 1) t = 1;
    if (n == 0 || t > budget[n - 1]) budget[n++] = t;
  }
  return n;
}

/* The q-quantile of n sorted values (nearest rank). */
static double sorted_quantile(const double *v, int n, double q) { return v[(int)(q * (n - 1) + 0.5)]; }

/* A curve point timed against the untuned build and the previous point's
 * (NULL for the first): CURVE_ROUNDS rounds, each running the builds once
 * in an order that rotates, so that all of them see the same spells of a
 * shared machine (on a 2-vCPU guest the second CPU comes and goes for
 * seconds at a time: a 2-thread run then takes as long as one thread's).
 * The ratios are taken round by round, within the same spell. */
static void time_point(ours *untuned, ours *prev, ours *cur, model_io *io, curve_point *p) {
  ours *vs[3] = {untuned, prev, cur};
  double ms[CURVE_ROUNDS], to_untuned[CURVE_ROUNDS], to_prev[CURVE_ROUNDS];
  for (int v = 0; v < 3; v++)
    if (vs[v]) run_ours_ms(vs[v], io); /* warm-up */
  for (int k = 0; k < CURVE_ROUNDS; k++) {
    double t[3] = {0};
    for (int j = 0; j < 3; j++)
      if (vs[(j + k) % 3]) t[(j + k) % 3] = run_ours_ms(vs[(j + k) % 3], io);
    ms[k] = t[2], to_untuned[k] = t[2] / t[0], to_prev[k] = prev ? t[2] / t[1] : 0;
  }
  p->vs_untuned = bench_median(to_untuned, CURVE_ROUNDS);
  p->vs_prev = prev ? bench_median(to_prev, CURVE_ROUNDS) : 0;
  p->ms = bench_median(ms, CURVE_ROUNDS); /* sorts ms */
  p->p10 = sorted_quantile(ms, CURVE_ROUNDS, 0.1);
  p->p90 = sorted_quantile(ms, CURVE_ROUNDS, 0.9);
}

/* Tunes in steps on one fresh database: each `mlc-tune --trials <step>`
 * continues the last (the budget is the total the database should hold).
 * Each step is compiled (the last as work/tuned.o), loaded and timed
 * against the untuned build and the step before it (time_point); the
 * last one's build is *tuned. The builds stay loaded: a .so's runtime
 * team has a thread running its code. */
static void tune_curve(const char *work, const model_files *mf, const char *db, const char *log, int trials,
                       model_io *io, ours *untuned, ours *tuned, model_result *r) {
  const char *model = mf->name;
  int budget[MAX_STEPS], n = curve_budgets(trials, budget);
  ours prev = {0}, cur = {0};
  r->tune_s = 0;
  for (int i = 0; i < n; i++) {
    fprintf(stderr, "bench_models: %s: tuning step %d/%d, %d trials in total (log %s) ...\n", model, i + 1, n,
            budget[i], log);
    double t0 = bench_now_ms();
    run_cmd(STR("MLC_WORKER=%s/bin/mlc-worker %s/bin/mlc-tune --model %s%s --trials %d --db %s", build_dir,
                build_dir, mf->onnx, mf->shapes, budget[i], db),
            log);
    r->tune_s += (bench_now_ms() - t0) / 1e3;
    curve_point *p = &r->curve[r->n_curve++];
    p->trials = measured_trials(log, budget[i]);
    p->tune_s = r->tune_s;
    const char *tag = i == n - 1 ? "tuned" : STR("curve%d", i);
    compile_tuned(work, mf, db, tag, &p->n_kernels, &p->n_records);
    load_ours(work, tag, mf, &cur);
    fprintf(stderr, "bench_models: %s: timing the curve point, %d rounds ...\n", model, CURVE_ROUNDS);
    time_point(untuned, i ? &prev : NULL, &cur, io, p);
    if (i) free_ours(&prev);
    prev = cur;
    /* the object (the weights again: 650 MB for GPT-2) is in the loaded .so */
    if (i < n - 1) run_cmd(STR("rm -f %s/%s.o", work, tag), "/dev/null");
  }
  *tuned = cur;
  const curve_point *last = &r->curve[r->n_curve - 1];
  r->trials = last->trials;
  r->n_kernels = last->n_kernels;
  r->n_records = last->n_records;
}

/* The untuned build (work/untuned.o: a database that does not exist, so
 * every kernel gets its default schedule), loaded into *untuned. */
static void compile_untuned(const char *work, const model_files *mf, ours *untuned) {
  fprintf(stderr, "bench_models: %s: compiling untuned ...\n", mf->name);
  run_cmd(STR("%s/bin/mlc-compile --model %s%s --db %s/none.db -o %s/untuned.o --header %s/untuned.h", build_dir,
              mf->onnx, mf->shapes, work, work, work),
          STR("%s/compile_untuned.log", work));
  load_ours(work, "untuned", mf, untuned);
}

/* The tuned build in *tuned: tuned along the curve on a fresh database,
 * or with reuse, the last run's database compiled again. */
static void tune_and_compile(const char *work, const model_files *mf, int trials, bool reuse, model_io *io,
                             ours *untuned, ours *tuned, model_result *r) {
  const char *model = mf->name;
  const char *db = STR("%s/%s.db", work, model), *log = STR("%s/%s_tune.log", work, model);
  if (reuse && access(db, R_OK) == 0) {
    /* the last run's database and tuning log: time again without tuning */
    fprintf(stderr, "bench_models: %s: reusing %s (tuning wall time not measured)\n", model, db);
    r->tune_s = 0;
    r->trials = measured_trials(log, trials);
    fprintf(stderr, "bench_models: %s: compiling tuned ...\n", model);
    compile_tuned(work, mf, db, "tuned", &r->n_kernels, &r->n_records);
    load_ours(work, "tuned", mf, tuned);
  } else {
    run_cmd(STR("rm -f %s %s-wal %s-shm %s", db, db, db, log), "/dev/null");
    tune_curve(work, mf, db, log, trials, io, untuned, tuned, r);
  }
  r->est_tuned_ms = tune_estimate_ms(log, "\nestimated model latency (sum of calls x best): ");
  r->est_untuned_ms =
      tune_estimate_ms(log, "\nthe same with every kernel's default schedule (an untuned build): ");
}

/* <prefix><tag>.npy of any dtype (float32 when want_f32), its elements in *n. */
static void *read_npy(const model_files *mf, const char *tag, bool want_f32, int64_t *n) {
  const char *path = STR("%s%s.npy", mf->prefix, tag);
  mlc_error err;
  mlc_gtype ty;
  void *d = mlc_npy_read(path, &ty, &err);
  if (!d) die(path, err.msg);
  if (want_f32 && ty.dtype != MLC_FLOAT32) die(path, "not float32 ('<f4')");
  *n = mlc_gtype_numel(&ty);
  return d;
}

/* The inputs and PyTorch's outputs of the model; room for ours. The
 * inputs go to our entry as they are: a wrong dtype or length shows as
 * the entry's own input check or a wrong output. */
static void io_read(const model_files *mf, model_io *io) {
  memset(io, 0, sizeof *io);
  io->n_in = mf->spec->n_in;
  io->n_out = mf->spec->n_out;
  int64_t n;
  for (int i = 0; i < io->n_in; i++) io->in[i] = read_npy(mf, mf->spec->ins[i], false, &n);
  for (int i = 0; i < io->n_out; i++) {
    io->want[i] = read_npy(mf, mf->spec->outs[i], true, &io->n_elems[i]);
    io->out[i] = mlc_xmalloc(sizeof(float) * (size_t)io->n_elems[i]);
  }
}

static void io_free(model_io *io) {
  for (int i = 0; i < io->n_in; i++) mlc_free(io->in[i]);
  for (int i = 0; i < io->n_out; i++) mlc_free(io->want[i]), mlc_free(io->out[i]);
}

/* Interleaved rounds: each variant k runs per round, in turn. */
/* Long enough for spinning pool threads (ONNX Runtime's, OpenVINO's,
 * ours) to go to sleep. */
#define VARIANT_PAUSE_US 20000

static void time_model(ours *v, torch *t, bool have_torch, engines *e, model_io *io, int rounds, int k,
                       model_result *r) {
  double *ms[6];
  int n[6] = {0};
  for (int i = 0; i < 6; i++) ms[i] = mlc_xmalloc(sizeof(double) * (size_t)(rounds * k));
  for (int i = 0; i < 3; i++) { /* warm-up */
    run_ours_ms(&v[0], io);
    run_ours_ms(&v[1], io);
  }
  /* Each round in a shuffled order, a pause before each variant (an
   * engine's pool threads spin on for a while after its run, taking the
   * cores from whatever runs next: rotating one order put OpenVINO
   * before ours tuned in 5 rounds of 6 and timed it 1.5x its own curve
   * point) and one untimed run (the caches and threads the variant
   * before it left cold: a first run after the pause took ONNX Runtime
   * 3x its time). */
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 42, 7);
  double warm[1];
  for (int rd = 0; rd < rounds; rd++) {
    int order[6] = {0, 1, 2, 3, 4, 5};
    for (int j = 5; j > 0; j--) {
      int o = (int)mlc_pcg32_bounded(&rng, (uint32_t)j + 1), x = order[j];
      order[j] = order[o], order[o] = x;
    }
    for (int j = 0; j < 6; j++) {
      int i = order[j];
      usleep(VARIANT_PAUSE_US);
      for (int timed = 0; timed < 2; timed++) {
        int runs = timed ? k : 1, skip = 0, *cnt = timed ? &n[i] : &skip;
        double *dst = timed ? ms[i] : warm;
        if (i < 2)
          for (int run = 0; run < runs; run++) dst[(*cnt)++] = run_ours_ms(&v[i], io);
        else if (i == 2 && have_torch) torch_time(t, "eager", runs, dst, cnt);
        else if (i == 3 && have_torch && t->have_script) torch_time(t, "torchscript", runs, dst, cnt);
        else if (i == 4 && e->have_ort) torch_time(&e->cp, "ort", runs, dst, cnt);
        else if (i == 5 && e->have_ov) torch_time(&e->cp, "ov", runs, dst, cnt);
      }
    }
  }
  double *dst[6] = {&r->tuned_ms, &r->untuned_ms, &r->eager_ms, &r->script_ms, &r->ort_ms, &r->ov_ms};
  double *p10[2] = {&r->tuned_p10, &r->untuned_p10};
  for (int i = 0; i < 6; i++) {
    *dst[i] = n[i] ? bench_median(ms[i], n[i]) : -1; /* sorts ms[i] */
    if (i < 2) *p10[i] = n[i] ? sorted_quantile(ms[i], n[i], 0.1) : -1;
    mlc_free(ms[i]);
  }
  r->runs = rounds * k;
}

/* ---- per layer (ResNet-18): our kernels against oneDNN / OpenBLAS --------- */

typedef struct kdecl {
  char name[128];
  int n_args;
  int ndim[MAX_ARGS];
  int64_t dims[MAX_ARGS][6];
  int calls;    /* calls in <model>_run_ws */
  bool all_f32; /* every argument float32 (a language model's gathers read int64 ids) */
} kdecl;

/* The kernel declarations of the header: the comments
 * "NAME: arg float32[d0, d1, ...], ids int64[...], ... (dense, row-major)". */
static int parse_decls(const char *h, const char *model, kdecl *ks, int max) {
  int n = 0;
  char pre[160];
  snprintf(pre, sizeof pre, "\n/* %s_", model);
  for (const char *p = strstr(h, pre); p && n < max; p = strstr(p + 1, pre)) {
    const char *colon = strchr(p + 4, ':'), *eol = strchr(p + 1, '\n');
    if (!colon || !eol || colon > eol || colon - (p + 4) >= 127) continue;
    kdecl *k = &ks[n];
    memset(k, 0, sizeof *k);
    memcpy(k->name, p + 4, (size_t)(colon - (p + 4)));
    k->all_f32 = true;
    for (const char *q = strchr(colon, '['); q && q < eol && k->n_args < MAX_ARGS; q = strchr(q + 1, '[')) {
      k->all_f32 &= q - colon >= 8 && strncmp(q - 8, " float32", 8) == 0;
      char *e = (char *)q + 1;
      int a = k->n_args++;
      while (*e != ']' && k->ndim[a] < 6) k->dims[a][k->ndim[a]++] = strtoll(e, &e, 10), e += *e == ',';
    }
    char call[160];
    snprintf(call, sizeof call, "if (%s(args)", k->name);
    for (const char *c = strstr(h, call); c; c = strstr(c + 1, call)) k->calls++;
    n++;
  }
  return n;
}

static int64_t numel(const kdecl *k, int a) {
  int64_t n = 1;
  for (int i = 0; i < k->ndim[a]; i++) n *= k->dims[a][i];
  return n;
}

static bool same_shape(const kdecl *k, int a, int b) {
  if (k->ndim[a] != k->ndim[b]) return false;
  for (int i = 0; i < k->ndim[a]; i++)
    if (k->dims[a][i] != k->dims[b][i]) return false;
  return true;
}

/* A conv2d kernel's parameters from its argument shapes: src [1,C,H,W]
 * or [1,C/c,H,W,c], weights [K,C/g,R,S] (or packed: [K/k,C/c,R,S,c,k]),
 * out [1,K,P,Q] or [1,K/k,P,Q,k]
 * (last), an optional bias [K] and residual (shaped as out). Stride and symmetric padding are the smallest
 * that give P from H (ResNet-18's convolutions are all of that form). */
typedef struct conv {
  int64_t c, h, w, k, r, s, p, q, g, stride, pad;
  int src, wt, bias, res, out; /* argument indices; -1 absent */
  bool relu;
} conv;

static bool conv_of(const kdecl *k, conv *cv) {
  if (!strstr(k->name, "conv2d") || k->n_args < 3 || !k->all_f32) return false;
  cv->src = 0, cv->wt = 1, cv->out = k->n_args - 1, cv->bias = -1, cv->res = -1;
  for (int a = 2; a < cv->out; a++) {
    if (k->ndim[a] == 1) cv->bias = a;
    else if (same_shape(k, a, cv->out)) cv->res = a;
    else return false;
  }
  /* weights [K, C/g, R, S], or packed by the layout pass [K/k, C/c, R, S, c, k]
   * (depthwise [C/k, 1, R, S, 1, k]); src and out NCHW or, between blocked
   * convs, NCHWc [1, C/c, H, W, c] */
  bool packed = k->ndim[1] == 6;
  if ((k->ndim[0] != 4 && k->ndim[0] != 5) || (k->ndim[1] != 4 && !packed) ||
      (k->ndim[cv->out] != 4 && k->ndim[cv->out] != 5))
    return false;
  cv->c = k->dims[0][1] * (k->ndim[0] == 5 ? k->dims[0][4] : 1);
  cv->h = k->dims[0][2], cv->w = k->dims[0][3];
  cv->k = k->dims[1][0] * (packed ? k->dims[1][5] : 1), cv->r = k->dims[1][2], cv->s = k->dims[1][3];
  cv->p = k->dims[cv->out][2], cv->q = k->dims[cv->out][3];
  cv->g = cv->c / (k->dims[1][1] * (packed ? k->dims[1][4] : 1));
  cv->relu = strstr(k->name, "relu") != NULL;
  for (cv->stride = 1; cv->stride <= 4; cv->stride++)
    for (cv->pad = 0; cv->pad <= cv->r / 2; cv->pad++)
      if ((cv->h + 2 * cv->pad - cv->r) / cv->stride + 1 == cv->p) return true;
  return false;
}

typedef struct kernel_run {
  int32_t (*fn)(void **args);
  void *args[MAX_ARGS];
} kernel_run;

static void call_kernel(void *ctx) {
  kernel_run *kr = ctx;
  if (kr->fn(kr->args) != 0) die("kernel", "failed");
}


/* batch products C[M,N] = A[M,K] B[K,N] (B[N,K] transposed when trans_b);
 * b_stride 0: one B for every batch. */
typedef struct gemm_run {
  int batch, m, n, k;
  bool trans_b;
  int64_t b_stride;
  float *a, *b, *c;
} gemm_run;

static void call_gemm(void *ctx) {
  gemm_run *g = ctx;
  for (int i = 0; i < g->batch; i++)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, g->trans_b ? CblasTrans : CblasNoTrans, g->m, g->n, g->k,
                1.0f, g->a + (int64_t)i * g->m * g->k, g->k, g->b + i * g->b_stride,
                g->trans_b ? g->k : g->n, 0.0f, g->c + (int64_t)i * g->m * g->n, g->n);
}

/* The product of a dense kernel (A [..., K], W [N, K]) or a matmul kernel
 * (A [..., M, K], B [..., K, N]); false for other kernels, and for a
 * matmul reading an operand transposed in place (its group has the
 * transpose: the argument is the transpose's input, not the product's
 * operand) or shapes that do not make one product (the baseline would
 * read past them). */
static bool gemm_of(const kdecl *kd, gemm_run *g) {
  int last = kd->n_args - 1, na = kd->ndim[0], nb = kd->ndim[1];
  bool dense = strstr(kd->name, "dense") != NULL;
  if ((!dense && !strstr(kd->name, "matmul")) || strstr(kd->name, "transpose") || kd->n_args < 3 || na < 2 ||
      nb < 2 || !kd->all_f32)
    return false;
  g->k = (int)kd->dims[0][na - 1];
  g->n = (int)kd->dims[last][kd->ndim[last] - 1];
  g->trans_b = dense;
  if (dense) {
    g->batch = 1, g->m = (int)(numel(kd, 0) / g->k), g->b_stride = 0;
  } else {
    g->m = (int)kd->dims[0][na - 2];
    g->batch = (int)(numel(kd, 0) / ((int64_t)g->m * g->k));
    g->b_stride = numel(kd, 1) > (int64_t)g->k * g->n ? (int64_t)g->k * g->n : 0;
  }
  int64_t b_batches = g->b_stride ? g->batch : 1;
  return numel(kd, last) == (int64_t)g->batch * g->m * g->n && numel(kd, 0) == (int64_t)g->batch * g->m * g->k &&
         numel(kd, 1) == b_batches * g->k * g->n;
}

/* Medians (us[0], us[1]) and minima (us[2], us[3]) of 5 interleaved
 * rounds of ours and the baseline (f1 NULL: none, -1), in microseconds. */
static void time_pair(void (*f0)(void *), void *c0, void (*f1)(void *), void *c1, double us[4]) {
  bench_time_pair(f0, c0, f1, c1, 5, 3, 20, us);
  for (int i = 0; i < 4; i++) us[i] = us[i] > 0 ? 1e3 * us[i] : -1;
}

/* us: time_pair's medians and minima. */
static void layer_row(mlc_arena *ar, const char *name, const double us[4], const char *base,
                      const char *shape, int calls, bench_case *cs, int *nc) {
  if (*nc >= MAX_LAYERS) return;
  printf("  %-34s %5d %10.1f %10.1f %7.2f %10.1f %10.1f  %-8s %s\n", name, calls, us[0], us[1],
         us[1] > 0 ? us[0] / us[1] : 0, us[2], us[3], base, shape);
  cs[(*nc)++] = (bench_case){mlc_arena_printf(ar, "layer_%s_%dt", name, THREADS), us[0], "us",
                             us[1] > 0 ? mlc_arena_printf(ar, "%s_%dt", base, THREADS) : NULL, us[1],
                             mlc_arena_printf(ar, "%s, %d call(s) per run; minima %.1f us ours, %.1f us %s",
                                              shape, calls, us[2], us[3], base)};
}

/* Every conv2d kernel of the tuned model against oneDNN, every dense and
 * matmul kernel against OpenBLAS (bias and other fused work left to ours);
 * rows appended to cs. */
static void per_layer(mlc_arena *ar, const char *work, const char *model, ours *tuned, bench_case *cs,
                      int *nc) {
  mlc_error err;
  const char *path = STR("%s/tuned.h", work);
  char *h = mlc_read_file(path, NULL, &err);
  if (!h) die(path, err.msg);
  enum { MAX_K = 256 };
  kdecl *ks = mlc_xmalloc(sizeof(kdecl) * MAX_K);
  int n = parse_decls(h, model, ks, MAX_K);
  mlc_free(h);
  const char *dnnl_base = bench_onednn_available() ? "onednn" : "none";
  if (!bench_onednn_available())
    printf("  oneDNN columns skipped: bench built without libdnnl-dev (make deps installs it)\n");
  printf("\n%s per layer (tuned kernels, %d threads; median and min of 5 rounds):\n"
         "  %-34s %5s %10s %10s %7s %10s %10s  %-8s %s\n",
         model, THREADS, "kernel", "calls", "ours us", "base us", "ratio", "ours min", "base min", "baseline",
         "layer");
  for (int i = 0; i < n; i++) {
    kernel_run kr = {.fn = (int32_t(*)(void **))dlsym(tuned->so, ks[i].name)};
    if (!kr.fn) die(ks[i].name, "not in the shared object");
    conv cv = {0};
    gemm_run g = {0};
    bool is_conv = conv_of(&ks[i], &cv), is_gemm = !is_conv && gemm_of(&ks[i], &g);
    if (!is_conv && !is_gemm) continue;
    for (int a = 0; a < ks[i].n_args; a++) {
      int64_t m = numel(&ks[i], a);
      float *d = mlc_xmalloc(sizeof(float) * (size_t)m);
      for (int64_t j = 0; j < m; j++) d[j] = (float)((j * 7919) % 13) * 0.01f - 0.06f;
      kr.args[a] = d;
    }
    double us[4];
    char shape[160];
    if (is_conv) {
      snprintf(shape, sizeof shape, "%lldx%lldx%lld k%lld %lldx%lld s%lld%s%s", (long long)cv.c,
               (long long)cv.h, (long long)cv.w, (long long)cv.k, (long long)cv.r, (long long)cv.s,
               (long long)cv.stride, cv.res >= 0 ? " +res" : "", cv.relu ? " relu" : "");
      if (bench_onednn_available()) {
        bench_conv bc = {cv.c, cv.h, cv.w, cv.k, cv.r, cv.s, cv.p, cv.q, cv.g, cv.stride, cv.pad,
                         cv.bias >= 0, cv.res >= 0, cv.relu, 0};
        bench_onednn *d = bench_onednn_conv(&bc);
        time_pair(call_kernel, &kr, bench_onednn_run, d, us);
        layer_row(ar, ks[i].name, us, dnnl_base,
                  mlc_arena_printf(ar, "%s, oneDNN %s", shape, bench_onednn_impl(d)), ks[i].calls, cs, nc);
        bench_onednn_free(d);
      } else {
        time_pair(call_kernel, &kr, NULL, NULL, us);
        layer_row(ar, ks[i].name, us, dnnl_base, shape, ks[i].calls, cs, nc);
      }
    } else {
      g.a = kr.args[0], g.b = kr.args[1];
      g.c = mlc_xmalloc(sizeof(float) * (size_t)g.batch * (size_t)g.m * (size_t)g.n);
      snprintf(shape, sizeof shape, "%s %dx(%dx%dx%d)%s", g.trans_b ? "dense" : "matmul", g.batch, g.m, g.n,
               g.k, g.b_stride || g.batch == 1 ? "" : " shared B");
      time_pair(call_kernel, &kr, call_gemm, &g, us);
      layer_row(ar, ks[i].name, us, "openblas", mlc_arena_printf(ar, "%s, cblas_sgemm", shape),
                ks[i].calls, cs, nc);
      mlc_free(g.c);
    }
    for (int a = 0; a < ks[i].n_args; a++) mlc_free(kr.args[a]);
  }
  mlc_free(ks);
}

/* ---- driver ---------------------------------------------------------------- */

typedef struct options {
  const char *results;
  const char *only; /* --only / $MLC_BENCH_ONLY: model names, comma-separated; NULL all */
  int trials, rounds, per_round;
  bool reuse; /* --reuse: time the last run's tuned database again, no tuning */
  bool smoke; /* --smoke / MLC_BENCH_SMOKE=1: the language models' tiny exports, few trials */
} options;

/* Copies the engines' facts into r and compares each engine's output
 * files with ours tuned (io's outputs: scratch). */
static void engine_checks(const engines *e, const char *work, const model_files *mf, ours *tuned, model_io *io,
                          model_result *r) {
  r->ort_err = e->have_ort ? e->ort_err : -1;
  r->ov_err = e->have_ov ? e->ov_err : -1;
  r->ort_vs_ours = r->ov_vs_ours = -1;
  snprintf(r->ort_note, sizeof r->ort_note, "%s", e->ort_note);
  snprintf(r->ov_note, sizeof r->ov_note, "%s", e->ov_note);
  snprintf(r->ort_version, sizeof r->ort_version, "%s", e->ort_version);
  snprintf(r->ov_version, sizeof r->ov_version, "%s", e->ov_version);
  snprintf(r->ov_kernels, sizeof r->ov_kernels, "%s", e->ov_kernels);
  snprintf(r->ort_kernels, sizeof r->ort_kernels, "%s", e->ort_kernels);
  run_ours_ms(tuned, io);
  const char *names[2] = {"ort", "ov"};
  bool have[2] = {e->have_ort, e->have_ov};
  double *dst[2] = {&r->ort_vs_ours, &r->ov_vs_ours};
  for (int i = 0; i < 2; i++) {
    if (!have[i]) continue;
    /* the largest error over the outputs; one of another size: not compared */
    for (int k = 0; k < io->n_out; k++) {
      const char *path = STR("%s/%s_%s_%s.npy", work, mf->name, names[i], mf->spec->outs[k]);
      mlc_error err;
      mlc_gtype ty;
      float *y = mlc_npy_read(path, &ty, &err);
      if (!y) die(path, err.msg);
      if (ty.dtype != MLC_FLOAT32) die(path, "not float32 ('<f4')");
      if (mlc_gtype_numel(&ty) == io->n_elems[k]) *dst[i] = fmax(*dst[i], rel_error(io->out[k], y, io->n_elems[k]));
      mlc_free(y);
    }
  }
}

static void bench_model(const options *opt, const model_files *mf, model_result *r, mlc_arena *ar,
                        bench_case *layers, int *n_layers) {
  const char *model = mf->name;
  const char *work = STR("%s/models_%s", exe_dir, model);
  run_cmd(STR("mkdir -p %s", work), "/dev/null");
  memset(r, 0, sizeof *r);
  r->name = model;
  r->tol = tolerance(mf->spec);
  r->ref = mf->spec->quantized ? "ONNX Runtime int8" : "PyTorch";
  model_io io;
  io_read(mf, &io);
  ours v[2]; /* tuned, untuned */
  compile_untuned(work, mf, &v[1]);
  tune_and_compile(work, mf, opt->trials, opt->reuse, &io, &v[1], &v[0], r);
  r->ws_bytes = v[0].ws_floats * (long long)sizeof(float);
  run_ours_ms(&v[0], &io);
  r->tuned_err = rel_error_all(io.out, &io);
  run_ours_ms(&v[1], &io);
  r->untuned_err = rel_error_all(io.out, &io);
  torch t;
  bool have_torch = !mf->spec->quantized && torch_start(&t, mf);
  if (!have_torch)
    fprintf(stderr, "bench_models: %s: %s; torch columns left out\n", model,
            mf->spec->quantized ? "a quantized model (its reference is ONNX Runtime's int8 output)"
                                : "no PyTorch (torch_baseline.py failed)");
  r->eager_peak = have_torch ? t.eager_peak : -1;
  r->script_peak = have_torch && t.have_script ? t.script_peak : -1;
  snprintf(r->script_note, sizeof r->script_note, "%s", have_torch ? t.script_note : "");
  fprintf(stderr, "bench_models: %s: timing, %d rounds x %d runs ...\n", model, opt->rounds, opt->per_round);
  engines e;
  bool have_engines = engines_start(&e, mf, work);
  engine_checks(&e, work, mf, &v[0], &io, r);
  getloadavg(&r->load_before, 1);
  time_model(v, &t, have_torch, &e, &io, opt->rounds, opt->per_round, r);
  getloadavg(&r->load_after, 1);
  if (have_engines) bench_coprocess_stop(&e.cp.cp);
  if (have_torch) {
    if (t.eager_err > 1e-4 || t.script_err > 1e-4)
      fprintf(stderr, "bench_models: %s: PyTorch differs from its exported output (%.3g, %.3g)\n", model,
              t.eager_err, t.script_err);
    bench_coprocess_stop(&t.cp);
  }
  if (mf->spec->per_layer) per_layer(ar, work, model, &v[0], layers, n_layers);
  free_ours(&v[0]);
  free_ours(&v[1]);
  io_free(&io);
}

/* true when list (comma-separated) names name */
static bool in_list(const char *list, const char *name) {
  for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strcspn(p, ",") == strlen(name) && strncmp(p, name, strlen(name)) == 0) return true;
  return false;
}

/* Dies on a name in --only that is no model's (mfs: the models' files). */
static void check_only(const char *only, const model_files *mfs) {
  for (const char *p = only; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    const char *name = STR("%.*s", (int)strcspn(p, ","), p);
    bool known = false;
    for (int i = 0; i < N_MODELS; i++) known |= strcmp(name, MODELS[i].name) == 0 || strcmp(name, mfs[i].name) == 0;
    if (!known) die(name, "--only: no such model (resnet18, mobilenet_v2, encoder, bert_base, gpt2_small, llama_100m)");
  }
}

static void parse_options(int argc, char **argv, options *o) {
  const char *env = getenv("MLC_BENCH_TRIALS"), *smoke = getenv("MLC_BENCH_SMOKE");
  *o = (options){.results = "bench/results.json",
                 .trials = env && atoi(env) > 0 ? atoi(env) : 200,
                 .rounds = 10,
                 .per_round = 2,
                 .only = getenv("MLC_BENCH_ONLY") && *getenv("MLC_BENCH_ONLY") ? getenv("MLC_BENCH_ONLY") : NULL};
  const char *quick = getenv("MLC_BENCH_QUICK");
  if (quick && strcmp(quick, "1") == 0) o->trials = 16, o->rounds = 4, o->per_round = 5;
  o->smoke = smoke && strcmp(smoke, "1") == 0;
  for (int i = 1; i < argc; i++) o->smoke |= strcmp(argv[i], "--smoke") == 0;
  /* --smoke: 4 trials unless $MLC_BENCH_TRIALS or --trials says otherwise */
  if (o->smoke) o->trials = env && atoi(env) > 0 ? atoi(env) : 4, o->rounds = 4, o->per_round = 5;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) o->results = argv[++i];
    else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) o->trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) o->only = argv[++i];
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) o->rounds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--reuse") == 0) o->reuse = true;
    else if (strcmp(argv[i], "--quick") == 0) o->trials = 16, o->rounds = 4, o->per_round = 5;
    else if (strcmp(argv[i], "--smoke") == 0) continue;
    else {
      fprintf(stderr, "usage: bench_models [--results FILE] [--trials N] [--only NAME,...] [--rounds R] [--quick] [--smoke] [--reuse]\n");
      exit(2);
    }
  }
  if (o->rounds * o->per_round < 20) o->rounds = (20 + o->per_round - 1) / o->per_round;
}

static const char *mb(mlc_arena *a, double bytes) {
  return bytes < 0 ? "?" : mlc_arena_printf(a, "%.1f", bytes / 1048576.0);
}

/* The fastest baseline engine of r (PyTorch eager / TorchScript, ONNX
 * Runtime, OpenVINO): its median, its name in *name; -1 when none ran. */
static double fastest_engine(const model_result *r, const char **name) {
  const double ms[4] = {r->eager_ms, r->script_ms, r->ort_ms, r->ov_ms};
  static const char *const names[4] = {"torch_eager", "torchscript", "onnxruntime", "openvino"};
  double best = -1;
  *name = NULL;
  for (int i = 0; i < 4; i++)
    if (ms[i] > 0 && (best < 0 || ms[i] < best)) best = ms[i], *name = names[i];
  return best;
}

static const char *ms_col(mlc_arena *a, double ms) {
  return ms > 0 ? mlc_arena_printf(a, "%.2f", ms) : "-";
}

static const char *err_col(mlc_arena *a, double e) {
  return e >= 0 ? mlc_arena_printf(a, "%.2g", e) : "-";
}

static void print_table(mlc_arena *a, const model_result *rs, int n) {
  printf("\n%-13s %9s %9s %9s %9s %9s %9s %7s %-12s %9s %9s %9s %6s %8s %9s\n", "model", "tuned ms", "untuned",
         "ort", "openvino", "torch", "tscript", "ratio", "fastest", "ours MB", "eager MB", "tscr MB", "trials",
         "tune s", "max err");
  for (int i = 0; i < n; i++) {
    const model_result *r = &rs[i];
    const char *bname;
    double best = fastest_engine(r, &bname);
    printf("%-13s %9.2f %9.2f %9s %9s %9s %9s %7.2f %-12s %9s %9s %9s %6d %8.0f %9.2g\n", r->name, r->tuned_ms,
           r->untuned_ms, ms_col(a, r->ort_ms), ms_col(a, r->ov_ms), ms_col(a, r->eager_ms), ms_col(a, r->script_ms),
           best > 0 ? r->tuned_ms / best : 0, bname ? bname : "-", mb(a, (double)r->ws_bytes), mb(a, r->eager_peak),
           mb(a, r->script_peak), r->trials, r->tune_s, fmax(r->tuned_err, r->untuned_err));
  }
  printf("ratio = ours tuned / fastest other engine (< 1: ours faster); %d threads; median of %d runs\n", THREADS,
         n ? rs[0].runs : 0);
  for (int i = 0; i < n; i++) {
    const model_result *r = &rs[i];
    printf("%s: %d of %d kernels from tuning records; load average %.1f -> %.1f while timed\n", r->name,
           r->n_records, r->n_kernels, r->load_before, r->load_after);
    if (r->script_note[0]) printf("  TorchScript: %s\n", r->script_note);
    if (r->ort_ms > 0)
      printf("  ONNX Runtime %s: rel error %s vs %s's output, %s vs ours tuned\n  ONNX Runtime nodes: %s\n",
             r->ort_version, err_col(a, r->ort_err), r->ref, err_col(a, r->ort_vs_ours), r->ort_kernels);
    else
      printf("  ONNX Runtime: %s\n", r->ort_note);
    if (r->ov_ms > 0)
      printf("  OpenVINO %s: rel error %s vs %s's output, %s vs ours tuned\n  OpenVINO kernels: %s\n",
             r->ov_version, err_col(a, r->ov_err), r->ref, err_col(a, r->ov_vs_ours), r->ov_kernels);
    else
      printf("  OpenVINO: %s\n", r->ov_note);
  }
}

/* The tuning curve of each model, after the summary table. */
static void print_curves(const model_result *rs, int n) {
  for (int i = 0; i < n; i++) {
    const model_result *r = &rs[i];
    if (!r->n_curve) {
      printf("\n%s: no tuning curve (--reuse: the last run's database, not tuned again)\n", r->name);
      continue;
    }
    if (r->est_tuned_ms > 0 && r->tuned_ms > 0)
      printf("\n%s: mlc-tune's estimate (calls x per-kernel time) %.2f ms tuned, measured %.2f ms median "
             "(%.2fx), %.2f ms p10 (%.2fx)",
             r->name, r->est_tuned_ms, r->tuned_ms, r->tuned_ms / r->est_tuned_ms, r->tuned_p10,
             r->tuned_p10 / r->est_tuned_ms);
    if (r->est_tuned_ms > 0 && r->tuned_ms > 0 && r->est_untuned_ms > 0 && r->untuned_ms > 0)
      printf("; %.2f ms untuned, measured %.2f ms median (%.2fx), %.2f ms p10 (%.2fx)", r->est_untuned_ms,
             r->untuned_ms, r->untuned_ms / r->est_untuned_ms, r->untuned_p10, r->untuned_p10 / r->est_untuned_ms);
    if (r->est_tuned_ms > 0 && r->tuned_ms > 0)
      printf("\n  (p10: the fast spells of this shared machine, where the runners keep their timings)");
    if (r->est_tuned_ms > 0 && r->tuned_ms > 0) printf("\n");
    printf("\n%s tuning curve (%d rounds per point, each running the untuned build, the previous point's "
           "and this one in turn; %d threads):\n  %7s %9s %11s %17s %11s %9s  %s\n",
           r->name, CURVE_ROUNDS, THREADS, "trials", "tune s", "latency ms", "band p10-p90 ms", "vs untuned",
           "vs prev", "kernels from records");
    for (int j = 0; j < r->n_curve; j++) {
      const curve_point *p = &r->curve[j];
      char prev[16] = "-";
      if (j) snprintf(prev, sizeof prev, "%.3f", p->vs_prev);
      printf("  %7d %9.1f %11.3f %8.3f-%-8.3f %11.3f %9s  %d of %d\n", p->trials, p->tune_s, p->ms, p->p10, p->p90,
             p->vs_untuned, prev, p->n_records, p->n_kernels);
    }
    printf("  vs untuned, vs prev: medians of the round-by-round ratios of this point's time to theirs\n");
  }
}

/* The curve points of one model as cases for results.json. */
static int curve_cases(mlc_arena *a, const model_result *r, bench_case *cs) {
  for (int j = 0; j < r->n_curve; j++) {
    const curve_point *p = &r->curve[j];
    cs[j] = (bench_case){mlc_arena_printf(a, "%s_curve_%d_%dt", r->name, p->trials, THREADS), p->ms, "ms", NULL, 0,
                         mlc_arena_printf(a, "tuning curve: %d trials measured, %.1f s tuning wall so far; %d/%d kernels from records; median of %d runs, band p10-p90 %.3f-%.3f ms; %.3f x untuned%s (medians of round-by-round ratios)",
                                          p->trials, p->tune_s, p->n_records, p->n_kernels, CURVE_ROUNDS, p->p10,
                                          p->p90, p->vs_untuned,
                                          j ? mlc_arena_printf(a, ", %.3f x the previous point", p->vs_prev) : "")};
  }
  return r->n_curve;
}

/* Cases of one model for results.json; the baseline is the fastest other
 * engine (PyTorch eager / TorchScript, ONNX Runtime, OpenVINO). */
static int model_cases(mlc_arena *a, const model_result *r, bench_case *cs) {
  const char *bname;
  double best = fastest_engine(r, &bname);
  const char *base = best > 0 ? mlc_arena_printf(a, "%s_%s_%dt", r->name, bname, THREADS) : NULL;
  const char *common = mlc_arena_printf(a, "median of %d interleaved runs; load %.1f -> %.1f", r->runs,
                                        r->load_before, r->load_after);
  int n = 0;
  cs[n++] = (bench_case){mlc_arena_printf(a, "%s_tuned_%dt", r->name, THREADS), r->tuned_ms, "ms", base, best,
                         mlc_arena_printf(a, "mlc-tune --model, %d trials in %.0f s wall; %d/%d kernels from records; workspace %lld bytes; rel error %.2g; %s",
                                          r->trials, r->tune_s, r->n_records, r->n_kernels, r->ws_bytes, r->tuned_err, common)};
  cs[n++] = (bench_case){mlc_arena_printf(a, "%s_untuned_%dt", r->name, THREADS), r->untuned_ms, "ms", base, best,
                         mlc_arena_printf(a, "default schedule; rel error %.2g; %s", r->untuned_err, common)};
  if (r->eager_ms > 0)
    cs[n++] = (bench_case){mlc_arena_printf(a, "%s_torch_eager_%dt", r->name, THREADS), r->eager_ms, "ms", NULL, 0,
                           mlc_arena_printf(a, "PyTorch eager, no_grad; peak RSS growth %.0f bytes; %s", r->eager_peak, common)};
  if (r->script_ms > 0)
    cs[n++] = (bench_case){mlc_arena_printf(a, "%s_torchscript_%dt", r->name, THREADS), r->script_ms, "ms", NULL, 0,
                           mlc_arena_printf(a, "torch.jit.freeze + optimize_for_inference; peak RSS growth %.0f bytes; %s",
                                            r->script_peak, common)};
  if (r->ort_ms > 0)
    cs[n++] = (bench_case){mlc_arena_printf(a, "%s_onnxruntime_%dt", r->name, THREADS), r->ort_ms, "ms", NULL, 0,
                           mlc_arena_printf(a, "ONNX Runtime %s, ORT_ENABLE_ALL, intra_op 2, sequential; rel error %.2g vs %s, %.2g vs ours tuned; nodes: %s; %s",
                                            r->ort_version, r->ort_err, r->ref, r->ort_vs_ours, r->ort_kernels, common)};
  if (r->ov_ms > 0)
    cs[n++] = (bench_case){mlc_arena_printf(a, "%s_openvino_%dt", r->name, THREADS), r->ov_ms, "ms", NULL, 0,
                           mlc_arena_printf(a, "OpenVINO %s CPU, INFERENCE_NUM_THREADS 2, NUM_STREAMS 1, LATENCY, f32; rel error %.2g vs %s, %.2g vs ours tuned; kernels: %s; %s",
                                            r->ov_version, r->ov_err, r->ref, r->ov_vs_ours, r->ov_kernels, common)};
  return n;
}

int main(int argc, char **argv) {
  bench_openblas_coretype(argv);
  options opt;
  parse_options(argc, argv, &opt);
  find_build_dir();
  strs = mlc_arena_new();
  omp_set_num_threads(THREADS);
  openblas_set_num_threads(THREADS);
  /* A model not exported is skipped with a reason (plain `make bench`
   * runs this program too); one asked for by --only is an error. */
  bool want[N_MODELS];
  model_files mfs[N_MODELS];
  for (int i = 0; i < N_MODELS; i++) model_files_of(&MODELS[i], opt.smoke, &mfs[i]);
  check_only(opt.only, mfs);
  for (int i = 0; i < N_MODELS; i++) {
    want[i] = opt.only ? in_list(opt.only, MODELS[i].name) || in_list(opt.only, mfs[i].name)
                       : !opt.smoke || MODELS[i].lm;
    const char *path = want[i] ? missing_file(&mfs[i]) : NULL;
    if (path) {
      const char *make = MODELS[i].quantized ? "make models-int8" : "make models";
      if (opt.only) die(path, STR("missing: run `%s` first", make));
      printf("bench_models: %s skipped: %s missing (`%s` makes it; needs python3-torch%s)\n", MODELS[i].name,
             path, make, MODELS[i].quantized ? " and `make bench-deps`" : "");
      want[i] = false;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  mlc_arena *a = mlc_arena_new();
  model_result rs[N_MODELS];
  bench_case cs[N_MODELS * (6 + MAX_STEPS) + MAX_LAYERS];
  int n = 0, nr = 0, n_layers = 0;
  bench_case *layers = mlc_xmalloc(sizeof(bench_case) * MAX_LAYERS);
  for (int i = 0; i < N_MODELS; i++)
    if (want[i]) bench_model(&opt, &mfs[i], &rs[nr++], a, layers, &n_layers);
  if (nr == 0) {
    mlc_free(layers);
    mlc_arena_free(a);
    mlc_arena_free(strs);
    return 0;
  }
  print_table(a, rs, nr);
  print_curves(rs, nr);
  for (int i = 0; i < nr; i++) n += model_cases(a, &rs[i], cs + n);
  for (int i = 0; i < nr; i++) n += curve_cases(a, &rs[i], cs + n);
  for (int i = 0; i < n_layers; i++) cs[n++] = layers[i];
  for (int i = 0; i < n; i++) bench_print(&cs[i]);
  mlc_error err;
  if (!bench_write_results(opt.results, n, cs, &err)) die(opt.results, err.msg);
  int bad = 0;
  for (int i = 0; i < nr; i++)
    if (rs[i].ort_vs_ours > rs[i].tol || rs[i].ov_vs_ours > rs[i].tol || rs[i].ort_err > rs[i].tol ||
        rs[i].ov_err > rs[i].tol) {
      fprintf(stderr, "bench_models: %s: engines disagree (ORT %.3g, OpenVINO %.3g vs ours tuned)\n", rs[i].name,
              rs[i].ort_vs_ours, rs[i].ov_vs_ours);
      bad = 1;
    }
  for (int i = 0; i < nr; i++)
    if (rs[i].tuned_err > rs[i].tol || rs[i].untuned_err > rs[i].tol) {
      fprintf(stderr, "bench_models: %s: output differs from its reference (rel error %.3g tuned, %.3g untuned)\n",
              rs[i].name, rs[i].tuned_err, rs[i].untuned_err);
      bad = 1;
    }
  mlc_free(layers);
  mlc_arena_free(a);
  mlc_arena_free(strs);
  return bad;
}
