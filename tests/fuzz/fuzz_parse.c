/* libFuzzer harness for the TVMScript parser: any text parses or is
 * refused with a located message; a module that parses and verifies
 * prints, and its print parses back and prints byte for byte the same. */
#include "fuzz.h"
#include "ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  mlc_arena *a = mlc_arena_new();
  mlc_error err;
  mlc_module *m = mlc_parse_module(a, "fuzz.py", text, &err);
  if (m && mlc_verify_module(m, &err)) {
    mlc_str p1 = {0}, p2 = {0};
    mlc_print_module(&p1, m);
    mlc_module *m2 = mlc_parse_module(a, "fuzz2.py", mlc_str_cstr(&p1), &err);
    if (!m2) fuzz_fail(err.msg, text, mlc_str_cstr(&p1));
    mlc_print_module(&p2, m2);
    if (strcmp(mlc_str_cstr(&p1), mlc_str_cstr(&p2)) != 0)
      fuzz_fail("print(parse(print(m))) != print(m)", mlc_str_cstr(&p1), mlc_str_cstr(&p2));
    mlc_str_free(&p1);
    mlc_str_free(&p2);
  }
  mlc_arena_free(a);
  mlc_free(text);
  return 0;
}
