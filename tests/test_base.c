/* base/: arena, allocation hook, vectors, strings, shortest floats, errors,
 * hashing and PCG32 against the published reference stream. */
#include "base/base.h"
#include "tests/test.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_arena_alignment_and_zeroing(void) {
  mlc_arena *a = mlc_arena_new();
  for (int i = 1; i < 2000; i += 37) {
    unsigned char *p = mlc_arena_alloc(a, (size_t)i);
    CHECK(((uintptr_t)p & 15) == 0);
    for (int j = 0; j < i; j++) CHECK(p[j] == 0);
    p[i - 1] = 0xff;
  }
  char *big = mlc_arena_alloc(a, 1 << 20); /* larger than a chunk */
  big[(1 << 20) - 1] = 1;
  /* not zeroed, but aligned, apart from the others, and memdup copies */
  unsigned char *u = mlc_arena_alloc_uninit(a, 100), *v = mlc_arena_alloc_uninit(a, 100);
  CHECK(((uintptr_t)u & 15) == 0 && ((uintptr_t)v & 15) == 0 && (v >= u + 100 || u >= v + 100));
  memset(u, 0xab, 100);
  memset(v, 0xcd, 100);
  CHECK(u[99] == 0xab && v[0] == 0xcd);
  unsigned char *w = mlc_arena_memdup(a, u, 100);
  CHECK(w != u && memcmp(w, u, 100) == 0);
  CHECK_STREQ(mlc_arena_strdup(a, "abc"), "abc");
  CHECK_STREQ(mlc_arena_printf(a, "%s-%d", "x", 42), "x-42");
  /* mlc_arena_suffixed is "%s_%d", mlc_arena_numbered "%s%d", mlc_arena_concat "%s%s" */
  const int64_t ks[] = {0, 7, 10, 1234567, -5, INT64_MAX, INT64_MIN};
  for (int i = 0; i < MLC_COUNTOF(ks); i++) {
    CHECK_STREQ(mlc_arena_suffixed(a, "i_0", ks[i]), mlc_arena_printf(a, "i_0_%" PRId64, ks[i]));
    CHECK_STREQ(mlc_arena_numbered(a, "ax", ks[i]), mlc_arena_printf(a, "ax%" PRId64, ks[i]));
  }
  CHECK_STREQ(mlc_arena_suffixed(a, "", 3), "_3");
  CHECK_STREQ(mlc_arena_numbered(a, "", 12), "12");
  CHECK_STREQ(mlc_arena_concat(a, "C_rf", "_init"), "C_rf_init");
  CHECK_STREQ(mlc_arena_concat(a, "", "v"), "v");
  CHECK_STREQ(mlc_arena_concat(a, "k", ""), "k");
  mlc_arena_free(a);
}

/* A freed arena's chunk serves the next arena of the thread, zeroed as it
 * is handed out; with an allocation hook installed, the hook sees every
 * chunk (nothing is served from the cache behind its back). Under
 * AddressSanitizer chunks are not kept, so that its quarantine can see a
 * use after free. */
static int hook_allocs;
static void *counting_alloc(void *ud, void *ptr, size_t n) {
  if (n != 0 && !ptr) hook_allocs++;
  return mlc_default_alloc(ud, ptr, n);
}

static void test_arena_chunks_reused(void) {
  mlc_arena *a = mlc_arena_new();
  unsigned char *p = mlc_arena_alloc(a, 1000);
  memset(p, 0xff, 1000);
  mlc_arena_free(a);
  a = mlc_arena_new();
  unsigned char *q = mlc_arena_alloc(a, 1000);
#if !defined(__SANITIZE_ADDRESS__)
  CHECK(q == p);
#endif
  int nonzero = 0;
  for (int i = 0; i < 1000; i++) nonzero += q[i] != 0;
  CHECK(nonzero == 0);
  mlc_arena_free(a);
  mlc_set_allocator(counting_alloc, NULL);
  hook_allocs = 0;
  a = mlc_arena_new();
  mlc_arena_alloc(a, 1000);
  CHECK(hook_allocs == 2); /* the header and the chunk */
  mlc_arena_free(a);
  mlc_set_allocator(NULL, NULL);
}

/* Blocks of 4 KiB and more start on a cache line (whole vector and AMX
 * rows in one line each); growing one by realloc keeps its contents. */
