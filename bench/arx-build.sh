#!/bin/bash
# bench/arx-build.sh - build ARX's library (src/main, no GUI) with javac into
# $ARX_HOME (default /opt/arx), for bench/arx.sh.  Nothing of ARX goes into
# this repository.
#
#   bench/arx-build.sh ARX_SOURCE_DIR
#
# ARX_SOURCE_DIR is a checkout of ARX (github arx-deidentifier/arx; its lib/ant
# holds the dependency jars).  Result:
#   $ARX_HOME/arx.jar        ARX's classes and src/main's resources
#   $ARX_HOME/lib/*.jar      the jars it runs with
#   $ARX_HOME/VERSION        ARX's version, the source commit (when known), the javac used
#
# Three jars of ARX's lib/ant may be missing from a checkout (large files):
#   pdfbox-app-2.0.1.jar      replaced by Debian's libpdfbox2-java (installed
#                             here with apt-get when absent); ARX's PDF
#                             certificate classes compile against it
#   hadoop-core-1.2.1.jar     only org.apache.hadoop.io.Writable is needed, to
#                             compile ARX's logistic-regression classifier
#                             (Mahout's class implements it); a two-method
#                             interface of that name is compiled into
#                             lib/hadoop-writable-stand-in.jar.  Anonymization
#                             never loads it.
#   poi-ooxml-schemas-*.jar   needed only at run time, to import .xlsx files
set -euo pipefail

SRC=${1:?usage: bench/arx-build.sh ARX_SOURCE_DIR}
OUT=${ARX_HOME:-/opt/arx}
[ -d "$SRC/src/main/org/deidentifier/arx" ] || { echo "arx-build: no ARX sources in $SRC" >&2; exit 2; }
command -v javac >/dev/null || { echo "arx-build: javac not found (Debian: default-jdk-headless)" >&2; exit 2; }

if [ ! -f /usr/share/java/pdfbox2.jar ] && [ ! -f "$SRC/lib/ant/pdfbox/pdfbox-app-2.0.1.jar" ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q libpdfbox2-java
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/classes" "$WORK/stand-in/org/apache/hadoop/io" "$WORK/stand-in-classes" "$OUT/lib"
rm -f "$OUT"/lib/*.jar

# the jars of ARX's build.xml library set, as far as the checkout has them
for jar in colt-1.2.0 commons-lang-2.6 commons-lang3-3.12.0 commons-math3-3.6.1 objectselector-0.1-lib \
	commons-io-2.4 commons-codec-1.5 commons-logging-1.1 commons-validator-1.4.1 dom4j-1.6.1 stax-api-1.0.1 \
	xmlbeans-2.3.0 poi-3.10-FINAL-20140208 poi-ooxml-3.10-FINAL-20140208 poi-ooxml-schemas-3.10-FINAL-20140208 \
	hppc-0.6.0 univocity-parsers-2.8.4 newtonraphson-0.0.1 jhpl-0.0.1 mahout-core-0.9 mahout-math-0.11.1 \
	hadoop-core-1.2.1 guava-18.0 slf4j-api-1.7.13 pdfbox-app-2.0.1 pdfbox-layout exp4j-0.4.8 smile-1.3.1-java7; do
	found=$(find "$SRC/lib/ant" -name "$jar.jar" | head -1)
	if [ -n "$found" ]; then
		cp "$found" "$OUT/lib/"
	else
		echo "arx-build: $jar.jar is not in the checkout"
	fi
done
if [ ! -f "$OUT/lib/pdfbox-app-2.0.1.jar" ]; then
	cp /usr/share/java/pdfbox2.jar /usr/share/java/fontbox2.jar "$OUT/lib/"
	echo "arx-build: using Debian's pdfbox2.jar and fontbox2.jar"
fi
if [ ! -f "$OUT/lib/hadoop-core-1.2.1.jar" ]; then
	cat >"$WORK/stand-in/org/apache/hadoop/io/Writable.java" <<'EOF'
package org.apache.hadoop.io;

/* Stand-in for the missing hadoop-core jar: the interface Mahout's classifier implements. */
public interface Writable {
	void write(java.io.DataOutput out) throws java.io.IOException;

	void readFields(java.io.DataInput in) throws java.io.IOException;
}
EOF
	javac --release 8 -nowarn -d "$WORK/stand-in-classes" "$WORK/stand-in/org/apache/hadoop/io/Writable.java"
	jar cf "$OUT/lib/hadoop-writable-stand-in.jar" -C "$WORK/stand-in-classes" .
	echo "arx-build: compiled a stand-in for org.apache.hadoop.io.Writable"
fi

CP=$(printf '%s:' "$OUT"/lib/*.jar)
find "$SRC/src/main" -name '*.java' >"$WORK/sources"
echo "arx-build: compiling $(wc -l <"$WORK/sources") files"
javac -nowarn -encoding UTF-8 --release 8 -cp "$CP" -d "$WORK/classes" @"$WORK/sources" 2>&1 |
	grep -v -E '^Note: ' || true
[ -f "$WORK/classes/org/deidentifier/arx/ARXAnonymizer.class" ] || { echo "arx-build: compilation failed" >&2; exit 1; }
# resources (the US census tables the population models use, the certificate's images)
(cd "$SRC/src/main" && find . -type f ! -name '*.java' -exec cp --parents {} "$WORK/classes/" \;)
jar cf "$OUT/arx.jar" -C "$WORK/classes" .

version=$(sed -n 's/.*name="arx.version" value="\([^"]*\)".*/\1/p' "$SRC/build.xml")
commit=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || cat "$SRC/COMMIT" 2>/dev/null || echo unknown)
{
	echo "ARX $version"
	echo "commit $commit"
	echo "built $(date -u +%Y-%m-%dT%H:%MZ) with $(javac -version 2>&1)"
} >"$OUT/VERSION"
cat "$OUT/VERSION"
