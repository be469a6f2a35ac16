/* Scaling of measurement over MPI ranks, simulated on a
 * small machine: every candidate costs a fixed wall time and no CPU
 * (MLC_BENCH_SLEEP_MS, measure.h), so R measurement ranks could measure R
 * candidates in that time if nothing else limited them. For R = 1, 2, 4,
 * 8, 16, 32, 64 (oversubscribed: R+1 processes on this machine) it runs
 *
 *   mpirun --oversubscribe -n R+1 mlc-tune --task matmul --shape 64,64,64
 *     --trials T --trials-per-round B --cost-model random --no-baseline
 *     --no-default --remeasure 0 --json
 *
 * with T = max(--trials, 32 R) and B = max(--batch, 4 R) (each rank gets
 * a few candidates of every batch), and reports candidates measured per
 * second, the efficiency (throughput / R / the one-rank throughput) and
 * rank 0's serial time per candidate: the wall time with no batch being
 * measured (the first search, each batch's hand-over, the last commit),
 * as mlc-tune's "serial_sec" says; the search of each batch overlaps the
 * measuring of the one before (mlc_tuner_tune_opts.overlap). Rank 0 is
 * the bottleneck where its time per batch, B x (search per candidate),
 * exceeds the batch's measuring time on R ranks, B / R x sleep.
 *
 * Then, as root with iproute2, one row with real kernels: the same tuning
 * (64 trials of matmul 64,64,64 in batches of 16, every candidate built
 * and timed) over TCP between network namespaces, one host each
 * (tools/mpi_netns.sh), with 1, 2 and 4 measurement ranks; they share
 * this machine's cores, so past its core count their timings contend.
 *
 *   bench_mpi_scale [--results FILE] [--sleep-ms N] [--trials T] [--batch B]
 *                   [--ranks 1,2,4,...] [--cost-model M] [--no-netns]
 */
#include "bench/results.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char build_dir[4096];

typedef struct run_result {
  double measured, total_sec, search_sec, serial_sec, wall_sec;
} run_result;

/* One job with `ranks` measurement ranks, every candidate sleeping
 * sleep_ms (0: built and timed, each rank on a network namespace of its
 * own); false when it failed. */
static bool run_job(int ranks, int sleep_ms, int trials, int batch, const char *cost_model,
                    run_result *out) {
  char db[64], cmd[8192], launch[4400];
  snprintf(db, sizeof db, "/tmp/mlc_bench_mpi_scale_%d.db", (int)getpid());
  unlink(db);
  if (sleep_ms > 0)
    snprintf(launch, sizeof launch,
             "MLC_BENCH_SLEEP_MS=%d mpirun --oversubscribe --bind-to none -n %d %s/bin/mlc-tune",
             sleep_ms, ranks + 1, build_dir);
  else
    snprintf(launch, sizeof launch,
             "MLC_NETNS_HOSTS=%d MLC_BUILD=%s sh " MLC_SOURCE_DIR "/tools/mpi_netns.sh", ranks + 1,
             build_dir);
  snprintf(cmd, sizeof cmd,
           "%s --task matmul --shape 64,64,64 --trials %d --trials-per-round %d --cost-model %s "
           "--no-baseline --no-default --remeasure 0 --json --db %s 2>/dev/null",
           launch, trials, batch, cost_model, db);
  double t0 = bench_now_ms();
  FILE *f = popen(cmd, "r");
  if (!f) return false;
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  int rc = pclose(f);
  unlink(db);
  out->wall_sec = (bench_now_ms() - t0) * 1e-3;
  out->measured = bench_json_number(buf, "measured");
  out->total_sec = bench_json_number(buf, "total_sec");
  out->search_sec = bench_json_number(buf, "search_sec");
  out->serial_sec = bench_json_number(buf, "serial_sec");
  if (rc != 0 || out->measured <= 0 || out->total_sec <= 0) {
    fprintf(stderr, "bench_mpi_scale: %d ranks: exit %d, output: %.300s\n", ranks, rc, buf);
    return false;
  }
  return true;
}

