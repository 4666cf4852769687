/* npy.h - NumPy .npy files (format versions 1 to 3), read whole: the element type's descriptor
 * ("<f4"), the element count and the data. C order only.
 *
 *   char descr[16]; size_t count; void *data;
 *   if (npy_read("a.npy", 1 << 30, descr, sizeof descr, &count, &data, &err) == TUNE_OK) ...
 *
 * Errors (TUNE_ERR_IO, TUNE_ERR_PARSE) name the file and say what was expected.
 */
#ifndef TUNE_NPY_H
#define TUNE_NPY_H

#include <stddef.h>

#include "core/error.h"

/* Reads path (at most max_bytes of data): descr gets the dtype string as written ("<f4",
 * "|u1"), *count the product of the shape, *data a new buffer of the raw elements. */
TUNE_MUST_CHECK tune_status npy_read(const char *path, size_t max_bytes, char *descr,
                                     size_t descr_size, size_t *count, void **data,
                                     tune_error *err);

#endif
