# Kafka head against a real `silt serve`: kcat (librdkafka, a Kafka client
# nobody here wrote) lists, produces with every codec and consumes over
# SASL PLAIN, in plain TCP and TLS; grants refuse what they do not allow;
# what Kafka writes the native read shows byte for byte, and what is
# appended natively Kafka consumes at the same offsets; group consumers
# (kcat -G, the Java client) commit into silt reader groups; the Java
# client, Kafka's console tools and Spark's Kafka source work unmodified.
need kcat kcat || return
# Fast tiering: the file heads show what Kafka wrote within a second, and
# consumers from the beginning read across tier 2 and tier 1.
start_silt --tiering.max_lag 400ms --tiering.interval 100ms || return

silt() { "$SILT_BIN" "$@"; }
silt tenant create acme >/dev/null
silt stream create acme/clicks --encoding framed --segments 2 >/dev/null
silt principal create writer >/dev/null
silt principal create reader >/dev/null
silt grant writer append acme/clicks >/dev/null
silt grant reader read acme/clicks >/dev/null
WTOK=$(silt token create writer --label kcat 2>/dev/null)
RTOK=$(silt token create reader --label kcat 2>/dev/null)

# kc USER TOKEN ARGS...: kcat against the head over SASL PLAIN.
kc() {
	local user=$1 tok=$2
	shift 2
	timeout 60 kcat -b "127.0.0.1:$KAFKA_PORT" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN \
		-X sasl.username="$user" -X sasl.password="$tok" "$@"
}

kc root "$SILT_TOKEN" -L >"$CONF_TMP/md" 2>&1
check "kcat: -L lists acme.clicks" grep -q 'topic "acme.clicks" with 2 partitions' "$CONF_TMP/md"
check "kcat: -L names this broker" grep -q "broker 0 at 127.0.0.1:$KAFKA_PORT" "$CONF_TMP/md"

# One batch per codec, each to partition 0, values with a NUL and
# spaces; the native read of segment 0 must give them back in order.
: >"$CONF_TMP/sent"
for z in none gzip snappy lz4 zstd; do
	for i in 1 2 3; do printf '%s event %d\n' "$z" "$i"; done >"$CONF_TMP/in-$z"
	check "kcat: produce 3 records with $z" kc writer "$WTOK" -P -t acme.clicks -p 0 -z "$z" -l "$CONF_TMP/in-$z"
	cat "$CONF_TMP/in-$z" >>"$CONF_TMP/sent"
done
kc reader "$RTOK" -C -t acme.clicks -p 0 -o beginning -e -f '%s\n' >"$CONF_TMP/got" 2>"$CONF_TMP/got.err"
check "kcat: consume gives back the 15 values in order" cmp "$CONF_TMP/sent" "$CONF_TMP/got"
kc reader "$RTOK" -C -t acme.clicks -p 0 -o beginning -e -f '%o\n' 2>/dev/null | tr '\n' ' ' >"$CONF_TMP/offsets"
expect_eq "kcat: offsets are silt's, from 0" "$(cat "$CONF_TMP/offsets")" "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 "
silt read acme/clicks --segment 0 -o json 2>/dev/null | jq -r 'select(.data) | .data | @base64d' >"$CONF_TMP/native"
check "native read shows the Kafka values byte for byte" cmp "$CONF_TMP/sent" "$CONF_TMP/native"

# Appended natively (a lines stream), consumed through Kafka from a
# known offset.
silt stream create acme/native >/dev/null
printf 'native-1\nnative-2\n' | silt append acme/native >/dev/null 2>&1
kc root "$SILT_TOKEN" -C -t acme.native -p 0 -o 1 -e -f '%o %s\n' >"$CONF_TMP/p1" 2>/dev/null
expect_eq "kcat: consumes a native append from offset 1" "$(cat "$CONF_TMP/p1")" "1 native-2"

# Cross-protocol: values produced through Kafka into a lines stream are,
# once tiered, the chunk files WebHDFS serves, byte for byte (one line per
# record); a consumer from the beginning still reads them all.
silt stream create acme/xlines >/dev/null
seq 1 200 | sed 's/.*/{"via":"kafka","n":&}/' >"$CONF_TMP/xl"
check "kcat: produce 200 JSON lines" kc root "$SILT_TOKEN" -P -t acme.xlines -p 0 -z lz4 -l "$CONF_TMP/xl"
want=$(wc -c <"$CONF_TMP/xl")
HB=(-H "Authorization: Bearer $SILT_TOKEN")
got=0
for _ in $(seq 1 100); do
	got=$(curl -s "${HB[@]}" "$HDFS/webhdfs/v1/acme/xlines/segment=0?op=LISTSTATUS" | jq '[.FileStatuses.FileStatus[]?.length] | add // 0')
	[ "$got" -ge "$want" ] && break
	sleep 0.2
