/* int8 dense tuned with AVX-512 VNNI or AMX and bf16 matmul tuned with
 * AVX-512 BF16, against oneDNN's matmul of the same types and our tuned
 * float32 matmul.
 *
 *   bench_int8 [--results FILE] [--shape M,N,K] [--trials N] [--target TARGET]
 *
 * --target tunes for another target than the host, e.g. "llvm
 * -mcpu=icelake-client -mattr=+avx512vnni -num-cores=2": VNNI without AMX
 * on an AMX machine (run it with ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI to
 * compare with oneDNN on the same instructions).
 * Tunes each task for the target with mlc_tuner_tune (a scratch database):
 * dense_int8 (uint8 x int8 -> int32, weights packed [N/16, K/4, 16, 4])
 * where the CPU has avx512vnni, matmul_bf16 (bfloat16 x bfloat16 ->
 * float32, weights packed [N/16, K/2, 16, 2]) where it has avx512bf16,
 * and matmul (float32) always; builds each best record, checks it against
 * oneDNN's result (int8: equal; bf16: within the float32 summation bound
 * K * 2^-23 * sum |a b| of a double-precision reference, on a sample) and
 * times both on the target's threads, in 9 alternating rounds (medians
 * compared; minima in the notes). oneDNN (Debian's libdnnl) is opened
 * with dlopen, so the bench builds without it; its weights are reordered
 * once into the layout it picks (format_tag any), as ours are packed
 * before the call. The notes name the instructions the tuned kernel uses.
 *
 * oneDNN uses its best ISA (AMX where the CPU has it: the case notes name
 * the implementation and the effective ISA); ONEDNN_MAX_CPU_ISA=
 * AVX512_CORE_VNNI or AVX512_CORE_BF16 limits it to the instructions we
 * use: the bench also times it so, in a child run of itself (the variable
 * is read once per process; `--onednn-only int8|bf16` is that child), and
 * a whole run under the variable names oneDNN's cases after it. Its OpenMP threads
 * wait passively (OMP_WAIT_POLICY=passive, set by re-executing the bench
 * when unset): on a shared, oversubscribed machine spinning barriers made
 * it 100x slower. */
#include "bench/results.h"
#include "schedule/schedule.h"
#include "tasks/tasks.h"
#include "tuner/tuner.h"

#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_int8: error: %s: %s\n", what, msg);
  exit(1);
}

/* ---- oneDNN through dlopen ---------------------------------------------------- */

#define DNNL_FNS(X)                                                                             \
  X(dnnl_engine_create) X(dnnl_stream_create) X(dnnl_memory_desc_init_by_tag)                   \
  X(dnnl_matmul_desc_init) X(dnnl_primitive_desc_create) X(dnnl_primitive_desc_query_md)        \
  X(dnnl_primitive_desc_query) X(dnnl_memory_create) X(dnnl_memory_get_data_handle)             \
  X(dnnl_reorder_primitive_desc_create) X(dnnl_primitive_create) X(dnnl_primitive_execute)      \
  X(dnnl_stream_wait) X(dnnl_get_effective_cpu_isa)
#define DECL(f) static __typeof__(f) *p_##f;
DNNL_FNS(DECL)
#undef DECL

