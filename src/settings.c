/*
 * settings.c
 *	  The extension's settings (GUC variables) and what is derived from them.
 *
 * qidrisk.c registers these variables in _PG_init; every other file reads
 * them here, or through QidStateMemoryBudget.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "compat.h"
#include "qidrisk.h"
#include "settings.h"

/* Budget multiplier applied to work_mem when qidrisk.max_state_memory is -1 */
#define QIDRISK_WORK_MEM_MULTIPLIER 256

int			qidrisk_max_state_memory = -1;
bool		qidrisk_spill = true;

int			qidrisk_kmap_population_scan = KMAP_SCAN_AUTO;

double		qidrisk_qar_max_work = 1e10;

int			qidrisk_lattice_heuristic_nodes = 10000;

/* Bytes one frequency state may occupy */
Size
QidStateMemoryBudget(void)
{
	double		kilobytes;

	if (qidrisk_max_state_memory >= 0)
		kilobytes = qidrisk_max_state_memory;
	else
		kilobytes = (double) work_mem * QIDRISK_WORK_MEM_MULTIPLIER;

	/* a hash table is one huge allocation; keep the budget addressable */
	return (Size) Min(kilobytes * 1024.0, (double) (SIZE_MAX / 2));
}
