/* libFuzzer harness for the reference cache's entries (measure/refcache.c):
 * any bytes load or are refused, never read past the entry nor write past
 * the arguments. Each input is also tried patched into the start of a
 * real entry with a true checksum, so the fuzzer gets past the header and
 * checksum checks to the argument table and the values behind them. */
#include "fuzz.h"
#include "measure/refcache.h"

#include <dirent.h>
#include <unistd.h>

enum { N_ARGS = 3, HEAD = 8 + 32 + 4 };
static const int64_t SHAPES[N_ARGS][2] = {{3, 5}, {5, 2}, {3, 2}};
static const refcache_key KEY = {0x5eed, 1, "object", 6, "mlc_ref"};
static uint8_t head[HEAD]; /* a real entry's first bytes */

static mlc_array *new_args(float fill) {
  mlc_array *xs = mlc_xmalloc(sizeof(mlc_array) * N_ARGS);
  for (int i = 0; i < N_ARGS; i++) {
    mlc_array *x = mlc_array_new(MLC_FLOAT32, 2, SHAPES[i]);
    for (int64_t k = 0; k < mlc_array_numel(x); k++) ((float *)x->data)[k] = fill;
    xs[i] = *x;
    mlc_free(x);
  }
  return xs;
}

static void free_args(mlc_array *xs) {
  for (int i = 0; i < N_ARGS; i++) mlc_free(xs[i].data);
  mlc_free(xs);
}

/* Store an entry in a scratch directory and keep its first bytes. */
static void make_head(void) {
  char dir[] = "/tmp/fuzz_refcache_XXXXXX";
  if (!mkdtemp(dir)) fuzz_fail("mkdtemp failed", "", "");
  mlc_array *seeded = new_args(0), *ref = new_args(0);
  ((float *)ref[2].data)[0] = 1; /* the kernel changed the last argument */
  mlc_error err;
  if (!refcache_store(dir, &KEY, N_ARGS, seeded, ref, &err)) fuzz_fail("store", err.msg, "");
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[512] = "";
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  if (d) closedir(d);
  FILE *f = fopen(path, "rb");
  if (!f || fread(head, 1, HEAD, f) != HEAD) fuzz_fail("no entry written", path, "");
  fclose(f);
  unlink(path);
  rmdir(dir);
  free_args(seeded);
  free_args(ref);
}

static void try_entry(const uint8_t *p, size_t n) {
  mlc_array *xs = new_args(0);
  mlc_error why;
  refcache_parse(p, n, &KEY, N_ARGS, xs, &why);
  free_args(xs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool ready;
  if (!ready) make_head(), ready = true;
  try_entry(data, size);
  size_t n = HEAD + size + 8;
  uint8_t *p = mlc_xmalloc(n);
  memcpy(p, head, HEAD);
  if (size) memcpy(p + HEAD, data, size);
  uint64_t sum = refcache_checksum(p, n - 8);
  memcpy(p + n - 8, &sum, 8);
  try_entry(p, n);
  mlc_free(p);
  return 0;
}
