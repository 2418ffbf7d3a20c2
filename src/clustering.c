/*
 * clustering.c
 *	  The optimal k-anonymous 1-D clustering of Lodha & Thomas (2008),
 *	  Section 4.1: a dynamic program over sorted values that cuts them into
 *	  contiguous clusters of at least k rows at the least sum-of-squares,
 *	  k-median or k-center cost, never splitting equal values.
 *
 * The paper bounds clusters to k..2k-1 rows because a larger cluster can be
 * split without raising the cost.  With ties a cluster may have to be larger;
 * the rule that carries over is "no cluster that could be split into two of
 * at least k rows at a value boundary", which still leaves O(k) candidate
 * starts per end: O(n k) after sorting.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"

#include "clustering.h"
#include "qidrisk.h"

#define INTERRUPT_CHECK_MASK 0x3FF

ClusterCost
ClusterCostFromName(const char *name)
{
	if (strcmp(name, "sum_of_squares") == 0)
		return CLUSTER_SUM_OF_SQUARES;
	if (strcmp(name, "k_median") == 0)
		return CLUSTER_K_MEDIAN;
	if (strcmp(name, "k_center") == 0)
		return CLUSTER_K_CENTER;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown clustering cost \"%s\"", name),
			 errhint("Use sum_of_squares, k_median or k_center.")));
	return CLUSTER_SUM_OF_SQUARES;	/* keep the compiler quiet */
}

/* Sum of |x - median| over values[first..end) with the lower median */
static double
MedianCost(const double *values, const int64 *positions, const long double *sums,
		   int64 first, int64 end)
{
	int64		rows = positions[end] - positions[first];
	int64		target = positions[first] + (rows + 1) / 2;
	int64		lo = first;
	int64		hi = end - 1;
	long double median;
	long double below;
	long double above;

	/* the distinct value holding the cluster's target-th row */
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (positions[mid + 1] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	median = values[lo];
	below = median * (positions[lo] - positions[first]) - (sums[lo] - sums[first]);
	above = (sums[end] - sums[lo + 1]) - median * (positions[end] - positions[lo + 1]);
	return (double) (below + above);
}

/* Add count copies of value to a running mean and sum of squared deviations */
static inline void
WelfordAdd(double value, int64 count, double *mean, double *squares, int64 *rows)
{
	double		delta;
	double		weight;

	/* the first value sets the mean: Inf * 0 would make it NaN */
	if (*rows == 0)
	{
		*mean = value;
		*squares = 0.0;
		*rows = count;
		return;
	}
	delta = value - *mean;
	weight = (double) count * *rows / (*rows + count);
	*mean += delta * count / (*rows + count);
	*squares += delta * (delta * weight);
	*rows += count;
}

/*
 * values: ascending distinct values with their row counts.  Writes the index
 * of each cluster's first value to starts and the optimum to total_cost;
 * returns the number of clusters (0 when fewer than k rows).
 */
int64
OptimalCuts(const double *values, const int64 *counts, int64 nvalues, int64 k,
			ClusterCost cost, int64 *starts, double *total_cost)
{
	int64	   *positions = palloc_extended((nvalues + 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	long double *sums = palloc_extended((nvalues + 1) * sizeof(long double), MCXT_ALLOC_HUGE);
	double	   *best = palloc_extended((nvalues + 1) * sizeof(double), MCXT_ALLOC_HUGE);
	int64	   *previous = palloc_extended((nvalues + 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	int64		last = -1;
	int64		nclusters = 0;

	positions[0] = 0;
	sums[0] = 0;
	for (int64 i = 0; i < nvalues; i++)
	{
		positions[i + 1] = positions[i] + counts[i];
		sums[i + 1] = sums[i] + (long double) values[i] * counts[i];
	}

	best[0] = 0.0;
	previous[0] = -1;
	for (int64 end = 1; end <= nvalues; end++)
	{
		double		mean = 0.0;
		double		squares = 0.0;
		int64		rows = 0;

		best[end] = INFINITY;
		previous[end] = -1;

		/* last: the latest start that leaves a cluster of k rows up to end */
		while (last + 1 < end && positions[end] - positions[last + 1] >= k)
			last++;
		if (last < 0 || positions[end] - positions[last] < k)
			continue;

		/* sum-of-squares runs Welford's update as the start moves left */
		if (cost == CLUSTER_SUM_OF_SQUARES)
			for (int64 i = end - 1; i > last; i--)
				WelfordAdd(values[i], counts[i], &mean, &squares, &rows);

		for (int64 start = last; start >= 0; start--)
		{
			double		cluster;
			double		total;

			/* a cluster that splits into two of k rows never beats the split */
			if (start < last && positions[last] - positions[start] >= k)
				break;

			if (cost == CLUSTER_SUM_OF_SQUARES)
			{
				WelfordAdd(values[start], counts[start], &mean, &squares, &rows);
				cluster = squares;
			}
			else if (cost == CLUSTER_K_MEDIAN)
				cluster = MedianCost(values, positions, sums, start, end);
			else
				cluster = (values[end - 1] - values[start]) / 2.0;

			/* one distinct value costs nothing, even at an infinity */
			if (start == end - 1)
				cluster = 0.0;
			/* infinities give Inf - Inf: such a cluster is merely the dearest */
			if (isnan(cluster))
				cluster = INFINITY;

			if (start > 0 && previous[start] < 0)
				continue;		/* no valid clustering ends before start */
			total = cost == CLUSTER_K_CENTER ? Max(best[start], cluster) : best[start] + cluster;
			/* the first valid start is kept even when every cost overflows */
			if (previous[end] < 0 || total < best[end])
			{
				best[end] = total;
				previous[end] = start;
			}
		}
		if ((end & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
	}

	if (nvalues > 0 && previous[nvalues] >= 0)
	{
		int64		at = nvalues;

		while (at > 0)
		{
			nclusters++;
			at = previous[at];
		}
		at = nvalues;
		for (int64 j = nclusters - 1; j >= 0; j--)
		{
			at = previous[at];
			starts[j] = at;
		}
		*total_cost = best[nvalues];
	}
	else
		*total_cost = INFINITY;

	pfree(positions);
	pfree(sums);
	pfree(best);
	pfree(previous);
	return nclusters;
}
