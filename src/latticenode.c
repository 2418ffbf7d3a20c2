/*
 * latticenode.c
 *	  Evaluating one node: its classes by partition refinement of a cached
 *	  node below it (or of the rows), each class judged by the models (k,
 *	  l-diversity, t-closeness, beta-likeness, a population's), the
 *	  suppression that average risk and population uniqueness need, the
 *	  node's utility, and the bounded cache of evaluated nodes.
 */
#include "postgres.h"

#include <math.h>

#include "freqengine.h"
#include "lattice.h"

PG_FUNCTION_INFO_V1(qidrisk_privacy_uniques_prefix);


/*
 * Split each class [ends[i-1], ends[i]) of perm by key[item], writing the
 * refined permutation to perm2 and its ends to ends2.  With group_class,
 * group_class[i] receives the groups written up to the end of class i.
 */
static int32
SplitClasses(Lattice *lat, const int32 *perm, const int32 *ends, int32 nclasses,
			 const int32 *key, int32 *perm2, int32 *ends2, int32 *group_class)
{
	int32	   *counts = lat->counts;
	int32	   *starts = lat->starts;
	int32	   *touched = lat->touched;
	int32		begin = 0;
	int32		nout = 0;

	for (int32 i = 0; i < nclasses; i++)
	{
		int32		end = ends[i];

		if ((i & 0xFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (end - begin == 1)
		{
			perm2[begin] = perm[begin];
			ends2[nout++] = end;
		}
		else
		{
			int32		ntouched = 0;

			for (int32 x = begin; x < end; x++)
			{
				int32		v = key[perm[x]];

				if (counts[v]++ == 0)
					touched[ntouched++] = v;
			}
			if (ntouched == 1)
			{
				memcpy(perm2 + begin, perm + begin, sizeof(int32) * (end - begin));
				ends2[nout++] = end;
				counts[touched[0]] = 0;
			}
			else
			{
				int32		pos = begin;

				for (int32 t = 0; t < ntouched; t++)
				{
					int32		v = touched[t];

					starts[v] = pos;
					pos += counts[v];
					ends2[nout++] = pos;
					counts[v] = 0;
				}
				for (int32 x = begin; x < end; x++)
					perm2[starts[key[perm[x]]]++] = perm[x];
			}
		}
		if (group_class != NULL)
			group_class[i] = nout;
		begin = end;
	}
	return nout;
}

/*
 * A class key's hash: multiply-shift under the call's random odd multiplier,
 * the top bits folded into the low ones the table masks
 */
static inline uint32
ClassKeyHash(uint64 k)
{
	uint32		h = (uint32) (((k + 1) * (lattice_hash_seed | 1)) >> 32);

	return h ^ (h >> 16);
}

/* A node's classes by the split columns' codes as one mixed-radix key */
typedef struct ClassKeyEntry
{
	uint64		key;
	int32		cls;
	char		status;
} ClassKeyEntry;

#define SH_PREFIX classkey
#define SH_ELEMENT_TYPE ClassKeyEntry
#define SH_KEY_TYPE uint64
#define SH_KEY key
#define SH_HASH_KEY(tb, k) ClassKeyHash(k)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * The multipliers of the split columns' codes in one 64-bit key, false when
 * the product of their numbers of codes at the node's levels overflows it
 */
static bool
ClassKeyRadix(const Lattice *lat, const int32 *levels, int nsplit, uint64 *mult, uint64 *nkeys)
{
	uint64		product = 1;

	for (int j = 0; j < nsplit; j++)
	{
		mult[j] = product;
		if (pg_mul_u64_overflow(product, (uint64) lat->columns[lat->split[j]].ndist[levels[lat->split[j]]],
								&product))
			return false;
	}
	*nkeys = product;
	return true;
}

/* A new class c of GroupKeys: its codes in the split columns, first item and size */
static inline void
NewClass(Lattice *lat, const int32 *row, int nsplit, int32 c, int32 x, int32 *size,
		 int32 *first)
{
	for (int j = 0; j < nsplit; j++)
	{
		int32		code0 = row[lat->split[j]];

		lat->keys[j][c] = lat->maps[j] ? lat->maps[j][code0] : code0;
	}
	if (first != NULL)
		first[c] = x;
	size[c] = 0;
}

/* Where split column j's code lies in a packed word: its shift and mask */
typedef struct SplitFields
{
	int		   *shift;
	uint64	   *mask;
} SplitFields;

/* The split columns' fields (only with a packed layout, lat->pack_shift) */
static SplitFields *
NewSplitFields(const Lattice *lat, int nsplit)
{
	SplitFields *f = palloc(sizeof(SplitFields));

	Assert(lat->pack_shift != NULL);
	f->shift = palloc(sizeof(int) * Max(nsplit, 1));
	f->mask = palloc(sizeof(uint64) * Max(nsplit, 1));
	for (int j = 0; j < nsplit; j++)
	{
		f->shift[j] = lat->pack_shift[lat->split[j]];
		f->mask[j] = lat->pack_mask[lat->split[j]];
	}
	return f;
}

static void
FreeSplitFields(SplitFields *f)
{
	pfree(f->shift);
	pfree(f->mask);
	pfree(f);
}

/* An item's class key from its packed codes: its split columns' shares */
static inline uint64
PackedKey(uint64 code, int nsplit, const uint64 *const *part, const int *shift, const uint64 *mask)
{
	uint64		key = 0;

	for (int j = 0; j < nsplit; j++)
		key += part[j][UnpackCode(code, shift[j], mask[j])];
	return key;
}

/* A row's class key */
static inline uint64
RowKey(const int32 *row, int nsplit, const uint64 *const *part, const int *split)
{
	uint64		key = 0;

	for (int j = 0; j < nsplit; j++)
		key += part[j][row[split[j]]];
	return key;
}

/*
 * GroupKeys with the direct table: every item's key first (in perm2, which
 * no caller passes), then the classes, so the table's loads overlap
 */
static int32
GroupDense(Lattice *lat, const NodeItems *base, int32 m, int nsplit,
		   const uint64 *const *part, const SplitFields *f, int32 *cls, int32 *size,
		   int32 *first, const int32 *weight)
{
	int32	   *kb = lat->perm2;
	int32	   *dense = lat->dense;
	int32	   *dense_keys = lat->ends2;	/* the keys dense holds, to clear */
	int32		nclasses = 0;
	int32	   *buf = lat->rowbuf;
	const uint64 *code = base ? base->code : NULL;
	const int32 *rep = base ? base->rep : NULL;
	const int32 *rowcodes = lat->rowcodes;
	int			ncol = lat->ncolumns;

	Assert(kb != cls && kb != size && kb != first);
	if (code != NULL)
	{
		for (int32 x = 0; x < m; x++)
		{
			if ((x & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			kb[x] = (int32) PackedKey(code[x], nsplit, part, f->shift, f->mask);
		}
	}
	else
	{
		for (int32 x = 0; x < m; x++)
		{
			if ((x & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			kb[x] = (int32) RowKey(rowcodes + (Size) (rep ? rep[x] : x) * ncol, nsplit, part,
								   lat->split);
		}
	}
	for (int32 x = 0; x < m; x++)
	{
		int32		key = kb[x];
		int32		c = dense[key];

		if (c < 0)
		{
			c = dense[key] = nclasses;
			dense_keys[c] = key;
			NewClass(lat, ItemRow(lat, base, x, buf), nsplit, c, x, size, first);
			nclasses++;
		}
		if (cls != NULL)
			cls[x] = c;
		size[c] += weight != NULL ? weight[x] : 1;
	}
	for (int32 c = 0; c < nclasses; c++)
		dense[dense_keys[c]] = -1;
	return nclasses;
}

/* GroupKeys with a hash table of the keys, sized for its classes up to a bound */
static int32
GroupTable(Lattice *lat, const NodeItems *base, int32 m, int nsplit,
		   const uint64 *const *part, const SplitFields *f, uint64 nkeys, int32 *cls,
		   int32 *size, int32 *first, const int32 *weight)
{
	classkey_hash *table;
	int32		nclasses = 0;
	int32	   *buf = lat->rowbuf;
	const uint64 *code = base ? base->code : NULL;
	const int32 *rep = base ? base->rep : NULL;
	const int32 *rowcodes = lat->rowcodes;
	int			ncol = lat->ncolumns;

	/* growing would move every entry */
	table = classkey_create(CurrentMemoryContext,
							(uint32) Max(Min(Min((uint64) m, nkeys), LATTICE_TABLE_START), 1024),
							NULL);
	for (int32 x = 0; x < m; x++)
	{
		uint64		key;
		bool		found;
		ClassKeyEntry *entry;
		int32		c;

		if ((x & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (code != NULL)
			key = PackedKey(code[x], nsplit, part, f->shift, f->mask);
		else
			key = RowKey(rowcodes + (Size) (rep ? rep[x] : x) * ncol, nsplit, part, lat->split);
		entry = classkey_insert(table, key, &found);
		if (!found)
			entry->cls = nclasses;
		c = entry->cls;
		if (c == nclasses)
			NewClass(lat, ItemRow(lat, base, x, buf), nsplit, nclasses++, x, size, first);
		if (cls != NULL)
			cls[x] = c;
		size[c] += weight != NULL ? weight[x] : 1;
	}
	classkey_destroy(table);
	return nclasses;
}

/*
 * Group the items [0, m) of base (the rows when NULL) by the split columns'
 * key, classes numbered in order of first occurrence: cls[x] (unless NULL)
 * is an item's class, size[c] a class's items (weighted by weight[x] unless
 * NULL), first[c] (unless NULL) its first item and keys[j][c] its code in
 * split column j
 */
static int32
GroupKeys(Lattice *lat, const NodeItems *base, int32 m, int nsplit, const uint64 *mult,
		  uint64 nkeys, int32 *cls, int32 *size, int32 *first, const int32 *weight)
{
	bool		dense = false;
	int32		nclasses;
	uint64	  **part;
	SplitFields *fields;

	/*
	 * few possible keys: a class per key, else a hash table; the direct
	 * table within the half of the budget the snapshot cache leaves
	 */
	if (nkeys <= (uint64) Min(LATTICE_DENSE_KEYS, Max(4 * lat->nrows, 1024)) &&
		sizeof(int32) * Min(LATTICE_DENSE_KEYS, Max(4 * lat->nrows, 1024)) <= lat->cache_budget)
	{
		if (lat->dense == NULL)
		{
			Size		n = Min(LATTICE_DENSE_KEYS, Max(4 * lat->nrows, 1024));

			lat->dense = MemoryContextAlloc(GetMemoryChunkContext(lat->perm), sizeof(int32) * n);
		}
		/* only the keys used so far are set: the rest is never touched */
		if (nkeys > lat->dense_ready)
		{
			memset(lat->dense + lat->dense_ready, -1, sizeof(int32) * (nkeys - lat->dense_ready));
			lat->dense_ready = nkeys;
		}
		dense = true;
	}
	/* per split column and level-0 code: its share of the key */
	part = palloc(sizeof(uint64 *) * nsplit);
	for (int j = 0; j < nsplit; j++)
	{
		int32		n0 = lat->columns[lat->split[j]].ndist[0];

		part[j] = palloc(sizeof(uint64) * Max(n0, 1));
		for (int32 v = 0; v < n0; v++)
			part[j][v] = (uint64) (lat->maps[j] ? lat->maps[j][v] : v) * mult[j];
	}
	fields = lat->pack_shift != NULL ? NewSplitFields(lat, nsplit) : NULL;
	if (dense)
		nclasses = GroupDense(lat, base, m, nsplit, (const uint64 *const *) part, fields, cls,
							  size, first, weight);
	else
		nclasses = GroupTable(lat, base, m, nsplit, (const uint64 *const *) part, fields, nkeys,
							  cls, size, first, weight);
	if (fields != NULL)
		FreeSplitFields(fields);
	for (int j = 0; j < nsplit; j++)
		pfree(part[j]);
	pfree(part);
	return nclasses;
}

/*
 * Order a node's classes (0 .. nclasses - 1, whose split columns' codes
 * GroupKeys left in lat->keys) as one SplitClasses pass per split column
 * orders them, into *perm; *ends ends the single span
 */
static void
OrderClasses(Lattice *lat, int32 nclasses, int nsplit, int32 **perm, int32 **perm2,
			 int32 **ends, int32 **ends2)
{
	int32		n = 1;

	for (int32 c = 0; c < nclasses; c++)
		(*perm)[c] = c;
	(*ends)[0] = nclasses;
	for (int j = 0; j < nsplit; j++)
	{
		int32	   *tmp;

		n = SplitClasses(lat, *perm, *ends, n, lat->keys[j], *perm2, *ends2, NULL);
		tmp = *perm, *perm = *perm2, *perm2 = tmp;
		tmp = *ends, *ends = *ends2, *ends2 = tmp;
	}
	Assert(n == nclasses);
}

/*
 * The classes of base's items (the rows when NULL) [0, m) by the split
 * columns, as one SplitClasses pass per column would give them (ends in
 * *ends, items in *perm), with one hash lookup per item: items are grouped
 * by their key, then those classes are ordered by the column-by-column
 * passes over one item per class (which order the subclasses of a class by
 * first occurrence, so a class's place follows its first item), and the
 * items placed stably.
 */
static int32
GroupItems(Lattice *lat, const NodeItems *base, int32 m, int nsplit, const uint64 *mult,
		   uint64 nkeys, int32 **perm, int32 **perm2, int32 **ends, int32 **ends2)
{
	int32	   *cls = lat->key;
	int32	   *start = lat->group_class;	/* per class: its items, then its place */
	int32		nclasses = GroupKeys(lat, base, m, nsplit, mult, nkeys, cls, start, NULL, NULL);
	int32		pos = 0;
	int32	   *order;
	int32	   *out;

	OrderClasses(lat, nclasses, nsplit, perm, perm2, ends, ends2);
	order = *perm;
	for (int32 t = 0; t < nclasses; t++)
	{
		int32		c = order[t];
		int32		size = start[c];

		start[c] = pos;
		pos += size;
		(*ends)[t] = pos;
	}
	/* the items, in order within each class */
	out = *perm2;
	for (int32 x = 0; x < m; x++)
		out[start[cls[x]]++] = x;
	*perm2 = *perm;
	*perm = out;
	return nclasses;
}

/*
 * Without a sensitive column a node's items are its classes: base's items
 * [0, m) grouped by key, each class's first item (in first) and weight (in
 * size), the classes ordered as GroupItems orders them (into *perm); no
 * pass places the items
 */
static int32
GroupClasses(Lattice *lat, const NodeItems *base, int32 m, int nsplit, const uint64 *mult,
			 uint64 nkeys, int32 **perm, int32 **perm2, int32 **ends, int32 **ends2,
			 int32 *first, int32 *size)
{
	int32		nclasses = GroupKeys(lat, base, m, nsplit, mult, nkeys, NULL, size, first,
									 base ? base->count : NULL);

	OrderClasses(lat, nclasses, nsplit, perm, perm2, ends, ends2);
	return nclasses;
}

/*
 * The rows grouped by their level-0 codes, without a sensitive column: the
 * base of the nodes no cached snapshot lies below.  Its items are in order
 * of their first rows, so refining them orders classes as refining the rows
 * would, with the same first rows.  Built once; NULL when the key overflows.
 */
static NodeItems *
BottomItems(Lattice *lat)
{
	int32		nrows = (int32) lat->nrows;
	int			nsplit = 0;
	uint64	   *mult;
	uint64		nkeys;
	int32	   *levels;
	NodeItems  *s;
	int32		n;

	if (lat->bottom_tried)
		return lat->bottom;
	lat->bottom_tried = true;
	/* within the half of the budget the snapshot cache leaves */
	if (lat->has_sensitive || nrows < 2 ||
		3 * sizeof(int32) * (Size) nrows > lat->cache_budget)
		return NULL;
	mult = palloc(sizeof(uint64) * lat->ncolumns);
	levels = palloc0(sizeof(int32) * lat->ncolumns);
	for (int i = 0; i < lat->ncolumns; i++)
		if (lat->columns[i].ndist[0] > 1)
		{
			lat->split[nsplit] = i;
			lat->maps[nsplit++] = NULL;
		}
	if (nsplit > 0 && ClassKeyRadix(lat, levels, nsplit, mult, &nkeys))
	{
		n = GroupKeys(lat, NULL, nrows, nsplit, mult, nkeys, NULL, lat->group_class, lat->perm, NULL);
		s = palloc0(sizeof(NodeItems));
		s->node = -1;
		s->nitems = s->nclasses = n;
		s->rep = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * n);
		s->count = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * n);
		s->class_end = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * n);
		memcpy(s->rep, lat->perm, sizeof(int32) * n);
		memcpy(s->count, lat->group_class, sizeof(int32) * n);
		s->code = NULL;
		if (lat->pack_shift != NULL)
		{
			s->code = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * n);
			for (int32 x = 0; x < n; x++)
				s->code[x] = ItemPacked(lat, NULL, s->rep[x]);
		}
		for (int32 c = 0; c < n; c++)
			s->class_end[c] = c + 1;
		lat->bottom = s;
	}
	pfree(mult);
	pfree(levels);
	return lat->bottom;
}

/*
 * The classes of base's items (the rows when NULL) [0, m) by the split
 * columns: one SplitClasses pass per column (ends in *ends, items in *perm)
 */
static int32
SplitColumns(Lattice *lat, const NodeItems *base, int32 m, int nsplit,
			 int32 **perm, int32 **perm2, int32 **ends, int32 **ends2)
{
	int32		nclasses = 0;

	for (int32 x = 0; x < m; x++)
		(*perm)[x] = x;
	if (m > 0)
		(*ends)[nclasses++] = m;
	/* every split column's codes in one pass over the rows */
	if (base != NULL && base->code != NULL)
	{
		SplitFields *f = NewSplitFields(lat, nsplit);

		qidrisk_freq_events.lattice_packed_splits++;

		for (int j = 0; j < nsplit; j++)
		{
			int32	   *keys = lat->keys[j];
			const int32 *map = lat->maps[j];

			CHECK_FOR_INTERRUPTS();
			for (int32 x = 0; x < m; x++)
			{
				int32		code0 = UnpackCode(base->code[x], f->shift[j], f->mask[j]);

				keys[x] = map ? map[code0] : code0;
			}
		}
		FreeSplitFields(f);
	}
	else
	{
		for (int32 x = 0; x < m; x++)
		{
			const int32 *row = lat->rowcodes + (Size) (base ? base->rep[x] : x) * lat->ncolumns;

			if ((x & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			for (int j = 0; j < nsplit; j++)
			{
				int32		code0 = row[lat->split[j]];

				lat->keys[j][x] = lat->maps[j] ? lat->maps[j][code0] : code0;
			}
		}
	}
	for (int j = 0; j < nsplit; j++)
	{
		int32	   *tmp;

		nclasses = SplitClasses(lat, *perm, *ends, nclasses, lat->keys[j], *perm2, *ends2, NULL);
		tmp = *perm, *perm = *perm2, *perm2 = tmp;
		tmp = *ends, *ends = *ends2, *ends2 = tmp;
	}
	return nclasses;
}

/*
 * beta-likeness of one class (Cao and Karras 2012): every sensitive value's
 * share in the class exceeds its share in the table by at most beta times
 * that share; enhanced, by at most min(beta, -ln share) times it
 */
static bool
ClassBetaLike(const Lattice *lat, const NodeItems *s, int32 b, int32 e, int64 size)
{
	for (int32 x = b; x < e; x++)
	{
		double		table_share = lat->sens_share[lat->sens[s->rep[x]]];
		double		class_share = (double) s->count[x] / (double) size;
		double		bound = lat->beta;

		if (lat->beta_enhanced)
			bound = Min(bound, -log(table_share));
		if (class_share > table_share && (class_share - table_share) / table_share > bound)
			return false;
	}
	return true;
}

/* Whether one class (items [b, e) of a snapshot) meets l-diversity and t-closeness */
static bool
ClassDiverse(Lattice *lat, const NodeItems *s, int32 b, int32 e, int64 size)
{
	int32		distinct = e - b;

	if (lat->l > 1)
	{
		if (distinct < lat->l)
			return false;
		if (lat->l_model == L_ENTROPY)
		{
			double		h = 0;

			for (int32 x = b; x < e; x++)
			{
				double		p = (double) s->count[x] / (double) size;

				h -= p * log(p);
			}
			if (h < log((double) lat->l) * (1.0 - ENTROPY_TOLERANCE))
				return false;
		}
		else if (lat->l_model == L_RECURSIVE)
		{
			int32	   *sorted = lat->touched;
			double		tail = 0;

			for (int32 x = b; x < e; x++)
				sorted[x - b] = s->count[x];
			/* descending insertion sort: classes hold few sensitive values */
			for (int32 x = 1; x < distinct; x++)
			{
				int32		v = sorted[x];
				int32		y = x;

				while (y > 0 && sorted[y - 1] < v)
				{
					sorted[y] = sorted[y - 1];
					y--;
				}
				sorted[y] = v;
			}
			for (int32 x = lat->l - 1; x < distinct; x++)
				tail += sorted[x];
			if (!((double) sorted[0] < lat->c * tail))
				return false;
		}
	}
	if (lat->has_t)
	{
		double		d = 0;

		if (!lat->ordered)
		{
			/* half the L1 distance; absent values contribute their share */
			double		sum = 0;

			for (int32 x = b; x < e; x++)
			{
				double		q = lat->sens_share[lat->sens[s->rep[x]]];
				double		p = (double) s->count[x] / (double) size;

				sum += fabs(p - q) - q;
			}
			d = (sum + 1.0) / 2.0;
		}
		else
		{
			OrderedItem *items = lat->items;

			for (int32 x = b; x < e; x++)
			{
				items[x - b].rank = lat->sens[s->rep[x]];
				items[x - b].count = s->count[x];
			}
			OrderedItemsSort(items, distinct);
			d = OrderedDistance(&lat->ordered_table, items, distinct, size);
		}
		if (d > lat->t)
			return false;
	}
	if (lat->has_beta && !ClassBetaLike(lat, s, b, e, size))
		return false;
	return true;
}

/* A snapshot's memory */
static void
FreeNodeItems(Lattice *lat, NodeItems *s)
{
	pfree(s->rep);
	pfree(s->count);
	pfree(s->class_end);
	if (s->code != NULL)
	{
		lat->code_bytes -= sizeof(uint64) * Max(s->nitems, 1);
		pfree(s->code);
	}
	pfree(s);
}

/* Remove the least recently used snapshots until bytes more fit */
static void
CacheMakeRoom(Lattice *lat, Size bytes)
{
	while (lat->ncache > 0 && lat->cache_bytes + bytes > lat->cache_budget)
	{
		int			oldest = 0;
		NodeItems   *s;

		for (int i = 1; i < lat->ncache; i++)
			if (lat->cache[i]->used < lat->cache[oldest]->used)
				oldest = i;
		s = lat->cache[oldest];
		lat->snap_of[NodeSlot(lat, s->node)] = -1;
		lat->cache_bytes -= s->bytes;
		FreeNodeItems(lat, s);
		lat->cache[oldest] = lat->cache[--lat->ncache];
		if (oldest < lat->ncache)
			lat->snap_of[NodeSlot(lat, lat->cache[oldest]->node)] = oldest;
	}
}

/* Whether node a lies at or below node b */
static bool
NodeBelow(const Lattice *lat, int64 a, int64 b)
{
	for (int i = 0; i < lat->ncolumns; i++)
	{
		int64		la = (a / lat->stride[i]) % (lat->columns[i].height + 1);
		int64		lb = (b / lat->stride[i]) % (lat->columns[i].height + 1);

		if (la > lb)
			return false;
	}
	return true;
}

/* The cached snapshot at or below a node with the fewest items, or NULL */
static NodeItems *
CacheBase(Lattice *lat, int64 node)
{
	NodeItems   *best = NULL;

	/* the direct predecessors first: the usual case */
	for (int i = 0; i < lat->ncolumns; i++)
	{
		int64		level = (node / lat->stride[i]) % (lat->columns[i].height + 1);
		int64		slot = level > 0 ? NodeSlot(lat, node - lat->stride[i]) : -1;

		if (slot >= 0 && lat->snap_of[slot] >= 0)
		{
			NodeItems   *s = lat->cache[lat->snap_of[slot]];

			if (best == NULL || s->nitems < best->nitems)
				best = s;
		}
	}
	if (best == NULL)
	{
		for (int i = 0; i < lat->ncache; i++)
		{
			NodeItems   *s = lat->cache[i];

			if (NodeBelow(lat, s->node, node) &&
				(best == NULL || s->nitems < best->nitems))
				best = s;
		}
	}
	return best;
}

/*
 * Column c's factor of the loss metric (Iyengar's loss, as ARX weighs and
 * aggregates it) at a level, with suppressed rows covering cs of its domain
 * values: each kept row costs g times its value's share of the domain and
 * each suppressed row its share plus s times the rest, normalized so that
 * the bottom node without suppression costs 0, cut to 10 decimals, then
 * weighted for the geometric mean.  Sums are taken times the domain, in
 * integers.
 */
static inline double
LossFactor(const Lattice *lat, int c, int32 level, int64 suppressed, int64 cs)
{
	double		f = lat->gs_factor;
	double		g = f <= 0.5 ? 1 : 1 - 2 * (f - 0.5);
	double		s = f < 0.5 ? 2 * f : 1;
	double		n = (double) lat->nrows;
	const LatColumn *col = &lat->columns[c];
	double		d = (double) col->domain;
	double		sum = g * (double) (col->covered_total[level] - cs) +
		(double) cs + s * ((double) suppressed * d - (double) cs);
	double		least = g * n;
	double		v = n * d - least > 0 ? (sum - least) / (n * d - least) : 0;

	v = floor(Max(v, 0) * 1e10) / 1e10;
	return pow(v * lat->weight[c] + 1, 1.0 / lat->ncolumns);
}

/* The loss metric of a node: the columns' factors, multiplied in order */
double
LossValue(const Lattice *lat, const int32 *levels, int64 suppressed,
		  const int64 *suppressed_covered)
{
	double		product = 1;

	for (int c = 0; c < lat->ncolumns; c++)
		product *= LossFactor(lat, c, levels[c], suppressed,
							  suppressed_covered ? suppressed_covered[c] : 0);
	return product - 1;
}

/*
 * Each column's factor at each level with no row suppressed, so that
 * LossBound costs no pow: LossValue's factors, so the same value
 */
void
PrepareLossBound(Lattice *lat)
{
	lat->loss_bound = palloc(sizeof(double *) * Max(lat->ncolumns, 1));
	for (int c = 0; c < lat->ncolumns; c++)
	{
		lat->loss_bound[c] = palloc(sizeof(double) * (lat->columns[c].height + 1));
		for (int32 level = 0; level <= lat->columns[c].height; level++)
			lat->loss_bound[c][level] = LossFactor(lat, c, level, 0, 0);
	}
}

/*
 * The loss had no row been suppressed: a lower bound for the node and every
 * node above it, as suppression and generalization only add
 */
double
LossBound(const Lattice *lat, const int32 *levels)
{
	double		product = 1;

	for (int c = 0; c < lat->ncolumns; c++)
		product *= lat->loss_bound[c][levels[c]];
	return product - 1;
}

/* What a node's classes add up to */
typedef struct NodeTally
{
	int64		suppressed;		/* rows of the classes suppressed */
	int64		kept;			/* classes kept */
	int64		kept_rows;
	double		dm;				/* sum of squared sizes, kept classes */
	double		dm_all;			/* and of all classes */
	double		entropy_suppressed; /* bits of the suppressed rows */
	bool		blocked;		/* a failing class that cannot be suppressed */
} NodeTally;

/* Count one class (items [b, e) of a snapshot, size rows) as suppressed */
static void
SuppressClass(Lattice *lat, const NodeItems *s, int32 b, int64 size, const int32 *levels,
			  NodeTally *tally)
{
	int			ncol = lat->ncolumns;
	double		log2rows = lat->log2rows;
	double		bits = 0;
	const int32 *row = ItemRow(lat, s, b, lat->rowbuf);

	/* a suppressed row's value generalizes to all rows, not to its class's */
	tally->suppressed += size;
	for (int c = 0; c < ncol; c++)
	{
		const LatColumn *col = &lat->columns[c];
		int32		code = levels[c] == 0 ? row[c] : col->map[levels[c]][row[c]];

		bits += log2rows - col->log2count[levels[c]][code];
		if (lat->metric == METRIC_LOSS)
			lat->suppressed_covered[c] += size * col->covered[levels[c]][code];
	}
	tally->entropy_suppressed += (double) size * bits;
}

/* Order kept classes by size, then by place (the first items of the ones suppressed first) */
static int
CompareKeptClasses(const void *a, const void *b)
{
	const int64 *x = a;
	const int64 *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Suppress the kept class kept[j] ((size, first item) pairs) */
static void
SuppressKept(Lattice *lat, const NodeItems *s, const int32 *levels, const int64 *kept,
			 int64 j, NodeTally *tally)
{
	int64		size = kept[2 * j];

	SuppressClass(lat, s, (int32) kept[2 * j + 1], size, levels, tally);
	tally->kept--;
	tally->kept_rows -= size;
	tally->dm -= (double) size * (double) size;
}

/*
 * The average risk ceiling (ARX's AverageReidentificationRisk): the kept
 * classes per kept row, a prosecutor's average risk, at most the ceiling;
 * else the smallest kept classes are suppressed, fewest first, until it is
 * (removing the smallest classes only raises the average size).  kept holds
 * (size, first item) per kept class, ascending; returns the classes suppressed.
 */
static int64
EnforceAverageRisk(Lattice *lat, const NodeItems *s, const int32 *levels, const int64 *kept,
				   NodeTally *tally)
{
	int64		n = tally->kept;
	int64		j = 0;

	while (j < n && (double) tally->kept > lat->average_risk * (double) tally->kept_rows)
		SuppressKept(lat, s, levels, kept, j++, tally);
	return j;
}

/*
 * Whether the kept classes (sizes kept[0], kept[2], ... ascending) but the
 * first p meet the population uniqueness ceiling, as ARX decides it: met with
 * no class left or no class of one row; else the model's estimate of
 * population uniques over the population must be positive and at most the
 * ceiling (a model without an estimate fails)
 */
static bool
PopulationUniquenessMet(Lattice *lat, const int64 *kept, int64 p, int64 n)
{
	int			nsizes = 0;
	double		uniques;

	if (p >= n || kept[2 * p] > 1)
		return true;
	for (int64 j = p; j < n; j++)
	{
		if (nsizes > 0 && lat->pu_sizes[nsizes - 1] == kept[2 * j])
			lat->pu_counts[nsizes - 1]++;
		else
		{
			lat->pu_sizes[nsizes] = kept[2 * j];
			lat->pu_counts[nsizes++] = 1;
		}
	}
	if (!QidPopulationUniques(lat->pu_sizes, lat->pu_counts, nsizes, lat->pu_population,
							  lat->pu_model, &uniques))
		return false;
	return uniques > 0 && uniques / lat->pu_population <= lat->pu_max;
}

/*
 * How many of the smallest kept classes population uniqueness suppresses:
 * ARX's binary search over the prefix length (RiskBasedCriterion.enforce,
 * without its early stop, which changes no verdict), step for step, since
 * the estimate need not fall as classes go and a plain search would differ
 */
static int64
PopulationUniquenessPrefix(Lattice *lat, const int64 *kept, int64 n)
{
	int64		low = 0;
	int64		high = n - 1;
	int64		mid;

	if (PopulationUniquenessMet(lat, kept, 0, n))
		return 0;
	/* the first mid + 1 classes are suppressed throughout */
	mid = (low + high) / 2;
	while (low <= high)
	{
		CHECK_FOR_INTERRUPTS();
		if (PopulationUniquenessMet(lat, kept, mid + 1, n))
			high = mid - 1;
		else
			low = mid + 1;
		mid = (low + high) / 2;
	}
	if (mid + 1 < n && !PopulationUniquenessMet(lat, kept, mid + 1, n))
		return mid + 2;
	return mid + 1;
}

/* Sizes of a node's classes, which pass the models, and what they add up to */
static void
TallyClasses(Lattice *lat, const NodeItems *s, const int32 *levels, NodeTally *tally)
{
	int32		b = 0;
	int64	   *kept = lat->kept_classes;

	if (lat->metric == METRIC_LOSS)
		memset(lat->suppressed_covered, 0, sizeof(int64) * lat->ncolumns);
	if (lat->pop_classes != NULL)
	{
		PopulationClasses(lat, levels);
		/* delta-presence: a population class without rows of rel has delta 0 and nothing to suppress */
		tally->blocked = lat->has_delta && lat->delta_min > 0 &&
			lat->pop_classes->ntuples > (uint32) s->nclasses;
	}
	for (int32 i = 0; i < s->nclasses; i++)
	{
		int32		e = s->class_end[i];
		int64		size = 0;
		bool		keep;

		for (int32 x = b; x < e; x++)
			size += s->count[x];
		tally->dm_all += (double) size * (double) size;
		keep = size >= lat->k;
		if (keep && (lat->l > 1 || lat->has_t || lat->has_beta))
			keep = ClassDiverse(lat, s, b, e, size);
		if (keep && lat->pop_classes != NULL)
			keep = PopulationClassPasses(lat, s->rep[b], size, levels);
		if (!keep)
			SuppressClass(lat, s, b, size, levels, tally);
		else
		{
			if (kept != NULL)
			{
				kept[2 * tally->kept] = size;
				kept[2 * tally->kept + 1] = b;
			}
			tally->kept++;
			tally->kept_rows += size;
			tally->dm += (double) size * (double) size;
		}
		b = e;
	}
	if (kept != NULL && tally->kept > 0)
	{
		int64		first = 0;
		int64		n;

		qsort(kept, tally->kept, 2 * sizeof(int64), CompareKeptClasses);
		if (lat->has_average_risk)
			first = EnforceAverageRisk(lat, s, levels, kept, tally);
		n = first + tally->kept;
		if (lat->has_pu)
		{
			int64		p = PopulationUniquenessPrefix(lat, kept + 2 * first, n - first);

			for (int64 j = first; j < first + p; j++)
				SuppressKept(lat, s, levels, kept, j, tally);
		}
	}
}

/* A node's snapshot of ngroups items in nclasses classes, in the cache's context */
static NodeItems *
NewNodeItems(Lattice *lat, int64 node, int32 ngroups, int32 nclasses)
{
	MemoryContext old = MemoryContextSwitchTo(lat->cache_context);
	NodeItems  *s = palloc(sizeof(NodeItems));

	s->node = node;
	s->nitems = ngroups;
	s->nclasses = nclasses;
	s->rep = MemoryContextAllocHuge(lat->cache_context, sizeof(int32) * Max(ngroups, 1));
	s->count = MemoryContextAllocHuge(lat->cache_context, sizeof(int32) * Max(ngroups, 1));
	s->class_end = MemoryContextAllocHuge(lat->cache_context, sizeof(int32) * Max(nclasses, 1));
	s->code = NULL;
	s->bytes = offsetof(NodeItems, code) + sizeof(int32) * (2 * (Size) ngroups + nclasses);
	/* the codes are not in bytes: the cache keeps the same snapshots with them or without */
	if (lat->pack_shift != NULL &&
		lat->code_bytes + sizeof(uint64) * Max(ngroups, 1) <= lat->code_budget)
	{
		s->code = MemoryContextAllocHuge(lat->cache_context, sizeof(uint64) * Max(ngroups, 1));
		lat->code_bytes += sizeof(uint64) * Max(ngroups, 1);
	}
	s->used = ++lat->clock;
	MemoryContextSwitchTo(old);
	return s;
}

/* A node's classes: suppression and utility, its figures, its snapshot cached when it fits */
static void
FinishNode(Lattice *lat, int64 node, NodeItems *s, const int32 *levels)
{
	NodeTally	tally;
	int64		slot = node;

	/* classes: suppression and utility */
	memset(&tally, 0, sizeof(tally));
	TallyClasses(lat, s, levels, &tally);
	if (lat->slots != NULL)
	{
		bool		found;

		slot = lat->nevaluated;
		nodeslot_insert(lat->slots, node, &found)->slot = (int32) slot;
		lat->slot_node[slot] = node;
		lat->snap_of[slot] = -1;
	}
	lat->evaluated[slot] = true;
	lat->nevaluated++;
	lat->dm_all = tally.dm_all;
	lat->suppressed[slot] = tally.suppressed;
	lat->blocked[slot] = tally.blocked;
	/* the release's classes: suppression removes the others */
	lat->classes[slot] = tally.kept;
	lat->discernibility[slot] = tally.dm + (double) tally.suppressed * (double) lat->nrows;
	lat->entropy[slot] = tally.entropy_suppressed;
	for (int c = 0; c < lat->ncolumns; c++)
		lat->entropy[slot] += lat->columns[c].entropy[levels[c]];
	if (lat->metric == METRIC_LOSS)
		lat->loss[slot] = LossValue(lat, levels, tally.suppressed, lat->suppressed_covered);

	/* keep the snapshot when it fits */
	if (s->bytes <= lat->cache_budget)
	{
		CacheMakeRoom(lat, s->bytes);
		if (lat->ncache == lat->cache_capacity)
		{
			lat->cache_capacity *= 2;
			lat->cache = repalloc(lat->cache, sizeof(NodeItems *) * lat->cache_capacity);
		}
		lat->snap_of[slot] = lat->ncache;
		lat->cache[lat->ncache++] = s;
		lat->cache_bytes += s->bytes;
	}
	else
	{
		FreeNodeItems(lat, s);
	}
}

/*
 * The snapshot of a node without a sensitive column grouped from the rows
 * or the bottom items: one item per class, its first row and its rows
 */
static NodeItems *
ClassItems(Lattice *lat, int64 node, const NodeItems *base, int32 m, int nsplit,
		   const uint64 *mult, uint64 nkeys)
{
	int32	   *perm = lat->perm;
	int32	   *perm2 = lat->perm2;
	int32	   *ends = lat->ends;
	int32	   *ends2 = lat->ends2;
	int32	   *first = lat->key;
	int32	   *size = lat->group_class;
	int32		nclasses = GroupClasses(lat, base, m, nsplit, mult, nkeys, &perm, &perm2,
										&ends, &ends2, first, size);
	NodeItems  *s = NewNodeItems(lat, node, nclasses, nclasses);

	for (int32 t = 0; t < nclasses; t++)
	{
		int32		c = perm[t];

		s->rep[t] = base ? base->rep[first[c]] : first[c];
		s->count[t] = size[c];
		s->class_end[t] = t + 1;
	}
	if (s->code != NULL)
		for (int32 t = 0; t < nclasses; t++)
			s->code[t] = ItemPacked(lat, base, first[perm[t]]);
	return s;
}

/* Evaluate one node: its classes, suppressed rows and utility */
void
EvaluateNode(Lattice *lat, int64 node)
{
	NodeItems   *base = CacheBase(lat, node);
	int32		m;
	int32	   *levels = lat->levels;
	int32	   *perm = lat->perm;
	int32	   *perm2 = lat->perm2;
	int32	   *ends = lat->ends;
	int32	   *ends2 = lat->ends2;
	int32	   *key = lat->key;
	int32		nclasses;
	int32		ngroups;
	NodeItems   *s;
	int			ncol = lat->ncolumns;
	int		   *split = lat->split;
	const int32 **maps = lat->maps;
	int			nsplit;
	uint64	   *mult = palloc(sizeof(uint64) * ncol);
	uint64		nkeys;

	CHECK_FOR_INTERRUPTS();
	NodeLevels(lat, node, levels);
	if (base != NULL)
		base->used = ++lat->clock;
	else
		base = BottomItems(lat);
	m = base ? base->nitems : (int32) lat->nrows;
	nsplit = 0;
	for (int i = 0; i < ncol; i++)
		if (lat->columns[i].ndist[levels[i]] > 1)
		{
			split[nsplit] = i;
			maps[nsplit] = levels[i] == 0 ? NULL : lat->columns[i].map[levels[i]];
			nsplit++;
		}
	/* group by one key, then order the classes */
	if ((base == NULL || base == lat->bottom) && m > 1 && nsplit > 1 &&
		ClassKeyRadix(lat, levels, nsplit, mult, &nkeys))
	{
		if (!lat->has_sensitive)
		{
			FinishNode(lat, node, ClassItems(lat, node, base, m, nsplit, mult, nkeys), levels);
			pfree(mult);
			return;
		}
		nclasses = GroupItems(lat, base, m, nsplit, mult, nkeys, &perm, &perm2, &ends, &ends2);
	}
	else
		nclasses = SplitColumns(lat, base, m, nsplit, &perm, &perm2, &ends, &ends2);
	pfree(mult);
	if (lat->has_sensitive)
	{
		int32	   *tmp;

		for (int32 x = 0; x < m; x++)
			key[x] = lat->sens[base ? base->rep[x] : x];
		ngroups = SplitClasses(lat, perm, ends, nclasses, key, perm2, ends2, lat->group_class);
		tmp = perm, perm = perm2, perm2 = tmp;
		tmp = ends, ends = ends2, ends2 = tmp;
	}
	else
	{
		ngroups = nclasses;
		for (int32 i = 0; i < nclasses; i++)
			lat->group_class[i] = i + 1;
	}

	/* the node's items */
	s = NewNodeItems(lat, node, ngroups, nclasses);
	{
		int32		begin = 0;

		for (int32 g = 0; g < ngroups; g++)
		{
			int32		end = ends[g];
			int64		count = 0;

			for (int32 x = begin; x < end; x++)
				count += base ? base->count[perm[x]] : 1;
			s->rep[g] = base ? base->rep[perm[begin]] : perm[begin];
			s->count[g] = (int32) count;
			begin = end;
		}
		if (s->code != NULL)
			for (int32 g = 0; g < ngroups; g++)
				s->code[g] = ItemPacked(lat, base, perm[g > 0 ? ends[g - 1] : 0]);
	}
	memcpy(s->class_end, lat->group_class, sizeof(int32) * nclasses);
	FinishNode(lat, node, s, levels);
}

/*
 * qidrisk_privacy_uniques_prefix(privacy, sizes, rows): how many of the
 * classes of these sizes (ascending), smallest first, population uniqueness
 * suppresses in a table of that many rows, as qid_lattice does (0 without it)
 */
Datum
qidrisk_privacy_uniques_prefix(PG_FUNCTION_ARGS)
{
	Lattice		lat;
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	int64		rows = PG_GETARG_INT64(2);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int64	   *kept;

	memset(&lat, 0, sizeof(lat));
	lat.funcname = "qid_anonymize_into";
	ParsePrivacy(&lat, PG_GETARG_JSONB_P(0));
	if (!lat.has_pu)
		PG_RETURN_INT64(0);
	deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
	kept = palloc(sizeof(int64) * 2 * Max(n, 1));
	lat.pu_sizes = palloc(sizeof(int64) * Max(n, 1));
	lat.pu_counts = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		kept[2 * i] = nulls[i] ? 0 : DatumGetInt64(elems[i]);
		kept[2 * i + 1] = i;
		if (kept[2 * i] < 1 || (i > 0 && kept[2 * i] < kept[2 * i - 2]))
			elog(ERROR, "qidrisk_privacy_uniques_prefix: class sizes must be positive and ascending");
	}
	lat.pu_population = Max(floor((double) rows / lat.pu_fraction + 0.5), 1.0);
	PG_RETURN_INT64(PopulationUniquenessPrefix(&lat, kept, n));
}
