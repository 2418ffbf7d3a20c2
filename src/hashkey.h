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
 * Spread a key's bits over the fingerprint's high half, whose top bits the
 * frequency state's partitions and sort read: a uuid made by
 * uuid_generate_v1 or v7 varies in few bits.  The high half times an odd
 * number (its low bits carried upwards) plus a mix of the low half, which is
 * kept, so the map is a permutation; the two terms are computed side by side.
 */
static inline void
QidKeyRemix(QidFingerprint *fp)
{
	fp->hi = (fp->hi * UINT64CONST(0x9e3779b97f4a7c15)) ^
		QidMix64(fp->lo ^ UINT64CONST(0x243f6a8885a308d3));
}

#endif							/* HASHKEY_H */
