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

extern FreqState *CreateState(MemoryContext context, Size nclasses, bool partitioned) FREQ_PRIVATE;
extern void AddClass(FreqState *state, const QidFingerprint *fp, int64 count) FREQ_PRIVATE;
extern void FlushHeldRows(FreqState *state) FREQ_PRIVATE;
extern void DrainBuffers(FreqState *state) FREQ_PRIVATE;
extern bool HasRuns(const FreqState *state) FREQ_PRIVATE;
extern void ForEachClass(FreqState *state, ClassVisitor visit, void *arg) FREQ_PRIVATE;
extern void StreamClasses(FreqState *state, ClassVisitor visit, void *arg) FREQ_PRIVATE;
extern CountedClass *TableClasses(FreqState *state, int64 *nclasses) FREQ_PRIVATE;
extern bool CountLogInPlace(FreqState *state, ClassVisitor visit, void *arg, FreqCounts *counts) FREQ_PRIVATE;

#endif							/* FREQSTATE_H */