enum { MAX_RANK_COUNTS = 16 };

/* "1,2,4" into counts; the number of them, 0 when malformed. */
static int parse_ranks(const char *s, int *counts) {
  int n = 0;
  while (*s && n < MAX_RANK_COUNTS) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > 1024 || (*end && *end != ',')) return 0;
    counts[n++] = (int)v;
    s = *end ? end + 1 : end;
  }
  return *s ? 0 : n;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_mpi_scale [--results FILE] [--sleep-ms N] [--trials T] "
                  "[--batch B] [--ranks 1,2,4,...] [--cost-model M] [--no-netns]\n");
  return 2;
}

/* Why the real-kernel rows cannot run here; NULL when they can. */
static const char *netns_missing(void) {
  if (getuid() != 0) return "not root (ip netns needs it)";
  if (system("command -v ip >/dev/null 2>&1 && command -v unshare >/dev/null 2>&1") != 0)
    return "ip (iproute2) or unshare is missing";
  return NULL;
}

/* The real-kernel rows: 1, 2, 4 measurement ranks over TCP between
 * namespaces; appended to cs as cases. Returns the new count. */
static int netns_rows(const char *cost_model, bench_case *cs, int n, char (*names)[64],
                      char (*notes)[400]) {
  const char *why = netns_missing();
  if (why) {
    printf("# real kernels in network namespaces: SKIP: %s\n", why);
    return n;
  }
  static const int rows[] = {1, 2, 4};
  int trials = 64, batch = 16;
  double thr1 = 0;
  printf("# real kernels, each measurement rank a network namespace of its own (TCP), all on "
         "this machine's %d cores; %d trials of matmul 64,64,64 in batches of %d\n",
         (int)sysconf(_SC_NPROCESSORS_ONLN), trials, batch);
  printf("# %5s %9s %10s %15s\n", "ranks", "cand/s", "efficiency", "serial ms/cand");
  for (int i = 0; i < 3; i++) {
    run_result r;
    if (!run_job(rows[i], 0, trials, batch, cost_model, &r)) {
      printf("  %5d failed (see stderr)\n", rows[i]);
      continue;
    }
    double thr = r.measured / r.total_sec;
    if (thr1 == 0) thr1 = thr / rows[i];
    double eff = thr / rows[i] / thr1, serial_ms = r.serial_sec / r.measured * 1e3;
    printf("  %5d %9.2f %10.2f %15.2f\n", rows[i], thr, eff, serial_ms);
    snprintf(names[n], 64, "mpi_netns_%d_ranks_real", rows[i]);
    snprintf(notes[n], 400,
             "%d measurement ranks in network namespaces (TCP), real kernels: efficiency %.2f; "
             "rank 0 serial %.2f ms per candidate (%.0f candidates in %.1f s)",
             rows[i], eff, serial_ms, r.measured, r.total_sec);
    cs[n] = (bench_case){.name = names[n], .value = thr, .unit = "cand/s",
                         .baseline = "1 measurement rank", .baseline_value = thr1,
                         .notes = notes[n]};
    n++;
  }
  return n;
}

