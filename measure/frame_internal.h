/* measure: frame encoding shared by the pool and the workers (private).
 * The layout is documented in docs/PROTOCOL.md. */
#ifndef MLC_MEASURE_FRAME_INTERNAL_H
#define MLC_MEASURE_FRAME_INTERNAL_H

#include "measure/measure.h"

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden) /* internal: not exported by libmlc.a */

/* The frame header and types of the wire protocol (docs/PROTOCOL.md). */
#define MLC_FRAME_MAGIC 0x3146434du
#define MLC_FRAME_HEADER 12
#define MLC_FRAME_MAX (256u << 20)

/* References a runner keeps (the outputs of each workload's unscheduled
 * kernel, most recent first). The pool sends a reference object only
 * while the runner may not hold that workload's outputs. */
#define MLC_RUNNER_REF_CACHE 8

typedef enum mlc_frame_type {
  MLC_FRAME_BUILD_REQ = 1,
  MLC_FRAME_BUILD_OK = 2,
  MLC_FRAME_RUN_REQ = 3,
  MLC_FRAME_RUN_OK = 4,
  MLC_FRAME_ERROR = 5,
} mlc_frame_type;

/* One kernel argument as the protocol carries it. */
typedef struct frame_arg {
  uint32_t dtype; /* mlc_dtype */
  uint32_t ndim;  /* <= 8 */
  int64_t shape[8];
} frame_arg;

/* Writing: a frame is built in an mlc_str used as a byte buffer. */
void frame_begin(mlc_str *s, mlc_frame_type type);
void frame_u32(mlc_str *s, uint32_t v);
void frame_u64(mlc_str *s, uint64_t v);
void frame_f64(mlc_str *s, double v);
void frame_bytes(mlc_str *s, const void *p, size_t n);
void frame_str(mlc_str *s, const char *str);
void frame_args(mlc_str *s, int n, const frame_arg *args);
/* Patch the payload length into the header. */
void frame_end(mlc_str *s);

/* Reading a payload: every getter returns 0/NULL once the payload is
 * exhausted or malformed, and sets bad. */
typedef struct frame_reader {
  const uint8_t *p;
  size_t n, pos;
  bool bad;
} frame_reader;

uint32_t frame_get_u32(frame_reader *r);
uint64_t frame_get_u64(frame_reader *r);
double frame_get_f64(frame_reader *r);
/* Points into the payload; *len receives the length. */
const void *frame_get_bytes(frame_reader *r, size_t *len);
/* A NUL-terminated heap copy (mlc_free). */
char *frame_get_str(frame_reader *r);
/* Up to max args; returns the count or -1 (and bad) when malformed. */
int frame_get_args(frame_reader *r, int max, frame_arg *out);

/* Header check: 0 when fine, else a static message. */
const char *frame_check_header(const uint8_t hdr[MLC_FRAME_HEADER], uint32_t *type,
                               uint32_t *len);

/* Blocking I/O that retries on EINTR. write_all uses send(MSG_NOSIGNAL)
 * on sockets so a dead peer is an error, not SIGPIPE. */
bool frame_write_all(int fd, const void *p, size_t n);
/* 1: read n bytes, 0: clean end of input before any byte, -1: error or
 * end of input in the middle. */
int frame_read_all(int fd, void *p, size_t n);


#pragma GCC visibility pop
#endif
