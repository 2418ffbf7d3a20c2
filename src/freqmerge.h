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
			 ClassVisitor visit, void *arg);
extern int MergeFanIn(const FreqState *state);
extern void ReduceRuns(FreqState *state, FreqPartition *partition, int keep);
extern void MergeRun(FreqState *state, FreqPartition *partition, const CountedClass *run, int64 nrun);
extern void AdoptRuns(FreqState *into, FreqState *from);
extern void CopyRuns(FreqState *into, FreqPartition *partition, const FreqPartition *from);
extern void DecodePartitions(FreqState *state);

#endif							/* FREQMERGE_H */
