/* measure: candidates measured on the ranks of an MPI job.
 *
 * Rank 0 tunes; every other rank is a measurement host with a pool of this
 * module's workers (pool.c) on its own machine. Rank 0's measure hook
 * (mlc_measure_mpi_batch) turns each batch into a queue: a rank asks for
 * as many candidates as keep its builders and runner busy (WANT), gets
 * them (WORK), appends them to its running pool batch and returns each
 * result as it finishes (RESULT), asking again at once. A rank that
 * finishes early takes the candidates another would have had.
 *
 * Messages are byte strings in the frame encoding (frame_internal.h, host
 * byte order: the ranks must be identical machines anyway):
 *
 *   HELLO  r -> 0  str version, str host, u64 pid, str target (the target
 *                  text parsed there: host CPU and cores detected there),
 *                  str cpu, str features, str procs (boot id and pid
 *                  namespace: equal on rank 0, its pid may be looked up)
 *   CONFIG 0 -> r  u32 accepted, str why (refused), the pool options,
 *                  u64 rank 0's pid, str procs (as in HELLO)
 *   WANT   r -> 0  u32 k: room for k more candidates
 *   WORK   0 -> r  u32 batch, u32 k, k x (u32 index, u64 workload key,
 *                  u32 has_text, [str text], str trace, str target,
 *                  u32 fault, f64 max_call_sec, f64 run_timeout_s)
 *   RESULT r -> 0  u32 batch, u32 index, the mlc_measure_result fields
 *   BEAT   r -> 0  nothing: alive (every 0.1 s; 0.05 s when idle)
 *   BEAT   0 -> r  nothing: rank 0 alive (every RANK0_BEAT_S, or a quarter
 *                  of silence_s when that is shorter)
 *   BYE    r -> 0  str why: the rank leaves (SIGTERM, its pool failed)
 *   STOP   0 -> r  the job is over
 *   DONE   r -> 0  nothing: STOP taken (under --enable-recovery, where
 *                  no rank calls MPI_Finalize: see mlc_measure_mpi_end)
 *
 * A workload's text goes to a rank once; later candidates name its key.
 *
 * No MPI call blocks waiting for a message: OpenMPI's blocking receive
 * spins a core, which would disturb timings on the same machine. Every
 * wait is MPI_Iprobe and a short sleep, or the pool's poll.
 *
 * A rank that dies or leaves. Under `mpirun --enable-recovery` (or
 * `--mca orte_enable_recovery 1`) the job goes on after a rank's death.
 * Rank 0 takes a rank for lost when it says BYE, when its process is gone
 * (a rank on rank 0's machine, in the same process namespace: kill(pid,
 * 0)), or when it has sent nothing, not even its BEAT (ten a second), for
 * silence_s (MLC_MPI_SILENCE_S, default 20 s: a host lost). The candidates
 * it held and had not returned go back to the queue for the other ranks;
 * whatever it sends later is dropped, so no result is taken twice. Only
 * when no measurement rank is left does the hook fail. A rank may also
 * join late: its HELLO is answered whenever it comes.
 *
 * By default OpenMPI's mpirun, on seeing a rank die, sends SIGTERM to
 * every other rank and SIGKILL a second later (odls_base_sigkill_timeout).
 * Every rank here catches SIGTERM: a measurement rank says BYE and leaves;
 * rank 0 collects for DRAIN_S what is still arriving, names the ranks that
 * died, and the hook returns false with the results it has, which the
 * tuner commits before it ends.
 *
 * Fault injection for the tests: MLC_MPI_FAULT="R:point:K" makes rank R
 * kill itself (SIGKILL) right after its K-th `want` (asked, no answer
 * yet), `work` (candidates taken, none returned) or `result` sent; with
 * `hello`, rank R sends its HELLO K seconds late (joins late).
 */
#include "measure/frame_internal.h"
#include "targets/targets.h"

#include <stdlib.h>
#include <string.h>

/* Launched by mpirun (OpenMPI) or a PMI launcher (MPICH's hydra, Slurm). */
int mlc_measure_mpi_env_size(void) {
  const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    if (v && *v) {
      long n = strtol(v, NULL, 10);
      return n > 1 ? (int)n : 1;
    }
  }
  return 1;
}

#ifndef MLC_HAVE_MPI

bool mlc_measure_mpi_built(void) { return false; }

mlc_measure_mpi *mlc_measure_mpi_init(int *argc, char ***argv, const char *target_text,
                                      mlc_error *err) {
  MLC_UNUSED(argc);
  MLC_UNUSED(argv);
  MLC_UNUSED(target_text);
  mlc_error_set(err, "this build has no MPI support (install libopenmpi-dev and rebuild)");
  return NULL;
}

int mlc_measure_mpi_rank(const mlc_measure_mpi *p) { return p ? 0 : 0; }
int mlc_measure_mpi_size(const mlc_measure_mpi *p) { return p ? 1 : 1; }

bool mlc_measure_mpi_check(mlc_measure_mpi *p, const mlc_measure_opts *o, mlc_error *err) {
  MLC_UNUSED(p);
  MLC_UNUSED(o);
  return mlc_error_set(err, "this build has no MPI support");
}

void mlc_measure_mpi_describe(const mlc_measure_mpi *p, mlc_str *out) {
  MLC_UNUSED(p);
  MLC_UNUSED(out);
}

bool mlc_measure_mpi_batch(void *p, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                           mlc_error *err) {
  MLC_UNUSED(p);
  MLC_UNUSED(n);
  MLC_UNUSED(c);
  MLC_UNUSED(out);
  return mlc_error_set(err, "this build has no MPI support");
}

bool mlc_measure_mpi_serve(mlc_measure_mpi *p, mlc_error *err) {
  MLC_UNUSED(p);
  return mlc_error_set(err, "this build has no MPI support");
}

void mlc_measure_mpi_end(mlc_measure_mpi *p, int status) {
  MLC_UNUSED(p);
  MLC_UNUSED(status);
}

void mlc_measure_mpi_on_end(mlc_measure_mpi *p, void (*fn)(void *ud, const char *msg), void *ud) {
  MLC_UNUSED(p);
  MLC_UNUSED(fn);
  MLC_UNUSED(ud);
}

void mlc_measure_mpi_on_ranks(mlc_measure_mpi *p, void (*fn)(void *ud, const char *msg), void *ud) {
  MLC_UNUSED(p);
  MLC_UNUSED(fn);
  MLC_UNUSED(ud);
}

int mlc_measure_mpi_lost(mlc_measure_mpi *p) { return p ? 0 : 0; }

#else

#include <mpi.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum {
  TAG_HELLO = 1, TAG_CONFIG, TAG_WANT, TAG_WORK, TAG_RESULT, TAG_BEAT, TAG_BYE, TAG_STOP, TAG_DONE
};

#define PROTOCOL "mlc-mpi 2 " MLC_VERSION
#define SILENCE_S 20.0   /* a rank silent this long (BEAT_S) is taken for lost */
#define PID_CHECK_S 0.05 /* how often rank 0 looks for its own machine's ranks' pids */
#define JOIN_S 2.0       /* after the first HELLO, how long the start waits for the rest
                          * (MPI_Init has waited for every rank: only a slow start is left) */
#define STOP_WAIT_S 0.2  /* a STOP to a lost rank: how long it may take to go out */
#define DONE_WAIT_S 5.0  /* ... to a live rank: how long its DONE may take */
#define LINGER_S 0.05    /* a rank's DONE: time to go out before the rank exits */
#define RANK0_BEAT_S 1.0 /* rank 0's BEAT to the ranks (they take its silence for its death) */
#define DRAIN_S 0.5      /* after SIGTERM: results and BYEs still arriving (over TCP, from
                          * hosts whose SIGTERM comes later); SIGKILL follows at 1 s */
