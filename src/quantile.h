/*
 * quantile.h
 *	  Functions of quantile.c that other files call.
 */
#ifndef QUANTILE_H
#define QUANTILE_H

#include "qidrisk.h"

extern ValueType *ValueTypeGet(MemoryContext context, Oid type, Oid collation,
							   const char *funcname);
extern void ValueCheckOrderable(ValueType *vt, Datum value, FunctionCallInfo fcinfo);
extern void ValueCountSort(ValueType *vt, ValueCount *values, int64 nvalues);
extern int64 BalancedCuts(const ValueCount *values, int64 nvalues, int64 k,
						  int64 *starts);
extern ArrayType *CutsArray(ValueType *vt, const ValueCount *values,
							const int64 *starts, int64 nbuckets);
extern double ValueToDouble(ValueType *vt, Datum value, const char *funcname);

#endif							/* QUANTILE_H */
