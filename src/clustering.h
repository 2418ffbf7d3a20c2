/*
 * clustering.h
 *	  Functions of clustering.c that other files call.
 */
#ifndef CLUSTERING_H
#define CLUSTERING_H

#include "qidrisk.h"

extern ClusterCost ClusterCostFromName(const char *name);
extern int64 OptimalCuts(const double *values, const int64 *counts, int64 nvalues,
						 int64 k, ClusterCost cost, int64 *starts, double *total_cost);

#endif							/* CLUSTERING_H */
