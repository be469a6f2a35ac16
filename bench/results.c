/* The benchmarks' shared report: printing, timing, results.json merging. */
#include "bench/results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double bench_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_time_ms(void (*fn)(void *ctx), void *ctx, int repeat, double min_ms) {
  double t0 = bench_now_ms();
  fn(ctx);
  double once = bench_now_ms() - t0;
  long number = once > 0 ? (long)(min_ms / once) + 1 : 1000;
  double *times = mlc_xmalloc(sizeof(double) * (size_t)repeat);
  for (int r = 0; r < repeat; r++) {
    double s = bench_now_ms();
    for (long i = 0; i < number; i++) fn(ctx);
    times[r] = (bench_now_ms() - s) / (double)number;
  }
  double med = bench_median(times, repeat);
  mlc_free(times);
  return med;
}

void bench_print(const bench_case *c) {
  printf("%-34s %10.4g %s", c->name, c->value, c->unit);
  if (c->baseline && c->baseline_value > 0)
    printf("  (%.3f x %s)", c->value / c->baseline_value, c->baseline);
  if (c->notes) printf("  # %s", c->notes);
  printf("\n");
  fflush(stdout);
}

static void write_case(mlc_str *s, const bench_case *c) {
  mlc_str_puts(s, "    {\"name\": ");
  mlc_json_write_string(s, c->name);
  mlc_str_puts(s, ", \"value\": ");
  mlc_json_write_number(s, c->value);
  mlc_str_puts(s, ", \"unit\": ");
  mlc_json_write_string(s, c->unit);
  if (c->baseline && c->baseline_value > 0) {
    mlc_str_puts(s, ", \"baseline\": ");
    mlc_json_write_string(s, c->baseline);
    mlc_str_puts(s, ", \"baseline_value\": ");
    mlc_json_write_number(s, c->baseline_value);
    mlc_str_puts(s, ", \"ratio\": ");
    mlc_json_write_number(s, (double)(long long)(c->value / c->baseline_value * 1e4 + 0.5) / 1e4);
  }
  if (c->notes) {
    mlc_str_puts(s, ", \"notes\": ");
    mlc_json_write_string(s, c->notes);
  }
  mlc_str_puts(s, "}");
}

static void cpu_name(char *buf, size_t n) {
  snprintf(buf, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *p = strchr(line, ':');
    if (!p) break;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    snprintf(buf, n, "%.*s", (int)strcspn(p, "\n"), p);
    break;
  }
  fclose(f);
}

static bool is_new(const char *name, int n, const bench_case *cases) {
  for (int i = 0; i < n; i++)
    if (strcmp(cases[i].name, name) == 0) return true;
  return false;
}

bool bench_write_results(const char *path, int n, const bench_case *cases, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_str s = {0};
  char cpu[256], date[64];
  cpu_name(cpu, sizeof cpu);
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  mlc_str_puts(&s, "{\n  \"machine\": {\"cpu\": ");
  mlc_json_write_string(&s, cpu);
  mlc_str_printf(&s, ", \"cores\": %ld, \"date\": ", sysconf(_SC_NPROCESSORS_ONLN));
  mlc_json_write_string(&s, date);
  mlc_str_puts(&s, "},\n  \"cases\": [\n");
  int written = 0;
  /* Cases already in the file that this run does not measure stay. */
  size_t len;
  char *old = access(path, R_OK) == 0 ? mlc_read_file(path, &len, NULL) : NULL;
  const mlc_json *doc = old ? mlc_json_parse(a, old, len, err) : NULL;
  const mlc_json *prev = doc ? mlc_json_get(doc, "cases") : NULL;
  bool ok = !old || doc;
  for (int i = 0; ok && prev && prev->kind == MLC_JSON_ARRAY && i < prev->len; i++) {
    const mlc_json *nm = mlc_json_get(prev->items[i], "name");
    if (!nm || nm->kind != MLC_JSON_STRING || is_new(nm->str, n, cases)) continue;
    mlc_str_puts(&s, written++ ? ",\n    " : "    ");
    mlc_json_write(&s, prev->items[i]);
  }
  for (int i = 0; ok && i < n; i++) {
    if (written++) mlc_str_puts(&s, ",\n");
    write_case(&s, &cases[i]);
  }
  mlc_str_puts(&s, "\n  ]\n}\n");
  if (!ok) mlc_error_prefix(err, "%s", path);
  ok = ok && mlc_write_file(path, s.data, s.len, err);
  mlc_free(old);
  mlc_str_free(&s);
  mlc_arena_free(a);
  return ok;
}
