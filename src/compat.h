/*
 * compat.h
 *	  The differences between the PostgreSQL major versions qidrisk builds
 *	  against (15, 17 and 18), in one place: each macro names what changed
 *	  and in which version.  Included by qidrisk.h after postgres.h.
 */
#ifndef QIDRISK_COMPAT_H
#define QIDRISK_COMPAT_H

#if PG_VERSION_NUM < 150000
#error "qidrisk needs PostgreSQL 15 or later"
#endif

/*
 * 18 replaced the suffix pg_attribute_noreturn() by the prefix pg_noreturn;
 * before 18 the prefix is spelled as 18 spells it for these compilers.
 */
#ifndef pg_noreturn
#if defined(__GNUC__) || defined(__SUNPRO_C)
#define pg_noreturn __attribute__((noreturn))
#elif defined(_MSC_VER)
#define pg_noreturn __declspec(noreturn)
#else
#define pg_noreturn
#endif
#endif

/* 16 added make_range's soft-error context (NULL: errors are thrown) */
#if PG_VERSION_NUM >= 160000
#define QidMakeRange(typcache, lower, upper, empty) \
	make_range((typcache), (lower), (upper), (empty), NULL)
#else
#define QidMakeRange(typcache, lower, upper, empty) \
	make_range((typcache), (lower), (upper), (empty))
#endif

/* 16 added stringToQualifiedNameList's soft-error context (NULL: errors are thrown) */
#if PG_VERSION_NUM >= 160000
#define QidStringToQualifiedNameList(string) stringToQualifiedNameList((string), NULL)
#else
#define QidStringToQualifiedNameList(string) stringToQualifiedNameList(string)
#endif

#endif							/* QIDRISK_COMPAT_H */
