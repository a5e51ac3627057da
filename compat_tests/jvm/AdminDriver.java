import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java AdminClient (with a producer and a consumer where an admin call needs data or a group) as a
 * user drives it, printing one "OBSERVED key=value" line per observation (the client logs go elsewhere). compat_tests/test_java_admin.py runs it
 * against pykbroker and against Apache Kafka and compares the lines.
 *
 * Run: java -cp 'jars/*' AdminDriver.java BOOTSTRAP
 */
public class AdminDriver {
    private static final Map<String, String> OUT = new TreeMap<>();

    static void observe(String key, Object value) {
        OUT.put(key, String.valueOf(value));
    }

    /** The exception class a failed future throws, as a user would catch it. */
    static String failure(ThrowingRunnable call) {
        try {
            call.run();
            return "none";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (Exception e) {
            return e.getClass().getSimpleName();
        }
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(props)) {
            cluster(admin);
            topics(admin);
            records(admin, bootstrap);
            groups(admin, bootstrap);
            transactions(admin, bootstrap);
            deletion(admin);
        }
        OUT.forEach((k, v) -> System.out.println("OBSERVED " + k + "=" + v));
    }

    static void cluster(Admin admin) throws Exception {
        DescribeClusterResult cluster = admin.describeCluster();
        observe("cluster.nodes", cluster.nodes().get().size());
        observe("cluster.has_controller", cluster.controller().get() != null);
        observe("cluster.has_id", !cluster.clusterId().get().isEmpty());
    }

