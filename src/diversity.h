/*
 * diversity.h
 *	  Functions of diversity.c that other files call.
 */
#ifndef DIVERSITY_H
#define DIVERSITY_H

#include "qidrisk.h"

extern void OrderedTableInit(OrderedTable *table, const int64 *count, int64 m);
extern void OrderedItemsSort(OrderedItem *items, int64 n);
extern double OrderedDistance(const OrderedTable *table, const OrderedItem *items,
							  int64 n, int64 size);

#endif							/* DIVERSITY_H */