int main(int argc, char **argv) {
  const char *results = "bench/results.json", *cost_model = "random";
  int sleep_ms = 200, trials = 128, batch = 64;
  int ranks[MAX_RANK_COUNTS] = {1, 2, 4, 8, 16, 32, 64}, n_ranks = 7;
  bool netns = true;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--results") == 0) results = argv[++i];
    else if (i + 1 < argc && strcmp(argv[i], "--sleep-ms") == 0) sleep_ms = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--trials") == 0) trials = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--batch") == 0) batch = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--cost-model") == 0) cost_model = argv[++i];
    else if (strcmp(argv[i], "--no-netns") == 0) netns = false;
    else if (i + 1 < argc && strcmp(argv[i], "--ranks") == 0) {
      if (!(n_ranks = parse_ranks(argv[++i], ranks))) return usage();
    } else {
      return usage();
    }
  }
  if (sleep_ms <= 0 || trials <= 0 || batch <= 0) {
    fprintf(stderr, "bench_mpi_scale: --sleep-ms, --trials and --batch want positive numbers\n");
    return 2;
  }
  if (!bench_build_dir(build_dir, sizeof build_dir)) snprintf(build_dir, sizeof build_dir, "build");
  if (system("command -v mpirun >/dev/null 2>&1") != 0) {
    printf("bench_mpi_scale: SKIP: mpirun is missing (apt-get install openmpi-bin)\n");
    return 0;
  }
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ldd %s/bin/mlc-tune 2>/dev/null | grep -q libmpi", build_dir);
  if (system(cmd) != 0) {
    printf("bench_mpi_scale: SKIP: mlc-tune was built without MPI (libopenmpi-dev)\n");
    return 0;
  }
  if (getuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  bench_case cs[MAX_RANK_COUNTS + 3];
  char names[MAX_RANK_COUNTS + 3][64], notes[MAX_RANK_COUNTS + 3][400];
  double thr1 = 0; /* the first row's throughput per rank */
  int n = 0;
  printf("# every candidate sleeps %d ms; matmul 64,64,64, cost model %s; trials max(%d, 32 R) "
         "in batches of max(%d, 4 R)\n", sleep_ms, cost_model, trials, batch);
  printf("# %5s %6s %5s %9s %9s %10s %15s %15s %15s\n", "ranks", "trials", "batch", "cand/s",
         "ideal", "efficiency", "serial ms/cand", "search ms/cand", "measure ms/cand");
  for (int i = 0; i < n_ranks; i++) {
    int R = ranks[i], t = trials > 32 * R ? trials : 32 * R, b = batch > 4 * R ? batch : 4 * R;
    run_result r;
    if (!run_job(R, sleep_ms, t, b, cost_model, &r)) return 1;
    double thr = r.measured / r.total_sec;
    if (i == 0) thr1 = thr / R; /* per rank, as one rank measures (the first row) */
    double eff = thr / R / thr1;
    /* Per candidate: rank 0's serial part (no batch in flight: the
     * measurement ranks wait), its search (overlapped with measuring),
     * and the measuring itself spread over R. */
    double meas_ms = (double)sleep_ms / R;
    double serial_ms = r.serial_sec / r.measured * 1e3;
    double search_ms = r.search_sec / r.measured * 1e3;
    bool bottleneck = search_ms > meas_ms;
    printf("  %5d %6d %5d %9.2f %9.2f %10.2f %15.2f %15.2f %15.2f%s\n", R, t, b, thr,
           1e3 / sleep_ms * R, eff, serial_ms, search_ms, meas_ms,
           bottleneck ? "  <- rank 0's search is the bottleneck" : "");
    snprintf(names[n], sizeof names[n], "mpi_scale_%d_ranks_%dms", R, sleep_ms);
    snprintf(notes[n], sizeof notes[n],
             "%d measurement ranks, %d ms per candidate, %d trials in batches of %d: efficiency "
             "%.2f; per candidate: rank 0 serial %.2f ms, search %.2f ms (overlapped), measuring "
             "%.2f ms (%.1f s in all)%s",
             R, sleep_ms, t, b, eff, serial_ms, search_ms, meas_ms, r.total_sec,
             bottleneck ? "; rank 0's search is the bottleneck" : "");
    cs[n] = (bench_case){.name = names[n], .value = thr, .unit = "cand/s",
                         .baseline = "1 measurement rank", .baseline_value = thr1,
                         .notes = notes[n]};
    n++;
  }
  if (netns) n = netns_rows(cost_model, cs, n, names, notes);
  for (int i = 0; i < n; i++) bench_print(&cs[i]);
  mlc_error err;
  if (!bench_write_results(results, n, cs, &err)) {
    fprintf(stderr, "bench_mpi_scale: %s\n", err.msg);
    return 1;
  }
  return 0;
}