    static void topics(Admin admin) throws Exception {
        NewTopic topic = new NewTopic("jd-a", 3, (short) 1).configs(Map.of("retention.ms", "3600000"));
        admin.createTopics(List.of(topic)).all().get();
        observe("create.again", failure(() -> admin.createTopics(List.of(topic)).all().get()));
        observe("create.bad_rf", failure(() -> admin.createTopics(List.of(new NewTopic("jd-rf", 1, (short) 3))).all().get()));
        observe("create.bad_name", failure(() -> admin.createTopics(List.of(new NewTopic("jd/x", 1, (short) 1))).all().get()));
        observe("list.has_topic", admin.listTopics().names().get().contains("jd-a"));
        TopicDescription described = admin.describeTopics(List.of("jd-a")).allTopicNames().get().get("jd-a");
        observe("describe.partitions", described.partitions().size());
        observe("describe.leaders", described.partitions().stream().allMatch(p -> p.leader() != null && p.isr().size() == 1));
        observe("describe.internal", described.isInternal());
        observe("describe.has_id", described.topicId() != null);
        observe("describe.missing", failure(() -> admin.describeTopics(List.of("jd-missing")).allTopicNames().get()));

        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, "jd-a");
        ConfigEntry retention = config(admin, resource).get("retention.ms");
        observe("config.retention", retention.value() + " " + retention.source());
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
            new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact,delete"), AlterConfigOp.OpType.SET),
            new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE)))).all().get();
        Config after = config(admin, resource);
        observe("config.altered", after.get("cleanup.policy").value() + " " + after.get("retention.ms").value()
            + " " + after.get("retention.ms").source());
        observe("config.bad_value", failure(() -> admin.incrementalAlterConfigs(Map.of(resource, List.of(
            new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all().get()));
        observe("config.unknown_key", failure(() -> admin.incrementalAlterConfigs(Map.of(resource, List.of(
            new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all().get()));

        admin.createPartitions(Map.of("jd-a", NewPartitions.increaseTo(4))).all().get();
        observe("partitions.increased", admin.describeTopics(List.of("jd-a")).allTopicNames().get().get("jd-a").partitions().size());
        observe("partitions.decrease", failure(() -> admin.createPartitions(Map.of("jd-a", NewPartitions.increaseTo(2))).all().get()));
    }

    static Config config(Admin admin, ConfigResource resource) throws Exception {
        return admin.describeConfigs(List.of(resource)).all().get().get(resource);
    }

    static void records(Admin admin, String bootstrap) throws Exception {
        admin.createTopics(List.of(new NewTopic("jd-data", 1, (short) 1))).all().get();
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("acks", "all");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>("jd-data", 0, 1_700_000_000_000L + i * 1000, "k" + i, "v" + i)).get();
            }
        }
        TopicPartition tp = new TopicPartition("jd-data", 0);
        observe("offsets.earliest", offset(admin, tp, OffsetSpec.earliest()));
        observe("offsets.latest", offset(admin, tp, OffsetSpec.latest()));
        observe("offsets.max_timestamp", offset(admin, tp, OffsetSpec.maxTimestamp()));
        observe("offsets.for_time", offset(admin, tp, OffsetSpec.forTimestamp(1_700_000_004_500L)));
        observe("offsets.after_end_time", offset(admin, tp, OffsetSpec.forTimestamp(1_800_000_000_000L)));
        observe("delete_records.low_watermark",
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp).get().lowWatermark());
        observe("offsets.earliest_after_delete", offset(admin, tp, OffsetSpec.earliest()));
        observe("delete_records.past_end", failure(() ->
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(50))).all().get()));
        List<ProducerState> producers = admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers();
        observe("producers.count", producers.size());
        observe("producers.last_sequence", producers.isEmpty() ? -1 : producers.get(0).lastSequence());
    }

    static long offset(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        ListOffsetsResult.ListOffsetsResultInfo info = admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get();
        return info.offset();
    }

    static void groups(Admin admin, String bootstrap) throws Exception {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", "jd-group");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        TopicPartition tp = new TopicPartition("jd-data", 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of("jd-data"));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen < 6 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                seen += records.count();
            }
            observe("group.consumed", seen);
            consumer.commitSync(Map.of(tp, new OffsetAndMetadata(7, "meta")));
            ConsumerGroupDescription group = admin.describeConsumerGroups(List.of("jd-group")).all().get().get("jd-group");
            observe("group.state", group.groupState());
            observe("group.members", group.members().size());
            observe("group.assignor", group.partitionAssignor());
            observe("group.listed", admin.listGroups().all().get().stream().anyMatch(g -> g.groupId().equals("jd-group")));
            observe("group.delete_active", failure(() -> admin.deleteConsumerGroups(List.of("jd-group")).all().get()));
        }
        Map<TopicPartition, OffsetAndMetadata> committed =
            admin.listConsumerGroupOffsets("jd-group").partitionsToOffsetAndMetadata().get();
        observe("group.committed", committed.get(tp).offset() + " " + committed.get(tp).metadata());
        observe("group.state_after_close", admin.describeConsumerGroups(List.of("jd-group")).all().get().get("jd-group").groupState());
        admin.alterConsumerGroupOffsets("jd-group", Map.of(tp, new OffsetAndMetadata(5))).all().get();
        observe("group.altered", admin.listConsumerGroupOffsets("jd-group").partitionsToOffsetAndMetadata().get().get(tp).offset());
        admin.deleteConsumerGroupOffsets("jd-group", Set.of(tp)).all().get();
        observe("group.offsets_after_delete", admin.listConsumerGroupOffsets("jd-group").partitionsToOffsetAndMetadata().get().size());
        admin.deleteConsumerGroups(List.of("jd-group")).all().get();
        observe("group.describe_deleted", failure(() -> admin.describeConsumerGroups(List.of("jd-group")).all().get()));
        observe("group.delete_missing", failure(() -> admin.deleteConsumerGroups(List.of("jd-nobody")).all().get()));
    }

    static void transactions(Admin admin, String bootstrap) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("transactional.id", "jd-txn");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("jd-a", 0, "k", "in-flight")).get();
            TransactionDescription ongoing = admin.describeTransactions(List.of("jd-txn")).all().get().get("jd-txn");
            observe("txn.ongoing", ongoing.state() + " " + ongoing.topicPartitions());
            Collection<TransactionListing> listed = admin.listTransactions().all().get();
            observe("txn.listed", listed.stream().filter(t -> t.transactionalId().equals("jd-txn"))
                .map(t -> t.state().toString()).collect(Collectors.toList()));
            TopicPartition tp = new TopicPartition("jd-a", 0);
            List<ProducerState> open = admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers();
            observe("txn.open_start_offset", open.get(0).currentTransactionStartOffset());
            producer.commitTransaction();
            long deadline = System.currentTimeMillis() + 10_000;
            String state;
            do {
                state = admin.describeTransactions(List.of("jd-txn")).all().get().get("jd-txn").state().toString();
            } while (state.startsWith("Prepare") && System.currentTimeMillis() < deadline);
            observe("txn.committed", state);
            // Transaction version 2 (KIP-890): every commit bumps the epoch, and the next transaction uses it.
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("jd-a", 1, "k", "second")).get();
            producer.commitTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("jd-a", 1, "k", "aborted")).get();
            producer.abortTransaction();
            TransactionDescription after;
            long abortDeadline = System.currentTimeMillis() + 10_000;
            do {  // Kafka answers EndTxn before its markers are written: wait for the Complete state
                after = admin.describeTransactions(List.of("jd-txn")).all().get().get("jd-txn");
            } while (after.state().toString().startsWith("Prepare") && System.currentTimeMillis() < abortDeadline);
            observe("txn.epoch_after_three", after.producerEpoch() + " " + after.state());
            observe("txn.end_offset_p1", offset(admin, new TopicPartition("jd-a", 1), OffsetSpec.latest()));
        }
        observe("txn.describe_missing", failure(() -> admin.describeTransactions(List.of("jd-nobody")).all().get()));
    }

    static void deletion(Admin admin) throws Exception {
        admin.deleteTopics(List.of("jd-a", "jd-data")).all().get();
        long deadline = System.currentTimeMillis() + 10_000;
        boolean gone;
        do {
            Set<String> names = admin.listTopics().names().get();
            gone = !names.contains("jd-a") && !names.contains("jd-data");
        } while (!gone && System.currentTimeMillis() < deadline);
        observe("delete.gone", gone);
        observe("delete.missing", failure(() -> admin.deleteTopics(List.of("jd-missing")).all().get()));
    }
}
