/*
 * qidsearch_refine.h
 *	  The partition refinement of qidsearch.c, instantiated once per width of
 *	  the column codes (CODETYPE, SUFFIX): narrow codes keep the random reads
 *	  of a refinement in cache.
 */
#define CONCAT_(a, b) a##_##b
#define CONCAT(a, b) CONCAT_(a, b)
#define Refine_SUFFIX CONCAT(Refine, SUFFIX)

/*
 * Split every class of a partition by one more column, dropping singletons.
 * With write false only the kept classes and their rows are counted (a leaf
 * of the walk needs no more); out->rows and out->ends are then left alone.
 */
static pg_attribute_always_inline void
Refine_SUFFIX(Walk *walk, const QidPartition *in, int column, QidPartition *out,
			  bool write)
{
	const CODETYPE *codes = (const CODETYPE *) walk->codes[column];
	int32	   *scratch = walk->scratch;
	int32	   *counts = walk->counts;
	int32	   *slots = walk->slots;
	int32		next = 0;
	int32		begin = 0;
	int64		nclasses = 0;

	for (int64 i = 0; i < in->nclasses; i++)
	{
		int32		end = in->ends[i];

		if ((i & 0xFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (end - begin == 2)
		{
			/* a pair stays a pair or becomes two singletons */
			int32		a = in->rows[begin];
			int32		b = in->rows[begin + 1];

			if (codes[a] == codes[b])
			{
				if (write)
				{
					out->rows[next] = a;
					out->rows[next + 1] = b;
					out->ends[nclasses] = next + 2;
				}
				next += 2;
				nclasses++;
			}
		}
		else
		{
			int64		first_new = nclasses;

			/* read each row's code once, then work on the copy */
			for (int32 k = begin; k < end; k++)
			{
				int32		v = codes[in->rows[k]];

				scratch[k - begin] = v;
				counts[v]++;
			}
			for (int32 k = begin; k < end; k++)
			{
				int32		v = scratch[k - begin];
				int32		c = counts[v];

				if (!write)
				{
					/* read each code's count once, clearing it */
					if (c >= 2)
					{
						nclasses++;
						next += c;
					}
					counts[v] = 0;
				}
				else if (c >= 2)
				{
					/* the first row of a class of two or more: reserve its place */
					slots[v] = next;
					next += c;
					out->ends[nclasses++] = next;
					counts[v] = -1;
					out->rows[slots[v]++] = in->rows[k];
				}
				else if (c == -1)
					out->rows[slots[v]++] = in->rows[k];
				else
					counts[v] = 0;	/* a singleton's code is done */
			}
			/* clear the codes of the new classes through their first rows */
			if (write)
			{
				for (int64 j = first_new; j < nclasses; j++)
				{
					int32		start = j == 0 ? 0 : out->ends[j - 1];

					counts[codes[out->rows[start]]] = 0;
				}
			}
		}
		begin = end;
	}
	out->nclasses = nclasses;
	out->nrows = next;
}

#undef Refine_SUFFIX
#undef CONCAT
#undef CONCAT_
#undef CODETYPE
#undef SUFFIX
