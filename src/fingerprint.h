/*
 * fingerprint.h
 *	  Functions of fingerprint.c that other files call.
 */
#ifndef FINGERPRINT_H
#define FINGERPRINT_H

#include "qidrisk.h"

extern QidHasher *QidHasherGet(FunctionCallInfo fcinfo, int firstarg,
							   int ncolumns, const char *funcname);
extern void QidFingerprintRow(QidHasher *hasher, FunctionCallInfo fcinfo,
							  QidFingerprint *fp);
extern QidHasher *QidHasherCreate(MemoryContext context, int ncolumns,
								  const Oid *types, const Oid *collations,
								  const char *const *names, const char *funcname);
extern void QidFingerprintValues(QidHasher *hasher, const NullableDatum *values,
								 QidFingerprint *fp);
extern bool QidScalarArgument(const QidHasher *hasher, FunctionCallInfo fcinfo,
							  Datum *value);
extern void QidFingerprintScalar(Datum value, QidFingerprint *fp);
extern void QidCheckKeyNotConstant(FunctionCallInfo fcinfo, int argno);
extern Oid	QidArgumentCollation(FunctionCallInfo fcinfo, int argno, Oid typid);

#endif							/* FINGERPRINT_H */
