/*
 * gpd.h
 *	  Functions of gpd.c that other files call.
 */
#ifndef GPD_H
#define GPD_H

#include "qidrisk.h"

extern double GpdLogLikelihood(const double *y, int n, double xi, double beta);
extern bool GpdFitExcesses(const double *y, int n, GpdMethod method, GpdFit *fit);
extern const char *GpdMethodName(GpdMethod method);
extern void QarCheckProbabilities(double alpha, double pi_u);
extern bool QarRiskFromSorted(double *thetas, int64 n_p, double alpha, double pi_u,
							  int64 rows, QarRisk *risk, const char **reason);
extern void QarRiskError(const QarRisk *risk, const char *reason, double alpha, double pi_u);
extern double *QarFloatArray(ArrayType *array, const char *name, int *count);
extern HeapTuple QarRiskTuple(TupleDesc tupdesc, const QarRisk *risk);
extern void QarSortDoubles(double *values, int64 n);

#endif							/* GPD_H */
