/* PNG files of 8-bit RGB images: signature, IHDR, one zlib-compressed
 * IDAT (every row with filter type 0), IEND; CRCs by zlib. */
#include "report/report_internal.h"

#include <string.h>
#include <zlib.h>

static void put_u32(mlc_str *o, uint32_t v) {
  char b[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
  mlc_str_putn(o, b, 4);
}

/* A chunk: length, type, data, CRC of type and data. */
static void chunk(mlc_str *o, const char type[4], const uint8_t *data, size_t n) {
  put_u32(o, (uint32_t)n);
  mlc_str_putn(o, type, 4);
  if (n > 0) mlc_str_putn(o, (const char *)data, n);
  uLong crc = crc32(0, (const Bytef *)type, 4);
  if (n > 0) crc = crc32(crc, data, (uInt)n); /* not with NULL: that resets it */
  put_u32(o, (uint32_t)crc);
}

void png_encode(mlc_str *out, const uint8_t *rgb, int w, int h) {
  MLC_ASSERT(w > 0 && h > 0);
  size_t row = (size_t)w * 3, raw_n = (row + 1) * (size_t)h;
  uint8_t *raw = mlc_xmalloc(raw_n);
  for (int y = 0; y < h; y++) memcpy(raw + (row + 1) * y + 1, rgb + row * y, row);
  uLongf z_n = compressBound((uLong)raw_n);
  uint8_t *z = mlc_xmalloc(z_n);
  int rc = compress2(z, &z_n, raw, (uLong)raw_n, 6);
  if (rc != Z_OK) mlc_panic(__FILE__, __LINE__, "png: zlib compress2 failed (%d)", rc);
  uint8_t ihdr[13] = {(uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                      (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                      8, 2, 0, 0, 0}; /* 8 bits, truecolour, deflate, filter 0, no interlace */
  mlc_str_putn(out, "\x89PNG\r\n\x1a\n", 8);
  chunk(out, "IHDR", ihdr, sizeof ihdr);
  chunk(out, "IDAT", z, z_n);
  chunk(out, "IEND", NULL, 0);
  mlc_free(raw);
  mlc_free(z);
}
