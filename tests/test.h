/* Minimal test harness. A test binary runs cases with RUN(fn); each case
 * prints one line, "PASS name" or "FAIL name: where: what", and the binary
 * ends with "# N passed, N failed". tests/run.sh adds up every binary and
 * script and prints the suite's final "N passed, N failed" line.
 *
 *   static void test_split(void) { CHECK(x == 3); CHECK_MSG(ok, "got %d", v); }
 *   int main(void) { RUN(test_split); return test_summary(); }
 */
#ifndef MLC_TEST_H
#define MLC_TEST_H

#include "base/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int test_passed_, test_failed_, test_case_failed_;
static char test_first_failure_[512];

static inline void test_fail_(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void test_fail_(const char *file, int line, const char *fmt, ...) {
  if (!test_case_failed_) {
    va_list ap;
    int n = snprintf(test_first_failure_, sizeof test_first_failure_, "%s:%d: ", file, line);
    va_start(ap, fmt);
    if (n > 0 && n < (int)sizeof test_first_failure_)
      vsnprintf(test_first_failure_ + n, sizeof test_first_failure_ - (size_t)n, fmt, ap);
    va_end(ap);
    for (char *p = test_first_failure_; *p; p++)
      if (*p == '\n') *p = ' ';
  }
  test_case_failed_ = 1;
}

#define CHECK(c) ((c) ? (void)0 : test_fail_(__FILE__, __LINE__, "%s", #c))
#define CHECK_MSG(c, ...) ((c) ? (void)0 : test_fail_(__FILE__, __LINE__, __VA_ARGS__))
#define CHECK_STREQ(a, b)                                                          \
  do {                                                                             \
    const char *a_ = (a), *b_ = (b);                                               \
    if (!a_ || !b_ || strcmp(a_, b_) != 0)                                         \
      test_fail_(__FILE__, __LINE__, "%s != %s (\"%.200s\" vs \"%.200s\")", #a, #b, \
                 a_ ? a_ : "(null)", b_ ? b_ : "(null)");                          \
  } while (0)

/* A whole file, NUL-terminated (mlc_free it; *len may be NULL); NULL,
 * with the current case failed and the reason, when it cannot be read. */
static inline char *test_read_file(const char *path, size_t *len) {
  mlc_error err = {{0}};
  char *text = mlc_read_file(path, len, &err);
  CHECK_MSG(text, "%s", err.msg);
  return text;
}

/* qsort order of C strings (an array of char *). */
static inline int test_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Report one named case whose result was computed elsewhere. */
static inline void test_report(const char *name, int ok, const char *why) {
  if (ok) {
    printf("PASS %s\n", name);
    test_passed_++;
  } else {
    printf("FAIL %s: %s\n", name, why ? why : "");
    test_failed_++;
  }
  fflush(stdout);
}

#define RUN(fn)                                                  \
  do {                                                           \
    test_case_failed_ = 0;                                       \
    test_first_failure_[0] = 0;                                  \
    fn();                                                        \
    test_report(#fn, !test_case_failed_, test_first_failure_);   \
  } while (0)

static inline int test_summary(void) {
  printf("# %d passed, %d failed\n", test_passed_, test_failed_);
  return test_failed_ ? 1 : 0;
}

#endif