done
expect_eq "webhdfs: the Kafka records reached tier 2" "$got" "$want"
: >"$CONF_TMP/xl-files"
for f in $(curl -s "${HB[@]}" "$HDFS/webhdfs/v1/acme/xlines/segment=0?op=LISTSTATUS" | jq -r '.FileStatuses.FileStatus[].pathSuffix' | sort); do
	curl -sL "${HB[@]}" "$HDFS/webhdfs/v1/acme/xlines/segment=0/$f?op=OPEN" >>"$CONF_TMP/xl-files"
done
check "webhdfs: the chunk files are the produced values, one per line" cmp "$CONF_TMP/xl" "$CONF_TMP/xl-files"
# The same files over S3 (curl signing with SigV4, an S3 key of root's).
read -r AK SK < <(silt s3-key create root -o json 2>/dev/null | jq -r '"\(.access_key_id) \(.secret_access_key)"')
: >"$CONF_TMP/xl-s3"
for f in $(curl -s "${HB[@]}" "$HDFS/webhdfs/v1/acme/xlines/segment=0?op=LISTSTATUS" | jq -r '.FileStatuses.FileStatus[].pathSuffix' | sort); do
	curl -s -H "x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)" --aws-sigv4 "aws:amz:us-east-1:s3" \
		--user "$AK:$SK" "$S3/acme/xlines/segment%3D0/$f" >>"$CONF_TMP/xl-s3"
done
check "s3: the chunk objects are the produced values, one per line" cmp "$CONF_TMP/xl" "$CONF_TMP/xl-s3"
# The same files over NFS (libnfs's nfs-cat; the default export acts as
# anonymous, granted this stream).
if need nfs-cat libnfs-utils; then
	silt grant anonymous read acme/xlines >/dev/null
	: >"$CONF_TMP/xl-nfs"
	for f in $(curl -s "${HB[@]}" "$HDFS/webhdfs/v1/acme/xlines/segment=0?op=LISTSTATUS" | jq -r '.FileStatuses.FileStatus[].pathSuffix' | sort); do
		timeout 20 nfs-cat "nfs://127.0.0.1/acme/xlines/segment=0/$f?version=3&nfsport=$NFS_PORT&mountport=$NFS_PORT" >>"$CONF_TMP/xl-nfs" 2>/dev/null
	done
	check "nfs: the chunk files are the produced values, one per line" cmp "$CONF_TMP/xl" "$CONF_TMP/xl-nfs"
fi
kc root "$SILT_TOKEN" -C -t acme.xlines -p 0 -o beginning -e -f '%s\n' >"$CONF_TMP/xl-back" 2>/dev/null
check "kcat: a consumer from the beginning reads them all back after tiering" cmp "$CONF_TMP/xl" "$CONF_TMP/xl-back"

# Consumer groups are reader groups: kcat's balanced consumer (-G)
# commits into silt's reader group of the same name, which an admin made
# for the reader; `silt group lag` then shows it caught up.
silt group create acme/billing --stream clicks >/dev/null
timeout 60 kcat -b "127.0.0.1:$KAFKA_PORT" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN \
	-X sasl.username=reader -X sasl.password="$RTOK" -G acme.billing -o beginning -e -f '%p %o\n' acme.clicks \
	>"$CONF_TMP/grp" 2>"$CONF_TMP/grp.err"
expect_eq "kcat -G: the group consumer reads all 15 records" "$(grep -c . "$CONF_TMP/grp")" 15
silt group lag acme/billing -o json >"$CONF_TMP/lag" 2>&1
check "silt group lag: the Kafka group's commits show, 0 events behind" \
	jq -e '.events_behind == 0 and ([.segments[] | select(.segment == "0")][0].committed == 15)' "$CONF_TMP/lag"
