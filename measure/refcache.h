/* measure: reference outputs kept on disk (private; refcache.c). */
#ifndef MLC_MEASURE_REFCACHE_H
#define MLC_MEASURE_REFCACHE_H

#include "measure/measure.h"
#include "ir/ir.h"

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* What a reference's values depend on. */
typedef struct refcache_key {
  uint64_t workload; /* the hash of the workload's TVMScript text */
  uint64_t seed;     /* of the input values */
  const void *obj;   /* the unscheduled kernel's object, and its symbol */
  size_t obj_len;
  const char *symbol;
} refcache_key;

typedef enum refcache_status {
  REFCACHE_MISSING, /* no entry */
  REFCACHE_LOADED,  /* xs hold the reference */
  REFCACHE_REFUSED, /* an entry that is not this reference's (why says how) */
} refcache_status;

/* The entry for k and xs's dtypes and shapes, read into xs, which hold
 * the seeded inputs: the arguments the kernel changes are overwritten
 * (xs are untouched unless it is LOADED). Files over max_bytes of values
 * are refused. */
refcache_status refcache_load(const char *dir, const refcache_key *k, int n, mlc_array *xs,
                              uint64_t max_bytes, mlc_error *why);
/* The same on an entry's bytes (refcache_load's checks; the fuzzer's
 * entry point): true with xs filled. */
bool refcache_parse(const uint8_t *p, size_t len, const refcache_key *k, int n, mlc_array *xs,
                    mlc_error *why);
/* An entry's checksum: of every byte before its last 8, which hold it. */
uint64_t refcache_checksum(const uint8_t *p, size_t len_before);
/* Keep ref (what the kernel left in the arguments that held `seeded`) for
 * k, creating dir and its parents when missing. */
bool refcache_store(const char *dir, const refcache_key *k, int n, const mlc_array *seeded,
                    const mlc_array *ref, mlc_error *err);

#pragma GCC visibility pop

#endif
