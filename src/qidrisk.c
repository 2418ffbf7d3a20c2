/*
 * qidrisk.c
 *	  Module entry point: registers the extension's settings and callbacks.
 *
 * Only the server calls _PG_init, and nothing includes or calls anything of
 * this file: the settings' variables live in settings.c, so that every other
 * file can read them without depending on this one.
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "compat.h"
#include "handover.h"
#include "hashkey.h"
#include "qidrisk.h"
#include "settings.h"

PG_MODULE_MAGIC;

static const struct config_enum_entry kmap_population_scan_options[] = {
	{"auto", KMAP_SCAN_AUTO, false},
	{"probe", KMAP_SCAN_PROBE, false},
	{"grouped", KMAP_SCAN_GROUPED, false},
	{NULL, 0, false}
};

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("qidrisk.max_state_memory",
							"Largest hash table one frequency state may build.",
							"-1 means 256 times work_mem. A state that would grow past "
							"it stops with an error instead of exhausting the server's memory.",
							&qidrisk_max_state_memory,
							-1, -1, MAX_KILOBYTES,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("qidrisk.spill",
							 "Lets a frequency state past qidrisk.max_state_memory spill "
							 "to temporary files.",
							 "When off, such a state stops with an error instead. Window "
							 "aggregates never spill.",
							 &qidrisk_spill,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("qidrisk.sample_seed",
							"Fixes the key under which the approximate aggregates sample classes.",
							"0 (the default) draws a secret key for every statement, so that "
							"data cannot be chosen to bias the sample; another value makes "
							"estimates reproducible, and only a superuser may set it.",
							&qidrisk_sample_seed,
							0, 0, INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("qidrisk.kmap_population_scan",
							 "How the k-map functions read the population.",
							 "probe scans every row against the release's classes; grouped "
							 "counts the population per class where its rows are (a GROUP BY "
							 "a distributed planner runs on the shards) and matches the counts "
							 "with the release's classes; auto (the default) groups a Citus "
							 "table distributed over shards, or a view over one, and probes "
							 "any other.",
							 &qidrisk_kmap_population_scan,
							 KMAP_SCAN_AUTO,
							 kmap_population_scan_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomRealVariable("qidrisk.qar_max_work",
							 "Most work one QaR call may do: the subsets its walk visits times the rows.",
							 "The qar_* functions visit every subset of at most p columns and "
							 "read every row for each; a call whose subsets times rows, plus its "
							 "own work, would pass this bound is refused before the walk.",
							 &qidrisk_qar_max_work,
							 1e10, 1, 1e18,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("qidrisk.lattice_heuristic_nodes",
							"Most lattice nodes one heuristic search may evaluate.",
							"qid_lattice and qid_anonymize_into with search => 'heuristic' "
							"stop their search after evaluating this many nodes and return "
							"the best node found so far.",
							&qidrisk_lattice_heuristic_nodes,
							10000, 1, 10000000,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("qidrisk");
	/* a parallel leader deletes the hand-over files a failed statement left */
	QidHandoverRegisterCallbacks();
}
