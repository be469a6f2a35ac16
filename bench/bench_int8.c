/* int8 dense, tuned with AVX-512 VNNI or AMX, against oneDNN's int8 matmul.
 *
 *   bench_int8 [--results FILE] [--shape M,N,K] [--trials N] [--target TARGET]
 *
 * --target tunes for another target than the host, e.g. "llvm
 * -mcpu=icelake-client -mattr=+avx512vnni -num-cores=2": VNNI without AMX
 * on an AMX machine (run it with ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI to
 * compare with oneDNN on the same instructions).
 * Tunes the dense_int8 task (uint8 x int8 -> int32, weights packed for the
 * intrinsic) for the host with mlc_tuner_tune (a scratch database), builds
 * the best record, checks it exactly against oneDNN's result (and a plain
 * C reference on a sample of outputs), and times both on the target's
 * threads. oneDNN (Debian's libdnnl) is opened with dlopen, so the bench
 * builds without it; its weights are reordered once into the layout it
 * picks (format_tag any), as ours are packed before the call. A CPU without
 * AVX-512 VNNI: SKIP.
 *
 * oneDNN uses its best ISA (AMX where the CPU has it; ONEDNN_MAX_CPU_ISA=
 * AVX512_CORE_VNNI limits it to the instruction we use; the case notes
 * name the implementation). Its OpenMP threads wait passively
 * (OMP_WAIT_POLICY=passive, set by re-executing the bench when unset): on
 * a shared, oversubscribed machine spinning barriers made it 100x slower. */
#include "bench/results.h"
#include "schedule/schedule.h"
#include "tasks/tasks.h"
#include "tuner/tuner.h"

#include <dlfcn.h>
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
  X(dnnl_stream_wait)
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
  int32_t *dst;
  const char *impl;
} dnnl_mm;

static dnnl_memory_t plain_mem(dnnl_engine_t eng, int64_t r, int64_t c, dnnl_data_type_t dt, void **data) {
  dnnl_memory_desc_t md;
  dnnl_dims_t d = {r, c};
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&md, 2, d, dt, dnnl_ab));
  dnnl_memory_t m;
  DNNL_OK(p_dnnl_memory_create(&m, &md, eng, DNNL_MEMORY_ALLOCATE));
  DNNL_OK(p_dnnl_memory_get_data_handle(m, data));
  return m;
}

/* C[M,N] (s32) = A[M,K] (u8) @ W[K,N] (s8), W given plain and reordered. */
static void dnnl_setup(dnnl_mm *d, int64_t M, int64_t N, int64_t K, const uint8_t *a, const int8_t *w_kn) {
  dnnl_engine_t eng;
  DNNL_OK(p_dnnl_engine_create(&eng, dnnl_cpu, 0));
  DNNL_OK(p_dnnl_stream_create(&d->stream, eng, dnnl_stream_default_flags));
  dnnl_memory_desc_t src, wt, dst;
  dnnl_dims_t sd = {M, K}, wd = {K, N}, dd = {M, N};
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_u8, dnnl_ab));
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&wt, 2, wd, dnnl_s8, dnnl_format_tag_any));
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_s32, dnnl_ab));
  dnnl_matmul_desc_t desc;
  DNNL_OK(p_dnnl_matmul_desc_init(&desc, &src, &wt, NULL, &dst));
  dnnl_primitive_desc_t pd;
  DNNL_OK(p_dnnl_primitive_desc_create(&pd, &desc, NULL, eng, NULL));
  d->impl = "?";
  p_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &d->impl);
  void *ap, *wp, *cp, *wq;
  dnnl_memory_t am = plain_mem(eng, M, K, dnnl_u8, &ap), wplain = plain_mem(eng, K, N, dnnl_s8, &wp);
  dnnl_memory_t cm = plain_mem(eng, M, N, dnnl_s32, &cp);
  memcpy(ap, a, (size_t)(M * K));
  memcpy(wp, w_kn, (size_t)(K * N));
  const dnnl_memory_desc_t *wmd = p_dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_t wm;
  DNNL_OK(p_dnnl_memory_create(&wm, wmd, eng, DNNL_MEMORY_ALLOCATE));
  DNNL_OK(p_dnnl_memory_get_data_handle(wm, &wq));
  dnnl_primitive_desc_t rpd;
  dnnl_memory_desc_t plain_wmd;
  DNNL_OK(p_dnnl_memory_desc_init_by_tag(&plain_wmd, 2, wd, dnnl_s8, dnnl_ab));
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

