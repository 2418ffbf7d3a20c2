/*
 * boundary.h
 *	  Functions of boundary.c that other files call.
 */
#ifndef BOUNDARY_H
#define BOUNDARY_H

#include "qidrisk.h"

/* body(fcinfo), whose errors of the user's input show no context from inside it */
extern Datum QidCallBounded(PGFunction body, FunctionCallInfo fcinfo);

#endif							/* BOUNDARY_H */
