/* JSON reader and writer: round trips, escapes, unicode, numbers, malformed
 * input (every error located), nesting limits, and random corruption. */
#include "base/base.h"
#include "tests/test.h"

#include <math.h>
#include <stdlib.h>

static mlc_json *parse(mlc_arena *a, const char *text, mlc_error *err) {
  return mlc_json_parse(a, text, strlen(text), err);
}

/* Parse then write compactly; "" on a parse error (with err set). */
static char *canon(const char *text, mlc_error *err) {
  mlc_arena *a = mlc_arena_new();
  mlc_json *v = parse(a, text, err);
  mlc_str s = {0};
  if (v) mlc_json_write(&s, v);
  char *out = mlc_xstrdup(mlc_str_cstr(&s));
  mlc_str_free(&s);
  mlc_arena_free(a);
  return out;
}

static void check_canon(const char *in, const char *want) {
  mlc_error err = {{0}};
  char *got = canon(in, &err);
  CHECK_MSG(strcmp(got, want) == 0, "%s -> %s (want %s; %s)", in, got, want, err.msg);
  mlc_free(got);
}

static void test_round_trip(void) {
  check_canon("null", "null");
  check_canon(" true ", "true");
  check_canon("false", "false");
  check_canon("[]", "[]");
  check_canon("{}", "{}");
  check_canon(" [ 1 , 2 ,\n 3 ] ", "[1,2,3]");
  check_canon("{\"b\": 1, \"a\": [true, null, {\"x\": \"y\"}]}",
              "{\"b\":1,\"a\":[true,null,{\"x\":\"y\"}]}");
  check_canon("{\"insts\": [[\"Split\", [\"l2\", \"v4\", null], {\"preserve_unit_iters\": true}, "
              "[\"l6\", \"l7\"]]], \"decisions\": {\"3\": [32, 4]}}",
              "{\"insts\":[[\"Split\",[\"l2\",\"v4\",null],{\"preserve_unit_iters\":true},"
              "[\"l6\",\"l7\"]]],\"decisions\":{\"3\":[32,4]}}");
  check_canon("[0.5, -2.25, 1e-07, 1.0, 3e2]", "[0.5,-2.25,1e-07,1,300]");
  check_canon("\t\r\n{ \"k\" :\"v\" }\n", "{\"k\":\"v\"}");
  /* Duplicate keys are kept in order. */
  check_canon("{\"a\":1,\"a\":2}", "{\"a\":1,\"a\":2}");
  /* canon(canon(x)) == canon(x) */
  const char *t = "{\"s\":\"tab\\there \\u00e9\",\"n\":[-0,1.5e300,12345678901234567890]}";
  char *c1 = canon(t, NULL), *c2 = canon(c1, NULL);
  CHECK_STREQ(c1, c2);
  mlc_free(c1);
  mlc_free(c2);
}

static void test_get(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *v = parse(a, "{\"version\": 1, \"name\": \"mm\", \"list\": [1, 2]}", &err);
  CHECK(v && v->kind == MLC_JSON_OBJECT && v->len == 3);
  const mlc_json *ver = mlc_json_get(v, "version");
  CHECK(ver && ver->kind == MLC_JSON_NUMBER && ver->is_integer && ver->integer == 1);
  const mlc_json *name = mlc_json_get(v, "name");
  CHECK(name && name->kind == MLC_JSON_STRING);
  if (name) CHECK_STREQ(name->str, "mm");
  const mlc_json *list = mlc_json_get(v, "list");
  CHECK(list && list->kind == MLC_JSON_ARRAY && list->len == 2 && list->items[1]->integer == 2);
  CHECK(mlc_json_get(v, "missing") == NULL);
  CHECK(mlc_json_get(list, "version") == NULL); /* not an object */
  CHECK(mlc_json_get(NULL, "x") == NULL);
  mlc_arena_free(a);
}

