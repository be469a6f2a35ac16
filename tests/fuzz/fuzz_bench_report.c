/* libFuzzer harness for the bench page (report/bench.c): any bytes as
 * bench/results.json give a page or an error, and a page is whole. */
#include "fuzz.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlc_str page = {0};
  mlc_error err;
  int n;
  if (mlc_report_bench_html((const char *)data, size, "input", &page, &n, &err)) {
    if (!strstr(mlc_str_cstr(&page), "</html>")) fuzz_fail("page without its end", "(input)", "");
    if (n < 0) fuzz_fail("negative case count", "(input)", "");
  }
  mlc_str_free(&page);
  return 0;
}
