/*
 * np_version.h -- which npusim made a result: the CSV's simulator_version
 * column and `simrun --version`.
 *
 * The definition is generated at every build by cmake/version.cmake from
 * `git describe --always --dirty` in the source tree ("unknown" outside git
 * or without git), into the build folder's generated/np_version.c.
 */
#ifndef NP_VERSION_H
#define NP_VERSION_H

const char *np_version(void);

#endif
