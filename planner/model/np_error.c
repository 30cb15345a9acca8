/* np_error.c -- filling and formatting np_error (see np_error.h). */
#include "np_error.h"

#include <stdio.h>
#include <string.h>

void np_error_clear(np_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

int np_error_set(np_error *err, int code, const char *source, const char *key, int line,
                 const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    snprintf(err->source, sizeof err->source, "%s", source ? source : "");
    snprintf(err->key, sizeof err->key, "%s", key ? key : "");
    err->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    return code;
}

const char *np_error_format(const np_error *err, char *buf, int size)
{
    int n = 0;
    buf[0] = '\0';
    if (err->source[0])
        n += snprintf(buf + n, size - n, "%s", err->source);
    if (err->line > 0 && n < size)
        n += snprintf(buf + n, size - n, ":%d", err->line);
    if (n > 0 && n < size)
        n += snprintf(buf + n, size - n, ": ");
    if (err->key[0] && n < size)
        n += snprintf(buf + n, size - n, "%s: ", err->key);
    if (n < size)
        snprintf(buf + n, size - n, "%s", err->text);
    return buf;
}
