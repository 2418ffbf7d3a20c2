/*
 * indivrisk.h
 *	  Functions of indivrisk.c that other files call.
 */
#ifndef INDIVRISK_H
#define INDIVRISK_H

#include "qidrisk.h"

extern double IndividualRisk(int64 f, double population, bool exact);

#endif							/* INDIVRISK_H */
