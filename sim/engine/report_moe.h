/*
 * report_moe.h -- the MoE block of the table and the CSV (report_moe.c).
 */
#ifndef SIM_REPORT_MOE_H
#define SIM_REPORT_MOE_H

#include <stdio.h>

#include "engine.h"

/* The CSV columns are blocks of report_csv_header (report.c). */
/* One line under the table row when the run replayed MoE layers. */
void report_moe_print(FILE *out, const engine_result *r);
/* The fields, each with its leading comma (empty without a replay). */
void report_moe_csv_fields(FILE *f, const engine_result *r);
/* The MoE policy's fields (moe_policy, moe_copies, moe_copy_s,
 * moe_copy_bytes), before moe_sample_mb, each with its leading comma (empty
 * without a replay). */
void report_moe_policy_csv_fields(FILE *f, const engine_result *r);

/* The exposed all-to-all time (column moe_alltoall_exposed_s), empty
 * without the replay. */
void report_moe_exposed_csv_field(FILE *f, const engine_result *r);

#endif