printf 'later\n' | kc writer "$WTOK" -P -t acme.clicks -p 0 2>/dev/null
silt group lag acme/billing -o json >"$CONF_TMP/lag2" 2>&1
check "silt group lag: one more record is one event behind" jq -e '.events_behind == 1' "$CONF_TMP/lag2"

# Grants: the reader cannot produce, the writer cannot consume, a wrong
# token cannot connect; a refused produce stores nothing.
before=$(kc root "$SILT_TOKEN" -C -t acme.clicks -p 0 -o beginning -e -f '%o\n' 2>/dev/null | wc -l)
echo sneaky | kc reader "$RTOK" -P -t acme.clicks -p 0 >"$CONF_TMP/deny" 2>&1
check "kcat: reader's produce is refused (authorization)" grep -qi 'authoriz' "$CONF_TMP/deny"
after=$(kc root "$SILT_TOKEN" -C -t acme.clicks -p 0 -o beginning -e -f '%o\n' 2>/dev/null | wc -l)
expect_eq "kcat: the refused produce stored nothing" "$after" "$before"
kc writer "$WTOK" -C -t acme.clicks -p 0 -o beginning -e >"$CONF_TMP/deny2" 2>&1
check "kcat: writer's consume is refused (authorization)" grep -qi 'authoriz' "$CONF_TMP/deny2"
kc reader not-the-token -L >"$CONF_TMP/badauth" 2>&1
check "kcat: a wrong token fails SASL authentication" grep -qi 'authenticat' "$CONF_TMP/badauth"
if timeout 20 kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 5 >"$CONF_TMP/nosasl" 2>&1; then
	fail "kcat: a client without SASL got metadata (kafka.allow_anonymous is off)"
else
	pass "kcat: a client without SASL is refused"
fi
check "server log names the refused client" grep -q 'before SASL authentication' "$SILT_DATA/silt.log"

# TLS from the shared tls block: SASL_SSL with the dev CA.
TLSD=$(mktemp -d /tmp/silt-kafka-tls.XXXXXX)
read -r T1 T2 T3 T4 T5 <<<"$(free_ports 5)"
(cd "$TLSD" && exec "$SILT_BIN" serve --dev-tls --api.listen 127.0.0.1:$T1 --s3.listen 127.0.0.1:$T2 \
	--nfs.listen 127.0.0.1:$T3 --webhdfs.listen 127.0.0.1:$T4 --kafka.listen 127.0.0.1:$T5 >"$TLSD/log" 2>&1) &
TLS_PID=$!
for _ in $(seq 1 100); do
	[ -s "$TLSD/silt-data/root.token" ] && grep -q 'silt serving' "$TLSD/log" && break
	sleep 0.1
done
CA=$(grep -o 'silt --ca-file [^ ]*' "$TLSD/log" | head -1 | awk '{print $3}')
timeout 60 kcat -b "127.0.0.1:$T5" -X security.protocol=SASL_SSL -X ssl.ca.location="$CA" -X sasl.mechanisms=PLAIN \
	-X sasl.username=root -X sasl.password="$(cat "$TLSD/silt-data/root.token")" -L >"$CONF_TMP/tls" 2>&1
check "kcat: SASL_SSL with the dev CA gets metadata" grep -q "broker 0 at 127.0.0.1:$T5" "$CONF_TMP/tls"
kill "$TLS_PID" 2>/dev/null
wait "$TLS_PID" 2>/dev/null
rm -rf "$TLSD"

# The Apache Kafka Java client (kafka-clients from Maven Central through
# conformance/kafka/pom.xml, cached in $SILT_CACHE/m2): the admin client
# creates a topic and describes it, an idempotent acks=all producer sends
# snappy batches (the Java client's xerial framing), a group consumer reads
# them all and commits, and the reader group shows the commit.
need java default-jdk-headless || return
need javac default-jdk-headless || return
need mvn maven || return
KJ_DIR=$PWD/conformance/kafka
KJ_T=$KJ_DIR/target
mkdir -p "$KJ_T/classes"
if [ ! -s "$KJ_T/lib/kafka-clients-4.0.0.jar" ] || [ ! -s "$KJ_T/lib/kafka-tools-4.0.0.jar" ]; then
	echo "  fetching the Kafka Java client and tools (Maven Central)"
	if ! (cd "$KJ_DIR" && mvn -q -B "-Dmaven.repo.local=$SILT_M2" dependency:copy-dependencies -DoutputDirectory=target/lib >"$KJ_T/mvn.log" 2>&1); then
		fail "kafka: fetch the Kafka Java client (see $KJ_T/mvn.log)"
		return
	fi
