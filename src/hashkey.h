/*
 * hashkey.h
 *	  Functions of hashkey.c that other files call.
 */
#ifndef HASHKEY_H
#define HASHKEY_H

#include "qidrisk.h"

/* qidrisk.sample_seed: a fixed sampling key for reproducible output (superuser) */
extern int	qidrisk_sample_seed;

extern QidPlacementKey QidPlacementKeyCreate(void);
extern void QidValueHashInit(QidValueHash *vh, Oid type, Oid collation, bool floats,
							 MemoryContext context);
extern void QidSampleKeyGet(QidSampleKey *key);
extern void QidSamplePermute(const QidSampleKey *key, const QidFingerprint *in,
							 QidFingerprint *out);
extern void QidKeyRemix(QidFingerprint *fp);

#endif							/* HASHKEY_H */
