/* Memory-bound kernels against the machine's roofline (`make bench
 * BENCH=roofline`): depthwise convolutions, softmax, attention, layer and
 * RMS norms, pooling and elementwise chains at the shapes of the bench's
 * models, each
 * a one-op model compiled as mlc-compile builds it (the default schedule;
 * with --trials also tuned in this run, or from --db) and each of its
 * kernels timed alone, 2 threads, on data it keeps reading (warm caches,
 * as when its producer just wrote them).
 *
 * The bound of a kernel: its compulsory bytes (every argument read or
 * written once: inputs, weights, outputs) over the read bandwidth of the
 * level its working set (those bytes) fits in; for kernels that take an
 * exp or erf per element (softmax, GELU) the count over the machine's exp
 * throughput (the CPU backend's erf, a rational function of degree 7/5
 * with a division, costs about what its exp does); and its floating-point
 * operations (mlc_func_flops of the unscheduled kernel, an exp one
 * operation) at the FMA peak; whichever is slowest. The levels are
 * measured in the same run, before and after the kernels (the better of
 * the two): every thread
 * summing its own buffer of half its core's L1d or L2 (sysconf), 4 MiB
 * (L3: KVM guests report the host's size, so the level's capacity is
 * taken as 16 MiB) or 256 MiB (DRAM), as 64-byte vectors, repeatedly. A
 * working set fits a level when it is at most the level's capacity on
 * every core the kernel runs on (L1d and L2 are per core). The exp
 * throughput is Cephes' expf (the polynomial the LLVM backend emits) over
 * an L1-resident buffer in 16-lane vectors on every thread; the FMA peak
 * 12 independent chains of 16-lane multiply-adds per thread. Writes are
 * charged at the read bandwidth, so the bound is optimistic for kernels
 * that write as much as they read.
 *
 * Each row: the kernel, its bytes and MFLOP, the level, which bound
 * holds (mem, exp or flop) and its time, ours (median of 5 rounds),
 * achieved GB/s and the share of the bound (bound time / our time; the
 * goal is 80%); for the depthwise layers also oneDNN's convolution of the
 * same shape (its own layouts, bias and ReLU6 as post-ops; timed in
 * rounds alternating with ours) and our time over its. Every model's output is checked
 * against the plain C evaluation of the graph before anything is timed.
 *
 *   bench_roofline [--results FILE] [--trials N] [--db PATH] [--only a,b]
 */
#include "bench/onednn.h"
#include "bench/results.h"
#include "db/db.h"
#include "frontend/frontend.h"
#include "graph/graph.h"
#include "targets/runtime/mlcrt.h"
#include "targets/targets.h"

#include <math.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_roofline: %s: %s\n", what, msg);
  exit(1);
}

/* ---- the kernels ----------------------------------------------------------------------------- */

typedef struct kernel_spec {
  const char *name, *what;
  const char *json;  /* the model; weights seeded */
  const char *match; /* report the kernels whose scheduled TVMScript has it; NULL: all */
  int exps;          /* exps (or erfs) per output element of a kernel that takes them */
  bench_conv conv;   /* the reported kernel's convolution, timed in oneDNN too (k 0: none) */
} kernel_spec;

#define MODEL(name, inputs, weights, nodes, out)                                                  \
  "{\"name\": \"" name "\", \"inputs\": [" inputs "], \"weights\": [" weights "], \"nodes\": [" \
  nodes "], \"outputs\": [\"" out "\"]}"
#define IN(n, shape) "{\"name\": \"" n "\", \"shape\": [" shape "]}"
#define NODE(n, op, ins, attrs) "{\"name\": \"" n "\", \"op\": \"" op "\", \"inputs\": [" ins "]" attrs "}"
/* MobileNetV2's depthwise stage as in the model: a 1x1 conv before (so its
 * input is blocked NCHWc, as the layout pass keeps it between convs), the
 * depthwise conv with bias and ReLU6, a 1x1 conv after; only the
 * depthwise kernel is reported. */