#define FLUSH_QUIET_S 0.02 /* ... after the messages queued before it (launcher_ended) */
#define FLUSH_MAX_S 0.15
#define WHOLE_BATCH 4    /* batches this small go whole to one rank (see hand_out) */
#define SEND_TIMEOUT_S 60.0
#define BEAT_S 0.1       /* a measuring rank's BEAT (see launcher_ended) */
#define IDLE_BEAT_S 0.05 /* an idle rank's: rank 0 sends work only to ranks it hears */
#define FRESH_S (2 * IDLE_BEAT_S) /* heard this recently: alive (see batch_locked) */

static volatile sig_atomic_t g_term; /* the signal that asked this rank to end */

static void on_term(int sig) { g_term = sig; }

typedef struct peer {
  char host[256];
  uint64_t pid;
  char *target, *cpu, *features;
  int want;      /* candidates it asked for and has not got */
  int held;      /* candidates of the current batch it has and has not returned */
  mlc_str work;  /* the WORK message on its way (send_work) */
  MPI_Request req;
  bool sending;  /* ... not yet taken */
  double send_start;
  double heard;  /* when its last message came */
  bool joined;   /* its HELLO came */
  bool local;    /* its pid is one of rank 0's process namespace */
  bool gone;     /* lost, or refused on joining late: no more work */
  bool lost;     /* it left or died; its candidates went to the others */
  bool died;     /* ... not by a BYE */
  bool stopped;  /* it was refused (CONFIG) */
  MLC_VEC(int) holding;  /* the current batch's candidates it has not returned */
  MLC_VEC(uint64_t) wls; /* workload keys whose text it has */
} peer;

typedef struct wl_text {
  uint64_t key;
  char *text;
} wl_text;

typedef struct slot {
  uint32_t batch, index;
} slot;

struct mlc_measure_mpi {
  int rank, size;
  char host[256];
  char ref_dir[4096]; /* ranks > 0: rank 0's reference cache directory */
  char *target;    /* the target text as this rank parsed it */
  peer *peers;     /* rank 0: [size] */
  uint32_t batch;  /* rank 0: the hook's calls */
  bool failed;     /* rank 0: the job cannot go on; no clean MPI_Finalize */
  bool fail_said;  /* rank 0: ... and the caller was told why */
  double fresh_after; /* rank 0: ranks heard since may get work (hand_out) */
  double batch_end;   /* rank 0: when the hook last returned */
  double silence_s;   /* rank 0: a rank silent this long is lost */
  double pid_checked; /* rank 0: when the local ranks' pids were last looked up */
  MLC_VEC(int) requeue; /* rank 0: candidates of lost ranks, to hand out again */
  mlc_measure_opts opts; /* rank 0: what a rank joining late is sent */
  char procs[128];    /* this process's namespace (HELLO) */
  char fail_msg[900];
  /* Rank 0: SIGTERM is blocked in every thread but `watcher`, which
   * sigwaits for it; mu keeps its MPI calls apart from the hook's. */
  bool has_watcher, term_handled;
  bool recovering;  /* mpirun --enable-recovery: a death does not end the job */
  double beat_sent;  /* rank 0: its last BEAT */
  bool stopping;     /* rank 0: the ranks were sent STOP: no more BEATs */
  uint64_t pid0;     /* ranks > 0: rank 0's pid, when in this process namespace */
  double heard0, pid0_checked; /* ranks > 0: when rank 0 last spoke, was looked up */
  pthread_t watcher;
  pthread_mutex_t mu;
  void (*on_end)(void *ud, const char *msg);
  void *on_end_ud;
  void (*on_ranks)(void *ud, const char *msg); /* the measuring ranks changed */
  void *on_ranks_ud;
  uint8_t *in;     /* the message received last */
  size_t in_len, in_cap;
  mlc_str out;     /* the message being sent */
};

static double now(void) { return mlc_now_sec(); }

/* The boot and pid namespace this process runs in: two ranks with the
 * same string can look up each other's pids. */
static void process_namespace(char *out, size_t size) {
  char boot[64] = "", ns[64] = "";
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
    fclose(f);
    boot[strcspn(boot, "\n")] = 0;
  }
  ssize_t len = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  ns[len > 0 ? len : 0] = 0;
  snprintf(out, size, "%s %s", boot, ns);
  if (!boot[0] || !ns[0]) out[0] = 0; /* unknown: never compared equal */
}

/* mpirun --enable-recovery (or --mca orte_enable_recovery 1) tells its
 * ranks so through the environment. */
static bool launcher_recovers(void) {
  const char *v = getenv("OMPI_MCA_orte_enable_recovery");
  return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0);
}

static double env_seconds(const char *name, double fallback) {
  const char *v = getenv(name);
  char *end;
  double x = v ? strtod(v, &end) : 0;
  return v && end != v && *end == 0 && x > 0 ? x : fallback;
}

/* MLC_MPI_FAULT="R:point:K": this rank (R) kills itself after its K-th
 * event of the kind named, or says HELLO K seconds late (see the top of
 * this file). */
typedef enum { FAULT_WANT, FAULT_WORK, FAULT_RESULT, FAULT_HELLO, FAULT_NONE } fault_point;

typedef struct fault_plan {
  fault_point point;
  long at, seen;
} fault_plan;

static fault_plan fault_plan_of(int rank) {
  static const char *names[] = {"want", "work", "result", "hello"};
  fault_plan f = {FAULT_NONE, 0, 0};
  const char *v = getenv("MLC_MPI_FAULT");
  char point[16];
  int r;
  long k;
  if (!v || sscanf(v, "%d:%15[a-z]:%ld", &r, point, &k) != 3 || r != rank || k < 1) return f;
  for (int i = 0; i < FAULT_NONE; i++)
    if (strcmp(point, names[i]) == 0) f.point = (fault_point)i, f.at = k;
  return f;
}

static void fault_event(fault_plan *f, fault_point point) {
  if (f->point == point && ++f->seen == f->at) raise(SIGKILL);
}

