# qidrisk: PGXS build
EXTENSION = qidrisk
MODULE_big = qidrisk
OBJS = src/qidrisk.o src/aggcommon.o src/fingerprint.o src/freqstate.o src/frequency.o src/birthday.o src/distribution.o src/anonymity.o src/quantile.o src/clustering.o src/sample.o src/utility.o
OBJS += src/qidsearch.o
OBJS += src/gpd.o
OBJS += src/qar.o
src/qidsearch.o: src/qidsearch_refine.h
DATA = $(wildcard sql/qidrisk--*.sql)

TESTS = $(wildcard test/sql/*.sql)
REGRESS = $(patsubst test/sql/%.sql,%,$(TESTS))
REGRESS_OPTS = --inputdir=test --load-extension=qidrisk

PG_CFLAGS += -Wall -Wextra

PG_CONFIG ?= pg_config
# PostgreSQL's headers are not ours to warn about
PG_CPPFLAGS += -isystem $(shell $(PG_CONFIG) --includedir-server)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# every C file includes the shared header
$(OBJS): src/qidrisk.h

.PHONY: prove
prove:
	pg_prove --ext .sql test/pgtap/
