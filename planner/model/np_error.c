/* np_error.c -- filling and formatting np_error (see np_error.h).  Every
 * field is stored with its control characters escaped: one error, one line. */
#include "np_error.h"

#include <stdio.h>
#include <string.h>

void np_error_clear(np_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

/* Copies src into dst[size] with control characters written as C escapes
 * (\n, \t, \r, \xNN), so that an error stays one printable line whatever a
 * file name, key or value holds.  Bytes from 0x80 up (UTF-8) are kept. */
static void copy_escaped(char *dst, size_t size, const char *src)
{
    size_t n = 0;
    for (; src && *src && n + 1 < size; src++) {
        unsigned char ch = (unsigned char)*src;
        char esc[5];
        if (ch >= 0x20 && ch != 0x7f) {
            dst[n++] = (char)ch;
            continue;
        }
        if (ch == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (ch == '\t')
            snprintf(esc, sizeof esc, "\\t");
        else if (ch == '\r')
            snprintf(esc, sizeof esc, "\\r");
        else
            snprintf(esc, sizeof esc, "\\x%02x", ch);
        size_t length = strlen(esc);
        if (n + length + 1 > size)
            break;
        memcpy(dst + n, esc, length);
        n += length;
    }
    dst[n] = '\0';
}

int np_error_set(np_error *err, int code, const char *source, const char *key, int line,
                 const char *fmt, ...)
{
    if (!err)
        return code;
    char text[sizeof err->text];
    err->code = code;
    copy_escaped(err->source, sizeof err->source, source);
    copy_escaped(err->key, sizeof err->key, key);
    err->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    copy_escaped(err->text, sizeof err->text, text);
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