static void test_escapes(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *v = parse(a, "\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t end\"", &err);
  CHECK_MSG(v && v->kind == MLC_JSON_STRING, "%s", err.msg);
  if (v) CHECK_STREQ(v->str, "q\" b\\ s/ \b\f\n\r\t end");
  mlc_str s = {0};
  mlc_json_write_string(&s, "q\" b\\ s/ \b\f\n\r\t \x01\x1f\x7f end");
  CHECK_STREQ(mlc_str_cstr(&s), "\"q\\\" b\\\\ s/ \\b\\f\\n\\r\\t \\u0001\\u001f\x7f end\"");
  /* Written text reads back as the same string. */
  mlc_json *back = mlc_json_parse(a, s.data, s.len, &err);
  CHECK(back && back->kind == MLC_JSON_STRING);
  if (back) CHECK_STREQ(back->str, "q\" b\\ s/ \b\f\n\r\t \x01\x1f\x7f end");
  mlc_str_clear(&s);
  mlc_json_write_string(&s, "");
  CHECK_STREQ(mlc_str_cstr(&s), "\"\"");
  mlc_str_free(&s);
  mlc_arena_free(a);
}

/* Every byte a C string can hold (1..255), and a string holding a quoted
 * JSON-looking literal as traces store them, write and read back byte for
 * byte. */
static void test_string_round_trip(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char all[256];
  for (int i = 1; i < 256; i++) all[i - 1] = (char)i;
  all[255] = 0;
  const char *strs[] = {all, "\"\\\"\"", "\"\\u00e9\"", "\\", "\"\"", ""};
  for (int i = 0; i < MLC_COUNTOF(strs); i++) {
    mlc_str s = {0};
    mlc_json_write_string(&s, strs[i]);
    mlc_json *v = mlc_json_parse(a, s.data, s.len, &err);
    CHECK_MSG(v && v->kind == MLC_JSON_STRING && strcmp(v->str, strs[i]) == 0, "case %d: %s", i,
              mlc_str_cstr(&s));
    mlc_str_free(&s);
  }
  mlc_arena_free(a);
}

static void test_unicode(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  struct {
    const char *in, *want;
  } cases[] = {
      {"\"\\u0041\"", "A"},
      {"\"\\u00e9\"", "\xc3\xa9"},
      {"\"\\u00E9\"", "\xc3\xa9"},
      {"\"\\u07ff\"", "\xdf\xbf"},
      {"\"\\u0800\"", "\xe0\xa0\x80"},
      {"\"\\u20ac\"", "\xe2\x82\xac"},
      {"\"\\uffff\"", "\xef\xbf\xbf"},
      {"\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80"},
      {"\"\\udbff\\udfff\"", "\xf4\x8f\xbf\xbf"},
      {"\"\\ud800\\udc00x\"", "\xf0\x90\x80\x80x"},
      {"\"raw \xc3\xa9 \xf0\x9f\x98\x80\"", "raw \xc3\xa9 \xf0\x9f\x98\x80"},
  };
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    mlc_json *v = parse(a, cases[i].in, &err);
    CHECK_MSG(v && v->kind == MLC_JSON_STRING, "%s: %s", cases[i].in, err.msg);
    if (v) CHECK_MSG(strcmp(v->str, cases[i].want) == 0, "%s decoded wrongly", cases[i].in);
  }
  /* The writer keeps UTF-8 as is. */
  mlc_str s = {0};
  mlc_json_write_string(&s, "\xc3\xa9\xf0\x9f\x98\x80");
  CHECK_STREQ(mlc_str_cstr(&s), "\"\xc3\xa9\xf0\x9f\x98\x80\"");
  mlc_str_free(&s);
  mlc_arena_free(a);
}

