/*
 * valuedict.h
 *	  A column's dictionary: each distinct value, under the type's default
 *	  hash equality and the column's collation, gets a dense code (NULL one
 *	  more), for the relation reader (relreader.c) and the lattice.
 *
 * Values are placed by a hash keyed per column and call (hashkey.c), so
 * that values a table owner chooses cannot crowd one bucket.  A column of
 * few values repeats them: the last values seen are kept in a small table
 * by a cheap unkeyed slot and compared by their Datum or bytes, so most
 * rows need no hash; a miss (a collision included) goes to the keyed table,
 * so chosen values can only make the small table miss.  The lookup is
 * inline: it runs once per value read.
 */
#ifndef VALUEDICT_H
#define VALUEDICT_H

#include "utils/datum.h"
#include "utils/memutils.h"

#include "qidrisk.h"

/* Recent values per column checked before the keyed table (a power of 2) */
#define QID_VALUEDICT_RECENT 128

typedef struct QidValueDict
{
	Oid			type;
	Oid			collation;
	bool		typbyval;
	int16		typlen;
	QidValueHash hash;			/* keyed placement and equality (hashkey.c) */
	int32		null_code;		/* the code of NULL, -1 until seen */
	int32		ndistinct;
	Size		bytes;			/* bytes of copied by-reference values */
	struct valuedict_hash *table;
	/* recent values by a cheap slot; a miss falls back to the keyed table */
	struct
	{
		Datum		value;
		int32		code;		/* -1: empty */
	}			recent[QID_VALUEDICT_RECENT];
} QidValueDict;

typedef struct QidValueDictEntry
{
	Datum		value;
	int32		code;
	uint32		hash;
	char		status;
} QidValueDictEntry;

#define SH_PREFIX valuedict
#define SH_ELEMENT_TYPE QidValueDictEntry
#define SH_KEY_TYPE Datum
#define SH_KEY value
#define SH_HASH_KEY(tb, key) QidValueHashOf(&((QidValueDict *) (tb)->private_data)->hash, key)
#define SH_EQUAL(tb, a, b) QidValueHashEqual(&((QidValueDict *) (tb)->private_data)->hash, a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

extern void QidValueDictInit(QidValueDict *dict, Oid type, Oid collation, const char *name,
							 const char *funcname, MemoryContext context);
extern void QidValueDictValues(QidValueDict *dict, Datum *values);

/* A recent value's slot: unkeyed, from the Datum or the length and three bytes */
static inline int
QidValueDictRecentSlot(const QidValueDict *dict, Datum value)
{
	const char *data;
	Size		len;

	if (dict->hash.bitwise)
		return (int) ((value ^ (value >> 7) ^ (value >> 29)) & (QID_VALUEDICT_RECENT - 1));
	data = VARDATA_ANY(DatumGetPointer(value));
	len = VARSIZE_ANY_EXHDR(DatumGetPointer(value));
	if (len == 0)
		return 0;
	return (int) ((len * 31 + (unsigned char) data[0] * 7 +
				   (unsigned char) data[len / 2] * 3 + (unsigned char) data[len - 1]) &
				  (QID_VALUEDICT_RECENT - 1));
}

/* Whether a value has the Datum or the bytes of a recent one */
static inline bool
QidValueDictRecentEqual(const QidValueDict *dict, Datum value, Datum recent)
{
	Size		len;

	if (dict->hash.bitwise)
		return value == recent;
	len = VARSIZE_ANY_EXHDR(DatumGetPointer(recent));
	return VARSIZE_ANY_EXHDR(DatumGetPointer(value)) == len &&
		memcmp(VARDATA_ANY(DatumGetPointer(value)), VARDATA_ANY(DatumGetPointer(recent)), len) == 0;
}

/*
 * The code of one value, a new one (*isnew) when the value is new; a new
 * by-reference value is copied into keep, compared and kept plain (not
 * toasted).  A detoasted copy is made in the current memory context.
 */
static inline int32
QidValueDictCode(QidValueDict *dict, Datum value, bool isnull, MemoryContext keep, bool *isnew)
{
	QidValueDictEntry *entry;
	bool		found;
	int			slot = -1;

	*isnew = false;
	if (isnull)
	{
		if (dict->null_code < 0)
		{
			dict->null_code = dict->ndistinct++;
			*isnew = true;
		}
		return dict->null_code;
	}
	if (dict->typlen == -1)
		value = PointerGetDatum(PG_DETOAST_DATUM_PACKED(value));
	/* columns of few values repeat them: equal Datums or bytes need no hash */
	if (dict->hash.bitwise || (dict->hash.bytewise && QidValueInPlace(value)))
	{
		slot = QidValueDictRecentSlot(dict, value);
		if (dict->recent[slot].code >= 0 &&
			QidValueDictRecentEqual(dict, value, dict->recent[slot].value))
			return dict->recent[slot].code;
	}
	entry = valuedict_insert(dict->table, value, &found);
	if (!found)
	{
		if (!dict->typbyval)
		{
			MemoryContext old = MemoryContextSwitchTo(keep);

			entry->value = datumCopy(value, false, dict->typlen);
			MemoryContextSwitchTo(old);
			dict->bytes += datumGetSize(value, false, dict->typlen);
		}
		entry->code = dict->ndistinct++;
		*isnew = true;
	}
	if (slot >= 0)
	{
		dict->recent[slot].value = entry->value;
		dict->recent[slot].code = entry->code;
	}
	return entry->code;
}

#endif							/* VALUEDICT_H */
