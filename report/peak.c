/* A CPU target's nominal FP32 peak, for "share of peak": a rule of thumb,
 * spelled out on the page, that --peak-gflops replaces. */
#include "report/report_internal.h"
#include "targets/targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Widest vector features first: FP32 lanes of one FMA. */
static const struct {
  const char *feature;
  int lanes;
} vector_widths[] = {
    {"avx512f", 16},
    {"avx2", 8},
    {"avx", 8},
    {"sse2", 4},
};

static int lanes_of(const mlc_target *t) {
  for (size_t i = 0; i < MLC_COUNTOF(vector_widths); i++)
    if (mlc_target_has_feature(t, vector_widths[i].feature)) return vector_widths[i].lanes;
  return 1;
}

/* The host's clock in GHz: the largest "cpu MHz" of /proc/cpuinfo (what
 * the kernel saw last: a lower bound of the boost clock); 0 unknown. */
static double host_ghz(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[256];
  double best = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "cpu MHz", 7) == 0 && strchr(line, ':')) {
      double mhz = strtod(strchr(line, ':') + 1, NULL);
      if (mhz > best) best = mhz;
    }
  fclose(f);
  return best / 1e3;
}

double mlc_report_peak_gflops(const char *target, mlc_str *how) {
  mlc_target t;
  mlc_error err;
  if (!target || !mlc_target_parse(target, &t, &err) || strcmp(t.backend->kind, "llvm") != 0)
    return 0;
  double ghz = host_ghz();
  if (ghz <= 0) return 0;
  int lanes = lanes_of(&t);
  double peak = t.num_cores * lanes * 2.0 * 2.0 * ghz;
  if (how)
    mlc_str_printf(how, "%d cores x %d lanes x 2 (FMA) x 2 FMA pipes x %.2f GHz, nominal",
                   t.num_cores, lanes, ghz);
  return peak;
}