static void test_numbers(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *v = parse(a, "0", &err);
  CHECK(v && v->is_integer && v->integer == 0 && v->number == 0);
  v = parse(a, "-0", &err);
  CHECK(v && v->kind == MLC_JSON_NUMBER && v->is_integer && v->integer == 0 && signbit(v->number));
  v = parse(a, "-0.0", &err);
  CHECK(v && !v->is_integer && signbit(v->number));
  v = parse(a, "1e308", &err);
  CHECK(v && !v->is_integer && v->number == 1e308);
  v = parse(a, "-1.7976931348623157e308", &err);
  CHECK(v && v->number == -1.7976931348623157e308);
  v = parse(a, "4.9e-324", &err);
  CHECK(v && v->number == 4.9e-324);
  v = parse(a, "9223372036854775807", &err);
  CHECK(v && v->is_integer && v->integer == INT64_MAX);
  v = parse(a, "-9223372036854775808", &err);
  CHECK(v && v->is_integer && v->integer == INT64_MIN);
  v = parse(a, "9223372036854775808", &err);
  CHECK(v && !v->is_integer && v->number == 9223372036854775808.0);
  v = parse(a, "-9223372036854775809", &err);
  CHECK(v && !v->is_integer);
  v = parse(a, "123456789012345678901234567890", &err);
  CHECK(v && !v->is_integer && fabs(v->number / 1.2345678901234568e29 - 1) < 1e-15);
  v = parse(a, "1.5", &err);
  CHECK(v && !v->is_integer && v->number == 1.5);
  v = parse(a, "1E2", &err);
  CHECK(v && !v->is_integer && v->number == 100);
  v = parse(a, "2.5e-3", &err);
  CHECK(v && v->number == 2.5e-3);
  v = parse(a, "-12", &err);
  CHECK(v && v->is_integer && v->integer == -12);
  v = parse(a, "[NaN, Infinity, -Infinity]", &err);
  CHECK(v && v->len == 3 && isnan(v->items[0]->number) && v->items[1]->number == INFINITY &&
        v->items[2]->number == -INFINITY);
  /* Big integers write back exactly. */
  check_canon("[9223372036854775807,-9223372036854775808,9007199254740993]",
              "[9223372036854775807,-9223372036854775808,9007199254740993]");
  check_canon("[-0, 0, -0.0, 1e308, 9223372036854775808]",
              "[-0,0,-0,1e+308,9.223372036854776e+18]");
  mlc_arena_free(a);
}

static void check_number(double v, const char *want) {
  mlc_str s = {0};
  mlc_json_write_number(&s, v);
  CHECK_MSG(strcmp(mlc_str_cstr(&s), want) == 0, "%.17g -> %s (want %s)", v, mlc_str_cstr(&s),
            want);
  mlc_str_free(&s);
}

static void test_write_number(void) {
  check_number(0, "0");
  check_number(-0.0, "-0");
  check_number(1, "1");
  check_number(-42, "-42");
  check_number(0.1, "0.1");
  check_number(0.5, "0.5");
  check_number(1e-7, "1e-07");
  check_number(1.5e300, "1.5e+300");
  check_number(9007199254740992.0, "9007199254740992");
  check_number(1e20, "1e+20");
  check_number(123456.75, "123456.75");
  check_number(NAN, "NaN");
  check_number(INFINITY, "Infinity");
  check_number(-INFINITY, "-Infinity");
  /* Shortest text reads back as the same double, for many values. */
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 7, 1);
  mlc_arena *a = mlc_arena_new();
  for (int i = 0; i < 2000; i++) {
    uint64_t bits = ((uint64_t)mlc_pcg32_next(&rng) << 32) | mlc_pcg32_next(&rng);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (!isfinite(v)) continue;
    if (i % 3 == 0) v = (double)(int32_t)mlc_pcg32_next(&rng) / 1024.0;
    mlc_str s = {0};
    mlc_json_write_number(&s, v);
    mlc_error err;
    mlc_json *back = mlc_json_parse(a, s.data, s.len, &err);
    bool same = back && back->kind == MLC_JSON_NUMBER && back->number == v &&
                signbit(back->number) == signbit(v);
    CHECK_MSG(same, "%.17g wrote %s", v, mlc_str_cstr(&s));
    mlc_str_free(&s);
    if (!same) break;
  }
  mlc_arena_free(a);
}

