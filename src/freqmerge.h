/*
 * freqmerge.h
 *	  Streaming k-way merges of sorted class arrays and runs.
 *
 * Private to the engine; see freqmerge.c.
 */
#ifndef FREQMERGE_H
#define FREQMERGE_H

#include "freqspill.h"

extern void MergeSources(MergeSource *sources, int nsources, FreqCounts *counts,
			 ClassVisitor visit, void *arg) FREQ_PRIVATE;
extern int MergeFanIn(const FreqState *state) FREQ_PRIVATE;
extern void ReduceRuns(FreqState *state, FreqPartition *partition, int keep) FREQ_PRIVATE;
extern void MergeRun(FreqState *state, FreqPartition *partition, const CountedClass *run, int64 nrun) FREQ_PRIVATE;
extern void AdoptRuns(FreqState *into, FreqState *from) FREQ_PRIVATE;
extern void CopyRuns(FreqState *into, FreqPartition *partition, const FreqPartition *from) FREQ_PRIVATE;
extern void DecodePartitions(FreqState *state) FREQ_PRIVATE;
extern int64 SortAndSumBuffer(FreqState *state, FreqPartition *partition, CountedClass **run) FREQ_PRIVATE;
extern void DrainPartition(FreqState *state, FreqPartition *partition) FREQ_PRIVATE;
extern void MergePartitionsOf(FreqState *into, const FreqState *from) FREQ_PRIVATE;
extern void StreamPartition(FreqState *state, int p, int narrays, FreqCounts *counts,
							ClassVisitor visit, void *arg) FREQ_PRIVATE;

#endif							/* FREQMERGE_H */