static bool dnnl_open(char *why, size_t n) {
  void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen("libdnnl.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) return snprintf(why, n, "%s", dlerror()), false;
#define LOAD(f)                                                                                 \
  if (!(p_##f = (__typeof__(p_##f))dlsym(h, #f))) return snprintf(why, n, "no %s", #f), false;
  DNNL_FNS(LOAD)
#undef LOAD
  return true;
}

#define DNNL_OK(x)                                                                              \
  do {                                                                                          \
    if ((x) != dnnl_success) die("oneDNN", #x);                                                 \
  } while (0)

typedef struct dnnl_mm {
  dnnl_primitive_t prim;
  dnnl_stream_t stream;
  dnnl_exec_arg_t args[3];
  void *dst;
  const char *impl;
} dnnl_mm;

static size_t dt_size(dnnl_data_type_t dt) { return dt == dnnl_bf16 ? 2 : dt == dnnl_s8 || dt == dnnl_u8 ? 1 : 4; }

static dnnl_memory_t plain_mem(dnnl_engine_t eng, int64_t r, int64_t c, dnnl_data_type_t dt, void **data) {
  dnnl_memory_desc_t md;
  dnnl_dims_t d = {r, c};
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&md, 2, d, dt, dnnl_ab));
  dnnl_memory_t m;
  DNNL_OK(p_dnnl_memory_create(&m, &md, eng, DNNL_MEMORY_ALLOCATE));
  DNNL_OK(p_dnnl_memory_get_data_handle(m, data));
  return m;
}

/* C[M,N] (dt[2]) = A[M,K] (dt[0]) @ W[K,N] (dt[1]), W given plain and
 * reordered. */
static void dnnl_setup(dnnl_mm *d, int64_t M, int64_t N, int64_t K, const dnnl_data_type_t dt[3],
                       const void *a, const void *w_kn) {
  dnnl_engine_t eng;
  DNNL_OK(p_dnnl_engine_create(&eng, dnnl_cpu, 0));
  DNNL_OK(p_dnnl_stream_create(&d->stream, eng, dnnl_stream_default_flags));
  dnnl_memory_desc_t src, wt, dst;
  dnnl_dims_t sd = {M, K}, wd = {K, N}, dd = {M, N};
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&src, 2, sd, dt[0], dnnl_ab));
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&wt, 2, wd, dt[1], dnnl_format_tag_any));
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&dst, 2, dd, dt[2], dnnl_ab));
  dnnl_matmul_desc_t desc;
  DNNL_OK(p_dnnl_matmul_desc_init(&desc, &src, &wt, NULL, &dst));
  dnnl_primitive_desc_t pd;
  DNNL_OK(p_dnnl_primitive_desc_create(&pd, &desc, NULL, eng, NULL));
  d->impl = "?";
  p_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &d->impl);
  void *ap, *wp, *cp, *wq;
  dnnl_memory_t am = plain_mem(eng, M, K, dt[0], &ap), wplain = plain_mem(eng, K, N, dt[1], &wp);
  dnnl_memory_t cm = plain_mem(eng, M, N, dt[2], &cp);
  memcpy(ap, a, (size_t)(M * K) * dt_size(dt[0]));
  memcpy(wp, w_kn, (size_t)(K * N) * dt_size(dt[1]));
  const dnnl_memory_desc_t *wmd = p_dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_t wm;
  DNNL_OK(p_dnnl_memory_create(&wm, wmd, eng, DNNL_MEMORY_ALLOCATE));
  DNNL_OK(p_dnnl_memory_get_data_handle(wm, &wq));
  dnnl_primitive_desc_t rpd;
  dnnl_memory_desc_t plain_wmd;
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&plain_wmd, 2, wd, dt[1], dnnl_ab));
  DNNL_OK(p_dnnl_reorder_primitive_desc_create(&rpd, &plain_wmd, eng, wmd, eng, NULL));
  dnnl_primitive_t reorder;
  DNNL_OK(p_dnnl_primitive_create(&reorder, rpd));
  dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, wplain}, {DNNL_ARG_TO, wm}};
  DNNL_OK(p_dnnl_primitive_execute(reorder, d->stream, 2, rargs));
  DNNL_OK(p_dnnl_stream_wait(d->stream));
  DNNL_OK(p_dnnl_primitive_create(&d->prim, pd));
  d->args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, am};
  d->args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wm};
  d->args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, cm};
  d->dst = cp;
}

/* The ISA oneDNN dispatches to, for the notes. */
static const char *dnnl_isa_name(void) {
  switch ((int)p_dnnl_get_effective_cpu_isa()) {
  case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
  case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core: return "avx512_core";
  case dnnl_cpu_isa_avx2: return "avx2";
  default: return "other";
  }
}

