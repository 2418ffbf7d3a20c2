/*
 * qidsearch.h
 *	  Functions of qidsearch.c that other files call.
 */
#ifndef QIDSEARCH_H
#define QIDSEARCH_H

#include "qidrisk.h"

extern void QidVisitSubsets(QidEncoded *enc, int max_size, bool need_partitions,
							QidSubsetVisitor visitor, void *arg, const char *funcname);

#endif							/* QIDSEARCH_H */
