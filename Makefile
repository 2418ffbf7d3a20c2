# qidrisk: PGXS build
EXTENSION = qidrisk
MODULE_big = qidrisk
OBJS = src/qidrisk.o src/aggcommon.o src/fingerprint.o src/freqstate.o src/handover.o src/frequency.o src/birthday.o src/distribution.o src/anonymity.o src/quantile.o src/clustering.o src/sample.o src/utility.o
OBJS += src/qidsearch.o
OBJS += src/kmap.o
OBJS += src/indivrisk.o
OBJS += src/gpd.o
OBJS += src/qar.o
OBJS += src/sketch.o
OBJS += src/qidkey.o
OBJS += src/relreader.o
OBJS += src/hashkey.o
OBJS += src/lattice.o
OBJS += src/checkhistory.o
OBJS += src/diversity.o
OBJS += src/hierarchy.o
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
$(OBJS): src/qidrisk.h src/compat.h
src/qidsearch.o: src/qidsearch_refine.h

.PHONY: prove
prove:
	pg_prove --ext .sql test/pgtap/

# The regression tests (VALGRIND_TESTS, all by default: about 7 minutes, 5 of
# them `parallel`) against a throwaway server under valgrind; fails on a
# valgrind error in our code
VALGRIND_TESTS ?= $(REGRESS)
.PHONY: valgrind
valgrind:
	PG_CONFIG="$(PG_CONFIG)" bash test/valgrind.sh $(VALGRIND_TESTS)
