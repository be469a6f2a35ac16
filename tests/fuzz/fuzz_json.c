/* libFuzzer harness for the JSON reader: any bytes parse or are refused;
 * what parses writes back as text that parses to the same writing. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_json *v = mlc_json_parse(a, (const char *)data, size, &err);
  if (v) {
    mlc_str w1 = {0}, w2 = {0};
    mlc_json_write(&w1, v);
    mlc_json *v2 = mlc_json_parse(a, mlc_str_cstr(&w1), strlen(mlc_str_cstr(&w1)), &err);
    if (!v2) fuzz_fail(err.msg, "(input)", mlc_str_cstr(&w1));
    mlc_json_write(&w2, v2);
    if (strcmp(mlc_str_cstr(&w1), mlc_str_cstr(&w2)) != 0)
      fuzz_fail("write(parse(write(v))) != write(v)", mlc_str_cstr(&w1), mlc_str_cstr(&w2));
    mlc_str_free(&w1);
    mlc_str_free(&w2);
  }
  mlc_arena_free(a);
  return 0;
}
