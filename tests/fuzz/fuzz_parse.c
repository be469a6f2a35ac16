/* libFuzzer harness for the TVMScript parser: any text parses or is
 * refused with a located message; a module that parses and verifies
 * prints, and its print parses back and prints byte for byte the same. A
 * verified function of size vars stays valid at its sizes' bounds: its
 * specializations there verify too (the symbolic checks are no weaker
 * than the static ones). */
#include "fuzz.h"
#include "ir/ir.h"

static bool empty_buffer(const mlc_buffer *b) {
  for (int d = 0; d < b->ndim; d++)
    if (b->shape[d] <= 0) return true;
  return false;
}

/* A range or buffer a size of 0 emptied: the static rules want >= 1. */
static bool empty_range(const mlc_stmt *st, void *ud) {
  (void)ud;
  int64_t v;
  if (st->kind == MLC_STMT_FOR) return mlc_expr_is_const_int(st->loop.extent, &v) && v <= 0;
  if (st->kind == MLC_STMT_ALLOCATE) return empty_buffer(st->alloc.buf);
  if (st->kind != MLC_STMT_BLOCK_REALIZE) return false;
  const mlc_block *b = st->realize.block;
  for (int i = 0; i < b->n_iters; i++)
    if (mlc_expr_is_const_int(b->iters[i].dom.extent, &v) && v <= 0) return true;
  for (int i = 0; i < b->n_allocs; i++)
    if (empty_buffer(b->allocs[i])) return true;
  return false;
}

static void check_sizes(mlc_arena *a, const mlc_prim_func *f, const char *text) {
  if (f->n_sizes == 0) return;
  int64_t sizes[MLC_MAX_SIZES];
  for (int end = 0; end < 2; end++) {
    bool small = true;
    for (int k = 0; k < f->n_sizes; k++) {
      sizes[k] = end ? f->sizes[k].hi : f->sizes[k].lo;
      small = small && sizes[k] <= 4096;
    }
    if (!small) continue; /* a huge static shape is refused for its size alone */
    mlc_error err;
    mlc_prim_func *g = mlc_func_specialize(a, f, sizes, &err);
    if (!g) fuzz_fail(err.msg, text, "specialize");
    bool empty = mlc_stmt_any(g->body, empty_range, NULL);
    for (int i = 0; i < g->n_params; i++) empty = empty || empty_buffer(g->params[i]);
    if (!empty && !mlc_verify_func(g, &err)) fuzz_fail(err.msg, text, "specialization at a bound");
  }
}

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
    for (int i = 0; i < m->n_funcs; i++) check_sizes(a, m->funcs[i], text);
  }
  mlc_arena_free(a);
  mlc_free(text);
  return 0;
}
