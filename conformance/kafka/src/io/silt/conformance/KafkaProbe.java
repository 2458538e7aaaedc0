package io.silt.conformance;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Apache Kafka Java client against silt's Kafka head, for
 * conformance/suites/kafka.sh. Usage:
 *
 *   KafkaProbe BOOTSTRAP USER TOKEN TOPIC GROUP COUNT [CA_PEM]
 *
 * With CA_PEM the client speaks SASL_SSL and trusts that PEM CA.
 *
 *   KafkaProbe consume BOOTSTRAP USER TOKEN TOPIC GROUP OUTFILE
 *
 * runs one group consumer until killed, appending each record it receives
 * ("partition offset value") to OUTFILE, then committing its offsets.
 * Creates TOPIC (3 partitions) with the admin client, produces COUNT records
 * (idempotent, acks=all, snappy: the Java client's xerial framing), consumes
 * them with consumer group GROUP and commits, and prints one line per step
 * for the suite to check.
 */
public final class KafkaProbe {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("consume")) {
            consume(args[1], args[2], args[3], args[4], args[5], args[6]);
            return;
        }
        String bootstrap = args[0], user = args[1], token = args[2], topic = args[3], group = args[4];
        int count = Integer.parseInt(args[5]);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        common.put("security.protocol", "SASL_PLAINTEXT");
        if (args.length > 6) {
            common.put("security.protocol", "SASL_SSL");
            common.put("ssl.truststore.type", "PEM");
            common.put("ssl.truststore.location", args[6]);
        }
        common.put("sasl.mechanism", "PLAIN");
        common.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + token + "\";");

        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
            Set<String> names = admin.listTopics().names().get();
            System.out.println("admin: topic listed " + names.contains(topic));
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config cfg = admin.describeConfigs(List.of(res)).all().get().get(res);
            System.out.println("admin: cleanup.policy " + cfg.get("cleanup.policy").value());
        }

        Properties p = new Properties();
        p.putAll(common);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("compression.type", "snappy");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        long last = -1;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % 3, null, "java-" + i)));
            }
            producer.flush();
            for (var f : sent) {
                last = Math.max(last, f.get().offset());
            }
        }
        System.out.println("producer: sent " + count + " acknowledged");

        Properties c = new Properties();
        c.putAll(common);
        c.put("group.id", group);
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(Collections.singletonList(topic));
            long deadline = System.currentTimeMillis() + 60_000; // a safety net, not a bound
            while (got.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    got.add(r.value());
                }
            }
            consumer.commitSync();
        }
        Collections.sort(got);
        List<String> want = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            want.add("java-" + i);
        }
        Collections.sort(want);
        System.out.println("consumer: received " + got.size() + " match " + got.equals(want));
    }

    static Properties plain(String bootstrap, String user, String token) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + token + "\";");
        return p;
    }

    static void consume(String bootstrap, String user, String token, String topic, String group, String out)
            throws Exception {
        Properties c = plain(bootstrap, user, token);
        c.put("group.id", group);
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("session.timeout.ms", "6000");
        c.put("heartbeat.interval.ms", "500");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
                java.io.FileWriter w = new java.io.FileWriter(out, true)) {
            consumer.subscribe(Collections.singletonList(topic));
            while (true) {
                var recs = consumer.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    continue;
                }
                // Written before the commit: a consumer killed in between
                // has its records read again by another (at least once).
                for (ConsumerRecord<String, String> r : recs) {
                    w.write(r.partition() + " " + r.offset() + " " + r.value() + "\n");
                }
                w.flush();
                consumer.commitSync();
            }
        }
    }
}
