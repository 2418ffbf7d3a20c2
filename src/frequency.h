/*
 * frequency.h
 *	  Functions of frequency.c that other files call.
 */
#ifndef FREQUENCY_H
#define FREQUENCY_H

#include "qidrisk.h"

extern FreqState *FreqStateForUpdate(FunctionCallInfo fcinfo);

#endif							/* FREQUENCY_H */
