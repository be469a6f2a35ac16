/* Kernel workspace (see mlcrt.h): a few freed blocks kept per thread.
 *
 * Why: a fused kernel's intermediates are megabytes, allocated and freed
 * on every call. glibc serves such a block with mmap and returns it with
 * munmap until a larger one has been freed (its mmap threshold adapts
 * only then), so each call touches fresh pages: one page fault per 4 KiB,
 * which under a hypervisor cost a third of a 3 ms dense layer. Which
 * case a call lands in depended on what the process freed before, so the
 * same kernel timed 50% apart in two processes. Keeping the last blocks
 * makes a kernel called again reuse its memory, whatever the allocator's
 * state.
 *
 * The cache lives in thread-local storage (kernels allocate on the
 * calling thread and on the runtime's workers); a thread's blocks are
 * freed when it exits (a pthread key's destructor) or by
 * mlc_rt_workspace_release. */
#include "targets/runtime/mlcrt.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#define CACHED_BLOCKS 8
#define ALIGN 64
/* 256 TiB: more than any machine has; refused before the size is rounded
 * (no overflow) and before the allocator sees it. */
#define MAX_BYTES ((int64_t)1 << 48)

typedef struct ws_block {
  void *p;
  int64_t bytes;
} ws_block;

typedef struct ws_cache {
  ws_block blocks[CACHED_BLOCKS];
  int n;
  bool registered; /* with the key, for the destructor at thread exit */
} ws_cache;

static _Thread_local ws_cache cache;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void release(void *p) {
  ws_cache *c = p;
  for (int i = 0; i < c->n; i++) free(c->blocks[i].p);
  c->n = 0;
}

static void make_key(void) { pthread_key_create(&exit_key, release); }

static int64_t rounded(int64_t bytes) { return (bytes + ALIGN - 1) / ALIGN * ALIGN; }

void *mlc_rt_workspace_alloc(int64_t bytes) {
  if (bytes > MAX_BYTES) return NULL;
  if (bytes <= 0) bytes = 1;
  bytes = rounded(bytes);
  /* the smallest cached block that fits without wasting more than 3/4 */
  int best = -1;
  for (int i = 0; i < cache.n; i++) {
    int64_t b = cache.blocks[i].bytes;
    if (b >= bytes && b / 4 <= bytes && (best < 0 || b < cache.blocks[best].bytes)) best = i;
  }
  if (best < 0) return aligned_alloc(ALIGN, (size_t)bytes);
  void *p = cache.blocks[best].p;
  cache.blocks[best] = cache.blocks[--cache.n];
  return p;
}

void mlc_rt_workspace_free(void *p, int64_t bytes) {
  if (!p) return;
  bytes = rounded(bytes <= 0 ? 1 : bytes > MAX_BYTES ? MAX_BYTES : bytes);
  if (!cache.registered) {
    pthread_once(&key_once, make_key);
    cache.registered = pthread_setspecific(exit_key, &cache) == 0;
  }
  if (cache.n < CACHED_BLOCKS) {
    cache.blocks[cache.n++] = (ws_block){p, bytes};
    return;
  }
  /* full: keep the larger blocks (they are the ones that fault most) */
  int small = 0;
  for (int i = 1; i < cache.n; i++)
    if (cache.blocks[i].bytes < cache.blocks[small].bytes) small = i;
  if (cache.blocks[small].bytes >= bytes) {
    free(p);
    return;
  }
  free(cache.blocks[small].p);
  cache.blocks[small] = (ws_block){p, bytes};
}

void mlc_rt_workspace_release(void) { release(&cache); }
