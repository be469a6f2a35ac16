/* Reference outputs kept on disk (docs/PROTOCOL.md, "The reference
 * cache"): a workload's unscheduled kernel runs once for every runner,
 * pool, process and MPI rank that shares the directory, instead of once
 * per runner process (4.6 s a call for a 1024^3 matmul).
 *
 * An entry is found by a hash of everything its values depend on: the
 * workload (the hash of its TVMScript text), the input seed, the
 * arguments' dtypes and shapes, and the reference object's bytes and
 * symbol (so a compiler that lowers the workload differently computes it
 * anew). It stores those fields again, is read only when every one of them
 * equals the request's, its size is exactly what they give and its
 * checksum holds; anything else is refused with the reason and the
 * reference is computed again (and the entry rewritten). Only the
 * arguments the kernel changed are stored: the inputs come back from the
 * seeded stream. Entries are written to a temporary file and renamed, so
 * a reader never sees half of one. */
#include "measure/refcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "MLCREF01"
/* magic, the four key fields, the argument count */
enum { HEAD = 8 + 4 * 8 + 4 };

static uint64_t arg_bytes(const mlc_array *x) {
  return (uint64_t)mlc_array_numel(x) * (uint64_t)mlc_dtype_bytes(x->dtype);
}

/* The header: every field the values depend on, and which arguments
 * follow it (those the kernel changed). */
static void put_header(mlc_str *s, const refcache_key *k, int n, const mlc_array *xs,
                       const bool *stored) {
  mlc_str_putn(s, MAGIC, 8);
  uint64_t f[4] = {k->workload, k->seed, mlc_hash_bytes(k->obj, k->obj_len, 0x7e4),
                   mlc_hash_str(k->symbol, 0x7e5)};
  mlc_str_putn(s, (const char *)f, sizeof f);
  uint32_t nargs = (uint32_t)n;
  mlc_str_putn(s, (const char *)&nargs, 4);
  for (int i = 0; i < n; i++) {
    int32_t d[3] = {(int32_t)xs[i].dtype, xs[i].ndim, stored ? stored[i] : 0};
    mlc_str_putn(s, (const char *)d, sizeof d);
    mlc_str_putn(s, (const char *)xs[i].shape, sizeof(int64_t) * (size_t)xs[i].ndim);
  }
}

uint64_t refcache_checksum(const uint8_t *p, size_t len_before) {
  return mlc_hash_bytes(p, len_before, 0x7e7);
}

static char *entry_path(const char *dir, const refcache_key *k, int n, const mlc_array *xs) {
  mlc_str h = {0};
  put_header(&h, k, n, xs, NULL);
  uint64_t name = mlc_hash_bytes(h.data, h.len, 0x7e6);
  mlc_str_free(&h);
  mlc_str p = {0};
  mlc_str_printf(&p, "%s/%016llx.ref", dir, (unsigned long long)name);
  return mlc_str_take(&p);
}

/* The whole file; *missing when there is none. */
static bool read_all(const char *path, uint64_t limit, uint8_t **out, size_t *len, bool *missing,
                     mlc_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  *missing = fd < 0 && (errno == ENOENT || errno == ENOTDIR);
  if (fd < 0) return mlc_error_set(err, "cannot open it: %s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > limit) {
    close(fd);
    return mlc_error_set(err, "not a regular file of at most %llu bytes",
                         (unsigned long long)limit);
  }
  uint8_t *p = mlc_malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (p && got < (size_t)st.st_size) {
    ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!p || got != (size_t)st.st_size) {
    mlc_free(p);
    return mlc_error_set(err, p ? "cannot read it: short read" : "out of memory reading it");
  }
  *out = p;
  *len = got;
  return true;
}

refcache_status refcache_load(const char *dir, const refcache_key *k, int n, mlc_array *xs,
                              uint64_t max_bytes, mlc_error *why) {
  char *path = entry_path(dir, k, n, xs);
  uint8_t *p = NULL;
  size_t len = 0;
  bool missing;
  bool found = read_all(path, max_bytes + 4096 + 128 * (uint64_t)n, &p, &len, &missing, why);
  mlc_free(path);
  if (!found) return missing ? REFCACHE_MISSING : REFCACHE_REFUSED;
  bool ok = refcache_parse(p, len, k, n, xs, why);
  mlc_free(p);
  return ok ? REFCACHE_LOADED : REFCACHE_REFUSED;
}

