"""Spark Structured Streaming reads a silt topic through spark-sql-kafka, for
conformance/suites/kafka.sh.

    python3 spark_read.py BOOTSTRAP USER TOKEN TOPIC JARS

JARS: comma-separated spark-sql-kafka jars and the Kafka client they need
(conformance/kafka/spark/pom.xml fetches them).

Runs one availableNow micro-batch query from the earliest offsets and prints
"rows N partitions P values V" (V: the distinct values) for the suite.
"""
import sys

from pyspark.sql import SparkSession

bootstrap, user, token, topic, jars = sys.argv[1:6]
spark = (
    SparkSession.builder.master("local[2]")
    .appName("silt-kafka")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.jars", jars)
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s";' % (user, token)
stream = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("kafka.security.protocol", "SASL_PLAINTEXT")
    .option("kafka.sasl.mechanism", "PLAIN")
    .option("kafka.sasl.jaas.config", jaas)
    .option("subscribe", topic)
    .option("startingOffsets", "earliest")
    .load()
)
rows = []


def collect(df, _):
    rows.extend(df.selectExpr("partition", "CAST(value AS STRING) AS value").collect())


q = stream.writeStream.foreachBatch(collect).trigger(availableNow=True).start()
q.awaitTermination()
print("rows %d partitions %d values %d" % (len(rows), len({r.partition for r in rows}), len({r.value for r in rows})))
spark.stop()