#define DW_STAGE(name, c, hw, stride)                                                                \
  MODEL(name, IN("x", "1, " #c ", " #hw ", " #hw),                                                   \
        IN("w1", #c ", " #c ", 1, 1") "," IN("wd", #c ", 1, 3, 3") "," IN("bd", #c ", 1, 1") ","     \
        IN("w2", "16, " #c ", 1, 1"),                                                                \
        NODE("e", "conv2d", "\"x\", \"w1\"", "") ","                                                 \
        NODE("d", "conv2d", "\"e\", \"wd\"", ", \"stride\": " #stride ", \"padding\": 1, \"groups\": " #c) "," \
        NODE("db", "add", "\"d\", \"bd\"", "") ","                                                   \
        NODE("dr", "clip", "\"db\"", ", \"min\": 0, \"max\": 6") ","                                 \
        NODE("y", "conv2d", "\"dr\", \"w2\"", ""),                                                   \
        "y")

/* Attention over H heads of S tokens of 64 dims: scores q k^T (k
 * transposed), scaled, softmax over the keys, the sum weighted over v;
 * fused into one kernel (graph/fuse.c). S / 64 exps an output element. */
#define ATTENTION(name, h, s, scale)                                                                 \
  MODEL(name, IN("q", h ", " s ", 64") "," IN("k", h ", " s ", 64") "," IN("v", h ", " s ", 64"),    \
        "{\"name\": \"c\", \"shape\": [1], \"values\": [" scale "]}",                                  \
        NODE("kt", "transpose", "\"k\"", ", \"axes\": [0, 2, 1]") ","                                  \
        NODE("sc", "matmul", "\"q\", \"kt\"", "") "," NODE("x", "multiply", "\"sc\", \"c\"", "") ","    \
        NODE("p", "softmax", "\"x\"", "") "," NODE("y", "matmul", "\"p\", \"v\"", ""),                 \
        "y")

static const kernel_spec KERNELS[] = {
    {"dw_c32_112", "MobileNetV2 depthwise 3x3 s1 + bias + ReLU6, 32x112x112 (NCHWc)",
     DW_STAGE("dw_c32_112", 32, 112, 1), "depthwise", 0, {32, 112, 112, 32, 3, 3, 112, 112, 32, 1, 1, true, false, false, 6}},
    {"dw_c96_112_s2", "MobileNetV2 depthwise 3x3 s2 + bias + ReLU6, 96x112x112 (NCHWc)",
     DW_STAGE("dw_c96_112_s2", 96, 112, 2), "depthwise", 0, {96, 112, 112, 96, 3, 3, 56, 56, 96, 2, 1, true, false, false, 6}},
    {"dw_c144_56", "MobileNetV2 depthwise 3x3 s1 + bias + ReLU6, 144x56x56 (NCHWc)",
     DW_STAGE("dw_c144_56", 144, 56, 1), "depthwise", 0, {144, 56, 56, 144, 3, 3, 56, 56, 144, 1, 1, true, false, false, 6}},
    {"dw_c576_14", "MobileNetV2 depthwise 3x3 s1 + bias + ReLU6, 576x14x14 (NCHWc)",
     DW_STAGE("dw_c576_14", 576, 14, 1), "depthwise", 0, {576, 14, 14, 576, 3, 3, 14, 14, 576, 1, 1, true, false, false, 6}},
    {"softmax_256", "softmax over rows, 256x256",
     MODEL("softmax_256", IN("x", "256, 256"), "", NODE("y", "softmax", "\"x\"", ""), "y"), NULL, 1, {0}},
    {"softmax_attn", "attention softmax, 12x128x128 (BERT-base at 128)",
     MODEL("softmax_attn", IN("x", "1, 12, 128, 128"), "", NODE("y", "softmax", "\"x\"", ""), "y"), NULL, 1, {0}},
    {"attention_128", "attention as one kernel, 12 heads x 128 tokens x 64 (BERT-base at 128)",
     ATTENTION("attention_128", "12", "128", "0.125"), NULL, 2, {0}},
    {"attention_1024", "attention as one kernel, 12 heads x 1024 tokens x 64 (GPT-2's context)",
     ATTENTION("attention_1024", "12", "1024", "0.125"), NULL, 16, {0}},
    {"layernorm", "layer norm, 128x768 (BERT-base at 128)",
     MODEL("layernorm", IN("x", "128, 768"), IN("g", "768") "," IN("b", "768"),
           NODE("y", "layernorm", "\"x\", \"g\", \"b\"", ""), "y"),
     NULL, 0, {0}},
    {"rmsnorm", "RMS norm as exported, 128x768 (Llama-style)",
     MODEL("rmsnorm", IN("x", "128, 768"),
           IN("g", "768") ", {\"name\": \"eps\", \"shape\": [1], \"values\": [1e-6]}",
           NODE("sq", "multiply", "\"x\", \"x\"", "") ","
           NODE("ms", "reduce_mean", "\"sq\"", ", \"axes\": [-1], \"keepdims\": true") ","
           NODE("me", "add", "\"ms\", \"eps\"", "") "," NODE("rt", "sqrt", "\"me\"", "") ","
           NODE("nx", "divide", "\"x\", \"rt\"", "") "," NODE("y", "multiply", "\"nx\", \"g\"", ""),
           "y"),
     NULL, 0, {0}},
    {"maxpool", "ResNet-18 max pool 3x3 s2 between convs, 64x112x112 (NCHWc)",
     MODEL("maxpool", IN("x", "1, 64, 112, 112"), IN("w", "64, 64, 1, 1") "," IN("w2", "64, 64, 1, 1"),
           NODE("c", "conv2d", "\"x\", \"w\"", "") ","
           NODE("p", "max_pool2d", "\"c\"", ", \"pool_size\": 3, \"stride\": 2, \"padding\": 1") ","
           NODE("y", "conv2d", "\"p\", \"w2\"", ""),
           "y"),
     "pool_max", 0, {0}},
    {"gap_1280", "MobileNetV2 global average pool after its last conv, 1280x7x7 (NCHWc)",
     MODEL("gap_1280", IN("x", "1, 320, 7, 7"), IN("w", "1280, 320, 1, 1"),
           NODE("c", "conv2d", "\"x\", \"w\"", "") "," NODE("y", "global_avg_pool2d", "\"c\"", ""), "y"),
     "T_sum", 0, {0}},
    {"add_relu", "ResNet-18 residual add + ReLU, 64x56x56",
     MODEL("add_relu", IN("x", "1, 64, 56, 56") "," IN("r", "1, 64, 56, 56"), "",
           NODE("s", "add", "\"x\", \"r\"", "") "," NODE("y", "relu", "\"s\"", ""), "y"),
     NULL, 0, {0}},
    {"bias_gelu", "bias + GELU, 128x3072 (BERT-base's feed-forward)",
     MODEL("bias_gelu", IN("x", "128, 3072"), IN("b", "3072"),
           NODE("s", "add", "\"x\", \"b\"", "") "," NODE("y", "gelu", "\"s\"", ""), "y"),
     NULL, 1, {0}},
};
enum { N_KERNELS = MLC_COUNTOF(KERNELS) };

/* ---- the machine: read bandwidth per level and exp throughput --------------------------------- */

typedef float vec16 __attribute__((vector_size(64)));

/* Threads the machine measurements run on at most (one slot each). */
enum { MAX_THREADS = 1024 };

typedef struct level {
  const char *name;
  int64_t per_thread; /* bytes each thread sums */
  int64_t capacity;   /* the largest working set charged at this level */
  double gbs;         /* measured: the better of the run's two measurements */
} level;

typedef struct sweep {
  const vec16 *data;
  int64_t per_thread; /* vectors */
  int reps;
  float sums[MAX_THREADS];
} sweep;

/* Eight independent sums, so that loads, not add latency, limit it. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static float sum_vectors(const vec16 *p, int64_t n,
                                                                                    int reps) {
  vec16 a0 = {0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int r = 0; r < reps; r++)
    for (int64_t k = 0; k + 8 <= n; k += 8) {
      a0 += p[k], a1 += p[k + 1], a2 += p[k + 2], a3 += p[k + 3];
      a4 += p[k + 4], a5 += p[k + 5], a6 += p[k + 6], a7 += p[k + 7];
    }
  vec16 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  return s[0] + s[15];
}

static void sweep_chunk(int64_t i, void *closure) {
  sweep *s = closure;
  s->sums[i] = sum_vectors(s->data + i * s->per_thread, s->per_thread, s->reps);
}

/* GB/s of `threads` threads each summing its per_thread bytes, the best of 5 passes of
 * enough repetitions to read at least 256 MiB in all. */
static double read_gbs(int threads, int64_t per_thread) {
  int64_t n = per_thread / (int64_t)sizeof(vec16);
  vec16 *buf = aligned_alloc(64, (size_t)(n * threads) * sizeof(vec16));
  if (!buf) die("bandwidth", "out of memory");
  memset(buf, 1, (size_t)(n * threads) * sizeof(vec16));
  int64_t total = per_thread * threads;
  sweep s = {buf, n, (int)((INT64_C(1) << 28) / total > 1 ? (INT64_C(1) << 28) / total : 1), {0}};
  sweep_chunk(0, &s); /* fault the pages in, warm the level */
  double best = 0;
  for (int p = 0; p < 5; p++) {
    double t0 = bench_now_ms();
    mlc_parallel_for(threads, sweep_chunk, &s, threads, INT64_C(1) << 40);
    double ms = bench_now_ms() - t0;
    double gbs = (double)total * s.reps / ms / 1e6;
    if (ms > 0 && gbs > best) best = gbs;
  }
  free(buf);
  return best;
}

typedef int ivec16 __attribute__((vector_size(64)));

/* Lanes of a where mask is set, else of b (a macro: a function passing
 * 64-byte vectors would change the ABI with the target). */
#define SELECT16(mask, a, b) ((vec16)(((ivec16)(a) & (mask)) | ((ivec16)(b) & ~(mask))))

/* Cephes' expf on 16 lanes: the LLVM backend's cpu_exp, step for step
 * (its multiply-adds fused where the target has FMA, as GCC contracts
 * them here); exp_vectors_avx512 below where it scales by 2^n in one
 * instruction. */
__attribute__((target_clones("avx2", "default"))) static void exp_vectors_generic(const vec16 *x, vec16 *y,
                                                                                   int64_t len, int reps) {
  const vec16 zero = {0}, hi = zero + 89.0f, lo = zero - 104.0f;
  for (int r = 0; r < reps; r++)
    for (int64_t k = 0; k < len; k++) {
      vec16 v = x[k];
      v = SELECT16(v > hi, hi, v);
      v = SELECT16(v < lo, lo, v);
      vec16 fx = v * 1.44269504088896341f + 0.5f;
      ivec16 ni = __builtin_convertvector(fx, ivec16);
      ni += fx < __builtin_convertvector(ni, vec16); /* floor: true lanes are -1 */
      vec16 n = __builtin_convertvector(ni, vec16);
      vec16 q = v - n * 0.693359375f - n * -2.12194440e-4f;
      vec16 p = zero + 1.9875691500e-4f;
      p = p * q + 1.3981999507e-3f;
      p = p * q + 8.3334519073e-3f;
      p = p * q + 4.1665795894e-2f;
      p = p * q + 1.6666665459e-1f;
      p = p * q + 5.0000001201e-1f;
      p = p * (q * q) + q + 1.0f;
      ivec16 h = ni >> 1, l = ni - h;
      p *= (vec16)((h + 127) << 23);
      p *= (vec16)((l + 127) << 23);
      y[k] = p;
    }
}

/* The AVX-512 path of cpu_exp: the same clamp, reduction and
 * polynomial, p 2^n by vscalefps. */
__attribute__((target("avx512f"))) static void exp_vectors_avx512(const vec16 *x, vec16 *y, int64_t len,
                                                                  int reps) {
  const __m512 hi = _mm512_set1_ps(89.0f), lo = _mm512_set1_ps(-104.0f);
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f), half = _mm512_set1_ps(0.5f);
  const __m512 c1 = _mm512_set1_ps(0.693359375f), c2 = _mm512_set1_ps(-2.12194440e-4f);
  static const float poly[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  for (int r = 0; r < reps; r++)
    for (int64_t k = 0; k < len; k++) {
      __m512 v = _mm512_max_ps(_mm512_min_ps((__m512)x[k], hi), lo);
      __m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(v, log2e, half), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
      __m512 q = _mm512_fnmadd_ps(n, c2, _mm512_fnmadd_ps(n, c1, v));
      __m512 p = _mm512_set1_ps(poly[0]);
      for (int i = 1; i < 6; i++) p = _mm512_fmadd_ps(p, q, _mm512_set1_ps(poly[i]));
      p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(q, q), q), _mm512_set1_ps(1.0f));
      y[k] = (vec16)_mm512_scalef_ps(p, n);
    }
}

static void exp_vectors(const vec16 *x, vec16 *y, int64_t len, int reps) {
  if (__builtin_cpu_supports("avx512f")) exp_vectors_avx512(x, y, len, reps);
  else exp_vectors_generic(x, y, len, reps);
}

typedef struct exp_run {
  vec16 *x, *y;
  int64_t per_thread;
  int reps;
} exp_run;

static void exp_chunk(int64_t i, void *closure) {
  exp_run *e = closure;
  exp_vectors(e->x + i * e->per_thread, e->y + i * e->per_thread, e->per_thread, e->reps);
}

/* exps per second on `threads` threads, each over 8 KiB in and out. */
static double exp_rate(int threads) {
  int64_t per = 8192 / (int64_t)sizeof(vec16);
  exp_run e = {aligned_alloc(64, sizeof(vec16) * (size_t)(per * threads)),
               aligned_alloc(64, sizeof(vec16) * (size_t)(per * threads)), per, 20000};
  if (!e.x || !e.y) die("exp", "out of memory");
  for (int64_t i = 0; i < per * threads * 16; i++) ((float *)e.x)[i] = (float)(i % 64) * 0.5f - 16.0f;
  double best = 0;
  for (int p = 0; p < 5; p++) {
    double t0 = bench_now_ms();
    mlc_parallel_for(threads, exp_chunk, &e, threads, INT64_C(1) << 40);
    double ms = bench_now_ms() - t0;
    double rate = (double)(per * threads * 16) * e.reps / (ms * 1e-3);
    if (ms > 0 && rate > best) best = rate;
  }
  free(e.x);
  free(e.y);
  return best;
}

/* 12 independent chains of 16-lane multiply-adds (fused where the
 * target has FMA): the FP32 peak of one thread. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static float fma_chains(int64_t reps, float m) {
  const vec16 zero = {0}, b = zero + 1e-7f;
  vec16 c0 = zero, c1 = zero + 1, c2 = zero + 2, c3 = zero + 3, c4 = zero + 4, c5 = zero + 5;
  vec16 c6 = zero + 6, c7 = zero + 7, c8 = zero + 8, c9 = zero + 9, c10 = zero + 10, c11 = zero + 11;
  for (int64_t r = 0; r < reps; r++) {
    c0 = c0 * m + b, c1 = c1 * m + b, c2 = c2 * m + b, c3 = c3 * m + b, c4 = c4 * m + b, c5 = c5 * m + b;
    c6 = c6 * m + b, c7 = c7 * m + b, c8 = c8 * m + b, c9 = c9 * m + b, c10 = c10 * m + b, c11 = c11 * m + b;
  }
  vec16 s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
  return s[0];
}

typedef struct fma_run {
  int64_t reps;
  float sink[MAX_THREADS];
} fma_run;

static void fma_chunk(int64_t i, void *closure) {
  fma_run *f = closure;
  f->sink[i] = fma_chains(f->reps, 0.999999f);
}

/* GFLOP/s of `threads` threads of fma_chains (2 flops a lane), the best of 5. */
static double fma_peak(int threads) {
  fma_run f = {INT64_C(1) << 22, {0}};
  double best = 0;
  for (int p = 0; p < 5; p++) {
    double t0 = bench_now_ms();
    mlc_parallel_for(threads, fma_chunk, &f, threads, INT64_C(1) << 40);
    double ms = bench_now_ms() - t0;
    double g = 2.0 * 16 * 12 * (double)f.reps * threads / (ms * 1e6);
    if (ms > 0 && g > best) best = g;
  }
  return best;
}

enum { N_LEVELS = 4 };

typedef struct machine {
  level lv[N_LEVELS];
  double exps;   /* exps per second */
  double gflops; /* FP32 multiply-add peak */
} machine;

static void machine_init(machine *mc) {
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l1 <= 0) l1 = 32 << 10;
  if (l2 <= 0) l2 = 1 << 20;
  *mc = (machine){{{"L1", l1 / 2, l1, 0},
                   {"L2", l2 / 2, l2, 0},
                   {"L3", 4 << 20, 16 << 20, 0},
                   {"DRAM", 256 << 20, INT64_MAX, 0}},
                  0,
                  0};
}

/* Measure every level, the exp rate and the FMA peak, keeping the better
 * of this and any earlier measurement. */
static void measure_machine(machine *mc, int threads) {
  for (int i = 0; i < N_LEVELS; i++) {
    double g = read_gbs(threads, mc->lv[i].per_thread);
    if (g > mc->lv[i].gbs) mc->lv[i].gbs = g;
  }
  double e = exp_rate(threads), f = fma_peak(threads);
  if (e > mc->exps) mc->exps = e;
  if (f > mc->gflops) mc->gflops = f;
}

/* The level whose capacity on `threads` cores (L3 and DRAM shared) holds bytes. */
static const level *level_of(const level lv[N_LEVELS], int64_t bytes, int threads) {
  for (int i = 0; i < N_LEVELS - 1; i++)
    if (bytes <= lv[i].capacity * (i < 2 ? threads : 1)) return &lv[i];
  return &lv[N_LEVELS - 1];
}

/* ---- one kernel alone -------------------------------------------------------------------------- */

typedef struct kernel_call {
  mlc_kernel_fn fn;
  int n;
  const mlc_array *args; /* the arguments, as mlc_kernel_call takes them */
} kernel_call;

static void call_kernel(void *ctx) {
  kernel_call *k = ctx;
  if (mlc_kernel_call(k->fn, k->n, k->args) != 0) die("kernel", "failed");
}

typedef struct row {
  const char *spec, *variant, *kernel;
  int64_t bytes, exps;
  double flops;
  const level *lv;
  const char *bound_by; /* "mem", "exp" or "flop" */
  double bound_us, us;
  double onednn_us;     /* 0: not timed */
  const char *onednn_impl;
} row;

/* Whether kernel i of v is one the spec reports. */
static bool reported(const kernel_spec *ks, const bench_variant *v, int i) {
  if (!ks->match) return true;
  mlc_str text = {0};
  mlc_print_func(&text, v->sched[i] ? v->sched[i] : v->src[i]);
  bool yes = strstr(text.data, ks->match) != NULL;
  mlc_str_free(&text);
  return yes;
}

static int64_t array_bytes(const mlc_array *x) {
  return mlc_array_numel(x) * (int64_t)mlc_dtype_bytes(x->dtype);
}

/* Every kernel of v timed alone on seeded arguments of its parameters'
 * shapes; rows appended (the bound filled in later). */
static void time_kernels(mlc_arena *names, const kernel_spec *ks, bench_variant *v, row *rows, int *n_rows,
                         int max_rows) {
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 7, 1);
  for (int i = 0; i < v->n && *n_rows < max_rows; i++) {
    if (!reported(ks, v, i)) continue;
    const mlc_prim_func *f = v->src[i];
    if (f->n_params > 16) die(v->symbols[i], "more than 16 parameters");
    mlc_array *args[16];
    row *r = &rows[(*n_rows)++];
    *r = (row){ks->name, v->name, mlc_arena_strdup(names, v->symbols[i]), 0, 0, mlc_func_flops(f), NULL, "", 0, 0,
               0, NULL};
    for (int a = 0; a < f->n_params; a++) {
      args[a] = mlc_array_for_buffer(f->params[a]);
      mlc_array_fill_random(args[a], &rng);
      r->bytes += array_bytes(args[a]);
    }
    /* exps: so many per element of its (last) output */
    r->exps = ks->exps * mlc_array_numel(args[f->n_params - 1]);
    mlc_array vals[16];
    for (int a = 0; a < f->n_params; a++) vals[a] = *args[a];
    kernel_call kc = {v->fns[i], f->n_params, vals};
    /* ours and oneDNN's in alternating rounds, so that both see the same load */
    bench_onednn *d = ks->conv.k && bench_onednn_available() ? bench_onednn_conv(&ks->conv) : NULL;
    double ms[4];
    bench_time_pair(call_kernel, &kc, d ? bench_onednn_run : NULL, d, 5, 3, 20, ms);
    r->us = 1e3 * ms[0];
    if (d) {
      r->onednn_us = 1e3 * ms[1];
      r->onednn_impl = mlc_arena_strdup(names, bench_onednn_impl(d));
      bench_onednn_free(d);
    }
    for (int a = 0; a < f->n_params; a++) mlc_array_free(args[a]);
  }
}

