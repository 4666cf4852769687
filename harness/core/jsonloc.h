/* jsonloc.h - where a JSON path lies in JSON text, for error messages with line:column
 * (Jansson keeps no positions for values).
 *
 *   int line, col;
 *   if (jsonloc_find(text, "$.params.chunk.pow2[0]", JSONLOC_VALUE, &line, &col) == 0) ...
 *
 * Paths: "$" is the root; ".name" selects an object member whose key matches
 * [A-Za-z_][A-Za-z0-9_]*; "[\"any key\"]" selects any member (JSON string escapes); "[N]" an array
 * element (0-based). jsonloc_path_key and jsonloc_path_index build such paths.
 * Positions are 1-based; columns count bytes. For duplicate keys jsonloc_find takes the last one
 * (as Jansson); tune refuses them first with jsonloc_find_duplicate:
 *
 *   char path[256]; int line, col, first_line, first_col;
 *   if (jsonloc_find_duplicate(text, path, sizeof path, &line, &col, &first_line, &first_col) == 1)
 *       "line:col: path: duplicate key (first at first_line:first_col)"
 */
#ifndef TUNE_JSONLOC_H
#define TUNE_JSONLOC_H

#include <stddef.h>

typedef enum {
    JSONLOC_VALUE, /* first character of the value */
    JSONLOC_KEY    /* opening quote of the member's key (the value's position for array elements
                      and the root) */
} jsonloc_which;

/* 0 and *line, *col on success; -1 when the path is not in the text or the text is malformed
 * before reaching it. */
int jsonloc_find(const char *text, const char *path, jsonloc_which which, int *line, int *col);

/* The first member key, in text order, that repeats an earlier key of the same object (keys
 * compared after decoding escapes): 1 with the member's JSON path in path (size bytes, truncated
 * safely), the repeat's key position in *line, *col and the first one's in *first_line,
 * *first_col; 0 when no object has a duplicate key; -1 when the text is malformed before one is
 * found, or out of memory. Linear in the text's length; nesting deeper than Jansson's limit is
 * malformed. */
int jsonloc_find_duplicate(const char *text, char *path, size_t size, int *line, int *col,
                           int *first_line, int *first_col);

/* Appends ".key" (or "[\"key\"]" when needed) to path (a NUL-terminated buffer of size bytes);
 * returns path. Truncates safely. */
char *jsonloc_path_key(char *path, size_t size, const char *key);
/* Appends "[index]". */
char *jsonloc_path_index(char *path, size_t size, size_t index);

#endif
