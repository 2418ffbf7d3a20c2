/*
 * settings.h
 *	  The extension's settings (settings.c; qidrisk.c registers them).
 */
#ifndef SETTINGS_H
#define SETTINGS_H

#include "qidrisk.h"

/* qidrisk.max_state_memory in kB; -1 means derive it from work_mem */
extern int	qidrisk_max_state_memory;

/* qidrisk.spill: a frequency state past its budget spills to temporary files */
extern bool qidrisk_spill;

extern Size QidStateMemoryBudget(void);

extern int	qidrisk_kmap_population_scan;

/* qidrisk.qar_max_work: most subsets visited times rows one QaR walk may cost */
extern double qidrisk_qar_max_work;

/* qidrisk.lattice_heuristic_nodes: most nodes a heuristic lattice search evaluates */
extern int	qidrisk_lattice_heuristic_nodes;

#endif							/* SETTINGS_H */
