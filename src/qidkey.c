/*
 * qidkey.c
 *	  The distributed path: qid_key(qid...) turns a row's quasi-identifier
 *	  into its 128-bit fingerprint as a uuid, and one-argument aggregates over
 *	  that key count classes without any call-site information (argument
 *	  types, collations, the Aggref), so a distributed planner such as Citus
 *	  can split them into worker and coordinator steps.  They share the
 *	  frequency state (freqstate.c) and the final, combine and serialization
 *	  functions of the VARIADIC aggregates, so both give the same answers.
 */
#include "postgres.h"

#include "fmgr.h"
#include "port/pg_bswap.h"
#include "utils/uuid.h"

#include "fingerprint.h"
#include "freqengine.h"
#include "frequency.h"
#include "hashkey.h"
#include "qidkey.h"
#include "qidrisk.h"

PG_FUNCTION_INFO_V1(qid_key);
PG_FUNCTION_INFO_V1(qidrisk_freq_key_transfn);
PG_FUNCTION_INFO_V1(qidrisk_freq_key_invtransfn);
PG_FUNCTION_INFO_V1(qidrisk_freq_key_k_transfn);
PG_FUNCTION_INFO_V1(qidrisk_freq_key_k_invtransfn);
PG_FUNCTION_INFO_V1(qidrisk_sample_permute);

/* Write a fingerprint as a uuid: high half then low half, big-endian */
static void
FingerprintToKey(const QidFingerprint *fp, pg_uuid_t *key)
{
	uint64		hi = pg_hton64(fp->hi);
	uint64		lo = pg_hton64(fp->lo);

	memcpy(key->data, &hi, sizeof(hi));
	memcpy(key->data + sizeof(hi), &lo, sizeof(lo));
}

/* Read back the fingerprint a key holds */
void
QidKeyToFingerprint(const pg_uuid_t *key, QidFingerprint *fp)
{
	uint64		hi;
	uint64		lo;

	memcpy(&hi, key->data, sizeof(hi));
	memcpy(&lo, key->data + sizeof(hi), sizeof(lo));
	fp->hi = pg_ntoh64(hi);
	fp->lo = pg_ntoh64(lo);
}

/* qid_key(qid...): the row's quasi-identifier fingerprint as a uuid */
Datum
qid_key(PG_FUNCTION_ARGS)
{
	QidHasher  *hasher = (QidHasher *) fcinfo->flinfo->fn_extra;
	QidFingerprint fp;
	pg_uuid_t  *key = palloc(sizeof(pg_uuid_t));

	if (unlikely(hasher == NULL))
		hasher = QidHasherGet(fcinfo, 0, -1, "qid_key");
	QidFingerprintRow(hasher, fcinfo, &fp);
	FingerprintToKey(&fp, key);
	PG_RETURN_UUID_P(key);
}

/* Remember k of rows_below_k_key(k, key), which must not change */
static void
RememberK(FunctionCallInfo fcinfo, FreqState *state)
{
	int32		k;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("k must not be NULL")));
	k = PG_GETARG_INT32(1);
	if (state->has_param && state->param != (double) k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for every row of a group"),
				 errdetail("Saw k = %g and then k = %d.", state->param, k)));
	state->has_param = true;
	state->param = (double) k;
}

/*
 * Count (or uncount) the key in argument keyarg; rows with a NULL key are
 * skipped, as count(key) skips them.
 */
static Datum
UpdateKeyState(FunctionCallInfo fcinfo, int keyarg, bool remove)
{
	FreqState  *state;
	QidFingerprint fp;

	if (PG_ARGISNULL(0))
		QidCheckKeyNotConstant(fcinfo, keyarg);
	state = FreqStateForUpdate(fcinfo);

	if (keyarg == 2 && !remove)
		RememberK(fcinfo, state);
	if (PG_ARGISNULL(keyarg))
		PG_RETURN_POINTER(state);
	QidKeyToFingerprint(PG_GETARG_UUID_P(keyarg), &fp);
	if (remove)
	{
		/* any uuid may come here, not only qid_key's: spread its bits first */
		QidKeyRemix(&fp);
		FreqStateRemoveRow(state, &fp);
	}
	else
		FreqStateAddKey(state, &fp);
	PG_RETURN_POINTER(state);
}

/* Transition of singleton_count_key(key) and the other key aggregates */
Datum
qidrisk_freq_key_transfn(PG_FUNCTION_ARGS)
{
	return UpdateKeyState(fcinfo, 1, false);
}

/* Inverse transition for moving window frames */
Datum
qidrisk_freq_key_invtransfn(PG_FUNCTION_ARGS)
{
	return UpdateKeyState(fcinfo, 1, true);
}

/* Transition of rows_below_k_key(k, key) */
Datum
qidrisk_freq_key_k_transfn(PG_FUNCTION_ARGS)
{
	return UpdateKeyState(fcinfo, 2, false);
}

/* Inverse transition of rows_below_k_key(k, key) */
Datum
qidrisk_freq_key_k_invtransfn(PG_FUNCTION_ARGS)
{
	return UpdateKeyState(fcinfo, 2, true);
}

/*
 * qidrisk_sample_permute(key): the key as the approximate aggregates of this
 * statement permute it before sampling (tests recompute a sample with it)
 */
Datum
qidrisk_sample_permute(PG_FUNCTION_ARGS)
{
	QidSampleKey sample_key;
	QidFingerprint fp;
	pg_uuid_t  *key = palloc(sizeof(pg_uuid_t));

	QidKeyToFingerprint(PG_GETARG_UUID_P(0), &fp);
	QidSampleKeyGet(&sample_key);
	QidSamplePermute(&sample_key, &fp, &fp);
	FingerprintToKey(&fp, key);
	PG_RETURN_UUID_P(key);
}