/* ---- driver ------------------------------------------------------------------------------------ */

typedef struct options {
  const char *results, *db, *only;
  int trials;
} options;

static void parse_options(int argc, char **argv, options *o) {
  *o = (options){"bench/results.json", NULL, getenv("MLC_BENCH_ONLY"), 0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) o->results = argv[++i];
    else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) o->trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) o->db = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) o->only = argv[++i];
    else {
      fprintf(stderr, "usage: bench_roofline [--results FILE] [--trials N] [--db PATH] [--only a,b]\n"
                      "kernels:");
      for (int k = 0; k < N_KERNELS; k++) fprintf(stderr, " %s", KERNELS[k].name);
      fprintf(stderr, "\n");
      exit(2);
    }
  }
}

static bool wanted(const char *only, const char *name) {
  if (!only) return true;
  size_t n = strlen(name);
  for (const char *p = only; (p = strstr(p, name)); p += n)
    if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return true;
  return false;
}

/* The spec's model after the pipeline (m) and before it (ref). */
static void load_spec(const kernel_spec *ks, mlc_gmodule **m, mlc_gmodule **ref) {
  mlc_error err;
  size_t len = strlen(ks->json);
  *m = mlc_graph_parse(ks->name, ks->json, len, NULL, &err);
  *ref = *m ? mlc_graph_parse(ks->name, ks->json, len, NULL, &err) : NULL;
  if (!*m || !*ref || !mlc_graph_run_pipeline(*m, NULL, NULL, NULL, &err)) die(ks->name, err.msg);
}

