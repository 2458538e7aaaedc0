#!/usr/bin/env bash
# Starts a real single-datanode HDFS (Apache Hadoop's MiniDFSCluster) on
# 127.0.0.1 and runs it in the foreground until SIGTERM/SIGINT (or, with
# --exit-on-stdin-eof, until its standard input closes).
#
#   conformance/hdfs/start.sh --dir DIR --ready FILE [--nn-port N] [--http-port N]
#                             [--block-size BYTES] [--exit-on-stdin-eof]
#
# DIR holds the cluster's name and data directories: an empty or missing DIR
# is formatted, one left by an earlier run is started again with its files
# (to test an HDFS outage, stop the cluster and start it on the same DIR and
# --nn-port). DIR is never removed: that is the caller's job.
# Once the cluster is up, FILE gets one JSON line:
#   {"namenode":"127.0.0.1:N","webhdfs":"http://127.0.0.1:H/webhdfs/v1"}
# Ports default to free ones (0); --block-size sets dfs.blocksize (Hadoop's
# 128 MiB by default; tests use small blocks to cover multi-block files). The Hadoop jars come from Maven Central
# through conformance/hdfs/pom.xml (cached in $SILT_CACHE/m2, see
# conformance/venv.sh; copied to
# conformance/hdfs/target/, which git ignores); the first run fetches and
# compiles, later runs start at once. Suites use start_minicluster in
# conformance/lib.sh, which wraps this.
set -euo pipefail
HD=$(cd "$(dirname "$0")" && pwd)
source "$HD/../venv.sh"
T=$HD/target
V=3.4.1
for tool in java javac mvn; do
	command -v "$tool" >/dev/null 2>&1 || { echo "minihdfs: $tool is missing (Debian: default-jdk-headless, maven)" >&2; exit 3; }
done
mkdir -p "$T/classes" "$T/conf"
if [ ! -s "$T/lib/hadoop-client-minicluster-$V.jar" ] || [ ! -s "$T/lib/hadoop-client-runtime-$V.jar" ]; then
	echo "minihdfs: fetching Hadoop $V minicluster jars (Maven Central)" >&2
	if ! (cd "$HD" && mvn -q -B "-Dmaven.repo.local=$SILT_M2" dependency:copy-dependencies -DoutputDirectory=target/lib >"$T/mvn.log" 2>&1); then
		echo "minihdfs: mvn failed; see $T/mvn.log" >&2
		exit 3
	fi
fi
src=$HD/src/io/silt/conformance/MiniHdfs.java
cls=$T/classes/io/silt/conformance/MiniHdfs.class
if [ ! -s "$cls" ] || [ "$src" -nt "$cls" ]; then
	if ! javac -nowarn -d "$T/classes" -cp "$T/lib/*" "$src" >"$T/javac.log" 2>&1; then
		echo "minihdfs: javac failed; see $T/javac.log" >&2
		exit 3
	fi
fi
# Hadoop's Configuration wants a core-site.xml on the classpath.
[ -s "$T/conf/core-site.xml" ] || printf '<?xml version="1.0"?>\n<configuration/>\n' >"$T/conf/core-site.xml"
# exec, so that the caller's $! is the JVM and SIGTERM reaches it directly.
exec java -Xmx768m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
	-cp "$T/conf:$T/classes:$T/lib/*" io.silt.conformance.MiniHdfs "$@"
