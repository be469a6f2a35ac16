/* base: the small pieces every other module stands on.
 *
 *   mlc_arena   owns trees: allocate, never free pieces, free all at once.
 *   mlc_malloc  every heap allocation goes through one hook (tests can make
 *               the Nth allocation fail and check nothing crashes or leaks).
 *   MLC_VEC     growable arrays, either on the heap or inside an arena.
 *   mlc_str     a growable string builder on the heap.
 *   mlc_error   an error message returned to the caller (library code never
 *               exits; tools print the message).
 *   mlc_hash    64-bit hashing, identical on every platform.
 *   mlc_pcg32   PCG32 (XSH-RR, 64-bit state, stream selector).
 *   mlc_json    a small JSON reader (into an arena) and writer helpers.
 *
 * Out of memory: mlc_xmalloc and friends abort with a message unless an
 * arena has an escape point set (mlc_arena_set_oom_jump), in which case the
 * arena longjmps there; the parser uses this so a failed allocation becomes
 * an error, and everything it allocated is still owned by the arena.
 */
#ifndef MLC_BASE_H
#define MLC_BASE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MLC_VERSION "0.1.0"

/* ---- invariants ---------------------------------------------------- */

_Noreturn void mlc_panic(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define MLC_ASSERT(c) \
  ((c) ? (void)0 : mlc_panic(__FILE__, __LINE__, "assertion failed: %s", #c))
#define mlc_unreachable() mlc_panic(__FILE__, __LINE__, "unreachable")
#define MLC_COUNTOF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define MLC_UNUSED(x) ((void)(x))

/* ---- checked arithmetic -------------------------------------------- */

/* Integers that come from input (trace factors and attributes, shapes,
 * extents, strides, file headers) are combined only through these, so a
 * hostile value cannot wrap around to a plausible one. Each stores a + b
 * (a - b, a * b) in *out and returns true when the exact result does not
 * fit in int64 (*out is then meaningless), like __builtin_*_overflow. */
static inline bool mlc_add_overflow(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out);
}
static inline bool mlc_sub_overflow(int64_t a, int64_t b, int64_t *out) {
  return __builtin_sub_overflow(a, b, out);
}
static inline bool mlc_mul_overflow(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}
/* Product of v[0..n) into *out; true on overflow (1 when n == 0). */
bool mlc_prod_overflow(const int64_t *v, int n, int64_t *out);

/* ---- allocation hook ----------------------------------------------- */

/* Lua-style allocator: nsize == 0 frees ptr; otherwise (re)allocates.
 * Returns NULL on failure. */
typedef void *(*mlc_alloc_fn)(void *ud, void *ptr, size_t nsize);
void mlc_set_allocator(mlc_alloc_fn fn, void *ud);
/* Default allocator, for hooks that wrap it. */
void *mlc_default_alloc(void *ud, void *ptr, size_t nsize);

void *mlc_malloc(size_t n);            /* NULL on failure */
void *mlc_realloc(void *p, size_t n);  /* NULL on failure, p untouched */
void mlc_free(void *p);
void *mlc_xmalloc(size_t n);           /* zeroed; aborts on failure */
void *mlc_xrealloc(void *p, size_t n); /* aborts on failure */
char *mlc_xstrdup(const char *s);

/* ---- arena ---------------------------------------------------------- */

typedef struct mlc_arena mlc_arena;
mlc_arena *mlc_arena_new(void);
/* The same, but NULL when the header cannot be allocated,
 * for entry points that report running out of memory as an error. */
mlc_arena *mlc_arena_try_new(void);
void mlc_arena_free(mlc_arena *a);
/* Zeroed memory, 16-byte aligned. On failure: longjmp to the oom jump if
 * set, else abort. */
void *mlc_arena_alloc(mlc_arena *a, size_t n);
/* The same, not zeroed: for memory the caller writes whole before reading
 * it (a copy). */
void *mlc_arena_alloc_uninit(mlc_arena *a, size_t n);
void *mlc_arena_memdup(mlc_arena *a, const void *p, size_t n);
char *mlc_arena_strdup(mlc_arena *a, const char *s);
char *mlc_arena_strndup(mlc_arena *a, const char *s, size_t n);
char *mlc_arena_printf(mlc_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Names without parsing a format (a schedule's new loops, blocks and
 * buffers, thousands of them a second): "<s>_<k>", "<s><k>" and "<x><y>",
 * as mlc_arena_printf(a, "%s_%d", s, k), "%s%d" and "%s%s" would. */
char *mlc_arena_suffixed(mlc_arena *a, const char *s, int64_t k);
char *mlc_arena_numbered(mlc_arena *a, const char *s, int64_t k);
char *mlc_arena_concat(mlc_arena *a, const char *x, const char *y);
/* Set (or clear with NULL) where an allocation failure jumps to. */
void mlc_arena_set_oom_jump(mlc_arena *a, jmp_buf *jb);
/* The escape point now set (NULL: none), so that an entry point can set
 * its own and put the caller's back on return. */
jmp_buf *mlc_arena_oom_jump(const mlc_arena *a);
/* A scratch arena that parent owns: freed with parent at the latest (or
 * earlier, by mlc_arena_free). Running out of memory in it, its header
 * included, jumps to its own escape point or else to its nearest
 * ancestor's, so scratch taken under a caller's escape point needs no
 * cleanup of its own when that point is taken. Not thread-safe for one
 * parent. */
mlc_arena *mlc_arena_new_child(mlc_arena *parent);
size_t mlc_arena_bytes_used(const mlc_arena *a);
/* The size of the chunks arenas take from the heap
 * (0: the default, 64 KiB), for tests that fail the Nth allocation and
 * want failures to land inside an operation, not only at its first chunk.
 * Set it before any arena in use gets its next chunk; not thread-safe. */
void mlc_arena_set_chunk_size(size_t bytes);

#define MLC_NEW(a, T) ((T *)mlc_arena_alloc((a), sizeof(T)))
#define MLC_NEW_ARRAY(a, T, n) ((T *)mlc_arena_alloc((a), sizeof(T) * (size_t)(n)))

/* ---- growable vectors ---------------------------------------------- */

/* Declare with: MLC_VEC(int) v = {0};
 * MLC_VEC_PUSH grows on the heap (free with MLC_VEC_FREE);
 * MLC_VEC_APUSH grows inside an arena (never freed separately). */
#define MLC_VEC(T) struct { T *data; int len, cap; }
void mlc_vec_grow_(void **data, int *cap, int need, size_t elem, mlc_arena *a);
#define MLC_VEC_PUSH(v, x)                                                   \
  do {                                                                       \
    if ((v).len + 1 > (v).cap)                                               \
      mlc_vec_grow_((void **)&(v).data, &(v).cap, (v).len + 1,               \
                    sizeof(*(v).data), NULL);                                \
    (v).data[(v).len++] = (x);                                               \
  } while (0)
#define MLC_VEC_APUSH(a, v, x)                                               \
  do {                                                                       \
    if ((v).len + 1 > (v).cap)                                               \
      mlc_vec_grow_((void **)&(v).data, &(v).cap, (v).len + 1,               \
                    sizeof(*(v).data), (a));                                 \
    (v).data[(v).len++] = (x);                                               \
  } while (0)
#define MLC_VEC_FREE(v) (mlc_free((v).data), (v).data = NULL, (v).len = (v).cap = 0)

/* ---- string builder ------------------------------------------------- */

typedef struct mlc_str {
  char *data; /* always NUL-terminated once anything was appended */
  size_t len, cap;
  /* Grow inside this arena instead of on the heap
   * (NULL: heap), so that a string built under an arena's escape point
   * jumps there when memory runs out and leaves nothing to free;
   * mlc_str_free then only forgets the text, mlc_str_take refuses. */
  mlc_arena *arena;
} mlc_str;

void mlc_str_putc(mlc_str *s, char c);
void mlc_str_puts(mlc_str *s, const char *t);
void mlc_str_putn(mlc_str *s, const char *t, size_t n);
void mlc_str_put_i64(mlc_str *s, int64_t v); /* decimal, as "%" PRId64 prints it */
void mlc_str_reserve(mlc_str *s, size_t extra); /* room for extra more bytes */
void mlc_str_printf(mlc_str *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mlc_str_vprintf(mlc_str *s, const char *fmt, va_list ap);
void mlc_str_indent(mlc_str *s, int spaces);
const char *mlc_str_cstr(mlc_str *s); /* "" when empty */
char *mlc_str_take(mlc_str *s);       /* caller frees with mlc_free */
void mlc_str_clear(mlc_str *s);
void mlc_str_free(mlc_str *s);
/* Shortest decimal text that reads back as the same double ("1", "0.5",
 * "1e-07", "inf", "nan" as Python's repr would mostly print). */
void mlc_str_put_double(mlc_str *s, double v);
void mlc_str_put_float(mlc_str *s, float v); /* shortest for float32 */

/* Whether an LLVM feature list ("+avx2,-avx512f,+fma": items "+f" / "-f"
 * separated by commas) turns `feature` on; the last item naming it wins. */
bool mlc_feature_list_has(const char *list, const char *feature);

/* ---- errors --------------------------------------------------------- */

/* An error returned to the caller. Functions that can fail take an
 * mlc_error * (may be NULL) and return false / NULL / -1 on failure. */
typedef struct mlc_error {
  char msg[1024];
} mlc_error;

/* Always returns false, so `return mlc_error_set(err, ...)` reads well. */
bool mlc_error_set(mlc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
bool mlc_error_vset(mlc_error *err, const char *fmt, va_list ap);
/* Prefix an existing message: "context: old message". */
bool mlc_error_prefix(mlc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- size limits ---------------------------------------------------- */

/* The largest tensor that input may ask for: 2^31 elements and 8 GiB.
 * Every allocation whose size comes from input (a .npy or model shape, a
 * shape inferred from them, a parsed buffer the interpreter allocates, an
 * mlc_array) is checked against these before it is made. */
#define MLC_MAX_TENSOR_ELEMS (INT64_C(1) << 31)
#define MLC_MAX_TENSOR_BYTES (INT64_C(8) << 30)
/* Lowers the limits for this process (0: back to the defaults above; a
 * value above them keeps the default): the fuzz harnesses use it so that
 * each input runs in bounded time. Not thread-safe; set it first. */
void mlc_set_tensor_limits(int64_t max_elems, int64_t max_bytes);
/* Element count of a shape of non-negative extents if it is within the
 * limits for elements of elem_bytes bytes; else -1 with err set to
 * "WHAT has shape [..]: ... over the limit" (what names the tensor). */
int64_t mlc_tensor_numel_checked(const char *what, const int64_t *shape, int ndim,
                                 int elem_bytes, mlc_error *err);

/* ---- files ---------------------------------------------------------- */

/* Whole file into heap memory (NUL-terminated). NULL with error set. */
char *mlc_read_file(const char *path, size_t *len, mlc_error *err);
bool mlc_write_file(const char *path, const void *data, size_t len, mlc_error *err);

/* ---- time ----------------------------------------------------------- */

/* Seconds on the monotonic clock (for intervals; the epoch is arbitrary). */
double mlc_now_sec(void);
/* The median of v[0..n) (n >= 1; the mean of the middle two when n is
 * even); sorts v. */
double mlc_median(double *v, int n);

/* ---- hashing -------------------------------------------------------- */

uint64_t mlc_hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t mlc_hash_combine(uint64_t h, uint64_t v);
uint64_t mlc_hash_str(const char *s, uint64_t seed);

/* ---- PCG32 ---------------------------------------------------------- */

typedef struct mlc_pcg32 {
  uint64_t state, inc;
} mlc_pcg32;
void mlc_pcg32_seed(mlc_pcg32 *r, uint64_t initstate, uint64_t initseq);
uint32_t mlc_pcg32_next(mlc_pcg32 *r);
uint32_t mlc_pcg32_bounded(mlc_pcg32 *r, uint32_t bound); /* [0, bound) unbiased */
double mlc_pcg32_double(mlc_pcg32 *r);                    /* [0, 1) */
float mlc_pcg32_uniform(mlc_pcg32 *r, float lo, float hi);

/* ---- JSON ----------------------------------------------------------- */

typedef enum mlc_json_kind {
  MLC_JSON_NULL,
  MLC_JSON_BOOL,
  MLC_JSON_NUMBER,
  MLC_JSON_STRING,
  MLC_JSON_ARRAY,
  MLC_JSON_OBJECT,
} mlc_json_kind;

typedef struct mlc_json mlc_json;
struct mlc_json {
  mlc_json_kind kind;
  bool boolean;
  double number;
  bool is_integer;  /* number was written without fraction or exponent */
  int64_t integer;  /* valid when is_integer */
  const char *str;  /* STRING (NUL-terminated; may contain no NUL) */
  int len;          /* ARRAY / OBJECT element count */
  mlc_json **items; /* ARRAY elements or OBJECT values */
  const char **keys; /* OBJECT keys, in file order */
};

/* Parse one JSON value (surrounding whitespace allowed, nothing else).
 * Errors say "line L, column C: expected ...". */
mlc_json *mlc_json_parse(mlc_arena *a, const char *text, size_t len, mlc_error *err);
const mlc_json *mlc_json_get(const mlc_json *obj, const char *key); /* NULL if absent */
void mlc_json_write_string(mlc_str *s, const char *str); /* quoted, escaped */
void mlc_json_write_number(mlc_str *s, double v);        /* shortest round trip; ints plain */
/* Members of an object being written: the comma before all but the first
 * (*first true before it), "key":, then the value (a NULL string: null). */
void mlc_json_write_key(mlc_str *s, bool *first, const char *key);
void mlc_json_write_member_string(mlc_str *s, bool *first, const char *key, const char *v);
void mlc_json_write_member_number(mlc_str *s, bool *first, const char *key, double v);
/* Canonical compact text of a parsed value (keys in stored order). */
void mlc_json_write(mlc_str *s, const mlc_json *v);

#endif
