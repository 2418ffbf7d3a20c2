/*
 * hashkey.c
 *	  Keys that keep chosen data from steering qidrisk's hash tables and
 *	  samples.
 *
 * A fingerprint is a fixed, public function of the values, and for an int8
 * column an invertible one, so whoever writes a table can choose values
 * whose fingerprints share a hash bucket (quadratic time) or all fall out of
 * a distinct sample (an estimate of 0); the same holds for the values
 * themselves in tables of distinct values.  So in-memory placement mixes the
 * fingerprint, or the value, with a random key drawn per table (or query),
 * and the approximate aggregates sample by a keyed permutation of the
 * fingerprint, the key being secret and new for every statement.  Neither key
 * changes what is counted, stored or compared: fingerprints, qid_key and
 * serialized states keep their definition.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_control.h"
#include "common/cryptohash.h"
#include "common/pg_prng.h"
#include "common/sha2.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "hashkey.h"
#include "qidrisk.h"

/* qidrisk.sample_seed: 0 draws a secret key per statement; else this seed's key */
int			qidrisk_sample_seed = 0;

/* The statement whose sampling key is cached, and that key */
static bool sample_key_valid = false;
static int32 sample_key_leader = 0;
static TimestampTz sample_key_statement = 0;
static int	sample_key_seed = 0;
static QidSampleKey sample_key;

/* A random key for one hash table's bucket placement */
QidPlacementKey
QidPlacementKeyCreate(void)
{
	QidPlacementKey key;

	key.k0 = pg_prng_uint64(&pg_global_prng_state);
	key.k1 = pg_prng_uint64(&pg_global_prng_state);
	return key;
}

/*
 * Prepare the keyed hashing of one type's values under a collation.  The
 * caller has checked that the type has a default hash opclass.  Types whose
 * equality is equality of the Datum's bits are hashed by their bits, floats
 * too when the caller has made -0 and 0 one Datum and refuses NaN; the key
 * is drawn here, so each table (or query) has its own.
 */
void
QidValueHashInit(QidValueHash *vh, Oid type, Oid collation, bool floats, MemoryContext context)
{
	TypeCacheEntry *entry = lookup_type_cache(type, TYPECACHE_HASH_PROC_FINFO |
											  TYPECACHE_EQ_OPR_FINFO |
											  TYPECACHE_HASH_EXTENDED_PROC_FINFO);

	if (!OidIsValid(entry->hash_proc) || !OidIsValid(entry->eq_opr))
		elog(ERROR, "type %s has no default hash support", format_type_be(type));
	vh->collation = collation;
	vh->key = pg_prng_uint64(&pg_global_prng_state);
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case TIMEOID:
		case OIDOID:
		case BOOLOID:
		case CHAROID:
			vh->bitwise = true;
			break;
		case FLOAT4OID:
		case FLOAT8OID:
			vh->bitwise = floats;
			break;
		default:
			vh->bitwise = false;
	}
	/* text's hash and equality are those of its bytes under a deterministic collation */
	vh->bytewise = (type == BYTEAOID && entry->hash_extended_proc == F_HASHVARLENAEXTENDED) ||
		((type == TEXTOID || type == VARCHAROID) &&
		 entry->hash_extended_proc == F_HASHTEXTEXTENDED &&
		 OidIsValid(collation) && get_collation_isdeterministic(collation));
	vh->extended = OidIsValid(entry->hash_extended_proc);
	if (vh->extended)
		fmgr_info_copy(&vh->hash, &entry->hash_extended_proc_finfo, context);
	else
		fmgr_info_copy(&vh->hash, &entry->hash_proc_finfo, context);
	fmgr_info_copy(&vh->equal, &entry->eq_opr_finfo, context);
}

/* Derive a sampling key: SHA-256 over the given words, read as three halves */
static void
DeriveSampleKey(const void *secret, Size secret_len, int64 words[3], QidSampleKey *key)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		digest[PG_SHA256_DIGEST_LENGTH];

	if (ctx == NULL ||
		pg_cryptohash_init(ctx) < 0 ||
		(secret_len > 0 && pg_cryptohash_update(ctx, secret, secret_len) < 0) ||
		pg_cryptohash_update(ctx, (const uint8 *) words, 3 * sizeof(int64)) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
		elog(ERROR, "qidrisk: could not derive a sampling key");
	pg_cryptohash_free(ctx);
	memcpy(&key->k0, digest, sizeof(uint64));
	memcpy(&key->k1, digest + 8, sizeof(uint64));
	memcpy(&key->k2, digest + 16, sizeof(uint64));
}

/*
 * The sampling key of the current statement.  A parallel worker and its
 * leader must sample alike, as their partial samples are merged, and a
 * caller must not be able to predict the key: it is derived from the
 * cluster's secret random nonce (written at initdb, readable only by
 * superusers), the leader's process id and the statement's start time,
 * which workers share with their leader.  With qidrisk.sample_seed set (a
 * superuser setting) it comes from the seed alone, for reproducible output.
 */
void
QidSampleKeyGet(QidSampleKey *key)
{
	int32		leader = MyProcPid;
	TimestampTz statement = GetCurrentStatementStartTimestamp();
	int64		words[3];

	if (IsParallelWorker() && MyProc != NULL && MyProc->lockGroupLeader != NULL)
		leader = MyProc->lockGroupLeader->pid;
	if (sample_key_valid && sample_key_leader == leader &&
		sample_key_statement == statement && sample_key_seed == qidrisk_sample_seed)
	{
		*key = sample_key;
		return;
	}
	if (qidrisk_sample_seed != 0)
	{
		words[0] = qidrisk_sample_seed;
		words[1] = 0;
		words[2] = 0;
		DeriveSampleKey(NULL, 0, words, &sample_key);
	}
	else
	{
		words[0] = leader;
		words[1] = statement;
		words[2] = 1;
		DeriveSampleKey(GetMockAuthenticationNonce(), MOCK_AUTH_NONCE_LEN, words,
						&sample_key);
	}
	sample_key_valid = true;
	sample_key_leader = leader;
	sample_key_statement = statement;
	sample_key_seed = qidrisk_sample_seed;
	*key = sample_key;
}

/*
 * Permute a fingerprint under a sampling key: three Feistel rounds, each
 * half in turn xored with a keyed mix of the other, so distinct classes stay
 * distinct and every bit of the result depends on every bit of the input
 */
void
QidSamplePermute(const QidSampleKey *key, const QidFingerprint *in, QidFingerprint *out)
{
	uint64		lo = in->lo;
	uint64		hi = in->hi;

	hi ^= QidMix64(lo ^ key->k0);
	lo ^= QidMix64(hi ^ key->k1);
	hi ^= QidMix64(lo ^ key->k2);
	out->lo = lo;
	out->hi = hi;
}