static void run_dnnl(void *ctx) {
  dnnl_mm *d = ctx;
  DNNL_OK(p_dnnl_primitive_execute(d->prim, d->stream, 3, d->args));
  DNNL_OK(p_dnnl_stream_wait(d->stream));
}

/* ---- ours ----------------------------------------------------------------------- */

typedef struct ours {
  mlc_kernel_fn fn;
  void *args[3];
  mlc_jit_lib *lib;
  mlc_object obj;
  double tune_s;
  char how[96];    /* the instructions the best record calls */
} ours;

static void run_ours(void *ctx) {
  ours *o = ctx;
  if (o->fn(o->args) != 0) die("tuned kernel", "returned an error");
}

static void ours_free(ours *o) {
  mlc_jit_unload(o->lib);
  mlc_object_free(&o->obj);
}

/* What the printed kernel calls: a micro-kernel (its R x C x K, the last
 * three arguments), one dot-product instruction per call, or none. */
static void describe_kernel(const char *text, char *how, size_t n) {
  snprintf(how, n, "NOT tensorized");
  static const struct {
    const char *builtin, *what;
  } kinds[] = {{"mlc_x86_tdpbusd_block", "AMX tdpbusd"},
               {"mlc_x86_tdpbf16ps_block", "AMX tdpbf16ps"},
               {"mlc_x86_vdpbf16ps_block", "register-blocked vdpbf16ps"},
               {"mlc_x86_vpdpbusd_block", "register-blocked vpdpbusd"}};
  const char *call = NULL, *what = NULL;
  for (int i = 0; i < MLC_COUNTOF(kinds) && !call; i++)
    if ((call = strstr(text, kinds[i].builtin)) != NULL) what = kinds[i].what;
  if (call) {
    const char *end = strstr(call, "))");
    int commas = 0;
    const char *p = end;
    while (p && p > call && commas < 3) commas += *--p == ',';
    long long r = 0, nb = 0, kb = 0;
    if (end && sscanf(p, ", %lld, %lld, %lld", &r, &nb, &kb) == 3)
      snprintf(how, n, "%s micro-kernel %lldx%lldx%lld%s", what, r, 16 * nb, kb,
               strstr(call, "_init\"") ? " (accumulators from zero: the init in the call)" : "");
  } else if (strstr(text, "mlc_x86_vpdpbusd_16x4")) {
    snprintf(how, n, "tensorized with one vpdpbusd per call");
  } else if (strstr(text, "mlc_x86_vdpbf16ps_16x2")) {
    snprintf(how, n, "tensorized with vdpbf16ps");
  }
}

/* Tune `task` at shape s with a scratch database, build its best record
 * as `sym` and load it on args; what it calls into us->how. */
static void tune_and_load(const char *task, const char *shape_text, int trials, const mlc_target *t,
                          const char *sym, void *const args[3], ours *us) {
  mlc_error err;
  const mlc_task_def *d = mlc_task_find(task);
  int64_t s[MLC_TASK_MAX_DIMS];
  if (!mlc_task_parse_shape(d, shape_text, s, &err)) die("--shape", err.msg);
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = mlc_task_build(a, d, s);
  char db_path[] = "/tmp/bench_int8_XXXXXX";
  int fd = mkstemp(db_path);
  if (fd < 0) die("mkstemp", "cannot create a scratch database");
  close(fd);
  unlink(db_path);
  mlc_db *db = mlc_db_open(db_path, MLC_DB_CREATE, &err);
  if (!db) die(db_path, err.msg);
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_opts_default(&o);
  o.task = task;
  o.shape = shape_text;
  o.target = t->str;
  o.trials = trials;
  mlc_tuner_tune_result res;
  double t0 = bench_now_ms();
  if (!mlc_tuner_tune(db, f, &o, &res, &err)) die("tune", err.msg);
  us->tune_s = (bench_now_ms() - t0) / 1e3;
  mlc_gkernel gk;
  if (!mlc_graph_schedule_kernel(a, db, t->str, f, true, &gk, &err)) die("best record", err.msg);
  if (!gk.record_id) die("best record", gk.note);
  mlc_str text = {0};
  mlc_print_func(&text, gk.sched);
  describe_kernel(text.data, us->how, sizeof us->how);
  mlc_str_free(&text);
  if (!mlc_target_build(t, 1, &gk.sched, &sym, NULL, &us->obj, &err)) die("build", err.msg);
  us->lib = mlc_jit_load(&us->obj, &err);
  us->fn = us->lib ? mlc_jit_lookup(us->lib, sym, &err) : NULL;
  if (!us->fn) die("load", err.msg);
  memcpy(us->args, args, sizeof us->args);
  mlc_db_close(db);
  const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
  for (int i = 0; i < MLC_COUNTOF(suffixes); i++) {
    char p[64];
    snprintf(p, sizeof p, "%s%s", db_path, suffixes[i]);
    unlink(p);
  }
  mlc_arena_free(a);
}

