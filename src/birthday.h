/*
 * birthday.h
 *	  Functions of birthday.c that other files call.
 */
#ifndef BIRTHDAY_H
#define BIRTHDAY_H

#include "qidrisk.h"

extern void BirthdayCheckFinite(double value, const char *name);
extern void BirthdayCheckTarget(double target);
extern double BirthdayLogUniform(int64 k, double n);
extern int64 BirthdayLargestK(double target, double n, double kappa);
extern double BirthdayLog1pMinusX(double x);
extern double BirthdayLogPoissonTerm(double k, double n);

#endif							/* BIRTHDAY_H */
