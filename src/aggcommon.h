/*
 * aggcommon.h
 *	  Functions of aggcommon.c that other files call.
 */
#ifndef AGGCOMMON_H
#define AGGCOMMON_H

#include "qidrisk.h"

extern const char *AggregateName(FunctionCallInfo fcinfo);
extern MemoryContext AggregateContext(FunctionCallInfo fcinfo);
extern void RememberAggParameter(FunctionCallInfo fcinfo, int argno,
								 bool *has_param, double *param);
extern void MergeAggParameter(bool *has_param, double *param,
							  bool from_has_param, double from_param);

#endif							/* AGGCOMMON_H */
