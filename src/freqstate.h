/*
 * freqstate.h
 *	  The in-memory frequency state, as the wire format uses it.
 *
 * Private to the engine; see freqstate.c.  The state's public interface is
 * in qidrisk.h.
 */
#ifndef FREQSTATE_H
#define FREQSTATE_H

#include "freqmerge.h"

extern int64 SortAndSumBuffer(FreqState *state, FreqPartition *partition, CountedClass **run);
extern FreqState *CreateState(MemoryContext context, Size nclasses, bool partitioned);
extern void AddClass(FreqState *state, const QidFingerprint *fp, int64 count);
extern void FlushHeldRows(FreqState *state);
extern void DrainBuffers(FreqState *state);
extern bool HasRuns(const FreqState *state);
extern void ForEachClass(FreqState *state, ClassVisitor visit, void *arg);

#endif							/* FREQSTATE_H */
