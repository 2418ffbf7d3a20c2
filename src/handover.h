/*
 * handover.h
 *	  Functions of handover.c that other files call.
 */
#ifndef HANDOVER_H
#define HANDOVER_H

#include "qidrisk.h"

/* handover.c: passing partial states from a parallel query's partial to its finalize */
extern bytea *FreqStateHandOver(FunctionCallInfo fcinfo, FreqState *state);
extern void QidHandoverRegisterCallbacks(void);

#endif							/* HANDOVER_H */
