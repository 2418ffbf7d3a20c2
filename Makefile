# qidrisk: PGXS build
EXTENSION = qidrisk
MODULE_big = qidrisk
OBJS = src/qidrisk.o src/aggcommon.o src/fingerprint.o src/freqclass.o src/freqspill.o src/freqmerge.o src/freqlog.o src/freqstate.o src/freqread.o src/freqwire.o src/handover.o src/frequency.o src/birthday.o src/distribution.o src/anonymity.o src/quantile.o src/clustering.o src/sample.o src/utility.o
OBJS += src/qidsearch.o
OBJS += src/kmap.o
OBJS += src/indivrisk.o
OBJS += src/popunique.o
OBJS += src/gpd.o
OBJS += src/qar.o
OBJS += src/sketch.o
OBJS += src/qidkey.o
OBJS += src/relreader.o src/valuedict.o
OBJS += src/hashkey.o
OBJS += src/lattice.o src/latticeoptions.o src/latticehier.o src/latticeread.o src/latticepop.o src/latticenode.o
OBJS += src/checkhistory.o
OBJS += src/diversity.o
OBJS += src/hierarchy.o
OBJS += src/boundary.o
OBJS += src/settings.o
EXTVERSION = $(shell sed -n "s/^default_version = '\\(.*\\)'/\\1/p" qidrisk.control)
# Only the current release installs from scratch: its script is the first
# release's (sql/base, not installed) followed by every upgrade script in
# order, so a new and an upgraded installation run the same statements.
# Earlier releases exist only as upgrade scripts.
UPGRADES = $(shell ls sql/qidrisk--*--*.sql | sort -t- -k3,3V)
DATA = $(UPGRADES)
DATA_built = sql/qidrisk--$(EXTVERSION).sql

TESTS = $(wildcard test/sql/*.sql)
REGRESS = $(patsubst test/sql/%.sql,%,$(TESTS))
REGRESS_OPTS = --inputdir=test --load-extension=qidrisk

PG_CFLAGS += -Wall -Wextra

PG_CONFIG ?= pg_config
# PostgreSQL's headers are not ours to warn about
PG_CPPFLAGS += -isystem $(shell $(PG_CONFIG) --includedir-server)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

sql/qidrisk--$(EXTVERSION).sql: sql/base/qidrisk--0.1.0.sql $(UPGRADES)
	{ echo '-- qidrisk $(EXTVERSION): built by make from the files below; edit those, not this'; \
	  for f in $^; do echo "-- ==== $$f"; cat "$$f"; done; } > $@

# a C file depends on the headers of the files it uses (any header, to be simple)
$(OBJS): $(wildcard src/*.h)
src/qidsearch.o: src/qidsearch_refine.h

# The regression suites create roles and read as them: a clear stop for a
# role that is not a superuser, before pg_regress creates its database
installcheck: check-superuser
.PHONY: check-superuser
check-superuser:
	@su=$$(psql -X -At -d postgres -c "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user" 2>&1); \
	if [ "$$su" != t ]; then \
		echo "make installcheck: the regression suites need a superuser (they create roles and read as them); connected as $$(psql -X -At -d postgres -c 'SELECT current_user' 2>/dev/null || echo '?'): $$su" >&2; \
		echo "Run them as one (e.g. PGUSER=postgres make installcheck), or run bash test/check.sh, which makes a throwaway cluster." >&2; \
		exit 1; \
	fi

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

# An earlier release's install script left by an older `make install` would
# let a database owner install that release: only the current one may stay
install: remove-superseded-scripts
.PHONY: remove-superseded-scripts
remove-superseded-scripts:
	for f in '$(DESTDIR)$(datadir)/$(datamoduledir)'/qidrisk--*.sql; do \
		case "$${f##*/}" in qidrisk--*--*.sql | qidrisk--$(EXTVERSION).sql) ;; *) rm -f "$$f" ;; esac; \
	done
