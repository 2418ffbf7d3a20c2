/*
 * relreader.h
 *	  Functions of relreader.c that other files call.
 */
#ifndef RELREADER_H
#define RELREADER_H

#include "tcop/dest.h"

#include "qidrisk.h"

extern QidRelation *QidRelationOpen(Oid relid, const char *what);
extern int	QidRelationColumn(QidRelation *rel, const char *name);
extern void QidRelationEveryColumn(QidRelation *rel, const char *funcname);
extern void QidRelationCheckSelect(QidRelation *rel, const char *hint);
extern void QidRelationCheckResult(QidRelation *rel, TupleDesc desc, int first, int count,
								   const char *funcname);
extern bool QidReadSnapshotPush(QidRelation *rel, QidRelation *other);
extern void QidCheckMemory(double bytes, const char *funcname, const char *what, const char *hint);
extern void QidCheckSearchMemory(double bytes, const char *funcname, const char *what);
/* What QidReadRows calls: startup with the executed query's columns (may be NULL), row per row */
typedef struct QidRowReader
{
	void		(*startup) (TupleDesc desc, void *arg);
	void		(*row) (Datum *values, bool *isnull, void *arg);
} QidRowReader;

extern void QidReceiverInit(DestReceiver *receiver,
							bool (*receive) (TupleTableSlot *slot, DestReceiver *self),
							void (*startup) (DestReceiver *self, int operation, TupleDesc desc));
extern void QidReadRows(QidRelation *rel, const char *query, int first, const QidRowReader *reader,
						void *arg, const char *funcname);
extern QidEncoded *QidEncodeRelation(QidRelation *rel, const QidEncodeOptions *options,
									 const char *funcname);

#endif							/* RELREADER_H */
