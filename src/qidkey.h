/*
 * qidkey.h
 *	  Functions of qidkey.c that other files call.
 */
#ifndef QIDKEY_H
#define QIDKEY_H

#include "qidrisk.h"

extern void QidKeyToFingerprint(const struct pg_uuid_t *key, QidFingerprint *fp);

#endif							/* QIDKEY_H */
