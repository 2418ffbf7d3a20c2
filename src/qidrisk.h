/*
 * qidrisk.h
 *	  Declarations shared by the C files of the qidrisk extension.
 */
#ifndef QIDRISK_H
#define QIDRISK_H

#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"

/* Format version written at the head of every serialized state */
#define QIDRISK_STATE_FORMAT_VERSION 1

/* qidrisk.max_state_memory in kB; -1 means derive it from work_mem */
extern int	qidrisk_max_state_memory;

extern Size QidStateMemoryBudget(void);

/* ---- fingerprint.c ---- */

/* A quasi-identifier value combination, reduced to 128 bits */
typedef struct QidFingerprint
{
	uint64		lo;
	uint64		hi;
} QidFingerprint;

/* Per-call cache of how to hash each quasi-identifier argument */
typedef struct QidHasher QidHasher;

extern QidHasher *QidHasherGet(FunctionCallInfo fcinfo, int firstarg,
							   const char *funcname);
extern void QidFingerprintRow(QidHasher *hasher, FunctionCallInfo fcinfo,
							  QidFingerprint *fp);

/* ---- freqstate.c ---- */

/* Hash-table entry: one equivalence class and its size */
typedef struct FreqEntry
{
	QidFingerprint key;
	int64		count;
	char		status;
} FreqEntry;

struct freqhash_hash;

/* Transition state shared by every frequency aggregate */
typedef struct FreqState
{
	MemoryContext context;		/* where the hash table lives */
	struct freqhash_hash *classes;	/* fingerprint -> class size */
	int64		rows;			/* rows aggregated */
	int64		singletons;		/* classes of size 1 */
	int32		k;				/* rows_below_k's threshold, 0 if unused */
	Size		budget;			/* bytes the hash table may occupy */
} FreqState;

extern FreqState *FreqStateCreate(MemoryContext context, Size initial_classes);
extern void FreqStateAdd(FreqState *state, const QidFingerprint *fp, int64 count);
extern void FreqStateRemove(FreqState *state, const QidFingerprint *fp);
extern void FreqStateMerge(FreqState *into, const FreqState *from);
extern int64 FreqStateClasses(const FreqState *state);
extern bytea *FreqStateSerialize(const FreqState *state);
extern FreqState *FreqStateDeserialize(MemoryContext context, bytea *bytes);

/* Iterate over the classes of a state */
typedef void (*FreqVisitor) (int64 count, void *arg);
extern void FreqStateVisit(const FreqState *state, FreqVisitor visitor, void *arg);

#endif							/* QIDRISK_H */