bool refcache_parse(const uint8_t *p, size_t len, const refcache_key *k, int n, mlc_array *xs,
                    mlc_error *why) {
  /* Which arguments follow the header is the entry's to say; the rest of
   * the header must be the request's, byte for byte. */
  bool stored[MLC_MEASURE_MAX_ARGS] = {0};
  mlc_str want = {0};
  put_header(&want, k, n, xs, NULL);
  bool ok = false;
  size_t pos = 0;
  if (len < HEAD + 8) {
    mlc_error_set(why, "it is cut short (%zu bytes)", len);
    goto done;
  }
  if (memcmp(p, want.data, HEAD) != 0) {
    mlc_error_set(why, "its header is another workload's, seed's or compiler's");
    goto done;
  }
  uint64_t sum;
  memcpy(&sum, p + len - 8, 8);
  if (sum != refcache_checksum(p, len - 8)) {
    mlc_error_set(why, "its checksum does not match its contents");
    goto done;
  }
  pos = HEAD;
  uint64_t data = 0;
  for (int i = 0; i < n; i++) {
    int32_t d[3];
    size_t shape = sizeof(int64_t) * (size_t)xs[i].ndim;
    if (pos + sizeof d + shape > len - 8) {
      mlc_error_set(why, "it ends inside its header");
      goto done;
    }
    memcpy(d, p + pos, sizeof d);
    stored[i] = d[2] == 1;
    if (d[0] != (int32_t)xs[i].dtype || d[1] != xs[i].ndim || (d[2] != 0 && d[2] != 1) ||
        memcmp(p + pos + sizeof d, xs[i].shape, shape) != 0) {
      mlc_error_set(why, "argument %d differs from the request's", i);
      goto done;
    }
    pos += sizeof d + shape;
    if (stored[i]) data += arg_bytes(&xs[i]);
  }
  if ((uint64_t)(len - 8 - pos) != data) {
    mlc_error_set(why, "it holds %llu bytes of values where %llu were expected",
                  (unsigned long long)(len - 8 - pos), (unsigned long long)data);
    goto done;
  }
  for (int i = 0; i < n; i++)
    if (stored[i]) {
      memcpy(xs[i].data, p + pos, arg_bytes(&xs[i]));
      pos += arg_bytes(&xs[i]);
    }
  ok = true;
done:
  mlc_str_free(&want);
  return ok;
}

static bool write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

/* mkdir -p */
static bool make_dirs(const char *dir, mlc_error *err) {
  char *p = mlc_xstrdup(dir);
  bool ok = true;
  for (char *c = p + 1; ok; c++) {
    if (*c != '/' && *c != 0) continue;
    char was = *c;
    *c = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
      ok = mlc_error_set(err, "cannot create %s: %s", p, strerror(errno));
    *c = was;
    if (!was) break;
  }
  mlc_free(p);
  return ok;
}

bool refcache_store(const char *dir, const refcache_key *k, int n, const mlc_array *seeded,
                    const mlc_array *ref, mlc_error *err) {
  if (!make_dirs(dir, err)) return false;
  bool stored[MLC_MEASURE_MAX_ARGS] = {0};
  for (int i = 0; i < n; i++)
    stored[i] = memcmp(seeded[i].data, ref[i].data, arg_bytes(&ref[i])) != 0;
  mlc_str s = {0};
  put_header(&s, k, n, ref, stored);
  for (int i = 0; i < n; i++)
    if (stored[i]) mlc_str_putn(&s, ref[i].data, arg_bytes(&ref[i]));
  uint64_t sum = refcache_checksum((const uint8_t *)s.data, s.len);
  char *path = entry_path(dir, k, n, ref);
  mlc_str tmp = {0};
  mlc_str_printf(&tmp, "%s.%ld.tmp", path, (long)getpid());
  int fd = open(mlc_str_cstr(&tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  bool ok = fd >= 0 && write_all(fd, s.data, s.len) && write_all(fd, &sum, sizeof sum);
  if (fd >= 0 && close(fd) != 0) ok = false;
  if (ok && rename(mlc_str_cstr(&tmp), path) != 0) ok = false;
  if (!ok) {
    mlc_error_set(err, "cannot write %s: %s", path, strerror(errno));
    unlink(mlc_str_cstr(&tmp));
  }
  mlc_str_free(&tmp);
  mlc_free(path);
  mlc_str_free(&s);
  return ok;
}