fi
if ! javac -nowarn -d "$KJ_T/classes" -cp "$KJ_T/lib/*" "$KJ_DIR"/src/io/silt/conformance/*.java >"$KJ_T/javac.log" 2>&1; then
	fail "kafka: compile the Java probe"
	sed 's/^/       /' "$KJ_T/javac.log" | head -20
	return
fi
timeout 180 java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$KJ_T/classes:$KJ_T/lib/*" io.silt.conformance.KafkaProbe \
	"127.0.0.1:$KAFKA_PORT" root "$SILT_TOKEN" acme.javat acme.jgroup 30 >"$CONF_TMP/java" 2>&1
check "java: the admin client creates and lists a topic" grep -q 'admin: topic listed true' "$CONF_TMP/java"
check "java: describeConfigs shows cleanup.policy" grep -q 'admin: cleanup.policy delete' "$CONF_TMP/java"
check "java: an idempotent snappy producer's 30 records are acknowledged" grep -q 'producer: sent 30 acknowledged' "$CONF_TMP/java"
check "java: a group consumer receives exactly those 30" grep -q 'consumer: received 30 match true' "$CONF_TMP/java"
"$SILT_BIN" group lag acme/jgroup -o json >"$CONF_TMP/jlag" 2>&1
check "java: the consumer group's commit shows in silt group lag" \
	jq -e '.events_behind == 0 and ([.segments[].committed] | add) == 30' "$CONF_TMP/jlag"

# Kafka's console producer and consumer (kafka-console-*.sh), the consumer
# in a group.
cat >"$CONF_TMP/client.properties" <<P
security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="root" password="$SILT_TOKEN";
P
kjava() { timeout 120 java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$KJ_T/lib/*" "$@"; }
silt stream create acme/console --encoding framed >/dev/null
seq 1 5 | sed 's/^/console-/' >"$CONF_TMP/console-in"
kjava org.apache.kafka.tools.ConsoleProducer --bootstrap-server "127.0.0.1:$KAFKA_PORT" --topic acme.console \
	--producer.config "$CONF_TMP/client.properties" <"$CONF_TMP/console-in" >"$CONF_TMP/console-p.log" 2>&1
check "kafka-console-producer: 5 lines stored as 5 events" sh -c "'$SILT_BIN' read acme/console 2>/dev/null | cmp - '$CONF_TMP/console-in'"
kjava org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "127.0.0.1:$KAFKA_PORT" --topic acme.console \
	--from-beginning --max-messages 5 --group acme.console-g --consumer.config "$CONF_TMP/client.properties" \
	>"$CONF_TMP/console-out" 2>"$CONF_TMP/console-c.log"
check "kafka-console-consumer: reads the 5 lines back" cmp "$CONF_TMP/console-in" "$CONF_TMP/console-out"

# Three Java group consumers over three partitions; one is killed with
# SIGKILL (no LeaveGroup): once its session expires the others take its
# partition, and every record produced before and after is consumed.
silt stream create acme/jobs --encoding framed --segments 3 >/dev/null
silt group create acme/workers --stream jobs >/dev/null
silt grant reader read acme/jobs >/dev/null
for p in 0 1 2; do seq 1 20 | sed "s/^/a-$p-/" | kc root "$SILT_TOKEN" -P -t acme.jobs -p "$p"; done
JPIDS=()
for i in 1 2 3; do
	java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$KJ_T/classes:$KJ_T/lib/*" io.silt.conformance.KafkaProbe consume \
		"127.0.0.1:$KAFKA_PORT" reader "$RTOK" acme.jobs acme.workers "$CONF_TMP/jobs-$i" >"$CONF_TMP/jobs-$i.log" 2>&1 &
	JPIDS+=($!)
done
seen() { cat "$CONF_TMP"/jobs-[123] 2>/dev/null | awk '{print $3}' | sort -u | wc -l; }
for _ in $(seq 1 600); do [ "$(seen)" -ge 60 ] && break; sleep 0.1; done
expect_eq "java: three group consumers read the first 60 records" "$(seen)" 60
kill -9 "${JPIDS[0]}" 2>/dev/null
wait "${JPIDS[0]}" 2>/dev/null
for p in 0 1 2; do seq 1 20 | sed "s/^/b-$p-/" | kc root "$SILT_TOKEN" -P -t acme.jobs -p "$p"; done
for _ in $(seq 1 600); do [ "$(seen)" -ge 120 ] && break; sleep 0.1; done
expect_eq "java: after one consumer is killed, the other two read all 120 (none lost)" "$(seen)" 120
kill "${JPIDS[1]}" "${JPIDS[2]}" 2>/dev/null
wait "${JPIDS[1]}" "${JPIDS[2]}" 2>/dev/null
silt group lag acme/workers -o json >"$CONF_TMP/wlag" 2>&1
check "silt group lag: the workers' group committed all 120" jq -e '.events_behind == 0' "$CONF_TMP/wlag"

# Spark Structured Streaming reads a silt topic through spark-sql-kafka
# (pyspark 3.5.5 from PyPI in the suites' virtualenv, the connector from
# Maven Central through conformance/kafka/spark/pom.xml).
need_pymod pyspark 'pyspark==3.5.5'
KS_T=$KJ_DIR/spark/target
if ! venv_has_module pyspark; then
	fail "spark: cannot install pyspark 3.5.5 (PyPI)"
elif [ ! -s "$KS_T/lib/spark-sql-kafka-0-10_2.12-3.5.3.jar" ] &&
	! (cd "$KJ_DIR/spark" && mvn -q -B "-Dmaven.repo.local=$SILT_M2" dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory=target/lib >"$CONF_TMP/mvn-spark.log" 2>&1); then
	fail "spark: fetch spark-sql-kafka (Maven Central)"
else
	silt stream create acme/sp --encoding framed --segments 2 >/dev/null
	silt grant reader read acme/sp >/dev/null
	for p in 0 1; do seq 1 25 | sed "s/^/sp-$p-/" | kc root "$SILT_TOKEN" -P -t acme.sp -p $p; done
	KS_JARS=$(ls "$KS_T"/lib/spark-sql-kafka-*.jar "$KS_T"/lib/spark-token-provider-kafka-*.jar "$KS_T"/lib/kafka-clients-*.jar \
		"$KS_T"/lib/commons-pool2-*.jar | paste -sd,)
	timeout 300 python3 "$KJ_DIR/spark_read.py" "127.0.0.1:$KAFKA_PORT" reader "$RTOK" acme.sp "$KS_JARS" >"$CONF_TMP/spark" 2>"$CONF_TMP/spark.err"
	check "spark: a Structured Streaming query reads all 50 records from both partitions" grep -q 'rows 50 partitions 2 values 50' "$CONF_TMP/spark"
fi

# The Java client over TLS (SASL_SSL, the dev CA as a PEM trust store).
TLSD=$(mktemp -d /tmp/silt-kafka-tls.XXXXXX)
read -r T1 T2 T3 T4 T5 <<<"$(free_ports 5)"
(cd "$TLSD" && exec "$SILT_BIN" serve --dev-tls --api.listen 127.0.0.1:$T1 --s3.listen 127.0.0.1:$T2 \
	--nfs.listen 127.0.0.1:$T3 --webhdfs.listen 127.0.0.1:$T4 --kafka.listen 127.0.0.1:$T5 >"$TLSD/log" 2>&1) &
TLS_PID=$!
for _ in $(seq 1 100); do
	[ -s "$TLSD/silt-data/root.token" ] && grep -q 'silt serving' "$TLSD/log" && break
	sleep 0.1
done
CA=$(grep -o 'silt --ca-file [^ ]*' "$TLSD/log" | head -1 | awk '{print $3}')
(cd "$TLSD" && SILT_SERVER=https://127.0.0.1:$T1 SILT_TOKEN=$(cat silt-data/root.token) "$SILT_BIN" --ca-file "$CA" tenant create acme >/dev/null 2>&1)
timeout 180 java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$KJ_T/classes:$KJ_T/lib/*" io.silt.conformance.KafkaProbe \
	"127.0.0.1:$T5" root "$(cat "$TLSD/silt-data/root.token")" acme.tlst acme.tlsg 12 "$CA" >"$CONF_TMP/java-tls" 2>&1
check "java: over SASL_SSL, produce and group-consume 12 records" grep -q 'consumer: received 12 match true' "$CONF_TMP/java-tls"
kill "$TLS_PID" 2>/dev/null
wait "$TLS_PID" 2>/dev/null
rm -rf "$TLSD"