static void nap(double sec) {
  struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void feature_diff(const char *a, const char *b, char *out, size_t size);

/* ---- messages ----------------------------------------------------------- */

/* Sends p->out; waits for completion with MPI_Test so that a dead peer
 * (a receive never posted: a message over the eager limit waits for it)
 * does not hold this rank forever: SIGTERM or SEND_TIMEOUT_S end the wait. */
static bool send_msg(mlc_measure_mpi *p, int dest, int tag) {
  MPI_Request req;
  if (MPI_Isend(p->out.data ? p->out.data : "", (int)p->out.len, MPI_BYTE, dest, tag,
                MPI_COMM_WORLD, &req) != MPI_SUCCESS)
    return false;
  double end = now() + SEND_TIMEOUT_S;
  for (;;) {
    int done = 0;
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (now() > end || g_term) {
      MPI_Cancel(&req);
      MPI_Request_free(&req);
      return false;
    }
    nap(50e-6);
  }
}

/* A waiting message from src (MPI_ANY_SOURCE) into p->in: true with *from
 * and *tag set, false when none is there. */
static bool recv_msg(mlc_measure_mpi *p, int src, int *from, int *tag) {
  int flag = 0;
  MPI_Status st;
  if (MPI_Iprobe(src, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || !flag)
    return false;
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  if (count < 0) count = 0;
  if ((size_t)count + 1 > p->in_cap) {
    p->in_cap = (size_t)count + 4096;
    p->in = mlc_xrealloc(p->in, p->in_cap);
  }
  p->in_len = (size_t)count;
  if (MPI_Recv(p->in, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return false;
  *from = st.MPI_SOURCE;
  *tag = st.MPI_TAG;
  if (*from == 0 && p->rank > 0) p->heard0 = now();
  return true;
}

static frame_reader reader(const mlc_measure_mpi *p) {
  return (frame_reader){p->in, p->in_len, 0, false};
}

static void put_opts(mlc_str *s, const mlc_measure_opts *o) {
  frame_u32(s, (uint32_t)o->n_builders);
  frame_f64(s, o->build_timeout_s);
  frame_f64(s, o->run_timeout_s);
  frame_u32(s, (uint32_t)o->number);
  frame_u32(s, (uint32_t)o->repeat);
  frame_f64(s, o->min_repeat_ms);
  frame_u32(s, o->flush_cache);
  frame_u32(s, o->pause_builders);
  frame_u64(s, o->seed);
  frame_f64(s, o->rtol);
  frame_f64(s, o->atol);
  frame_u64(s, o->max_arg_bytes);
  frame_u32(s, o->build_only);
  frame_str(s, o->ref_cache_dir ? o->ref_cache_dir : "");
}

static void copy_str(frame_reader *r, char *dst, size_t size);

/* dir: where the reference cache directory's name is kept. */
static void get_opts(frame_reader *r, mlc_measure_opts *o, char *dir, size_t dir_size) {
  *o = mlc_measure_defaults();
  o->n_builders = (int)frame_get_u32(r);
  o->build_timeout_s = frame_get_f64(r);
  o->run_timeout_s = frame_get_f64(r);
  o->number = (int)frame_get_u32(r);
  o->repeat = (int)frame_get_u32(r);
  o->min_repeat_ms = frame_get_f64(r);
  o->flush_cache = frame_get_u32(r);
  o->pause_builders = frame_get_u32(r);
  o->seed = frame_get_u64(r);
  o->rtol = frame_get_f64(r);
  o->atol = frame_get_f64(r);
  o->max_arg_bytes = frame_get_u64(r);
  o->build_only = frame_get_u32(r);
  copy_str(r, dir, dir_size);
  o->ref_cache_dir = dir[0] ? dir : NULL;
}

static void put_result(mlc_str *s, const mlc_measure_result *m) {
  frame_u32(s, (uint32_t)m->status);
  frame_str(s, m->error);
  frame_u32(s, (uint32_t)m->n_secs);
  for (int i = 0; i < m->n_secs; i++) frame_f64(s, m->secs[i]);
  frame_f64(s, m->mean_sec);
  frame_f64(s, m->max_error);
  frame_f64(s, m->build_sec);
  frame_f64(s, m->run_sec);
  frame_u32(s, m->disturbed);
  frame_u32(s, (uint32_t)m->retimes);
  frame_u64(s, (uint64_t)m->ivcsw);
  frame_f64(s, m->cpu_ratio);
  frame_str(s, m->disturb_why);
  frame_u32(s, (uint32_t)m->ref);
}

static void copy_str(frame_reader *r, char *dst, size_t size) {
  char *t = frame_get_str(r);
  snprintf(dst, size, "%s", t ? t : "");
  mlc_free(t);
}

static bool get_result(frame_reader *r, mlc_measure_result *m) {
  uint32_t st = frame_get_u32(r);
  copy_str(r, m->error, sizeof m->error);
  uint32_t n = frame_get_u32(r);
  if (st >= MLC_MEASURE_STATUS_COUNT || n > MLC_MEASURE_MAX_REPEAT) return false;
  m->status = (mlc_measure_status)st;
  m->n_secs = (int)n;
  for (uint32_t i = 0; i < n; i++) m->secs[i] = frame_get_f64(r);
  m->mean_sec = frame_get_f64(r);
  m->max_error = frame_get_f64(r);
  m->build_sec = frame_get_f64(r);
  m->run_sec = frame_get_f64(r);
  m->disturbed = frame_get_u32(r) != 0;
  m->retimes = (int)frame_get_u32(r);
  m->ivcsw = (long)frame_get_u64(r);
  m->cpu_ratio = frame_get_f64(r);
  copy_str(r, m->disturb_why, sizeof m->disturb_why);
  uint32_t ref = frame_get_u32(r);
  m->ref = (mlc_measure_ref)ref;
  return !r->bad && ref <= MLC_MEASURE_REF_RECOMPUTED;
}

/* ---- start --------------------------------------------------------------- */

bool mlc_measure_mpi_built(void) { return true; }

static void *watch(void *arg);

int mlc_measure_mpi_rank(const mlc_measure_mpi *p) { return p->rank; }
int mlc_measure_mpi_size(const mlc_measure_mpi *p) { return p->size; }

mlc_measure_mpi *mlc_measure_mpi_init(int *argc, char ***argv, const char *target_text,
                                      mlc_error *err) {
  mlc_target t;
  if (!mlc_target_parse(target_text ? target_text : "llvm", &t, err)) return NULL;
  /* SIGTERM blocked before MPI starts its threads, which inherit the
   * mask: it reaches only the thread that waits for it (rank 0) or the
   * main thread (the others). */
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, NULL);
  int inited = 0, provided = MPI_THREAD_SINGLE;
  MPI_Initialized(&inited);
  if (inited) MPI_Query_thread(&provided);
  else if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return mlc_error_set(err, "MPI_Init failed"), NULL;
  /* Errors come back as codes: a dead peer must not abort rank 0 before
   * it has stored what it received. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  mlc_measure_mpi *p = mlc_xmalloc(sizeof *p);
  *p = (mlc_measure_mpi){0};
  MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p->size);
  if (gethostname(p->host, sizeof p->host - 1) != 0) snprintf(p->host, sizeof p->host, "?");
  p->target = mlc_xstrdup(t.str);
  p->silence_s = env_seconds("MLC_MPI_SILENCE_S", SILENCE_S);
  p->recovering = launcher_recovers();
  p->heard0 = now();
  process_namespace(p->procs, sizeof p->procs);
  pthread_mutex_init(&p->mu, NULL);
  if (p->rank == 0 && provided >= MPI_THREAD_SERIALIZED &&
      pthread_create(&p->watcher, NULL, watch, p) == 0) {
    p->has_watcher = true;
  } else {
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL); /* no SA_RESTART: a pool's poll returns at once */
    pthread_sigmask(SIG_UNBLOCK, &term, NULL);
  }
  if (p->rank > 0) {
    mlc_str_clear(&p->out);
    frame_str(&p->out, PROTOCOL);
    frame_str(&p->out, p->host);
    frame_u64(&p->out, (uint64_t)getpid());
    frame_str(&p->out, p->target);
    frame_str(&p->out, mlc_target_host_cpu());
    frame_str(&p->out, mlc_target_host_features());
    frame_str(&p->out, p->procs);
    fault_plan f = fault_plan_of(p->rank);
    if (f.point == FAULT_HELLO) nap((double)f.at);
    if (!send_msg(p, 0, TAG_HELLO)) {
      mlc_error_set(err, "rank %d: cannot reach rank 0", p->rank);
      mlc_measure_mpi_end(p, 1);
      return NULL;
    }
  }
  return p;
}

static const char *peer_name(const mlc_measure_mpi *p, int r, char *buf, size_t size) {
  const peer *q = &p->peers[r];
  snprintf(buf, size, "measurement rank %d (host %s, pid %llu)", r, q->host[0] ? q->host : "?",
           (unsigned long long)q->pid);
  return buf;
}

/* Why rank r may not measure for rank 0 ("" when it may). */
static void compare_peer(const mlc_measure_mpi *p, int r, const char *version, char *why,
                         size_t size) {
  const peer *q = &p->peers[r];
  char name[400], diff[200];
  peer_name(p, r, name, sizeof name);
  why[0] = 0;
  if (strcmp(version, PROTOCOL) != 0)
    snprintf(why, size, "%.300s runs \"%.100s\", rank 0 \"%s\" (use one build on every host)", name,
             version, PROTOCOL);
  else if (strcmp(q->target, p->target) != 0)
    snprintf(why, size, "%.300s is refused: its target is '%.150s' but rank 0 tunes for '%.150s' on host %.64s "
             "(measurements are only comparable on identical hardware)", name, q->target,
             p->target, p->host);
  else if (strcmp(q->cpu, mlc_target_host_cpu()) != 0 ||
           strcmp(q->features, mlc_target_host_features()) != 0) {
    feature_diff(q->features, mlc_target_host_features(), diff, sizeof diff);
    snprintf(why, size, "%.300s is refused: its CPU is %.64s (%.150s) but rank 0's host %.64s has %.64s "
             "(measurements are only comparable on identical hardware)", name, q->cpu,
             diff, p->host, mlc_target_host_cpu());
  }
}

/* The first feature one list has and the other lacks: "has +avx512f". */
static void feature_diff(const char *a, const char *b, char *out, size_t size) {
  const char *lists[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    const char *s = lists[k], *other = lists[1 - k];
    while (*s) {
      size_t len = strcspn(s, ",");
      bool found = false;
      for (const char *o = other; *o && !found;) {
        size_t ol = strcspn(o, ",");
        found = ol == len && strncmp(o, s, len) == 0;
        o += ol + (o[ol] == ',');
      }
      if (!found) {
        snprintf(out, size, "%s %.*s", k == 0 ? "has" : "lacks", (int)len, s);
        return;
      }
      s += len + (s[len] == ',');
    }
  }
  snprintf(out, size, "same features");
}

static bool check_locked(mlc_measure_mpi *p, const mlc_measure_opts *o, mlc_error *err);

bool mlc_measure_mpi_check(mlc_measure_mpi *p, const mlc_measure_opts *o, mlc_error *err) {
  pthread_mutex_lock(&p->mu);
  bool ok = check_locked(p, o, err);
  pthread_mutex_unlock(&p->mu);
  return ok;
}

/* A HELLO from rank `from` (in p->in) into its peer; the version it runs
 * into version. False when it said HELLO before. */
static bool take_hello(mlc_measure_mpi *p, int from, char **version) {
  peer *q = &p->peers[from];
  if (q->joined) return false;
  frame_reader rd = reader(p);
  char procs[128];
  *version = frame_get_str(&rd);
  if (!*version) *version = mlc_xstrdup("");
  copy_str(&rd, q->host, sizeof q->host);
  q->pid = frame_get_u64(&rd);
  q->target = frame_get_str(&rd);
  q->cpu = frame_get_str(&rd);
  q->features = frame_get_str(&rd);
  copy_str(&rd, procs, sizeof procs);
  if (!q->target) q->target = mlc_xstrdup("?");
  if (!q->cpu) q->cpu = mlc_xstrdup("?");
  if (!q->features) q->features = mlc_xstrdup("");
  q->local = !rd.bad && p->procs[0] && strcmp(procs, p->procs) == 0 && q->pid > 0;
  q->heard = now();
  q->joined = true;
  return true;
}

/* CONFIG to rank r: the pool options, or why it is refused. */
static void configure(mlc_measure_mpi *p, int r, const char *why) {
  mlc_str_clear(&p->out);
  frame_u32(&p->out, why[0] == 0);
  frame_str(&p->out, why);
  put_opts(&p->out, &p->opts);
  frame_u64(&p->out, (uint64_t)getpid());
  frame_str(&p->out, p->procs);
  send_msg(p, r, TAG_CONFIG);
  p->peers[r].stopped = why[0] != 0;
}

/* Waits for every rank's HELLO, or, once one came, JOIN_S for the rest:
 * a rank that starts later is taken when its HELLO comes (handle). */
static bool check_locked(mlc_measure_mpi *p, const mlc_measure_opts *o, mlc_error *err) {
  p->peers = mlc_xmalloc(sizeof(peer) * (size_t)p->size);
  for (int r = 0; r < p->size; r++) p->peers[r] = (peer){0};
  p->opts = *o;
  char *version[p->size];
  memset(version, 0, sizeof version);
  int got = 0, from, tag;
  double first = 0;
  while (got < p->size - 1 && (got == 0 || now() - first < JOIN_S)) {
    if (g_term) return mlc_error_set(err, "ended by signal %d while the ranks started", g_term);
    if (!recv_msg(p, MPI_ANY_SOURCE, &from, &tag)) {
      nap(1e-3);
      continue;
    }
    if (tag != TAG_HELLO || from <= 0 || from >= p->size) continue;
    if (!take_hello(p, from, &version[from])) continue;
    if (got++ == 0) first = now();
  }
  char why[900] = "";
  for (int r = 1; r < p->size && !why[0]; r++)
    if (p->peers[r].joined) compare_peer(p, r, version[r], why, sizeof why);
  for (int r = 1; r < p->size; r++) {
    mlc_free(version[r]);
    if (p->peers[r].joined) configure(p, r, why);
  }
  if (why[0]) return mlc_error_set(err, "%s", why);
  return true;
}

void mlc_measure_mpi_describe(const mlc_measure_mpi *p, mlc_str *out) {
  char name[400];
  mlc_str_printf(out, "rank 0 (host %s, pid %llu): searches and stores\n", p->host,
                 (unsigned long long)getpid());
  for (int r = 1; p->peers && r < p->size; r++) {
    const peer *q = &p->peers[r];
    if (q->joined) mlc_str_printf(out, "%s: %s, %s\n", peer_name(p, r, name, sizeof name), q->target, q->cpu);
    else mlc_str_printf(out, "measurement rank %d: not started yet (it joins when it does)\n", r);
  }
}

/* ---- rank 0: the measure hook ------------------------------------------------ */

static void fail(mlc_measure_mpi *p, const char *fmt, const char *a, const char *b) {
  p->failed = true;
  snprintf(p->fail_msg, sizeof p->fail_msg, fmt, a, b);
}

/* Whether rank r's last WORK was taken (or none is on its way). One not
 * taken in SEND_TIMEOUT_S, or when SIGTERM came, is cancelled: false. */
static bool work_taken(mlc_measure_mpi *p, int r, bool *failed) {
  peer *q = &p->peers[r];
  *failed = false;
  if (!q->sending) return true;
  int done = 0;
  if (MPI_Test(&q->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 0, *failed = true;
  if (done) {
    q->sending = false;
    return true;
  }
  if (*failed || now() - q->send_start > SEND_TIMEOUT_S || g_term) {
    MPI_Cancel(&q->req);
    MPI_Request_free(&q->req);
    q->sending = false;
    *failed = true;
  }
  return false;
}

/* A send that will not complete (its rank is lost) given up. */
static void drop_send(peer *q) {
  if (!q->sending) return;
  MPI_Cancel(&q->req);
  MPI_Request_free(&q->req);
  q->sending = false;
}

/* Every WORK sent taken, or given up on (lost ranks, SIGTERM). */
static void settle_sends(mlc_measure_mpi *p) {
  double end = now() + SEND_TIMEOUT_S;
  for (int r = 1; r < p->size; r++) {
    bool failed;
    while (!p->peers[r].lost && !work_taken(p, r, &failed) && !failed && !p->failed &&
           now() < end)
      nap(50e-6);
    drop_send(&p->peers[r]);
  }
}

static int live_ranks(const mlc_measure_mpi *p) {
  int live = 0;
  for (int r = 1; r < p->size; r++) live += p->peers[r].joined && !p->peers[r].gone;
  return live;
}

/* How often rank 0 beats: the ranks take silence_s without a word from
 * it for its death. */
static double rank0_beat_s(const mlc_measure_mpi *p) {
  return fmin(RANK0_BEAT_S, p->silence_s / 4);
}

/* Rank 0's BEAT to every live rank (rank0_beat_s), sent without waiting:
 * an empty message goes out at once. */
static void beat_ranks(mlc_measure_mpi *p) {
  double t = now();
  if (!p->peers || p->stopping || t - p->beat_sent < rank0_beat_s(p)) return;
  p->beat_sent = t;
  for (int r = 1; r < p->size; r++) {
    const peer *q = &p->peers[r];
    if (!q->joined || q->gone || q->stopped) continue;
    MPI_Request req;
    if (MPI_Isend("", 0, MPI_BYTE, r, TAG_BEAT, MPI_COMM_WORLD, &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

/* Rank r is lost (why: "died", "left: ..."): the candidates it held and
 * had not returned go back to the queue, and nothing it sends later is
 * taken. */
static void lose(mlc_measure_mpi *p, int r, bool died, const char *why,
                 const mlc_measure_result *out) {
  peer *q = &p->peers[r];
  if (q->lost) return;
  int requeued = 0;
  for (int i = 0; i < q->holding.len; i++) {
    int k = q->holding.data[i];
    if (out && out[k].index < 0) {
      MLC_VEC_PUSH(p->requeue, k);
      requeued++;
    }
  }
  q->holding.len = 0;
  q->held = q->want = 0;
  q->lost = q->gone = true;
  q->died = died;
  drop_send(q);
  if (!p->on_ranks) return;
  char name[400], msg[900];
  int live = live_ranks(p);
  if (requeued > 0)
    snprintf(msg, sizeof msg, "%s %s; the %d candidate%s it held go%s to the other ranks (%d left)",
             peer_name(p, r, name, sizeof name), why, requeued, requeued == 1 ? "" : "s",
             requeued == 1 ? "es" : "", live);
  else
    snprintf(msg, sizeof msg, "%s %s, holding no candidate; %d measurement rank%s left",
             peer_name(p, r, name, sizeof name), why, live, live == 1 ? "" : "s");
  p->on_ranks(p->on_ranks_ud, msg);
}

static void handle(mlc_measure_mpi *p, int from, int tag, int n, mlc_measure_result *out,
                   int *done);

/* Ranks on rank 0's machine whose process is gone, and ranks silent for
 * silence_s, are lost; what a dead rank sent before it died is taken
 * first, so that no result it returned is measured again. */
static void check_liveness(mlc_measure_mpi *p, double t0, int n, mlc_measure_result *out,
                           int *done) {
  double t = now();
  bool look = t - p->pid_checked >= PID_CHECK_S;
  if (look) p->pid_checked = t;
  for (int r = 1; r < p->size; r++) {
    peer *q = &p->peers[r];
    if (!q->joined || q->gone) continue;
    if (look && q->local && kill((pid_t)q->pid, 0) != 0 && errno == ESRCH) {
      int from, tag;
      while (!q->lost && recv_msg(p, r, &from, &tag)) handle(p, from, tag, n, out, done);
      lose(p, r, true, "died", out);
      continue;
    }
    double since = q->heard > t0 ? q->heard : t0;
    if (t - since > p->silence_s) {
      char why[96];
      snprintf(why, sizeof why, "has sent nothing for %.0f s: taken for dead", p->silence_s);
      lose(p, r, true, why, out);
    }
  }
}

static bool has_wl(const peer *q, uint64_t key) {
  for (int i = 0; i < q->wls.len; i++)
    if (q->wls.data[i] == key) return true;
  return false;
}

/* A WORK message with candidates idx[0..k) to rank r, sent without
 * waiting for the rank to take it: one over the eager limit completes
 * only when the rank posts its receive (up to its poll interval later),
 * and waiting for each rank in turn left the last ranks of a large job
 * idle for most of a batch. */
static bool send_work(mlc_measure_mpi *p, int r, const int *idx, int k,
                      const mlc_measure_cand *c) {
  peer *q = &p->peers[r];
  mlc_str *s = &q->work;
  mlc_str_clear(s);
  frame_u32(s, p->batch);
  frame_u32(s, (uint32_t)k);
  for (int j = 0; j < k; j++) {
    int i = idx[j];
    uint64_t key = mlc_hash_str(c[i].workload, 0x6d7069);
    bool has = has_wl(q, key);
    frame_u32(s, (uint32_t)i);
    frame_u64(s, key);
    frame_u32(s, !has);
    if (!has) {
      frame_str(s, c[i].workload);
      MLC_VEC_PUSH(q->wls, key);
    }
    frame_str(s, c[i].trace ? c[i].trace : "");
    frame_str(s, c[i].target ? c[i].target : "llvm");
    frame_u32(s, (uint32_t)c[i].fault);
    frame_f64(s, c[i].max_call_sec);
    frame_f64(s, c[i].run_timeout_s);
  }
  if (MPI_Isend(s->data, (int)s->len, MPI_BYTE, r, TAG_WORK, MPI_COMM_WORLD, &q->req) !=
      MPI_SUCCESS)
    return false;
  q->sending = true;
  q->send_start = now();
  return true;
}

/* Up to k candidates still to measure into idx: those of lost ranks
 * first, then the batch's next ones. */
static int take_pending(mlc_measure_mpi *p, int n, int *next, int k, int *idx) {
  int got = 0;
  while (got < k && p->requeue.len > 0) idx[got++] = p->requeue.data[--p->requeue.len];
  while (got < k && *next < n) idx[got++] = (*next)++;
  return got;
}

static int pending(const mlc_measure_mpi *p, int n, int next) {
  return p->requeue.len + (n - next);
}

/* Candidates to the ranks that asked and were heard from lately
 * (fresh_after, batch_locked): a WANT that waited through the search says
 * nothing about whether the rank still lives, so it is honoured only once
 * the rank has spoken again. No rank holds more than its share of the
 * batch (the batch over the live ranks) at once, so that the first ranks
 * to ask do not take work the others would start at the same time. A
 * batch of at most WHOLE_BATCH candidates (the re-measured best few, the
 * end check's interleaved pairs, the baseline) goes whole to one rank:
 * those are timed side by side on one machine. */
static bool hand_out(mlc_measure_mpi *p, int n, const mlc_measure_cand *c, int *next,
                     const mlc_measure_result *out) {
  bool any = false;
  int live = live_ranks(p);
  int share = live > 0 ? (n + live - 1) / live : n;
  int idx[n > 0 ? n : 1];
  for (int r = 1; r < p->size && pending(p, n, *next) > 0 && !p->failed; r++) {
    peer *q = &p->peers[r];
    if (q->want <= 0 || q->gone || !q->joined || q->heard <= p->fresh_after) continue;
    bool failed;
    if (!work_taken(p, r, &failed)) {
      if (!failed) continue; /* its last WORK is still on its way */
      if (g_term) return any;
      lose(p, r, false, "does not take its work", out);
      continue;
    }
    int k = pending(p, n, *next);
    if (n > WHOLE_BATCH) {
      if (k > q->want) k = q->want;
      if (k > share - q->held) k = share - q->held;
      if (k <= 0) continue;
    }
    k = take_pending(p, n, next, k, idx);
    for (int j = 0; j < k; j++) MLC_VEC_PUSH(q->holding, idx[j]);
    q->want = k > q->want ? 0 : q->want - k;
    q->held += k;
    if (!send_work(p, r, idx, k, c)) {
      if (g_term) return any; /* the caller names the dead */
      lose(p, r, false, "cannot be reached", out);
      continue;
    }
    any = true;
  }
  return any;
}

/* Rank r returned candidate i: no longer its to hold. */
static void returned(peer *q, int i) {
  for (int j = 0; j < q->holding.len; j++)
    if (q->holding.data[j] == i) {
      q->holding.data[j] = q->holding.data[--q->holding.len];
      if (q->held > 0) q->held--;
      return;
    }
}

/* One message from rank `from`: results into out, WANTs counted, a BYE
 * loses the rank, a late HELLO is answered. Nothing from a lost rank is
 * taken: its candidates went to others. */
static void handle(mlc_measure_mpi *p, int from, int tag, int n, mlc_measure_result *out,
                   int *done) {
  if (from <= 0 || from >= p->size) return;
  peer *q = &p->peers[from];
  if (q->lost) return;
  if (tag == TAG_HELLO) {
    char *version = NULL, why[900];
    if (take_hello(p, from, &version)) {
      compare_peer(p, from, version, why, sizeof why);
      configure(p, from, why);
      char name[400], msg[600];
      snprintf(msg, sizeof msg, "%s joined late; %d measurement ranks",
               peer_name(p, from, name, sizeof name), live_ranks(p));
      if (why[0]) q->gone = true; /* refused: the job goes on without it */
      if (p->on_ranks) p->on_ranks(p->on_ranks_ud, why[0] ? why : msg);
    }
    mlc_free(version);
    return;
  }
  frame_reader rd = reader(p);
  q->heard = now();
  switch (tag) {
  case TAG_WANT: q->want += (int)frame_get_u32(&rd); break;
  case TAG_RESULT: {
    uint32_t batch = frame_get_u32(&rd), i = frame_get_u32(&rd);
    mlc_measure_result m = {0};
    if (batch != p->batch || i >= (uint32_t)n || out[i].index >= 0 || !get_result(&rd, &m)) break;
    returned(q, (int)i);
    mlc_measure_result_publish(&out[i], &m, (int)i);
    (*done)++;
    break;
  }
  case TAG_BYE: {
    frame_get_u32(&rd); /* ended by a signal: why says so too */
    char why[300], said[340];
    copy_str(&rd, why, sizeof why);
    snprintf(said, sizeof said, "left the job: %s", why);
    lose(p, from, false, said, out);
    break;
  }
  default: break; /* BEAT */
  }
}

/* Receives for `sec` seconds what is still arriving. */
static void drain(mlc_measure_mpi *p, double sec, int n, mlc_measure_result *out, int *done) {
  double end = now() + sec;
  int from, tag;
  while (now() < end) {
    if (recv_msg(p, MPI_ANY_SOURCE, &from, &tag)) handle(p, from, tag, n, out, done);
    else nap(1e-3);
  }
}

/* What was sent before now: a probe may miss messages still on their way
 * through the transport, so until FLUSH_QUIET_S passes without one (at
 * most FLUSH_MAX_S). */
static void take_queued(mlc_measure_mpi *p, int n, mlc_measure_result *out, int *done) {
  int from, tag;
  double t = now(), last = t;
  while (now() - last < FLUSH_QUIET_S && now() - t < FLUSH_MAX_S) {
    if (recv_msg(p, MPI_ANY_SOURCE, &from, &tag)) {
      handle(p, from, tag, n, out, done);
      last = now();
    } else {
      nap(1e-3);
    }
  }
}

/* SIGTERM on rank 0: mpirun is ending the job, normally because a rank
 * died. After what was queued, a live rank sends something within
 * DRAIN_S: its BYE, or a BEAT (every BEAT_S) while its own SIGTERM is
 * still on the way from a remote mpirun daemon. The ranks that died
 * before, and those that send nothing now, are the dead ones. */
static void launcher_ended(mlc_measure_mpi *p, int n, mlc_measure_result *out, int *done) {
  bool was_failed = p->failed;
  take_queued(p, n, out, done);
  double since = now();
  drain(p, DRAIN_S, n, out, done);
  mlc_str dead = {0};
  char name[400];
  for (int r = 1; r < p->size; r++) {
    const peer *q = &p->peers[r];
    if (q->died || (q->joined && !q->gone && q->heard <= since))
      mlc_str_printf(&dead, "%s%s", dead.len ? ", " : "", peer_name(p, r, name, sizeof name));
  }
  char sig[32];
  snprintf(sig, sizeof sig, "%d", g_term ? (int)g_term : SIGTERM);
  if (!was_failed && dead.len)
    fail(p, "%s died; mpirun ended the job (signal %s); a rerun resumes", mlc_str_cstr(&dead), sig);
  else if (!was_failed)
    fail(p, "mpirun ended the job (signal %s) while every measurement rank was running%s", sig, "");
  mlc_str_free(&dead);
}

/* Rank 0's SIGTERM: mpirun is ending the job (a rank died). Inside the
 * hook the hook answers it (on_end, then the tuner commits the batch's
 * results); elsewhere (search, commit) every result received is committed
 * or about to be, and this thread names the dead ranks through on_end. */
static void *watch(void *arg) {
  mlc_measure_mpi *p = arg;
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  double half = rank0_beat_s(p) / 2;
  struct timespec wait = {(time_t)half, (long)((half - (double)(time_t)half) * 1e9)};
  int sig;
  while ((sig = sigtimedwait(&term, NULL, &wait)) < 0) {
    /* between batches (search, commits, the end check) the beats go from
     * here; the hook sends its own */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    if (pthread_mutex_trylock(&p->mu) == 0) {
      beat_ranks(p);
      pthread_mutex_unlock(&p->mu);
    }
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
  }
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  g_term = sig;
  pthread_mutex_lock(&p->mu);
  if (!p->term_handled) {
    int done = 0;
    launcher_ended(p, 0, NULL, &done);
    p->term_handled = true;
    if (p->on_end && !p->fail_said) p->on_end(p->on_end_ud, p->fail_msg);
    p->fail_said = true;
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

void mlc_measure_mpi_on_end(mlc_measure_mpi *p, void (*fn)(void *ud, const char *msg), void *ud) {
  pthread_mutex_lock(&p->mu);
  p->on_end = fn;
  p->on_end_ud = ud;
  pthread_mutex_unlock(&p->mu);
}

void mlc_measure_mpi_on_ranks(mlc_measure_mpi *p, void (*fn)(void *ud, const char *msg), void *ud) {
  pthread_mutex_lock(&p->mu);
  p->on_ranks = fn;
  p->on_ranks_ud = ud;
  pthread_mutex_unlock(&p->mu);
}

int mlc_measure_mpi_lost(mlc_measure_mpi *p) {
  pthread_mutex_lock(&p->mu);
  int n = 0;
  for (int r = 1; p->peers && r < p->size; r++) n += p->peers[r].lost;
  pthread_mutex_unlock(&p->mu);
  return n;
}

static bool batch_locked(mlc_measure_mpi *p, int n, const mlc_measure_cand *c,
                         mlc_measure_result *out, mlc_error *err);

bool mlc_measure_mpi_batch(void *ud, int n, const mlc_measure_cand *c, mlc_measure_result *out,
                           mlc_error *err) {
  mlc_measure_mpi *p = ud;
  pthread_mutex_lock(&p->mu);
  bool ok = batch_locked(p, n, c, out, err);
  pthread_mutex_unlock(&p->mu);
  return ok;
}

/* Every measurement rank is lost: the job cannot go on. */
static void fail_none_left(mlc_measure_mpi *p) {
  mlc_str why = {0};
  char name[400];
  for (int pass = 0; pass < 2; pass++)
    for (int r = 1; r < p->size; r++) {
      const peer *q = &p->peers[r];
      if (!q->lost || q->died != (pass == 0)) continue;
      mlc_str_printf(&why, "%s%s %s", why.len ? "; " : "", peer_name(p, r, name, sizeof name),
                     q->died ? "died" : "left the job");
    }
  fail(p, "%s; no measurement rank is left%s", why.len ? mlc_str_cstr(&why) : "every rank refused",
       "");
  mlc_str_free(&why);
}

static bool batch_locked(mlc_measure_mpi *p, int n, const mlc_measure_cand *c,
                         mlc_measure_result *out, mlc_error *err) {
  if (p->failed) return mlc_error_set(err, "%s", p->fail_msg);
  p->batch++;
  for (int i = 0; i < n; i++) __atomic_store_n(&out[i].index, -1, __ATOMIC_RELAXED); /* the tuner may be reading */
  for (int r = 1; r < p->size; r++) p->peers[r].held = 0, p->peers[r].holding.len = 0;
  p->requeue.len = 0;
  int next = 0, done = 0, from, tag;
  /* What queued up while the search ran (WANTs, BEATs) says nothing about
   * who is alive now: work goes only to ranks heard from after it. Right
   * after the last batch (the tuner searched this one meanwhile), a rank
   * heard within two idle beats is as alive as one heard now, and the
   * messages still queued are that recent. */
  double t0 = now();
  if (t0 - p->batch_end > FRESH_S) {
    take_queued(p, n, out, &done);
    t0 = now();
    p->fresh_after = t0;
  } else {
    p->fresh_after = t0 - FRESH_S;
  }
  while (done < n && !p->failed) {
    if (g_term) {
      launcher_ended(p, n, out, &done);
      p->term_handled = true;
      /* said now: mpirun's SIGKILL may come before the tuner's commit ends */
      if (p->on_end) p->on_end(p->on_end_ud, p->fail_msg);
      p->fail_said = true;
      break;
    }
    bool busy = false;
    while (!p->failed && recv_msg(p, MPI_ANY_SOURCE, &from, &tag)) {
      handle(p, from, tag, n, out, &done);
      busy = true;
    }
    check_liveness(p, t0, n, out, &done);
    beat_ranks(p);
    if (live_ranks(p) == 0) {
      fail_none_left(p);
      break;
    }
    busy |= hand_out(p, n, c, &next, out);
    if (!busy) nap(1e-3);
  }
  settle_sends(p);
  p->batch_end = now();
  if (p->failed) {
    p->fail_said = true; /* the tuner reports the hook's error */
    return mlc_error_set(err, "%s", p->fail_msg);
  }
  return true;
}

/* ---- the other ranks: serving measurements -------------------------------------- */

typedef struct server {
  mlc_measure_mpi *p;
  mlc_measure *pool;
  MLC_VEC(wl_text) wls;
  MLC_VEC(slot) slots;   /* the pool batch's candidates: where each came from */
  int outstanding;       /* candidates in the pool not yet returned */
  int asked;             /* asked for, not yet received */
  int depth;             /* candidates the pool should hold */
} server;

static const char *find_text(const server *s, uint64_t key) {
  for (int i = 0; i < s->wls.len; i++)
    if (s->wls.data[i].key == key) return s->wls.data[i].text;
  return NULL;
}

/* A WORK message into the pool. */
static bool take_work(server *s, mlc_error *err) {
  frame_reader rd = reader(s->p);
  uint32_t batch = frame_get_u32(&rd), k = frame_get_u32(&rd);
  if (rd.bad || k > 1u << 20) return mlc_error_set(err, "malformed work from rank 0");
  mlc_measure_cand *c = mlc_xmalloc(sizeof(*c) * (k + 1));
  char **owned = mlc_xmalloc(sizeof(char *) * (2 * k + 1));
  slot *sl = mlc_xmalloc(sizeof(slot) * (k + 1));
  bool ok = true;
  for (uint32_t i = 0; i < k && ok; i++) {
    sl[i] = (slot){batch, frame_get_u32(&rd)};
    uint64_t key = frame_get_u64(&rd);
    if (frame_get_u32(&rd)) {
      wl_text w = {key, frame_get_str(&rd)};
      MLC_VEC_PUSH(s->wls, w);
    }
    owned[2 * i] = frame_get_str(&rd);
    owned[2 * i + 1] = frame_get_str(&rd);
    c[i] = (mlc_measure_cand){.workload = find_text(s, key), .trace = owned[2 * i],
                              .target = owned[2 * i + 1]};
    c[i].fault = (mlc_measure_fault)frame_get_u32(&rd);
    c[i].max_call_sec = frame_get_f64(&rd);
    c[i].run_timeout_s = frame_get_f64(&rd);
    ok = !rd.bad && c[i].workload;
  }
  if (!ok) mlc_error_set(err, "malformed work from rank 0");
  else {
    if (s->outstanding == 0) s->slots.len = 0; /* the pool starts a new batch */
    ok = mlc_measure_append(s->pool, (int)k, c, err);
  }
  for (uint32_t i = 0; ok && i < k; i++) MLC_VEC_PUSH(s->slots, sl[i]);
  if (ok) {
    s->outstanding += (int)k;
    s->asked = s->asked > (int)k ? s->asked - (int)k : 0;
  }
  for (uint32_t i = 0; i < 2 * k; i++) mlc_free(owned[i]);
  mlc_free(owned);
  mlc_free(c);
  mlc_free(sl);
  return ok;
}

static void say_bye(mlc_measure_mpi *p, const char *why) {
  mlc_str_clear(&p->out);
  frame_u32(&p->out, g_term != 0);
  frame_str(&p->out, why);
  send_msg(p, 0, TAG_BYE);
}

/* Under --enable-recovery mpirun lets the others run on when rank 0
 * dies: a measurement rank ends when rank 0's process is gone (on this
 * machine) or silent for silence_s. */
static bool rank0_gone(mlc_measure_mpi *p, mlc_error *err) {
  double t = now();
  bool dead = false;
  if (p->pid0 && t - p->pid0_checked >= PID_CHECK_S) {
    p->pid0_checked = t;
    dead = kill((pid_t)p->pid0, 0) != 0 && errno == ESRCH;
  }
  if (!dead && t - p->heard0 <= p->silence_s) return false;
  if (dead) mlc_error_set(err, "rank %d (host %s): rank 0 died; the job ends", p->rank, p->host);
  else
    mlc_error_set(err, "rank %d (host %s): rank 0 has sent nothing for %.0f s: taken for dead; "
                  "the job ends", p->rank, p->host, p->silence_s);
  return true;
}

/* Waits for CONFIG: the pool options, or the refusal. */
static bool wait_config(mlc_measure_mpi *p, mlc_measure_opts *o, bool *refused, mlc_error *err) {
  int from, tag;
  for (;;) {
    if (g_term) return mlc_error_set(err, "rank %d: ended by signal %d", p->rank, (int)g_term);
    if (rank0_gone(p, err)) return false;
    if (!recv_msg(p, 0, &from, &tag)) {
      nap(2e-3);
      continue;
    }
    if (tag == TAG_STOP) { /* the job ended before this rank joined */
      *refused = true;
      return true;
    }
    if (tag != TAG_CONFIG) continue;
    frame_reader rd = reader(p);
    uint32_t accepted = frame_get_u32(&rd);
    char why[900];
    copy_str(&rd, why, sizeof why);
    get_opts(&rd, o, p->ref_dir, sizeof p->ref_dir);
    uint64_t pid0 = frame_get_u64(&rd);
    char procs[128];
    copy_str(&rd, procs, sizeof procs);
    if (rd.bad) return mlc_error_set(err, "rank %d: malformed configuration from rank 0", p->rank);
    if (p->procs[0] && strcmp(procs, p->procs) == 0) p->pid0 = pid0;
    *refused = !accepted; /* rank 0 says why */
    return true;
  }
}

/* Lets the last message go out: OpenMPI moves a sent message's bytes
 * on later calls into the library. */
static void linger(mlc_measure_mpi *p) {
  double end = now() + LINGER_S;
  int flag;
  while (now() < end) {
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    nap(1e-3);
  }
}

static void server_free(server *s) {
  if (s->pool) mlc_measure_free(s->pool);
  for (int i = 0; i < s->wls.len; i++) mlc_free(s->wls.data[i].text);
  MLC_VEC_FREE(s->wls);
  MLC_VEC_FREE(s->slots);
}

bool mlc_measure_mpi_serve(mlc_measure_mpi *p, mlc_error *err) {
  mlc_measure_opts o;
  bool refused = false;
  if (!wait_config(p, &o, &refused, err)) return false;
  if (refused) return true;
  server s = {.p = p};
  s.pool = mlc_measure_new(&o, err);
  if (!s.pool) {
    mlc_error_prefix(err, "rank %d (host %s)", p->rank, p->host);
    say_bye(p, err->msg);
    return false;
  }
  int builders = o.n_builders > 0 ? o.n_builders : mlc_target_host_cores();
  s.depth = (builders < 1 ? 1 : builders) + 1;
  double beat = now();
  bool ok = true;
  fault_plan fault = fault_plan_of(p->rank);
  for (;;) {
    if (g_term) {
      char why[64];
      snprintf(why, sizeof why, "ended by signal %d", (int)g_term);
      say_bye(p, why);
      /* mpirun kills this rank a second after its SIGTERM; leaving
       * sooner, with an error status, makes it kill rank 0 at once,
       * before rank 0 has stored its results. */
      nap(3.0);
      ok = mlc_error_set(err, "rank %d (host %s): %s", p->rank, p->host, why);
      break;
    }
    if (s.outstanding + s.asked < s.depth) {
      int k = s.depth - s.outstanding - s.asked;
      mlc_str_clear(&p->out);
      frame_u32(&p->out, (uint32_t)k);
      send_msg(p, 0, TAG_WANT);
      s.asked += k;
      fault_event(&fault, FAULT_WANT);
    }
    int from, tag;
    bool stop = false;
    while (!stop && recv_msg(p, 0, &from, &tag)) {
      if (tag == TAG_STOP) stop = true;
      else if (tag == TAG_WORK) {
        if (!take_work(&s, err)) {
          say_bye(p, err->msg);
          return server_free(&s), false;
        }
        fault_event(&fault, FAULT_WORK);
      }
    }
    if (stop) {
      if (p->recovering) { /* rank 0 waits for this to exit without MPI_Finalize */
        mlc_str_clear(&p->out);
        send_msg(p, 0, TAG_DONE);
        linger(p);
      }
      break;
    }
    if (rank0_gone(p, err)) {
      ok = false;
      break;
    }
    if (now() - beat >= (s.outstanding ? BEAT_S : IDLE_BEAT_S)) {
      mlc_str_clear(&p->out);
      send_msg(p, 0, TAG_BEAT);
      beat = now();
    }
    if (s.outstanding == 0) {
      nap(1e-3);
      continue;
    }
    mlc_measure_result m;
    if (mlc_measure_next_wait(s.pool, &m, 0.01) != 1 || g_term) continue;
    s.outstanding--;
    slot sl = s.slots.data[m.index];
    mlc_str_clear(&p->out);
    frame_u32(&p->out, sl.batch);
    frame_u32(&p->out, sl.index);
    put_result(&p->out, &m);
    send_msg(p, 0, TAG_RESULT);
    fault_event(&fault, FAULT_RESULT);
  }
  server_free(&s);
  return ok;
}

/* ---- the end ------------------------------------------------------------------------- */

static void free_mpi(mlc_measure_mpi *p) {
  if (p->has_watcher) {
    pthread_cancel(p->watcher);
    pthread_join(p->watcher, NULL);
  }
  pthread_mutex_destroy(&p->mu);
  for (int r = 0; p->peers && r < p->size; r++) {
    peer *q = &p->peers[r];
    mlc_free(q->target), mlc_free(q->cpu), mlc_free(q->features);
    MLC_VEC_FREE(q->wls);
    MLC_VEC_FREE(q->holding);
    mlc_str_free(&q->work);
  }
  MLC_VEC_FREE(p->requeue);
  mlc_free(p->peers);
  mlc_free(p->target);
  mlc_free(p->in);
  mlc_str_free(&p->out);
  mlc_free(p);
}

/* A STOP (in p->out) to a rank that may be gone: given STOP_WAIT_S to
 * go out. */
static void stop_lost(mlc_measure_mpi *p, int r) {
  MPI_Request req;
  if (MPI_Isend(p->out.data, (int)p->out.len, MPI_BYTE, r, TAG_STOP, MPI_COMM_WORLD, &req) !=
      MPI_SUCCESS)
    return;
  double end = now() + STOP_WAIT_S;
  int done = 0;
  while (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done && now() < end)
    nap(1e-3);
  if (!done) {
    MPI_Cancel(&req);
    MPI_Request_free(&req);
  }
}

/* Rank 0, under --enable-recovery: every live rank's DONE (or its
 * loss), so that no rank exits before its STOP came. */
static void await_done(mlc_measure_mpi *p) {
  bool done[p->size];
  memset(done, 0, sizeof done);
  double end = now() + DONE_WAIT_S;
  for (;;) {
    int waiting = 0, from, tag;
    for (int r = 1; r < p->size; r++) {
      const peer *q = &p->peers[r];
      waiting += q->joined && !q->gone && !q->stopped && !done[r];
    }
    if (waiting == 0 || now() > end) return;
    if (recv_msg(p, MPI_ANY_SOURCE, &from, &tag)) {
      if (tag == TAG_DONE && from > 0 && from < p->size) done[from] = true;
      continue;
    }
    int none = 0;
    check_liveness(p, p->batch_end, 0, NULL, &none);
    nap(1e-3);
  }
}

/* Rank 0 stops every rank, and all finalize. Under --enable-recovery no
 * rank does: OpenMPI 4.1's MPI_Finalize waits for a rank that died in
 * some runs (its fence still counts it), and mpirun, recovering, takes a
 * process that exits without it as done; rank 0 waits for every rank's
 * DONE instead. When mpirun is ending the job (SIGTERM) nothing more is
 * said: it kills every rank. When rank 0 fails with ranks still running,
 * MPI_Abort ends them: the one place where this library ends the
 * process, since MPI offers no other way. */
void mlc_measure_mpi_end(mlc_measure_mpi *p, int status) {
  if (!p) return;
  if (g_term) return free_mpi(p);
  if (p->rank == 0 && p->failed) {
    free_mpi(p);
    MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
    return;
  }
  if (p->rank == 0 && p->peers) {
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    for (int r = 1; r < p->size; r++) {
      peer *q = &p->peers[r];
      if (q->stopped) continue;
      mlc_str_clear(&p->out);
      /* a lost rank is dead, leaving, or taken for dead: a send to a dead
       * rank over TCP can abort this one, and one taken for dead that
       * wakes up finds rank 0 gone and ends */
      if (q->lost) continue;
      if (!q->joined) stop_lost(p, r);
      else send_msg(p, r, TAG_STOP);
    }
    if (p->recovering) await_done(p);
    pthread_mutex_unlock(&p->mu);
  }
  bool finalize = !p->recovering;
  free_mpi(p);
  if (finalize) MPI_Finalize();
}

#endif
