/*
 * sg_options.h -- the SimGrid configuration options npusim accepts.
 *
 * A SimGrid option reaches a run two ways: `simrun --cfg=NAME:VALUE` (one
 * --cfg may hold several settings, split at spaces, tabs, newlines and
 * commas, as SimGrid splits them) and a platform file's
 * <config><prop id="NAME" value="VALUE"/></config>.  SimGrid checks an
 * option's name and the type of its value, not what the value does to a
 * run, and several values it takes crash or corrupt one: contexts/nthreads
 * above 1 runs the actors in parallel and SimGrid's activity creation is not
 * thread-safe (a segfault at 16K NPUs), a 4 KiB contexts/stack-size
 * overflows the actors' stacks, network/bandwidth-factor 0 aborts inside the
 * solver, surf/precision 1 rounds a 26 s iteration to 31 s, and the tracing
 * options write files of their own.  So npusim accepts a list of options,
 * each with the values that give a valid run (docs/design.md, "SimGrid
 * options"), and refuses every other one by name.
 */
#ifndef NPUSIM_SG_OPTIONS_H
#define NPUSIM_SG_OPTIONS_H

#include <stddef.h>

#include "np_error.h"

/* Whether SimGrid option `name` set to `value` is accepted: 0, or -1 with
 * what is wrong and what was expected in why. */
int sg_option_check(const char *name, const char *value, char *why, size_t why_size);

/* Every "name:value" setting of one --cfg argument (the text after
 * "--cfg="), split as SimGrid splits it: 0, or NP_EXIT_USAGE with err set. */
int sg_options_check_cfg(const char *cfg, np_error *err);

/* One --log argument (the text after "--log="): log thresholds only,
 * "CATEGORY.thres:LEVEL" (or .threshold), as xbt splits them at white
 * space; an appender (".app:file:PATH") would create or truncate a file.
 * 0, or NP_EXIT_USAGE with err set. */
int sg_log_check(const char *log, np_error *err);

/* The accepted names, comma-separated, for messages and --help. */
const char *sg_options_accepted(void);

#endif
