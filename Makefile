# qidrisk: PGXS build
EXTENSION = qidrisk
MODULE_big = qidrisk
OBJS = src/qidrisk.o src/fingerprint.o src/freqstate.o src/frequency.o
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

.PHONY: prove
prove:
	pg_prove --ext .sql test/pgtap/