static void bench_spec(mlc_arena *names, const kernel_spec *ks, const options *o, const mlc_target *t, row *rows,
                       int *n_rows, int max_rows) {
  mlc_error err;
  mlc_gmodule *m, *ref;
  load_spec(ks, &m, &ref);
  char tmp_db[64] = "";
  const char *db_path = o->db;
  if (!db_path && o->trials > 0) {
    snprintf(tmp_db, sizeof tmp_db, "/tmp/bench_roofline_%d.db", (int)getpid());
    bench_remove_db(tmp_db);
    if (!bench_tune_model(tmp_db, m, t, o->trials, "bench_roofline", &err)) die(ks->name, err.msg);
    db_path = tmp_db;
  }
  mlc_db *db = db_path ? mlc_db_open(db_path, MLC_DB_EXISTING, &err) : NULL;
  if (db_path && !db) die(db_path, err.msg);
  mlc_arena *a = mlc_arena_new();
  bench_variant vs[2] = {{.name = "untuned", .m = m}, {.name = "tuned", .m = m}};
  int n_vs = db ? 2 : 1;
  bench_model_io io;
  if (!bench_model_io_new(a, m, ref, &io, &err)) die(ks->name, err.msg);
  for (int k = 0; k < n_vs; k++) {
    if (!bench_variant_build(a, &vs[k], t, k ? db : NULL, true, "bench_roofline", &err) ||
        !bench_variant_check(&vs[k], &io, &err))
      die(ks->name, err.msg);
    time_kernels(names, ks, &vs[k], rows, n_rows, max_rows);
  }
  if (db) mlc_db_close(db);
  if (tmp_db[0]) bench_remove_db(tmp_db);
  for (int k = 0; k < n_vs; k++) bench_variant_free(&vs[k]);
  bench_model_io_free(&io);
  mlc_arena_free(a);
  mlc_graph_free(m);
  mlc_graph_free(ref);
}

