/*
 * relreader.h
 *	  Functions of relreader.c that other files call.
 */
#ifndef RELREADER_H
#define RELREADER_H

#include "qidrisk.h"

extern QidRelation *QidRelationOpen(Oid relid, const char *what);
extern int	QidRelationColumn(QidRelation *rel, const char *name);
extern void QidRelationEveryColumn(QidRelation *rel, const char *funcname);
extern void QidRelationCheckSelect(QidRelation *rel, const char *hint);
extern void QidRelationCheckResult(QidRelation *rel, TupleDesc desc, int first, int count,
								   const char *funcname);
extern bool QidReadSnapshotPush(QidRelation *rel, QidRelation *other);
extern void QidCheckSearchMemory(double bytes, const char *funcname, const char *what);
extern QidEncoded *QidEncodeRelation(QidRelation *rel, const QidEncodeOptions *options,
									 const char *funcname);

#endif							/* RELREADER_H */
