/*
 * freqengine.h
 *	  The frequency engine's interface: a hash table from QID fingerprint to class size.
 *
 * Implemented in layers (docs/internals.md): freqclass.c, freqspill.c,
 * freqmerge.c, freqstate.c and freqwire.c; everything outside the engine
 * uses the frequency state through this header alone.
 */
#ifndef FREQENGINE_H
#define FREQENGINE_H

#include "compat.h"
#include "qidrisk.h"

extern FreqState *FreqStateCreate(MemoryContext context, Size nclasses);
extern void FreqStateAddRow(FreqState *state, const QidFingerprint *fp);
extern void FreqStateAddKey(FreqState *state, const QidFingerprint *key);
extern void FreqStateAddValue(FreqState *state, Datum value);
extern void FreqStateRemoveRow(FreqState *state, const QidFingerprint *fp);
extern void FreqStateSettle(FreqState *state);
extern void FreqStateMerge(FreqState *into, FreqState *from);
extern bool FreqStateAttach(FreqState *into, FreqState *from);
extern void FreqStateFree(FreqState *state);
extern void FreqStateCounts(FreqState *state, FreqCounts *counts);
extern int64 FreqStateClasses(FreqState *state);
extern int64 FreqStateSizeHint(FreqState *state);
extern bool FreqStateSpilled(FreqState *state);
extern bytea *FreqStateSerialize(FreqState *state);
extern FreqState *FreqStateDeserialize(MemoryContext context, bytea *bytes);
extern bytea *FreqStateLend(FreqState *state);
pg_noreturn extern void FreqStateCorrupt(const char *detail);
extern bytea *FreqStateSendFile(FreqState *state, int32 leader_pid, int64 statement_start);
extern void FreqStateRemoveHandoverFiles(SubTransactionId aborted);

extern FreqStateEvents qidrisk_freq_events;

extern void FreqStateVisit(FreqState *state, FreqVisitor visitor, void *arg);
extern void FreqStateVisitAscending(FreqState *state, FreqKeyVisitor visit, void *arg);

#endif							/* FREQENGINE_H */
