/*
 * freqlog.h
 *	  The row log: rows of a state of mostly distinct classes, held as they
 *	  came and counted by bucket.
 *
 * Private to the engine; see freqlog.c.
 */
#ifndef FREQLOG_H
#define FREQLOG_H

#include "freqclass.h"

/* Registers of the log's distinct-count sketch (HyperLogLog), a power of 2 */
#define ROW_LOG_REGISTER_BITS 12

/* The sketch sees the rows of one class in this many (a power of 2), chosen by fingerprint */
#define ROW_LOG_SAMPLE 8

/* Rows are held on 2^ROW_LOG_SHELF_BITS shelves by their top bits, so that a count copies one shelf at a time */
#define ROW_LOG_SHELF_BITS 3
#define ROW_LOG_SHELVES (1 << ROW_LOG_SHELF_BITS)

typedef struct RowLogShelf
{
	QidFingerprint *rows;		/* in mapping */
	MappedCopy *mapping;
	int64		nrows;
	int64		capacity;
} RowLogShelf;

typedef struct RowLog
{
	RowLogShelf shelves[ROW_LOG_SHELVES];
	int64		nrows;			/* on all shelves */
	int64		capacity;		/* of all shelves */
	int64		sampled;		/* rows the sketch saw */
	uint64		bucket_multiplier;	/* odd and random: buckets by the high half */
	bool		ordered;		/* buckets by its top bits instead (in order) */
	uint64		slot_multiplier;	/* odd and random: slots by the low half */
	uint8		registers[1 << ROW_LOG_REGISTER_BITS];
} RowLog;

/* The shelf of a row */
#define RowLogShelfOf(log, fp) (&(log)->shelves[(fp)->hi >> (64 - ROW_LOG_SHELF_BITS)])

/* Add one row; false when its shelf is full (RowLogGrow first) */
static inline bool
RowLogAppend(RowLog *log, const QidFingerprint *fp)
{
	RowLogShelf *shelf = RowLogShelfOf(log, fp);
	uint64		rest;
	uint8		rank;
	uint8	   *reg;

	if (unlikely(shelf->nrows == shelf->capacity))
		return false;
	shelf->rows[shelf->nrows++] = *fp;
	log->nrows++;
	/* the sketch, of the rows of one class in ROW_LOG_SAMPLE */
	if (likely((fp->hi & (ROW_LOG_SAMPLE - 1)) != 0))
		return true;
	log->sampled++;
	/* a register by the low half's top bits, the rank of the rest */
	rest = (fp->lo << ROW_LOG_REGISTER_BITS) | (UINT64CONST(1) << (ROW_LOG_REGISTER_BITS - 1));
	rank = (uint8) (pg_leftmost_one_pos64(rest) ^ 63) + 1;
	reg = &log->registers[fp->lo >> (64 - ROW_LOG_REGISTER_BITS)];
	if (rank > *reg)
		*reg = rank;
	return true;
}

extern RowLog *RowLogCreate(MemoryContext context) FREQ_PRIVATE;
extern Size RowLogBytes(const RowLog *log) FREQ_PRIVATE;
extern void RowLogGrow(RowLog *log, RowLogShelf *shelf) FREQ_PRIVATE;
extern double RowLogDistinct(const RowLog *log) FREQ_PRIVATE;
extern void RowLogCount(RowLog *log, const CountedClass *seeds, int64 nseeds,
						ClassVisitor visit, void *arg, FreqCounts *counts) FREQ_PRIVATE;
extern bool RowLogIntoPartitions(FreqState *state, RowLog *log, const CountedClass *seeds,
								 int64 nseeds) FREQ_PRIVATE;
extern void RowLogFree(RowLog *log) FREQ_PRIVATE;

#endif							/* FREQLOG_H */