static void run_dnnl(void *ctx) {
  dnnl_mm *d = ctx;
  DNNL_OK(p_dnnl_primitive_execute(d->prim, d->stream, 3, d->args));
  DNNL_OK(p_dnnl_stream_wait(d->stream));
}

/* ---- ours ----------------------------------------------------------------------- */

typedef struct ours {
  mlc_kernel_fn fn;
  void *args[3];
} ours;

static void run_ours(void *ctx) {
  ours *o = ctx;
  if (o->fn(o->args) != 0) die("tuned kernel", "returned an error");
}

static int64_t packed_index(int64_t j, int64_t k, int64_t K) {
  return ((j / 16) * (K / 4) + k / 4) * 64 + (j % 16) * 4 + k % 4;
}

int main(int argc, char **argv) {
  if (!getenv("OMP_WAIT_POLICY")) { /* libgomp reads it when loaded: start again */
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);
    die("execv", "cannot re-execute with OMP_WAIT_POLICY=passive");
  }
  const char *results = "bench/results.json", *shape_text = "1024,1024,1024", *target = NULL;
  int trials = 64;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--results") == 0 && i + 1 < argc) results = argv[++i];
    else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) shape_text = argv[++i];
    else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) target = argv[++i];
    else die("usage", "bench_int8 [--results FILE] [--shape M,N,K] [--trials N] [--target TARGET]");
  }
  mlc_error err;
  mlc_target t;
  if (!target) mlc_target_host(&t);
  else if (!mlc_target_parse(target, &t, &err)) die("--target", err.msg);
  if (!mlc_target_has_feature(&t, "avx512vnni")) {
    printf("SKIP bench_int8: the host CPU (%s) lacks avx512vnni\n", t.mcpu);
    return 0;
  }
  char why[512];
  if (!dnnl_open(why, sizeof why)) {
    printf("SKIP bench_int8: oneDNN not available (%s)\n", why);
    return 0;
  }
  const mlc_task_def *d = mlc_task_find("dense_int8");
  int64_t s[MLC_TASK_MAX_DIMS];
  if (!mlc_task_parse_shape(d, shape_text, s, &err)) die("--shape", err.msg);
  int64_t M = s[0], N = s[1], K = s[2];
  mlc_arena *a = mlc_arena_new();
  mlc_prim_func *f = mlc_task_build(a, d, s);

  /* Inputs over the whole ranges. */
  uint8_t *A = mlc_xmalloc((size_t)(M * K));
  int8_t *B = mlc_xmalloc((size_t)(N * K)), *Wkn = mlc_xmalloc((size_t)(N * K));
  int32_t *C = mlc_xmalloc(sizeof(int32_t) * (size_t)(M * N));
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 3, 1);
  for (int64_t i = 0; i < M * K; i++) A[i] = (uint8_t)mlc_pcg32_next(&rng);
  for (int64_t i = 0; i < N * K; i++) B[i] = (int8_t)(uint8_t)mlc_pcg32_next(&rng);
  for (int64_t j = 0; j < N; j++)
    for (int64_t k = 0; k < K; k++) Wkn[k * N + j] = B[packed_index(j, k, K)];

  /* Tune. */
  char db_path[] = "/tmp/bench_int8_XXXXXX";
  int fd = mkstemp(db_path);
  if (fd < 0) die("mkstemp", "cannot create a scratch database");
  close(fd);
  unlink(db_path);
  mlc_db *db = mlc_db_open(db_path, MLC_DB_CREATE, &err);
  if (!db) die(db_path, err.msg);
  mlc_tuner_tune_opts o;
  mlc_tuner_tune_opts_default(&o);
  o.task = "dense_int8";
  o.shape = shape_text;
  o.target = t.str;
  o.trials = trials;
  mlc_tuner_tune_result res;
  double t0 = bench_now_ms();
  if (!mlc_tuner_tune(db, f, &o, &res, &err)) die("tune", err.msg);
  double tune_s = (bench_now_ms() - t0) / 1e3;
  mlc_gkernel gk;
  if (!mlc_graph_schedule_kernel(a, db, t.str, f, true, &gk, &err)) die("best record", err.msg);
  if (!gk.record_id) die("best record", gk.note);
  mlc_str text = {0};
  mlc_print_func(&text, gk.sched);
  char how[96] = "NOT tensorized";
  const char *amx = strstr(text.data, "mlc_x86_tdpbusd_block");
  const char *call = amx ? amx : strstr(text.data, "mlc_x86_vpdpbusd_block");
  if (call) { /* the micro-kernel's R, NB, K: its last three arguments */
    const char *end = strstr(call, "))");
    int commas = 0;
    const char *p = end;
    while (p > call && commas < 3) commas += *--p == ',';
    long long r = 0, nb = 0, kb = 0;
    if (end && sscanf(p, ", %lld, %lld, %lld", &r, &nb, &kb) == 3)
      snprintf(how, sizeof how, "%s micro-kernel %lldx%lldx%lld", amx ? "AMX tdpbusd" : "register-blocked vpdpbusd",
               r, 16 * nb, kb);
  } else if (strstr(text.data, "mlc_x86_vpdpbusd_16x4")) {
    snprintf(how, sizeof how, "tensorized with one vpdpbusd per call");
  }
  mlc_str_free(&text);
  const char *sym = "bench_int8_tuned";
  mlc_object obj;
  if (!mlc_target_build(&t, 1, &gk.sched, &sym, NULL, &obj, &err)) die("build", err.msg);
  mlc_jit_lib *lib = mlc_jit_load(&obj, &err);
  ours us = {lib ? mlc_jit_lookup(lib, sym, &err) : NULL, {A, B, C}};
  if (!us.fn) die("load", err.msg);

  /* oneDNN, and the check: equal everywhere, and a C reference on a sample. */
  dnnl_mm dm;
  dnnl_setup(&dm, M, N, K, A, Wkn);
  run_ours(&us);
  run_dnnl(&dm);
  int64_t bad = 0;
  for (int64_t i = 0; i < M * N; i++) bad += C[i] != dm.dst[i];
  for (int64_t i = 0; i < M; i += 37)
    for (int64_t j = 0; j < N; j += 13) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (int64_t)A[i * K + k] * B[packed_index(j, k, K)];
      bad += C[i * N + j] != (int32_t)acc;
    }
  if (bad) die("check", "the tuned kernel and oneDNN disagree");

  double ops = 2.0 * (double)M * (double)N * (double)K;
  double ours_ms = bench_time_ms(run_ours, &us, 7, 50);
  double dnnl_ms = bench_time_ms(run_dnnl, &dm, 7, 50);
  double gops = ops / ours_ms * 1e-6, dgops = ops / dnnl_ms * 1e-6;
  char name[64], dname[64], notes[512], dnotes[256];
  snprintf(name, sizeof name, "dense_int8_%lld_tuned", (long long)M);
  snprintf(dname, sizeof dname, "dense_int8_%lld_onednn", (long long)M);
  snprintf(notes, sizeof notes,
           "%s, %d trials in %.0f s, %s; %d threads; equal to oneDNN's output", shape_text, trials,
           tune_s, how, t.num_cores);
  snprintf(dnotes, sizeof dnotes, "oneDNN matmul u8 x s8 -> s32, weights reordered once (impl %s)",
           dm.impl);
  bench_case cases[2] = {
      {name, gops, "GOP/s", "onednn", dgops, notes},
      {dname, dgops, "GOP/s", NULL, 0, dnotes},
  };
  bench_print(&cases[0]);
  bench_print(&cases[1]);
  if (!bench_write_results(results, 2, cases, &err)) fprintf(stderr, "bench_int8: error: %s\n", err.msg);
  mlc_jit_unload(lib);
  mlc_object_free(&obj);
  mlc_db_close(db);
  const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
  for (int i = 0; i < MLC_COUNTOF(suffixes); i++) {
    char p[64];
    snprintf(p, sizeof p, "%s%s", db_path, suffixes[i]);
    unlink(p);
  }
  mlc_free(A), mlc_free(B), mlc_free(Wkn), mlc_free(C);
  mlc_arena_free(a);
  return 0;
}
