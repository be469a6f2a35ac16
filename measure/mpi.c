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
 *                  str cpu, str features
 *   CONFIG 0 -> r  u32 accepted, str why (refused), the pool options
 *   WANT   r -> 0  u32 k: room for k more candidates
 *   WORK   0 -> r  u32 batch, u32 k, k x (u32 index, u64 workload key,
 *                  u32 has_text, [str text], str trace, str target,
 *                  u32 fault, f64 max_call_sec, f64 run_timeout_s)
 *   RESULT r -> 0  u32 batch, u32 index, the mlc_measure_result fields
 *   BEAT   r -> 0  nothing: alive (every 0.1 s; 0.05 s when idle)
 *   BYE    r -> 0  str why: the rank leaves (SIGTERM, its pool failed)
 *   STOP   0 -> r  the job is over
 *
 * A workload's text goes to a rank once; later candidates name its key.
 *
 * No MPI call blocks waiting for a message: OpenMPI's blocking receive
 * spins a core, which would disturb timings on the same machine. Every
 * wait is MPI_Iprobe and a short sleep, or the pool's poll.
 *
 * A dead rank. By default OpenMPI's mpirun, on seeing a rank die, sends
 * SIGTERM to every other rank and SIGKILL a second later
 * (odls_base_sigkill_timeout). Every rank here catches SIGTERM: a
 * measurement rank says BYE and leaves; rank 0 collects for DRAIN_S what
 * is still arriving, names the ranks that did not say BYE as the dead
 * ones, and the hook returns false with the results it has, which the
 * tuner commits before it ends. Under `mpirun --mca orte_enable_recovery
 * 1` the job goes on after a death; rank 0 then takes a rank that has
 * sent nothing (not even its BEAT, ten a second) for SILENCE_S for dead,
 * and mlc_measure_mpi_end ends the job with MPI_Abort.
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

#else

#include <mpi.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum { TAG_HELLO = 1, TAG_CONFIG, TAG_WANT, TAG_WORK, TAG_RESULT, TAG_BEAT, TAG_BYE, TAG_STOP };

#define PROTOCOL "mlc-mpi 1 " MLC_VERSION
#define SILENCE_S 20.0   /* a rank silent this long (BEAT_S) is taken for dead */
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
  bool gone;     /* it said BYE */
  bool term;     /* ... because it got SIGTERM: mpirun is ending the job */
  bool stopped;  /* it was sent CONFIG (refused) or STOP */
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
  char *target;    /* the target text as this rank parsed it */
  peer *peers;     /* rank 0: [size] */
  uint32_t batch;  /* rank 0: the hook's calls */
  bool failed;     /* rank 0: a rank died or left; no clean MPI_Finalize */
  bool ending;     /* rank 0: a rank got SIGTERM: mpirun is ending the job */
  double fresh_after; /* rank 0: ranks heard since may get work (hand_out) */
  double batch_end;   /* rank 0: when the hook last returned */
  char fail_msg[900];
  /* Rank 0: SIGTERM is blocked in every thread but `watcher`, which
   * sigwaits for it; mu keeps its MPI calls apart from the hook's. */
  bool has_watcher, term_handled;
  pthread_t watcher;
  pthread_mutex_t mu;
  void (*on_end)(void *ud, const char *msg);
  void *on_end_ud;
  uint8_t *in;     /* the message received last */
  size_t in_len, in_cap;
  mlc_str out;     /* the message being sent */
};

static double now(void) { return mlc_now_sec(); }

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
}