/* ---- the cases ---------------------------------------------------------------------- */

typedef struct run_ctx {
  const char *results, *shape_text;
  int trials;
  int64_t M, N, K;
  mlc_target t;
  const char *isa_suffix; /* "" or "_isa_<ONEDNN_MAX_CPU_ISA>" for oneDNN's cases */
  double fp32_gflops;     /* our tuned float32 matmul, 0 before it ran */
} run_ctx;

/* Two cases, ours against oneDNN, plus ours against our float32 matmul. */
static void report(run_ctx *r, const char *task, const char *unit, double ms, double dms,
                   const char *notes, const char *dnotes) {
  double ops = 2.0 * (double)r->M * (double)r->N * (double)r->K;
  double v = ops / ms * 1e-6, dv = ops / dms * 1e-6;
  char name[96], dname[96], fname[96], base[64];
  snprintf(name, sizeof name, "%s_%lld_tuned", task, (long long)r->M);
  snprintf(dname, sizeof dname, "%s_%lld_onednn%s", task, (long long)r->M, r->isa_suffix);
  snprintf(fname, sizeof fname, "%s_%lld_tuned_vs_fp32", task, (long long)r->M);
  snprintf(base, sizeof base, "onednn%s", r->isa_suffix);
  bench_case cases[3] = {
      {name, v, unit, base, dv, notes},
      {dname, dv, unit, NULL, 0, dnotes},
      {fname, v, unit, "matmul_fp32_tuned", r->fp32_gflops, "the same kernel against our tuned float32 matmul"},
  };
  int n = r->fp32_gflops > 0 ? 3 : 2;
  for (int i = 0; i < n; i++) bench_print(&cases[i]);
  mlc_error err;
  if (!bench_write_results(r->results, n, cases, &err)) fprintf(stderr, "bench_int8: error: %s\n", err.msg);
}

static int64_t packed_index(int64_t j, int64_t k, int64_t K, int64_t kt) {
  return ((j / 16) * (K / kt) + k / kt) * 16 * kt + (j % 16) * kt + k % kt;
}

/* Our float32 matmul (A[M,K] @ B[K,N]), tuned, timed; the baseline of the
 * _vs_fp32 cases. */
