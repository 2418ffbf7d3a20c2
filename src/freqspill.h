/*
 * freqspill.h
 *	  Spilling a frequency state's classes as runs to temporary files.
 *
 * Private to the engine; see freqspill.c.
 */
#ifndef FREQSPILL_H
#define FREQSPILL_H

#include "freqclass.h"

/* A run being written at the end of a partition's file, RUN_CHUNK_CLASSES at a time */
typedef struct RunWriter
{
	FreqState  *state;
	FreqPartition *partition;
	SpillRun	run;
	CountedClass chunk[RUN_CHUNK_CLASSES];
	int			nchunk;
} RunWriter;

extern void AppendRun(FreqState *state, FreqPartition *partition, const SpillRun *run) FREQ_PRIVATE;
extern void BeginRun(RunWriter *writer, FreqState *state, FreqPartition *partition) FREQ_PRIVATE;
extern void WriteRunClasses(RunWriter *writer, const CountedClass *classes, int64 n) FREQ_PRIVATE;
extern void WriteRunClass(const QidFingerprint *key, int64 count, void *arg) FREQ_PRIVATE;
extern void EndRun(RunWriter *writer) FREQ_PRIVATE;
extern void SpillUntilFits(FreqState *state, const FreqPartition *partition, int64 nrun, double extra) FREQ_PRIVATE;

#endif							/* FREQSPILL_H */
