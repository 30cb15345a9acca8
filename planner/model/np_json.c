/*
 * np_json.c -- a JSON input file read whole and parsed (np_json.h).
 */
#include "np_json.h"

#include <stdbool.h>
#include <stdlib.h>

#include "np_file.h"

json_t *np_json_read(const char *path, const char *what, size_t max_bytes, size_t flags,
                     np_error *err)
{
    char *text;
    size_t len;
    if (np_file_read(path, what, max_bytes, &text, &len, err))
        return NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, flags, &jerr);
    bool bom = !root && np_text_has_bom(text, len);
    free(text);
    if (bom)
        np_error_set(err, NP_EXIT_INPUT, path, "", 1, "%s", NP_BOM_TEXT);
    else if (!root)
        np_error_set(err, NP_EXIT_INPUT, path, "", jerr.line > 0 ? jerr.line : 0, "%s", jerr.text);
    return root;
}