static void bound_rows(row *rows, int n, const machine *mc, int threads) {
  for (int i = 0; i < n; i++) {
    row *r = &rows[i];
    r->lv = level_of(mc->lv, r->bytes, threads);
    double mem = (double)r->bytes / (r->lv->gbs * 1e3), exp = 1e6 * (double)r->exps / mc->exps,
           flop = r->flops / (mc->gflops * 1e3);
    r->bound_us = mem, r->bound_by = "mem";
    if (exp > r->bound_us) r->bound_us = exp, r->bound_by = "exp";
    if (flop > r->bound_us) r->bound_us = flop, r->bound_by = "flop";
  }
}

int main(int argc, char **argv) {
  options o;
  parse_options(argc, argv, &o);
  mlc_error err;
  mlc_target t;
  if (!mlc_target_parse("llvm", &t, &err)) die("llvm", err.msg);
  int threads = t.num_cores < MAX_THREADS ? t.num_cores : MAX_THREADS;
  double load[1] = {-1};
  getloadavg(load, 1);

  machine mc;
  machine_init(&mc);
  measure_machine(&mc, threads);

  enum { MAX_ROWS = 128 };
  row rows[MAX_ROWS];
  int n_rows = 0;
  mlc_arena *a = mlc_arena_new();
  for (int k = 0; k < N_KERNELS; k++)
    if (wanted(o.only, KERNELS[k].name)) bench_spec(a, &KERNELS[k], &o, &t, rows, &n_rows, MAX_ROWS);
  if (!n_rows) die("--only", "names no kernel (bench_roofline --help lists them)");

  measure_machine(&mc, threads);
  bound_rows(rows, n_rows, &mc, threads);

  printf("# roofline, %d threads, load %.1f; the better of two measurements: read GB/s", threads, load[0]);
  for (int i = 0; i < N_LEVELS; i++) printf(" %s %.1f", mc.lv[i].name, mc.lv[i].gbs);
  printf("; exp %.2f G/s; FMA peak %.1f GFLOP/s\n", mc.exps / 1e9, mc.gflops);
  printf("%-14s %-8s %10s %7s %5s %5s %9s %9s %8s %6s %9s %6s  %s\n", "kernel", "variant", "bytes", "MFLOP",
         "level", "bound", "bound us", "ours us", "GB/s", "share", "oneDNN us", "ratio", "symbol");
  bench_case *cs = MLC_NEW_ARRAY(a, bench_case, 2 * n_rows + N_LEVELS + 2);
  int nc = 0;
  for (int i = 0; i < n_rows; i++) {
    row *r = &rows[i];
    double gbs = (double)r->bytes / (r->us * 1e3), share = r->bound_us / r->us;
    char dnnl[32] = "-", ratio[16] = "-";
    if (r->onednn_us > 0) {
      snprintf(dnnl, sizeof dnnl, "%.2f", r->onednn_us);
      snprintf(ratio, sizeof ratio, "%.2f", r->us / r->onednn_us);
    }
    printf("%-14s %-8s %10lld %7.2f %5s %5s %9.2f %9.2f %8.1f %5.0f%% %9s %6s  %s\n", r->spec, r->variant,
           (long long)r->bytes, r->flops / 1e6, r->lv->name, r->bound_by, r->bound_us, r->us, gbs, 100 * share,
           dnnl, ratio, r->kernel);
    cs[nc++] = (bench_case){
        mlc_arena_printf(a, "roofline_%s_%s_%dt", r->spec, r->kernel, threads), 100 * share, "%", NULL, 0,
        mlc_arena_printf(a, "share of the %s bound: %lld bytes at %s (%.1f GB/s), %.2f MFLOP, %lld exps; bound %.2f us, ours %.2f us",
                         r->bound_by, (long long)r->bytes, r->lv->name, r->lv->gbs, r->flops / 1e6,
                         (long long)r->exps, r->bound_us, r->us)};
  }
  for (int i = 0; i < n_rows; i++)
    if (rows[i].onednn_us > 0)
      cs[nc++] = (bench_case){mlc_arena_printf(a, "roofline_%s_%s_vs_onednn_%dt", rows[i].spec, rows[i].kernel, threads),
                              rows[i].us, "us", "onednn", rows[i].onednn_us,
                              mlc_arena_printf(a, "oneDNN %s, same rounds", rows[i].onednn_impl)};
  for (int i = 0; i < N_LEVELS; i++)
    cs[nc++] = (bench_case){mlc_arena_printf(a, "roofline_read_%s_%dt", mc.lv[i].name, threads), mc.lv[i].gbs,
                            "GB/s", NULL, 0,
                            mlc_arena_printf(a, "%lld bytes per thread", (long long)mc.lv[i].per_thread)};
  cs[nc++] = (bench_case){mlc_arena_printf(a, "roofline_exp_%dt", threads), mc.exps / 1e9, "Gexp/s", NULL, 0,
                          "Cephes expf, 16 lanes, L1-resident"};
  cs[nc++] = (bench_case){mlc_arena_printf(a, "roofline_fma_peak_%dt", threads), mc.gflops, "GFLOP/s", NULL, 0,
                          "12 chains of 16-lane multiply-adds per thread"};
  if (!bench_write_results(o.results, nc, cs, &err)) die(o.results, err.msg);
  mlc_arena_free(a);
  return 0;
}
