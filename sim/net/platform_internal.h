/*
 * platform_internal.h -- what the files of the platform reader share (not
 * public: platform.h is the interface).
 *
 *   platform.c        platform_load_with(): the order of the steps, ranks
 *   platform_file.c   before SimGrid sees the file: a regular XML file of
 *                     sane size with a versioned <platform>, a size estimate
 *                     of its clusters, the fat-tree taper, property lines
 *   platform_trap.c   SimGrid's aborts on a bad platform caught and turned
 *                     into one np_error
 *   platform_props.c  the hosts and links read as an NPU cluster: every
 *                     property and link figure finite and in its range
 *   platform_fabric.c scale-up port hosts, scaleup_fabric, cross_rail_pxn,
 *                     fabric_taper
 */
#ifndef SIM_PLATFORM_INTERNAL_H
#define SIM_PLATFORM_INTERNAL_H

#include "platform.h"

/* Checks the file before SimGrid parses it (platform_file.c): the error, or
 * 0 with *taper set to the fabric taper (1 unless a tapered FAT_TREE). */
int platform_precheck(const char *path, const platform_limits *lim, double *taper, np_error *err);
/* Line of the first <prop ... id="name" in the file, 0 if not found:
 * SimGrid does not keep where a property came from. */
int platform_prop_line(const char *path, const char *name);

/* Moves the NPU hosts to the front of hosts[] (*num_npus of them) and the
 * scale-up port hosts (npusim_port="scaleup") into *ports, indexed by the
 * rank ending their names, or NULL when there are none
 * (platform_fabric.c). */
int platform_split_ports(const char *path, sg_host_t *hosts, int count, int *num_npus,
                         sg_host_t **ports, np_error *err);
/* scaleup_fabric, cross_rail_pxn and fabric_taper of the numbered NPUs; takes
 * ownership of ports; *taper lowered to fabric_taper when given. */
int platform_read_fabric(const char *path, sim_platform *p, sg_host_t *ports, double *taper,
                         np_error *err);

/* simgrid_load_platform() under the abort trap (platform_trap.c). */
int platform_load_into_simgrid(const char *path, np_error *err);

/* Speed, properties, uniformity, links and scale-out route of the numbered
 * hosts (platform_props.c). */
int platform_read_cluster(const char *path, sim_platform *p, np_error *err);

/* The number at the end of a host name, or -1 when there is none (or it
 * has more digits than a rank can); platform.c. */
long platform_rank_of_name(const char *name);

#endif