/* Each malformed text fails with "line L, column C: expected ...". */
static void test_malformed(void) {
  struct {
    const char *text;
    int line, col; /* 0: only check the format */
  } cases[] = {
      {"", 1, 1},
      {"   ", 1, 4},
      {"[1, 2", 1, 6},
      {"[1 2]", 1, 4},
      {"[1,]", 1, 4},
      {"{\"a\" 1}", 1, 6},
      {"{\"a\": 1,}", 1, 9},
      {"{a: 1}", 1, 2},
      {"{\"a\": }", 1, 7},
      {"\"abc", 1, 5},
      {"\"a\\qb\"", 1, 3},
      {"\"\\u12g4\"", 1, 6},
      {"\"\\ud800\"", 1, 8},
      {"\"\\ud800\\u0041\"", 1, 8},
      {"\"\\udc00\"", 1, 2},
      {"\"\\u0000\"", 1, 2},
      {"\"tab\there\"", 1, 5},
      {"tru", 1, 1},
      {"nul", 1, 1},
      {"01", 1, 2},
      {"-", 1, 2},
      {"1.", 1, 3},
      {".5", 1, 1},
      {"1e", 1, 3},
      {"1e+", 1, 4},
      {"+1", 1, 1},
      {"[1]]", 1, 4},
      {"{} {}", 1, 4},
      {"[\n  1,\n  2\n  3]", 4, 3},
      {"{\n\"a\": [\n1,\n@]}", 4, 1},
      {"\"\\", 1, 2},
      {"Inf", 1, 1},
      {"-Infinit", 1, 2},
      {"[\"a\"\n,\n]", 3, 1},
  };
  mlc_arena *a = mlc_arena_new();
  for (int i = 0; i < MLC_COUNTOF(cases); i++) {
    mlc_error err = {{0}};
    mlc_json *v = parse(a, cases[i].text, &err);
    CHECK_MSG(v == NULL, "case %d (%s) parsed", i, cases[i].text);
    int line = 0, col = 0;
    bool located = sscanf(err.msg, "line %d, column %d: expected", &line, &col) == 2 &&
                   strstr(err.msg, ": expected ") != NULL;
    CHECK_MSG(located, "case %d (%s): unlocated error '%s'", i, cases[i].text, err.msg);
    if (cases[i].line)
      CHECK_MSG(line == cases[i].line && col == cases[i].col,
                "case %d (%s): '%s', want line %d column %d", i, cases[i].text, err.msg,
                cases[i].line, cases[i].col);
  }
  mlc_arena_free(a);
}

/* The length bounds the text: nothing past it is read. */
static void test_length_bound(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  const char *text = "[1,2]garbage";
  mlc_json *v = mlc_json_parse(a, text, 5, &err);
  CHECK(v && v->len == 2);
  /* An unterminated buffer: heap copy without NUL, checked by ASan. */
  const char *body = "{\"k\": \"value\", \"n\": 12.5e1}";
  size_t n = strlen(body);
  char *raw = mlc_xmalloc(n);
  memcpy(raw, body, n);
  v = mlc_json_parse(a, raw, n, &err);
  CHECK(v && mlc_json_get(v, "n") && mlc_json_get(v, "n")->number == 125);
  for (size_t cut = 0; cut < n; cut++) {
    mlc_error e2;
    CHECK_MSG(mlc_json_parse(a, raw, cut, &e2) == NULL, "prefix of %zu bytes parsed", cut);
  }
  mlc_free(raw);
  mlc_arena_free(a);
}

static char *nested(int depth, char open, char close) {
  char *s = mlc_xmalloc((size_t)depth * 2 + 1);
  for (int i = 0; i < depth; i++) {
    s[i] = open;
    s[depth * 2 - 1 - i] = close;
  }
  s[depth * 2] = 0;
  return s;
}

static void test_deep_nesting(void) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  char *ok = nested(512, '[', ']');
  mlc_json *v = parse(a, ok, &err);
  CHECK_MSG(v != NULL, "512 levels: %s", err.msg);
  mlc_free(ok);
  char *deep = nested(513, '[', ']');
  v = parse(a, deep, &err);
  CHECK(v == NULL && strstr(err.msg, "line 1, column 513: expected at most 512 levels"));
  mlc_free(deep);
  /* Far too deep, unbalanced, objects: an error, never a stack overflow. */
  size_t n = 200000;
  char *huge = mlc_xmalloc(n + 1);
  memset(huge, '[', n);
  v = parse(a, huge, &err);
  CHECK(v == NULL && strstr(err.msg, "expected at most 512 levels"));
  for (size_t i = 0; i < n; i += 5) memcpy(huge + i, "{\"a\":", 5);
  v = mlc_json_parse(a, huge, n, &err);
  CHECK(v == NULL && strstr(err.msg, "expected at most 512 levels"));
  mlc_free(huge);
  mlc_arena_free(a);
}

/* Random corruption of valid text: parse never crashes; whatever parses
 * writes canonical text that parses to the same canonical text. */
