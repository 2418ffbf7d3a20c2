/*
 * valuedict.c
 *	  A column's dictionary of dense codes (valuedict.h): starting one, and
 *	  listing its values by code.
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "hashkey.h"
#include "valuedict.h"

/* An empty dictionary for a column of the executed query; 42883 if the type cannot be hashed */
void
QidValueDictInit(QidValueDict *dict, Oid type, Oid collation, const char *name,
				 const char *funcname, MemoryContext context)
{
	TypeCacheEntry *entry;

	entry = lookup_type_cache(type, TYPECACHE_HASH_PROC | TYPECACHE_EQ_OPR);
	if (!OidIsValid(entry->hash_proc) || !OidIsValid(entry->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s cannot compare the values of column \"%s\": type %s has no default hash support",
						funcname, name, format_type_be(type)),
				 errhint("Leave the column out, or compare a hashable expression of it in a view.")));
	memset(dict, 0, sizeof(QidValueDict));
	dict->type = type;
	dict->collation = collation;
	get_typlenbyval(type, &dict->typlen, &dict->typbyval);
	QidValueHashInit(&dict->hash, type, collation, false, context);
	dict->null_code = -1;
	for (int i = 0; i < QID_VALUEDICT_RECENT; i++)
		dict->recent[i].code = -1;
	dict->table = valuedict_create(context, 256, dict);
}

/* Every value but NULL at its code's place in values (ndistinct of them) */
void
QidValueDictValues(QidValueDict *dict, Datum *values)
{
	valuedict_iterator it;
	QidValueDictEntry *entry;

	valuedict_start_iterate(dict->table, &it);
	while ((entry = valuedict_iterate(dict->table, &it)) != NULL)
		values[entry->code] = entry->value;
}