static void test_large_blocks_line_aligned(void) {
  static const size_t sizes[] = {4096, 4097, 65536 + 3, (size_t)1 << 20, ((size_t)1 << 22) + 16};
  for (int i = 0; i < MLC_COUNTOF(sizes); i++) {
    unsigned char *p = mlc_malloc(sizes[i]), *q = mlc_xmalloc(sizes[i]);
    CHECK_MSG(p && ((uintptr_t)p & 63) == 0 && ((uintptr_t)q & 63) == 0, "%zu bytes at %p, %p", sizes[i],
              (void *)p, (void *)q);
    CHECK(q[sizes[i] - 1] == 0);
    p[0] = 7, p[sizes[i] - 1] = 9;
    p = mlc_xrealloc(p, 2 * sizes[i]);
    CHECK(p[0] == 7 && p[sizes[i] - 1] == 9);
    mlc_free(p);
    mlc_free(q);
  }
  unsigned char *small = mlc_malloc(100);
  CHECK(small && ((uintptr_t)small & 15) == 0);
  mlc_free(small);
}

static int fail_after = -1, allocs_seen;
static void *failing_alloc(void *ud, void *ptr, size_t n) {
  if (n != 0 && fail_after >= 0 && allocs_seen++ >= fail_after) return NULL;
  return mlc_default_alloc(ud, ptr, n);
}

static void test_arena_oom_jumps(void) {
  mlc_arena *a = mlc_arena_new();
  jmp_buf jb;
  volatile int jumped = 0;
  mlc_set_allocator(failing_alloc, NULL);
  fail_after = 0;
  allocs_seen = 0;
  if (setjmp(jb) == 0) {
    mlc_arena_set_oom_jump(a, &jb);
    mlc_arena_alloc(a, 100);
  } else {
    jumped = 1;
  }
  mlc_set_allocator(NULL, NULL);
  fail_after = -1;
  mlc_arena_set_oom_jump(a, NULL);
  CHECK(jumped);
  CHECK(mlc_arena_alloc(a, 10) != NULL); /* the arena still works after */
  mlc_arena_free(a);
}

static void test_vectors(void) {
  MLC_VEC(int) v = {0};
  for (int i = 0; i < 1000; i++) MLC_VEC_PUSH(v, i * 3);
  CHECK(v.len == 1000 && v.data[999] == 2997);
  MLC_VEC_FREE(v);
  mlc_arena *a = mlc_arena_new();
  MLC_VEC(double) w = {0};
  for (int i = 0; i < 100; i++) MLC_VEC_APUSH(a, w, i * 0.5);
  CHECK(w.len == 100 && w.data[99] == 49.5);
  mlc_arena_free(a);
}

static void test_str_builder(void) {
  mlc_str s = {0};
  CHECK_STREQ(mlc_str_cstr(&s), "");
  mlc_str_puts(&s, "ab");
  mlc_str_printf(&s, "%d|%s", 12, "cd");
  mlc_str_indent(&s, 2);
  mlc_str_putc(&s, 'x');
  CHECK_STREQ(mlc_str_cstr(&s), "ab12|cd  x");
  char *t = mlc_str_take(&s);
  CHECK_STREQ(t, "ab12|cd  x");
  mlc_free(t);
  CHECK(s.data == NULL);
}

/* Integers written by hand print as printf's %lld does, at the extremes too. */
static void test_str_put_i64(void) {
  const int64_t vs[] = {0, 7, -7, 10, -10, 1234567890123, INT64_MAX, INT64_MIN, INT64_MIN + 1};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
    mlc_str s = {0};
    mlc_str_puts(&s, "<");
    mlc_str_put_i64(&s, vs[i]);
    mlc_str_putc(&s, '>');
    char want[32];
    snprintf(want, sizeof want, "<%lld>", (long long)vs[i]);
    CHECK_STREQ(mlc_str_cstr(&s), want);
    mlc_str_free(&s);
  }
  mlc_str s = {0};
  mlc_str_reserve(&s, 1000);
  CHECK(s.cap >= 1001 && s.len == 0);
  mlc_str_free(&s);
}

static const char *shortest(double v, bool as_float) {
  static char buf[64];
  mlc_str s = {0};
  if (as_float) mlc_str_put_float(&s, (float)v);
  else mlc_str_put_double(&s, v);
  snprintf(buf, sizeof buf, "%s", mlc_str_cstr(&s));
  mlc_str_free(&s);
  return buf;
}

