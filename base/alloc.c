/* The one allocation hook, the arena, growable vectors and fatal errors. */
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *mlc_default_alloc(void *ud, void *ptr, size_t nsize) {
  MLC_UNUSED(ud);
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}

static mlc_alloc_fn alloc_fn = mlc_default_alloc;
static void *alloc_ud;

void mlc_set_allocator(mlc_alloc_fn fn, void *ud) {
  alloc_fn = fn ? fn : mlc_default_alloc;
  alloc_ud = fn ? ud : NULL;
}

void *mlc_malloc(size_t n) { return alloc_fn(alloc_ud, NULL, n ? n : 1); }
void *mlc_realloc(void *p, size_t n) { return alloc_fn(alloc_ud, p, n ? n : 1); }
void mlc_free(void *p) {
  if (p) alloc_fn(alloc_ud, p, 0);
}

_Noreturn void mlc_panic(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "mlc: internal error at %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

/* Out of memory, by path (tests/test_allocfail.c fails every allocation of
 * each in turn and checks which of the two happens):
 *
 * Returns an error, nothing leaked: mlc_parse_module and mlc_json_parse
 * (the caller's arena jumps back to the parser, which reports "out of
 * memory"); mlc_interp_run (its compile arena jumps, its buffers use
 * mlc_malloc); mlc_array_try_new. These are the paths whose sizes come from
 * input: source text, JSON text, tensor shapes.
 *
 * Aborts by design, through mlc_xmalloc/mlc_xrealloc or an arena with no
 * escape point: the arena header (mlc_arena_new, fixed size); heap vectors
 * (MLC_VEC_PUSH) and string builders (mlc_str), whose callers have no error
 * path; the schedule state (mlc_sched_new and its arena, which holds the IR
 * copy, the handles and the trace) and so primitives and replay; reading a
 * trace out of its parsed JSON (mlc_trace_from_json after mlc_json_parse
 * has returned). Their sizes grow with a program or trace already parsed,
 * so with the length of text a parse accepted, not with a number read from
 * input. */
void *mlc_xmalloc(size_t n) {
  void *p = mlc_malloc(n);
  if (!p) mlc_panic(__FILE__, __LINE__, "out of memory allocating %zu bytes", n);
  memset(p, 0, n);
  return p;
}

void *mlc_xrealloc(void *p, size_t n) {
  void *q = mlc_realloc(p, n);
  if (!q) mlc_panic(__FILE__, __LINE__, "out of memory allocating %zu bytes", n);
  return q;
}

char *mlc_xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = mlc_xmalloc(n);
  memcpy(p, s, n);
  return p;
}

/* ---- arena: a list of chunks; big requests get a chunk of their own ---- */

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct mlc_arena {
  chunk *head;
  jmp_buf *oom; /* where an allocation failure jumps, if set */
  size_t total;
};

enum { CHUNK_SIZE = 64 * 1024 };

mlc_arena *mlc_arena_new(void) { return mlc_xmalloc(sizeof(mlc_arena)); }

void mlc_arena_free(mlc_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    mlc_free(c);
  }
  mlc_free(a);
}

void mlc_arena_set_oom_jump(mlc_arena *a, jmp_buf *jb) { a->oom = jb; }
size_t mlc_arena_bytes_used(const mlc_arena *a) { return a->total; }

static chunk *add_chunk(mlc_arena *a, size_t need) {
  size_t size = need > CHUNK_SIZE ? need : CHUNK_SIZE;
  chunk *c = mlc_malloc(sizeof(chunk) + size);
  if (!c) {
    if (a->oom) longjmp(*a->oom, 1);
    mlc_panic(__FILE__, __LINE__, "out of memory allocating %zu bytes", need);
  }
  c->size = size;
  c->used = 0;
  /* A dedicated big chunk goes behind the head so the head keeps serving
   * small requests. */
  if (a->head && need > CHUNK_SIZE) {
    c->next = a->head->next;
    a->head->next = c;
  } else {
    c->next = a->head;
    a->head = c;
  }
  return c;
}

void *mlc_arena_alloc(mlc_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) c = add_chunk(a, n);
  void *p = c->data + c->used;
  c->used += n;
  a->total += n;
  memset(p, 0, n);
  return p;
}

void *mlc_arena_memdup(mlc_arena *a, const void *p, size_t n) {
  void *q = mlc_arena_alloc(a, n);
  if (n) memcpy(q, p, n);
  return q;
}

char *mlc_arena_strndup(mlc_arena *a, const char *s, size_t n) {
  char *p = mlc_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *mlc_arena_strdup(mlc_arena *a, const char *s) {
  return mlc_arena_strndup(a, s, strlen(s));
}

char *mlc_arena_printf(mlc_arena *a, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  MLC_ASSERT(n >= 0);
  if ((size_t)n < sizeof small) return mlc_arena_strndup(a, small, (size_t)n);
  char *p = mlc_arena_alloc(a, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

/* ---- vectors ---------------------------------------------------------- */

void mlc_vec_grow_(void **data, int *cap, int need, size_t elem, mlc_arena *a) {
  int ncap = *cap ? *cap : 4;
  while (ncap < need) ncap *= 2;
  if (a) {
    void *p = mlc_arena_alloc(a, elem * (size_t)ncap);
    if (*cap) memcpy(p, *data, elem * (size_t)*cap);
    *data = p;
  } else {
    *data = mlc_xrealloc(*data, elem * (size_t)ncap);
  }
  *cap = ncap;
}