static void get_opts(frame_reader *r, mlc_measure_opts *o) {
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
  return !r->bad;
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

static bool check_locked(mlc_measure_mpi *p, const mlc_measure_opts *o, mlc_error *err) {
  p->peers = mlc_xmalloc(sizeof(peer) * (size_t)p->size);
  for (int r = 0; r < p->size; r++) p->peers[r] = (peer){0};
  char *version[p->size];
  memset(version, 0, sizeof version);
  int got = 0, from, tag;
  while (got < p->size - 1) {
    if (g_term) return mlc_error_set(err, "ended by signal %d while the ranks started", g_term);
    if (!recv_msg(p, MPI_ANY_SOURCE, &from, &tag)) {
      nap(1e-3);
      continue;
    }
    if (tag != TAG_HELLO || from <= 0 || version[from]) continue;
    frame_reader rd = reader(p);
    peer *q = &p->peers[from];
    version[from] = frame_get_str(&rd);
    copy_str(&rd, q->host, sizeof q->host);
    q->pid = frame_get_u64(&rd);
    q->target = frame_get_str(&rd);
    q->cpu = frame_get_str(&rd);
    q->features = frame_get_str(&rd);
    q->heard = now();
    got++;
  }
  char why[900] = "";
  for (int r = 1; r < p->size && !why[0]; r++) compare_peer(p, r, version[r], why, sizeof why);
  for (int r = 1; r < p->size; r++) {
    mlc_free(version[r]);
    mlc_str_clear(&p->out);
    frame_u32(&p->out, why[0] == 0);
    frame_str(&p->out, why);
    put_opts(&p->out, o);
    send_msg(p, r, TAG_CONFIG);
    p->peers[r].stopped = why[0] != 0;
  }
  if (why[0]) return mlc_error_set(err, "%s", why);
  return true;
}

void mlc_measure_mpi_describe(const mlc_measure_mpi *p, mlc_str *out) {
  char name[400];
  for (int r = 1; p->peers && r < p->size; r++)
    mlc_str_printf(out, "%s: %s, %s\n", peer_name(p, r, name, sizeof name), p->peers[r].target,
                   p->peers[r].cpu);
}

/* ---- rank 0: the measure hook ------------------------------------------------ */

static void fail(mlc_measure_mpi *p, const char *fmt, const char *a, const char *b) {
  p->failed = true;
  snprintf(p->fail_msg, sizeof p->fail_msg, fmt, a, b);
}

static bool has_wl(const peer *q, uint64_t key) {
  for (int i = 0; i < q->wls.len; i++)
    if (q->wls.data[i] == key) return true;
  return false;
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

/* Every WORK sent taken, or given up on (failed ranks, SIGTERM). */
static void settle_sends(mlc_measure_mpi *p) {
  double end = now() + SEND_TIMEOUT_S;
  for (int r = 1; r < p->size; r++) {
    bool failed;
    while (!work_taken(p, r, &failed) && !failed && !p->failed && now() < end) nap(50e-6);
    if (p->peers[r].sending) {
      MPI_Cancel(&p->peers[r].req);
      MPI_Request_free(&p->peers[r].req);
      p->peers[r].sending = false;
    }
  }
}

/* A WORK message to rank r, sent without waiting for the rank to take it:
 * one over the eager limit completes only when the rank posts its
 * receive (up to its poll interval later), and waiting for each rank in
 * turn left the last ranks of a large job idle for most of a batch. */
static bool send_work(mlc_measure_mpi *p, int r, int first, int k, const mlc_measure_cand *c) {
  peer *q = &p->peers[r];
  mlc_str *s = &q->work;
  mlc_str_clear(s);
  frame_u32(s, p->batch);
  frame_u32(s, (uint32_t)k);
  for (int i = first; i < first + k; i++) {
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

/* Candidates to the ranks that asked and were heard from lately
 * (fresh_after, batch_locked): over TCP, a send to a dead rank makes OpenMPI reconnect, fail
 * and abort rank 0 before it has stored anything (OpenMPI 4.1's ob1 has no
 * route left to that peer), so a WANT that waited through the search is
 * honoured only once the rank has spoken again. No rank holds more than
 * its share of the batch (the batch over the live ranks) at once, so
 * that the first ranks to ask do not take work the others would start at
 * the same time. A batch of at most WHOLE_BATCH candidates (the
 * re-measured best few, the end check's interleaved pairs, the baseline)
 * goes whole to one rank: those are timed side by side on one machine. */
static bool hand_out(mlc_measure_mpi *p, int n, const mlc_measure_cand *c, int *next) {
  bool any = false;
  char name[400];
  int live = 0;
  for (int r = 1; r < p->size; r++) live += !p->peers[r].gone;
  int share = live > 0 ? (n + live - 1) / live : n;
  for (int r = 1; r < p->size && *next < n && !p->failed; r++) {
    peer *q = &p->peers[r];
    if (q->want <= 0 || q->gone || q->heard <= p->fresh_after) continue;
    bool failed;
    if (!work_taken(p, r, &failed)) {
      if (!failed) continue; /* its last WORK is still on its way */
      if (g_term) return any;
      fail(p, "%s does not take its work%s", peer_name(p, r, name, sizeof name), "");
      return false;
    }
    int k = n - *next;
    if (n > WHOLE_BATCH) {
      if (k > q->want) k = q->want;
      if (k > share - q->held) k = share - q->held;
      if (k <= 0) continue;
    }
    if (!send_work(p, r, *next, k, c)) {
      if (g_term) return any; /* the caller names the dead */
      fail(p, "%s cannot be reached%s", peer_name(p, r, name, sizeof name), "");
      return false;
    }
    q->want = k > q->want ? 0 : q->want - k;
    q->held += k;
    *next += k;
    any = true;
  }
  return any;
}

/* One message from rank `from`: results into out, WANTs counted, a BYE
 * fails the job. */
static void handle(mlc_measure_mpi *p, int from, int tag, int n, mlc_measure_result *out,
                   int *done) {
  if (from <= 0 || from >= p->size) return;
  peer *q = &p->peers[from];
  frame_reader rd = reader(p);
  char name[400];
  q->heard = now();
  switch (tag) {
  case TAG_WANT: q->want += (int)frame_get_u32(&rd); break;
  case TAG_RESULT: {
    uint32_t batch = frame_get_u32(&rd), i = frame_get_u32(&rd);
    mlc_measure_result m = {0};
    if (batch != p->batch || i >= (uint32_t)n || out[i].index >= 0 || !get_result(&rd, &m)) break;
    if (q->held > 0) q->held--;
    m.index = (int)i;
    out[i] = m;
    (*done)++;
    break;
  }
  case TAG_BYE: {
    q->term = frame_get_u32(&rd) != 0;
    char why[300];
    copy_str(&rd, why, sizeof why);
    q->gone = true;
    if (q->term) p->ending = true;
    else if (!p->failed)
      fail(p, "%s left the job: %s", peer_name(p, from, name, sizeof name), why);
    break;
  }
  default: break; /* BEAT, or a late HELLO */
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

/* SIGTERM on rank 0 or on a measurement rank (its BYE says so): mpirun is
 * ending the job, normally because a rank died. After what was queued, a
 * live rank sends something within DRAIN_S: its BYE, or a BEAT (every
 * BEAT_S) while its own SIGTERM is still on the way from a remote mpirun
 * daemon. The ranks that send nothing are the dead ones. */
static void launcher_ended(mlc_measure_mpi *p, int n, mlc_measure_result *out, int *done) {
  bool was_failed = p->failed;
  take_queued(p, n, out, done);
  double since = now();
  drain(p, DRAIN_S, n, out, done);
  mlc_str dead = {0};
  char name[400];
  for (int r = 1; r < p->size; r++)
    if (!p->peers[r].gone && p->peers[r].heard <= since)
      mlc_str_printf(&dead, "%s%s", dead.len ? ", " : "", peer_name(p, r, name, sizeof name));
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
  int sig = 0;
  while (sigwait(&term, &sig) != 0) {
  }
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  g_term = sig;
  pthread_mutex_lock(&p->mu);
 
  if (!p->term_handled) {
    int done = 0;
    launcher_ended(p, 0, NULL, &done);
 
    p->term_handled = true;
    if (p->on_end) p->on_end(p->on_end_ud, p->fail_msg);
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

static bool batch_locked(mlc_measure_mpi *p, int n, const mlc_measure_cand *c,
                         mlc_measure_result *out, mlc_error *err) {
  if (p->failed) return mlc_error_set(err, "%s", p->fail_msg);
  p->batch++;
  for (int i = 0; i < n; i++) out[i].index = -1;
  for (int r = 1; r < p->size; r++) p->peers[r].held = 0;
  int next = 0, done = 0, from, tag;
  char name[400];
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
    if (g_term || p->ending) {
      launcher_ended(p, n, out, &done);
      p->term_handled = true;
      /* said now: mpirun's SIGKILL may come before the tuner's commit ends */
      if (p->on_end) p->on_end(p->on_end_ud, p->fail_msg);
      break;
    }
    bool busy = false;
    while (!p->failed && !p->ending && recv_msg(p, MPI_ANY_SOURCE, &from, &tag)) {
      handle(p, from, tag, n, out, &done);
      busy = true;
    }
    if (p->failed) { /* a BYE: collect what the others still send */
      drain(p, DRAIN_S, n, out, &done);
      break;
    }
    busy |= hand_out(p, n, c, &next);
    double t = now();
    for (int r = 1; r < p->size && !p->failed; r++) {
      double since = p->peers[r].heard > t0 ? p->peers[r].heard : t0;
      if (t - since > SILENCE_S) {
        char secs[32];
        snprintf(secs, sizeof secs, "%.0f", SILENCE_S);
        fail(p, "%s has sent nothing for %s s: taken for dead", peer_name(p, r, name, sizeof name),
             secs);
      }
    }
    if (!busy) nap(1e-3);
  }
  settle_sends(p);
  p->batch_end = now();
  if (p->failed) return mlc_error_set(err, "%s", p->fail_msg);
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

/* Waits for CONFIG: the pool options, or the refusal. */
static bool wait_config(mlc_measure_mpi *p, mlc_measure_opts *o, bool *refused, mlc_error *err) {
  int from, tag;
  for (;;) {
    if (g_term) return mlc_error_set(err, "rank %d: ended by signal %d", p->rank, (int)g_term);
    if (!recv_msg(p, 0, &from, &tag)) {
      nap(2e-3);
      continue;
    }
    if (tag == TAG_STOP) return mlc_error_set(err, "rank %d: rank 0 ended the job", p->rank);
    if (tag != TAG_CONFIG) continue;
    frame_reader rd = reader(p);
    uint32_t accepted = frame_get_u32(&rd);
    char why[900];
    copy_str(&rd, why, sizeof why);
    get_opts(&rd, o);
    if (rd.bad) return mlc_error_set(err, "rank %d: malformed configuration from rank 0", p->rank);
    *refused = !accepted; /* rank 0 says why */
    return true;
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
    }
    int from, tag;
    bool stop = false;
    while (!stop && recv_msg(p, 0, &from, &tag)) {
      if (tag == TAG_STOP) stop = true;
      else if (tag == TAG_WORK && !take_work(&s, err)) {
        say_bye(p, err->msg);
        return server_free(&s), false;
      }
    }
    if (stop) break;
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
    mlc_str_free(&q->work);
  }
  mlc_free(p->peers);
  mlc_free(p->target);
  mlc_free(p->in);
  mlc_str_free(&p->out);
  mlc_free(p);
}

/* Rank 0 stops every rank and all finalize. When mpirun is ending the
 * job (SIGTERM) nothing more is said: it kills every rank. When a rank
 * died and the job goes on (orte_enable_recovery), MPI_Finalize would wait
 * for it forever: MPI_Abort ends the job, the one place where this
 * library ends the process, since MPI offers no other way. */
void mlc_measure_mpi_end(mlc_measure_mpi *p, int status) {
  if (!p) return;
  if (g_term) return free_mpi(p);
  if (p->rank == 0 && p->failed) {
    free_mpi(p);
    MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
    return;
  }
  for (int r = 1; p->rank == 0 && p->peers && r < p->size; r++) {
    if (p->peers[r].stopped) continue;
    mlc_str_clear(&p->out);
    send_msg(p, r, TAG_STOP);
  }
  free_mpi(p);
  MPI_Finalize();
}

#endif
