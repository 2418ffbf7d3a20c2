/*
 * sketch.h
 *	  Functions of sketch.c that other files call.
 */
#ifndef SKETCH_H
#define SKETCH_H

#include "qidrisk.h"

extern void QidSketchCheckCapacity(int64 capacity, const char *funcname);
extern QidSketch *QidSketchCreate(MemoryContext context, int32 capacity);
extern void QidSketchAddRow(QidSketch *sketch, const QidFingerprint *fp);
extern void QidSketchMerge(QidSketch *into, const QidSketch *from);
extern bytea *QidSketchSerialize(const QidSketch *sketch);
extern QidSketch *QidSketchDeserialize(MemoryContext context, bytea *bytes);

#endif							/* SKETCH_H */