static void case_fp32(run_ctx *r) {
  int64_t M = r->M, N = r->N, K = r->K;
  float *A = mlc_xmalloc(sizeof(float) * (size_t)(M * K)), *B = mlc_xmalloc(sizeof(float) * (size_t)(K * N));
  float *C = mlc_xmalloc(sizeof(float) * (size_t)(M * N));
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 5, 1);
  for (int64_t i = 0; i < M * K; i++) A[i] = (float)mlc_pcg32_next(&rng) / 4294967296.0f - 0.5f;
  for (int64_t i = 0; i < K * N; i++) B[i] = (float)mlc_pcg32_next(&rng) / 4294967296.0f - 0.5f;
  ours us = {0};
  tune_and_load("matmul", r->shape_text, r->trials, &r->t, "bench_fp32_tuned", (void *[]){A, B, C}, &us);
  run_ours(&us);
  for (int64_t i = 0; i < M; i += 37)
    for (int64_t j = 0; j < N; j += 13) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < K; k++) acc += (double)A[i * K + k] * B[k * N + j], mag += fabs((double)A[i * K + k] * B[k * N + j]);
      if (fabs(C[i * N + j] - acc) > (double)K * 0x1p-23 * mag) die("check", "the tuned float32 matmul is wrong");
    }
  double ms = bench_time_ms(run_ours, &us, 7, 50);
  r->fp32_gflops = 2.0 * (double)M * (double)N * (double)K / ms * 1e-6;
  char notes[256];
  snprintf(notes, sizeof notes, "%s, %d trials in %.0f s; %d threads", r->shape_text, r->trials, us.tune_s,
           r->t.num_cores);
  char name[64];
  snprintf(name, sizeof name, "matmul_fp32_%lld_tuned", (long long)M);
  bench_case c = {name, r->fp32_gflops, "GFLOP/s", NULL, 0, notes};
  bench_print(&c);
  mlc_error err;
  if (!bench_write_results(r->results, 1, &c, &err)) fprintf(stderr, "bench_int8: error: %s\n", err.msg);
  ours_free(&us);
  mlc_free(A), mlc_free(B), mlc_free(C);
}

/* The operands of one case: A, B packed for our kernel, W[K, N] plain for
 * oneDNN, C ours; seeded, so a child process (limited_isa) makes the same. */
typedef struct operands {
  void *A, *B, *Wkn, *C;
} operands;

static void operands_free(operands *x) { mlc_free(x->A), mlc_free(x->B), mlc_free(x->Wkn), mlc_free(x->C); }

/* int8: values over the whole ranges. */
static operands int8_operands(const run_ctx *r) {
  int64_t M = r->M, N = r->N, K = r->K;
  if (N % 16 || K % 4) die("--shape", "dense_int8 needs N % 16 == 0 and K % 4 == 0");
  operands x = {mlc_xmalloc((size_t)(M * K)), mlc_xmalloc((size_t)(N * K)), mlc_xmalloc((size_t)(N * K)),
                mlc_xmalloc(sizeof(int32_t) * (size_t)(M * N))};
  uint8_t *A = x.A;
  int8_t *B = x.B, *Wkn = x.Wkn;
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 3, 1);
  for (int64_t i = 0; i < M * K; i++) A[i] = (uint8_t)mlc_pcg32_next(&rng);
  for (int64_t i = 0; i < N * K; i++) B[i] = (int8_t)(uint8_t)mlc_pcg32_next(&rng);
  for (int64_t j = 0; j < N; j++)
    for (int64_t k = 0; k < K; k++) Wkn[k * N + j] = B[packed_index(j, k, K, 4)];
  return x;
}

/* Sampled outputs C differs from a plain C sum at. */
static int64_t int8_sample_wrong(const run_ctx *r, const operands *x, const int32_t *C) {
  const uint8_t *A = x->A;
  const int8_t *B = x->B;
  int64_t K = r->K, N = r->N, bad = 0;
  for (int64_t i = 0; i < r->M; i += 37)
    for (int64_t j = 0; j < N; j += 13) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (int64_t)A[i * K + k] * B[packed_index(j, k, K, 4)];
      bad += C[i * N + j] != (int32_t)acc;
    }
  return bad;
}