static void test_corruption(void) {
  const char *seed_text =
      "{\"insts\":[[\"Split\",[\"l2\",\"v4\",null],{\"p\":true},[\"l6\",\"l7\"]]],"
      "\"decisions\":{\"3\":[32,4]},\"s\":\"\\u00e9\\ud83d\\ude00\\n\",\"x\":-1.5e-3}";
  size_t n = strlen(seed_text);
  const char alphabet[] = "{}[]\":,\\u0123456789eE+-.tfnal \n\x01\xc3\xff";
  mlc_pcg32 rng;
  mlc_pcg32_seed(&rng, 42, 3);
  int parsed = 0, failed_located = 0, total = 3000;
  char *buf = mlc_xmalloc(n + 8);
  for (int it = 0; it < total; it++) {
    memcpy(buf, seed_text, n);
    size_t len = n;
    int edits = 1 + (int)mlc_pcg32_bounded(&rng, 3);
    for (int e = 0; e < edits; e++) {
      size_t pos = mlc_pcg32_bounded(&rng, (uint32_t)len);
      switch (mlc_pcg32_bounded(&rng, 3)) {
      case 0: buf[pos] = alphabet[mlc_pcg32_bounded(&rng, sizeof alphabet - 1)]; break;
      case 1: memmove(buf + pos, buf + pos + 1, len - pos - 1), len--; break;
      default: len = pos + 1; break;
      }
    }
    mlc_arena *a = mlc_arena_new();
    mlc_error err = {{0}};
    mlc_json *v = mlc_json_parse(a, buf, len, &err);
    if (v) {
      parsed++;
      mlc_str s1 = {0}, s2 = {0};
      mlc_json_write(&s1, v);
      mlc_json *w = mlc_json_parse(a, s1.data, s1.len, &err);
      if (w) mlc_json_write(&s2, w);
      CHECK_MSG(w && strcmp(mlc_str_cstr(&s1), mlc_str_cstr(&s2)) == 0, "unstable: %s",
                mlc_str_cstr(&s1));
      mlc_str_free(&s1);
      mlc_str_free(&s2);
    } else {
      int l, c;
      if (sscanf(err.msg, "line %d, column %d: expected", &l, &c) == 2) failed_located++;
    }
    mlc_arena_free(a);
  }
  mlc_free(buf);
  CHECK_MSG(parsed + failed_located == total, "%d parsed, %d located errors of %d", parsed,
            failed_located, total);
}

/* Allocation failure inside the parser becomes an error, not an abort. */
static int fail_after;
static void *failing_alloc(void *ud, void *ptr, size_t nsize) {
  if (nsize && fail_after-- == 0) return NULL;
  return mlc_default_alloc(ud, ptr, nsize);
}

static void test_out_of_memory(void) {
  mlc_str big = {0};
  mlc_str_putc(&big, '[');
  for (int i = 0; i < 5000; i++) mlc_str_printf(&big, "%s\"string number %d\"", i ? "," : "", i);
  mlc_str_putc(&big, ']');
  int failures = 0;
  for (int k = 0; k < 6; k++) {
    mlc_arena *a = mlc_arena_new();
    fail_after = k;
    mlc_set_allocator(failing_alloc, NULL);
    mlc_error err = {{0}};
    mlc_json *v = mlc_json_parse(a, big.data, big.len, &err);
    mlc_set_allocator(mlc_default_alloc, NULL);
    if (!v) {
      failures++;
      CHECK_MSG(strstr(err.msg, "out of memory") != NULL, "k=%d: %s", k, err.msg);
    }
    mlc_arena_free(a);
  }
  CHECK(failures > 0);
  mlc_str_free(&big);
}

/* An object written member by member: commas between, a NULL string as
 * null, escaping, and it reads back. */
static void test_write_members(void) {
  mlc_str s = {0};
  bool first = true;
  mlc_str_putc(&s, '{');
  mlc_json_write_member_number(&s, &first, "n", 1.5);
  mlc_json_write_member_string(&s, &first, "none", NULL);
  mlc_json_write_member_string(&s, &first, "q\"", "a\"b");
  mlc_json_write_key(&s, &first, "raw");
  mlc_str_puts(&s, "[1]}");
  CHECK_STREQ(mlc_str_cstr(&s), "{\"n\":1.5,\"none\":null,\"q\\\"\":\"a\\\"b\",\"raw\":[1]}");
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  CHECK(mlc_json_parse(a, s.data, s.len, &err) != NULL);
  mlc_arena_free(a);
  mlc_str_free(&s);
}

int main(void) {
  RUN(test_round_trip);
  RUN(test_get);
  RUN(test_escapes);
  RUN(test_string_round_trip);
  RUN(test_unicode);
  RUN(test_numbers);
  RUN(test_write_number);
  RUN(test_malformed);
  RUN(test_length_bound);
  RUN(test_deep_nesting);
  RUN(test_corruption);
  RUN(test_out_of_memory);
  RUN(test_write_members);
  return test_summary();
}
