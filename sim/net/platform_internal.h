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
 *   platform_fabric.c port hosts (scale-up, plane 1), scaleup_fabric,
 *                     cross_rail_pxn, fabric_taper, nic_planes
 */
#ifndef SIM_PLATFORM_INTERNAL_H
#define SIM_PLATFORM_INTERNAL_H

#include <stdbool.h>

#include "platform.h"

/* How SimGrid's max-min system is re-solved after a flow starts or ends
 * (docs/design.md, SimGrid facts): whole at every event (network/optim:Full,
 * simrun's default), or only the constraints the change reaches (Full with
 * network/maxmin-selective-update).  Both are meant to solve the same
 * max-min problem; their times agree on the shipped fabric runs, but
 * SimGrid 3.32's selective update missed the solution by 3.3% on a
 * butterfly all-reduce on a dragonfly (docs/design.md), so it is taken only
 * where the full solve is slow (platform_file.c).  Which is faster depends on how
 * far a change reaches through shared links. */
typedef enum { SOLVER_FULL, SOLVER_SELECTIVE } platform_solver;
/* A torus or dragonfly takes selective update above this many NPUs only
 * (platform_file.c, cluster_size). */
#define SELECTIVE_UPDATE_MIN_HOSTS 4096

/* What the scan of the text found besides errors (platform_file.c). */
typedef struct platform_scan {
    double taper;            /* the fabric taper: 1 unless a tapered FAT_TREE */
    char fold_blocker[192];  /* a torus or dragonfly cluster, "" if none */
    platform_solver solver;  /* the update mode for its clusters */
    char solver_cluster[64]; /* SOLVER_SELECTIVE: the cluster that chose it */
    /* its <config> sets network/optim or network/maxmin-selective-update */
    int file_sets_solver;
} platform_scan;

/* Checks the file before SimGrid parses it (platform_file.c): the error, or
 * 0 with *scan filled. */
int platform_precheck(const char *path, const platform_limits *lim, platform_scan *scan,
                      np_error *err);
/* Whether name is a host property npusim reads (platform_props.c: the
 * required and optional ones, the fabric's) or SimGrid's energy plugin does;
 * else *nearest is the known name within 3 edits of it, or NULL. */
bool platform_prop_known(const char *name, const char **nearest);
/* Line of the first <prop ... id="name" in the file, 0 if not found:
 * SimGrid does not keep where a property came from. */
int platform_prop_line(const char *path, const char *name);

/* The port hosts of a platform, indexed by the rank ending their names, or
 * NULL when it has none of that kind: scale-up ports (npusim_port=
 * "scaleup", sup-R) and plane-1 NIC ports (npusim_port="plane1", pl1-R). */
typedef struct platform_ports {
    sg_host_t *scaleup, *plane1;
} platform_ports;
void platform_ports_free(platform_ports *ports);

/* Moves the NPU hosts to the front of hosts[] (*num_npus of them) and the
 * port hosts into *ports (platform_fabric.c). */
int platform_split_ports(const char *path, sg_host_t *hosts, int count, int *num_npus,
                         platform_ports *ports, np_error *err);
/* scaleup_fabric, cross_rail_pxn, fabric_taper, nic_planes and
 * nic_plane_policy of the numbered NPUs, after platform_read_cluster; moves
 * the ports it accepts from *ports into p; *taper lowered to fabric_taper
 * when given; a split dual-plane platform's scale-out bandwidth doubled. */
int platform_read_fabric(const char *path, sim_platform *p, platform_ports *ports, double *taper,
                         np_error *err);

/* Routes from hosts[0] to hosts[k·npus_per_node] for every other server,
 * and back, exist (hosts: p's NPUs or one of its port kinds), else the
 * error naming the pair (platform_props.c). */
int platform_check_routes(const char *path, const sim_platform *p, sg_host_t *hosts, np_error *err);

/* simgrid_load_platform() under the abort trap (platform_trap.c). */
int platform_load_into_simgrid(const char *path, np_error *err);

/* Speed, properties, uniformity, links and scale-out route of the numbered
 * hosts (platform_props.c). */
int platform_read_cluster(const char *path, sim_platform *p, np_error *err);

/* The number at the end of a host name, or -1 when there is none (or it
 * has more digits than a rank can); platform.c. */
long platform_rank_of_name(const char *name);

#endif