/* bf16: uniform in [-1, 1), rounded. */
static operands bf16_operands(const run_ctx *r) {
  int64_t M = r->M, N = r->N, K = r->K;
  if (N % 16 || K % 2) die("--shape", "matmul_bf16 needs N % 16 == 0 and K % 2 == 0");
  operands x = {mlc_xmalloc(2 * (size_t)(M * K)), mlc_xmalloc(2 * (size_t)(N * K)), mlc_xmalloc(2 * (size_t)(N * K)),
                mlc_xmalloc(sizeof(float) * (size_t)(M * N))};
  uint16_t *A = x.A, *B = x.B, *Wkn = x.Wkn;
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 7, 1);
  for (int64_t i = 0; i < M * K; i++) A[i] = mlc_float_to_bf16((float)mlc_pcg32_next(&rng) / 2147483648.0f - 1.0f);
  for (int64_t i = 0; i < N * K; i++) B[i] = mlc_float_to_bf16((float)mlc_pcg32_next(&rng) / 2147483648.0f - 1.0f);
  for (int64_t j = 0; j < N; j++)
    for (int64_t k = 0; k < K; k++) Wkn[k * N + j] = B[packed_index(j, k, K, 2)];
  return x;
}

/* Outputs of a sample outside the float32 summation bound of the exact
 * sum of the same bfloat16 products; the worst |d| / sum |ab| in *worst. */
static int64_t bf16_sample_wrong(const run_ctx *r, const operands *x, const float *C, double *worst) {
  const uint16_t *A = x->A, *B = x->B;
  int64_t K = r->K, N = r->N, bad = 0;
  for (int64_t i = 0; i < r->M; i += 37)
    for (int64_t j = 0; j < N; j += 13) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < K; k++) {
        double p = (double)mlc_bf16_to_float(A[i * K + k]) * mlc_bf16_to_float(B[packed_index(j, k, K, 2)]);
        acc += p, mag += fabs(p);
      }
      double d = fabs(C[i * N + j] - acc);
      bad += !(d <= (double)K * 0x1p-23 * mag);
      if (mag > 0 && d / mag > *worst) *worst = d / mag;
    }
  return bad;
}

static const dnnl_data_type_t INT8_TYPES[3] = {dnnl_u8, dnnl_s8, dnnl_s32};
static const dnnl_data_type_t BF16_TYPES[3] = {dnnl_bf16, dnnl_bf16, dnnl_f32};

/* The child side of limited_isa: oneDNN alone on the case's operands
 * (ONEDNN_MAX_CPU_ISA set by the parent), checked on the sample, timed;
 * prints "<ms> <isa> <impl>". */
static int onednn_only(run_ctx *r, const char *which) {
  bool int8 = strcmp(which, "int8") == 0;
  operands x = int8 ? int8_operands(r) : bf16_operands(r);
  dnnl_mm dm;
  dnnl_setup(&dm, r->M, r->N, r->K, int8 ? INT8_TYPES : BF16_TYPES, x.A, x.Wkn);
  run_dnnl(&dm);
  double worst = 0;
  if (int8 ? int8_sample_wrong(r, &x, dm.dst) : bf16_sample_wrong(r, &x, dm.dst, &worst))
    die("check", "oneDNN with a limited ISA is wrong");
  printf("%.6f %s %s\n", bench_time_ms(run_dnnl, &dm, 7, 50), dnnl_isa_name(), dm.impl);
  operands_free(&x);
  return 0;
}

/* oneDNN limited to `isa` (ONEDNN_MAX_CPU_ISA: read once per process, so
 * in a child run of this bench): its milliseconds, or 0 when the child
 * failed; its ISA and implementation in notes. */
static double limited_isa(const run_ctx *r, const char *which, const char *isa, char *notes, size_t n) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "ONEDNN_MAX_CPU_ISA=%s /proc/%d/exe --onednn-only %s --shape %s", isa,
           (int)getpid(), which, r->shape_text);
  FILE *f = popen(cmd, "r");
  double ms = 0;
  char got_isa[64] = "", impl[256] = "";
  if (f && fscanf(f, "%lf %63s %255s", &ms, got_isa, impl) != 3) ms = 0;
  if (f && pclose(f) != 0) ms = 0;
  snprintf(notes, n, "oneDNN with ONEDNN_MAX_CPU_ISA=%s (isa %s, impl %s), in a child process", isa, got_isa,
           impl);
  return ms;
}

