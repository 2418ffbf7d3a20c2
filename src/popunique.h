/*
 * popunique.h
 *	  Functions of popunique.c that other files call.
 */
#ifndef POPUNIQUE_H
#define POPUNIQUE_H

#include "qidrisk.h"

extern int	QidPopulationModel(const char *name);
extern bool QidPopulationUniques(const int64 *sizes, const int64 *counts, int nsizes,
								 double population, int model, double *uniques);

#endif							/* POPUNIQUE_H */