static void test_shortest_floats(void) {
  CHECK_STREQ(shortest(0, false), "0");
  CHECK_STREQ(shortest(1, false), "1");
  CHECK_STREQ(shortest(-3, false), "-3");
  CHECK_STREQ(shortest(0.5, false), "0.5");
  CHECK_STREQ(shortest(0.1, false), "0.1");
  CHECK_STREQ(shortest(1e-05, false), "1e-05");
  CHECK_STREQ(shortest(0.0001, false), "0.0001");
  CHECK_STREQ(shortest(123456.25, false), "123456.25");
  CHECK_STREQ(shortest(1e16, false), "1e+16");
  CHECK_STREQ(shortest(0.1, true), "0.1");          /* float32 0.1 */
  CHECK_STREQ(shortest(1e-5, true), "1e-05");
  CHECK_STREQ(shortest(3.4028234663852886e38, true), "3.4028235e+38");
  CHECK_STREQ(shortest(INFINITY, false), "inf");
  /* Random round trips: text reads back to the same value. */
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, 7, 1);
  for (int i = 0; i < 2000; i++) {
    double v = (mlc_pcg32_double(&r) - 0.5) * pow(10, (int)mlc_pcg32_bounded(&r, 40) - 20);
    CHECK(strtod(shortest(v, false), NULL) == v);
    CHECK((float)strtod(shortest(v, true), NULL) == (float)v);
  }
}

static void test_errors(void) {
  mlc_error err;
  CHECK(!mlc_error_set(&err, "bad %s", "thing"));
  mlc_error_prefix(&err, "file.py:%d", 3);
  CHECK_STREQ(err.msg, "file.py:3: bad thing");
  CHECK(!mlc_error_set(NULL, "ignored"));
  char *text = mlc_read_file("/nonexistent/x", NULL, &err);
  CHECK(text == NULL && strstr(err.msg, "cannot open /nonexistent/x"));
}

static void test_pcg32_reference_stream(void) {
  /* pcg32-demo (pcg-random.org) with seed 42, sequence 54. */
  static const uint32_t expect[6] = {0xa15c02b7, 0x7b47f409, 0xba1d3330,
                                     0x83d2f293, 0xbfa4784b, 0xcbed606e};
  mlc_pcg32 r;
  mlc_pcg32_seed(&r, 42u, 54u);
  for (int i = 0; i < 6; i++) CHECK_MSG(mlc_pcg32_next(&r) == expect[i], "draw %d", i);
  int counts[7] = {0};
  for (int i = 0; i < 70000; i++) counts[mlc_pcg32_bounded(&r, 7)]++;
  for (int i = 0; i < 7; i++) CHECK(counts[i] > 9000 && counts[i] < 11000);
  for (int i = 0; i < 1000; i++) {
    double d = mlc_pcg32_double(&r);
    CHECK(d >= 0 && d < 1);
  }
}

static void test_hash_is_stable(void) {
  /* Fixed values: workload hashes in databases depend on these. */
  CHECK(mlc_hash_str("", 0) == mlc_hash_str("", 0));
  CHECK(mlc_hash_str("matmul", 0) != mlc_hash_str("matmul", 1));
  CHECK(mlc_hash_str("abcdefgh1", 0) != mlc_hash_str("abcdefgh2", 0));
  /* Golden values: they must never change (stored workload hashes). */
  CHECK(mlc_hash_str("mlc-tune", 0) == 0xed14b2032baf67deULL);
  CHECK(mlc_hash_combine(12345, 678) == 0x6c1e8cb2cd5a4237ULL);
  uint64_t h = mlc_hash_combine(mlc_hash_str("a", 0), 1);
  CHECK(h != mlc_hash_combine(mlc_hash_str("a", 0), 2));
}

int main(void) {
  RUN(test_arena_alignment_and_zeroing);
  RUN(test_arena_chunks_reused);
  RUN(test_large_blocks_line_aligned);
  RUN(test_arena_oom_jumps);
  RUN(test_vectors);
  RUN(test_str_builder);
  RUN(test_str_put_i64);
  RUN(test_shortest_floats);
  RUN(test_errors);
  RUN(test_pcg32_reference_stream);
  RUN(test_hash_is_stable);
  return test_summary();
}