/* Our kernel against oneDNN limited to the instruction set we use. */
static void report_limited(const run_ctx *r, const char *task, const char *which, const char *isa,
                           const char *unit, double ms) {
  char notes[512], name[96], dname[96], base[64];
  double dms = limited_isa(r, which, isa, notes, sizeof notes);
  if (dms <= 0) {
    printf("SKIP %s with ONEDNN_MAX_CPU_ISA=%s: the child run failed\n", task, isa);
    return;
  }
  double ops = 2.0 * (double)r->M * (double)r->N * (double)r->K;
  snprintf(dname, sizeof dname, "%s_%lld_onednn_isa_%s", task, (long long)r->M, isa);
  for (char *p = dname; *p; p++) *p = (char)tolower((unsigned char)*p);
  snprintf(name, sizeof name, "%s_%lld_tuned_vs_onednn_isa_%s", task, (long long)r->M, isa);
  for (char *p = name; *p; p++) *p = (char)tolower((unsigned char)*p);
  snprintf(base, sizeof base, "onednn_isa_%s", isa);
  for (char *p = base; *p; p++) *p = (char)tolower((unsigned char)*p);
  bench_case cases[2] = {
      {name, ops / ms * 1e-6, unit, base, ops / dms * 1e-6, "our tuned kernel, the same timing"},
      {dname, ops / dms * 1e-6, unit, NULL, 0, notes},
  };
  mlc_error err;
  for (int i = 0; i < 2; i++) bench_print(&cases[i]);
  if (!bench_write_results(r->results, 2, cases, &err)) fprintf(stderr, "bench_int8: error: %s\n", err.msg);
}

/* Ours and oneDNN timed in alternation (bench_time_pair): a spell of load
 * on the shared machine falls on both, not on whichever ran then. */
enum { PAIR_ROUNDS = 9 };
#define PAIR_NOTE "median of 9 interleaved rounds %.3f vs oneDNN %.3f ms (minima %.3f vs %.3f)"

static void case_int8(run_ctx *r) {
  operands x = int8_operands(r);
  ours us = {0};
  tune_and_load("dense_int8", r->shape_text, r->trials, &r->t, "bench_int8_tuned", (void *[]){x.A, x.B, x.C}, &us);
  /* oneDNN, and the check: equal everywhere, and a C reference on a sample */
  dnnl_mm dm;
  dnnl_setup(&dm, r->M, r->N, r->K, INT8_TYPES, x.A, x.Wkn);
  run_ours(&us);
  run_dnnl(&dm);
  const int32_t *C = x.C, *D = dm.dst;
  int64_t bad = 0;
  for (int64_t i = 0; i < r->M * r->N; i++) bad += C[i] != D[i];
  if (bad || int8_sample_wrong(r, &x, C)) die("check", "the tuned kernel and oneDNN disagree");
  double t[4];
  bench_time_pair(run_ours, &us, run_dnnl, &dm, PAIR_ROUNDS, 3, 30, t);
  double ms = t[0], dms = t[1];
  char notes[512], dnotes[256];
  snprintf(notes, sizeof notes, "%s, %d trials in %.0f s, %s; %d threads; equal to oneDNN's output; " PAIR_NOTE,
           r->shape_text, r->trials, us.tune_s, us.how, r->t.num_cores, ms, dms, t[2], t[3]);
  snprintf(dnotes, sizeof dnotes, "oneDNN matmul u8 x s8 -> s32, weights reordered once (impl %s, isa %s)",
           dm.impl, dnnl_isa_name());
  report(r, "dense_int8", "GOP/s", ms, dms, notes, dnotes);
  if (!*r->isa_suffix) report_limited(r, "dense_int8", "int8", "AVX512_CORE_VNNI", "GOP/s", ms);
  ours_free(&us);
  operands_free(&x);
}

