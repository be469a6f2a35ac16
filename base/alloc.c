/* The one allocation hook, the arena, growable vectors and fatal errors. */
#include "base/base.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A new block of 4 KiB or more starts on a cache line (64 bytes): what
 * kernels read and write is mostly such blocks (arrays, workspaces), and
 * malloc's 16-byte alignment splits every 64-byte vector or AMX tile row
 * over two lines (measured: a tuned AMX int8 1024^3 product ran 2.3x
 * slower, 1.46 vs 0.63 ms, on malloc's arrays). realloc keeps no
 * alignment, which only growing vectors use. */
void *mlc_default_alloc(void *ud, void *ptr, size_t nsize) {
  MLC_UNUSED(ud);
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (!ptr && nsize >= 4096 && nsize <= SIZE_MAX - 63) return aligned_alloc(64, (nsize + 63) & ~(size_t)63);
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

/* Out of memory, by path (tests/test_base_allocfail.c fails every allocation of
 * each in turn, with small arena chunks so failures land inside the work,
 * and checks which of the two happens):
 *
 * Returns an error, nothing leaked. Each entry point sets an escape point
 * on the arena that holds its work (and puts the caller's back), so a
 * failed chunk jumps back and everything taken stays owned by the arena;
 * scratch arenas made with mlc_arena_new_child jump to their parent's
 * escape point and are freed with it: mlc_parse_module, mlc_json_parse;
 * mlc_trace_from_json; mlc_sched_try_new (the copy of the function) and
 * mlc_sched_replay (every primitive it runs: their messages are built in
 * the state's arena too); mlc_target_lower; mlc_verify_func,
 * mlc_verify_func_in and mlc_graph_verify (scratch arenas); mlc_graph_parse
 * (JSON, graph, seeded weights and the verifiers' scratch under the
 * module's escape point); mlc_graph_run_pipeline (each pass under the
 * module's escape point, its scratch in children of the module's arena:
 * the maps of rewrite, fuse, fuse_tir and dce, fold's reference
 * evaluation, dce's structural hashes); mlc_func_struct_hash_in and
 * mlc_func_struct_equal_in (under the escape point of the scratch arena
 * they are given), so the db's workload keys and IR text
 * (mlc_db_add_workload, mlc_db_find_workload); the db's record texts,
 * canonical trace and run times (mlc_db_commit, mlc_db_trace_hash but
 * for its copy into the caller's mlc_str), and
 * the records it reads back into the caller's arena (mlc_db_top_k,
 * mlc_db_records, mlc_db_get_record: an escape point of their own on it);
 * the db's scratch arena headers (mlc_arena_try_new); mlc_interp_run;
 * mlc_array_try_new, mlc_npy_parse; SQLite's own allocations, routed here
 * by db/db.c, which come back as SQLITE_NOMEM errors of the db functions
 * (or are absorbed by SQLite with the same result).
 *
 * Aborts by design, through mlc_xmalloc/mlc_xrealloc or an arena with no
 * escape point. Fixed size: arena headers (mlc_arena_new; a child's header
 * under no escape point), the module of mlc_graph_new, mlc_affine_bindings'
 * context. Not yet converted, and sized by input: heap vectors
 * (MLC_VEC_PUSH) and heap strings (mlc_str without an arena) of callers
 * with no error path; mlc_sched_new and primitives called outside replay
 * (the tuner's); a graph pass called alone, outside the pipeline (no
 * escape point on the module's arena), and mlc_graph_extract_tasks,
 * mlc_tuner_cpu_default_schedule, mlc_graph_reference; mlc_func_struct_hash,
 * mlc_func_struct_equal and mlc_func_hash_hex (scratch arena with no
 * escape point: no error path), so the tuner's hashes; the db's run times
 * appended by mlc_db_add_run_secs (heap), its workload, target and count
 * listings read into the caller's arena (no escape point); mlc_read_file. */
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

/* Under AddressSanitizer the unused part of each chunk is poisoned and
 * every allocation is followed by a poisoned gap, so a read or write past
 * the end of an arena allocation (an index checked against a wrong shape)
 * is reported as it is for malloc'd blocks, not lost inside the chunk. */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
enum { ARENA_GAP = 16, ARENA_CACHE = 0 };
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
enum { ARENA_GAP = 0, ARENA_CACHE = 1 };
#endif

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct mlc_arena {
  chunk *head;
  jmp_buf *oom; /* where an allocation failure jumps, if set */
  size_t total;
  /* Child arenas (mlc_arena_new_child): the parent, and the list of a
   * parent's live children, so that freeing the parent frees them. */
  mlc_arena *parent, *children, *next_sibling;
};

enum { CHUNK_SIZE = 64 * 1024 };
static size_t chunk_size = CHUNK_SIZE;

/* Freed chunks of the standard size are kept per thread for the next
 * arena. A schedule's replay makes and frees a few arenas, and the search
 * frees the states of dozens of scored candidates at once (hundreds of
 * chunks); glibc gave their memory back to the system as often (trimming
 * the top of its heap), so the kernel faulted in and zeroed every chunk
 * again: a tenth of a search round went there. Only with the default
 * allocator (a hook sees every allocation) and not under AddressSanitizer
 * (whose quarantine finds a use after free). A thread's chunks are freed
 * when it exits. */
enum { CACHED_CHUNKS = 128 }; /* 8 MiB a thread at most */

typedef struct chunk_cache {
  chunk *head;
  int n;
  bool registered; /* with the key, for the destructor at thread exit */
} chunk_cache;

static _Thread_local chunk_cache cache;
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static void release_cache(void *p) {
  chunk_cache *cc = p;
  for (chunk *c = cc->head, *next; c; c = next) {
    next = c->next;
    mlc_free(c);
  }
  cc->head = NULL;
  cc->n = 0;
  cc->registered = false; /* a chunk freed by a later destructor registers again */
}

static void make_cache_key(void) { pthread_key_create(&cache_key, release_cache); }

static bool caching(void) { return ARENA_CACHE && alloc_fn == mlc_default_alloc; }

static void free_chunk(chunk *c) {
  if (!caching() || c->size != chunk_size || cache.n >= CACHED_CHUNKS) {
    mlc_free(c);
    return;
  }
  if (!cache.registered) {
    pthread_once(&cache_key_once, make_cache_key);
    cache.registered = pthread_setspecific(cache_key, &cache) == 0;
  }
  c->next = cache.head;
  cache.head = c;
  cache.n++;
}

/* A chunk of chunk_size bytes from this thread's cache, or NULL. */
static chunk *cached_chunk(void) {
  while (cache.head && caching()) {
    chunk *c = cache.head;
    cache.head = c->next;
    cache.n--;
    if (c->size == chunk_size) return c;
    mlc_free(c); /* kept before the size changed */
  }
  return NULL;
}

void mlc_arena_set_chunk_size(size_t bytes) { chunk_size = bytes ? bytes : CHUNK_SIZE; }

mlc_arena *mlc_arena_new(void) { return mlc_xmalloc(sizeof(mlc_arena)); }

mlc_arena *mlc_arena_try_new(void) {
  mlc_arena *a = mlc_malloc(sizeof *a);
  if (a) memset(a, 0, sizeof *a);
  return a;
}

/* The escape point a failure in a takes: its own, else its nearest
 * ancestor's (NULL: none, abort). */
static jmp_buf *oom_target(const mlc_arena *a) {
  for (; a; a = a->parent)
    if (a->oom) return a->oom;
  return NULL;
}

mlc_arena *mlc_arena_new_child(mlc_arena *parent) {
  mlc_arena *a = mlc_malloc(sizeof *a);
  if (!a) {
    jmp_buf *jb = oom_target(parent);
    if (jb) longjmp(*jb, 1);
    mlc_panic(__FILE__, __LINE__, "out of memory allocating %zu bytes", sizeof *a);
  }
  memset(a, 0, sizeof *a);
  a->parent = parent;
  a->next_sibling = parent->children;
  parent->children = a;
  return a;
}

static void unlink_child(mlc_arena *a) {
  mlc_arena **p = &a->parent->children;
  while (*p != a) p = &(*p)->next_sibling;
  *p = a->next_sibling;
}

static void free_tree(mlc_arena *a) {
  for (mlc_arena *k = a->children, *next; k; k = next) {
    next = k->next_sibling;
    free_tree(k);
  }
  for (chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    ASAN_UNPOISON_MEMORY_REGION(c->data, c->size);
    free_chunk(c);
  }
  mlc_free(a);
}

void mlc_arena_free(mlc_arena *a) {
  if (!a) return;
  if (a->parent) unlink_child(a);
  free_tree(a);
}

void mlc_arena_set_oom_jump(mlc_arena *a, jmp_buf *jb) { a->oom = jb; }
jmp_buf *mlc_arena_oom_jump(const mlc_arena *a) { return a->oom; }
size_t mlc_arena_bytes_used(const mlc_arena *a) { return a->total; }

static chunk *add_chunk(mlc_arena *a, size_t need) {
  size_t size = need > chunk_size ? need : chunk_size;
  chunk *c = size == chunk_size ? cached_chunk() : NULL;
  if (!c) c = mlc_malloc(sizeof(chunk) + size);
  if (!c) {
    jmp_buf *jb = oom_target(a);
    if (jb) longjmp(*jb, 1);
    mlc_panic(__FILE__, __LINE__, "out of memory allocating %zu bytes", need);
  }
  c->size = size;
  c->used = 0;
  ASAN_POISON_MEMORY_REGION(c->data, size);
  /* A dedicated big chunk goes behind the head so the head keeps serving
   * small requests. */
  if (a->head && need > chunk_size) {
    c->next = a->head->next;
    a->head->next = c;
  } else {
    c->next = a->head;
    a->head = c;
  }
  return c;
}

void *mlc_arena_alloc_uninit(mlc_arena *a, size_t want) {
  size_t n = ((want + 15) & ~(size_t)15) + ARENA_GAP;
  if (n == 0) n = 16;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) c = add_chunk(a, n);
  void *p = c->data + c->used;
  c->used += n;
  a->total += n;
  ASAN_UNPOISON_MEMORY_REGION(p, want);
  return p;
}

void *mlc_arena_alloc(mlc_arena *a, size_t want) {
  void *p = mlc_arena_alloc_uninit(a, want);
  memset(p, 0, want);
  return p;
}

void *mlc_arena_memdup(mlc_arena *a, const void *p, size_t n) {
  void *q = mlc_arena_alloc_uninit(a, n);
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

/* s, then sep (if not 0), then k in decimal. */
static char *with_number(mlc_arena *a, const char *s, char sep, int64_t k) {
  char digits[24];
  int n = 0;
  uint64_t u = k < 0 ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
  do digits[n++] = (char)('0' + u % 10), u /= 10;
  while (u);
  if (k < 0) digits[n++] = '-';
  size_t len = strlen(s);
  char *p = mlc_arena_alloc_uninit(a, len + (size_t)n + 2), *q = p + len;
  memcpy(p, s, len);
  if (sep) *q++ = sep;
  while (n) *q++ = digits[--n];
  *q = '\0';
  return p;
}

char *mlc_arena_suffixed(mlc_arena *a, const char *s, int64_t k) { return with_number(a, s, '_', k); }
char *mlc_arena_numbered(mlc_arena *a, const char *s, int64_t k) { return with_number(a, s, 0, k); }

char *mlc_arena_concat(mlc_arena *a, const char *x, const char *y) {
  size_t nx = strlen(x), ny = strlen(y);
  char *p = mlc_arena_alloc_uninit(a, nx + ny + 1);
  memcpy(p, x, nx);
  memcpy(p + nx, y, ny + 1);
  return p;
}

/* ---- vectors ---------------------------------------------------------- */

void mlc_vec_grow_(void **data, int *cap, int need, size_t elem, mlc_arena *a) {
  int ncap = *cap ? *cap : 4;
  while (ncap < need) ncap *= 2;
  if (a) { /* the new room past the old elements is never read before written */
    void *p = mlc_arena_alloc_uninit(a, elem * (size_t)ncap);
    if (*cap) memcpy(p, *data, elem * (size_t)*cap);
    *data = p;
  } else {
    *data = mlc_xrealloc(*data, elem * (size_t)ncap);
  }
  *cap = ncap;
}
