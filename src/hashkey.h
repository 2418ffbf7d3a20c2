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

/*
 * Spread a key's bits over the fingerprint, by two rounds that each change
 * one half by a mix of the other (a permutation): a uuid made by
 * uuid_generate_v1 or v7 varies in few bits, and the frequency state's
 * partitions and sort read the high half's top bits, which after the second
 * round depend on all 128
 */
static inline void
QidKeyRemix(QidFingerprint *fp)
{
	fp->lo ^= QidMix64(fp->hi ^ UINT64CONST(0x243f6a8885a308d3));
	fp->hi ^= QidMix64(fp->lo ^ UINT64CONST(0x13198a2e03707344));
}

#endif							/* HASHKEY_H */
