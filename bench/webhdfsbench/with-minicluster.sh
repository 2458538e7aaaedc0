#!/usr/bin/env bash
# Runs bench/webhdfsbench with a real Hadoop WebHDFS as the reference: starts
# Apache Hadoop's MiniDFSCluster (conformance/hdfs, the production NameNode
# and DataNode classes), writes a file of the benchmark's size into it
# through its own WebHDFS (CREATE, following the redirect to the DataNode),
# runs the benchmark with -ref pointing at it, and stops the cluster.
# Extra arguments go to webhdfsbench (e.g. -size 256 -rounds 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
source conformance/lib.sh
size_mib=256
for ((i = 1; i <= $#; i++)); do
	if [ "${!i}" = "-size" ]; then j=$((i + 1)); size_mib=${!j}; fi
done
MINI_DIR=$(mktemp -d /tmp/silt-bench-minihdfs.XXXXXX)
trap 'stop_minicluster' EXIT
echo "starting the HDFS minicluster…" >&2
start_minicluster
base=${MINI_WEBHDFS%/webhdfs/v1}
user=$(id -un)
echo "writing a ${size_mib} MiB file into it…" >&2
head -c "$((size_mib << 20))" /dev/urandom >"$MINI_DIR/file"
loc=$(curl -fsS -o /dev/null -w '%{redirect_url}' -X PUT "$MINI_WEBHDFS/bench/file?op=CREATE&overwrite=true&user.name=$user")
curl -fsS -X PUT -T "$MINI_DIR/file" "$loc" >/dev/null
rm -f "$MINI_DIR/file"
go run ./bench/webhdfsbench -ref "$base" -ref-file /bench/file -ref-user "$user" "$@"