static void case_bf16(run_ctx *r) {
  operands x = bf16_operands(r);
  ours us = {0};
  tune_and_load("matmul_bf16", r->shape_text, r->trials, &r->t, "bench_bf16_tuned", (void *[]){x.A, x.B, x.C}, &us);
  dnnl_mm dm;
  dnnl_setup(&dm, r->M, r->N, r->K, BF16_TYPES, x.A, x.Wkn);
  run_ours(&us);
  run_dnnl(&dm);
  double worst = 0, dworst = 0;
  if (bf16_sample_wrong(r, &x, x.C, &worst)) die("check", "the tuned bf16 kernel is outside the bound");
  if (bf16_sample_wrong(r, &x, dm.dst, &dworst)) die("check", "oneDNN's bf16 matmul is outside the bound");
  double t[4];
  bench_time_pair(run_ours, &us, run_dnnl, &dm, PAIR_ROUNDS, 3, 30, t);
  double ms = t[0], dms = t[1];
  char notes[640], dnotes[256];
  snprintf(notes, sizeof notes,
           "%s, %d trials in %.0f s, %s; %d threads; sampled outputs within K*2^-23*sum|ab| of the exact "
           "sum (worst %.2g, oneDNN %.2g); " PAIR_NOTE,
           r->shape_text, r->trials, us.tune_s, us.how, r->t.num_cores, worst, dworst, ms, dms, t[2], t[3]);
  snprintf(dnotes, sizeof dnotes, "oneDNN matmul bf16 x bf16 -> f32, weights reordered once (impl %s, isa %s)",
           dm.impl, dnnl_isa_name());
  report(r, "matmul_bf16", "GFLOP/s", ms, dms, notes, dnotes);
  if (!*r->isa_suffix) report_limited(r, "matmul_bf16", "bf16", "AVX512_CORE_BF16", "GFLOP/s", ms);
  ours_free(&us);
  operands_free(&x);
}

int main(int argc, char **argv) {
  if (!getenv("OMP_WAIT_POLICY")) { /* libgomp reads it when loaded: start again */
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);
    die("execv", "cannot re-execute with OMP_WAIT_POLICY=passive");
  }
  run_ctx r = {.results = "bench/results.json", .shape_text = "1024,1024,1024", .trials = 64, .isa_suffix = ""};
  const char *only = NULL, *target = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) r.results = argv[++i];
    else if (strcmp(argv[i], "--onednn-only") == 0 && i + 1 < argc) only = argv[++i];
    else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) r.shape_text = argv[++i];
    else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) r.trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) target = argv[++i];
    else die("usage", "bench_int8 [--results FILE] [--shape M,N,K] [--trials N] [--target TARGET]");
  }
  mlc_error err;
  if (!target) mlc_target_host(&r.t);
  else if (!mlc_target_parse(target, &r.t, &err)) die("--target", err.msg);
  int64_t s[MLC_TASK_MAX_DIMS];
  if (!mlc_task_parse_shape(mlc_task_find("matmul"), r.shape_text, s, &err)) die("--shape", err.msg);
  r.M = s[0], r.N = s[1], r.K = s[2];
  char why[512];
  if (!dnnl_open(why, sizeof why)) {
    printf("SKIP bench_int8: oneDNN not available (%s)\n", why);
    return 0;
  }
  if (only) return onednn_only(&r, only);
  char suffix[64] = "";
  const char *isa = getenv("ONEDNN_MAX_CPU_ISA");
  if (isa && *isa) {
    snprintf(suffix, sizeof suffix, "_isa_%s", isa);
    for (char *p = suffix; *p; p++) *p = (char)tolower((unsigned char)*p);
    r.isa_suffix = suffix;
  }
  bool vnni = mlc_target_has_feature(&r.t, "avx512vnni"), bf16 = mlc_target_has_feature(&r.t, "avx512bf16");
  if (vnni || bf16) case_fp32(&r);
  if (vnni) case_int8(&r);
  else printf("SKIP dense_int8: the host CPU (%s) lacks avx512vnni\n", r.t.mcpu);
  if (bf16) case_bf16(&r);
  else printf("SKIP matmul_bf16: the host CPU (%s) lacks avx512bf16\n", r.t.mcpu);
  return 0;
}
