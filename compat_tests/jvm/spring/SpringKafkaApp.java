// A Spring for Apache Kafka application (plain Spring, no Boot) doing what Spring Kafka users rely on, run by
// compat_tests/test_spring_kafka.py against pykbroker and against Apache Kafka 4.4: the test compares the JSON
// report this writes (what the application observed) between the two.
//
// Usage: java -cp 'classes:jars/*' SpringKafkaApp BOOTSTRAP PREFIX GROUP_PROTOCOL REPLICATION FAILOVER REPORT
//   PREFIX starts every topic and group name (the report names them without it); GROUP_PROTOCOL classic|consumer;
//   REPLICATION of the declared topics; FAILOVER true: print "READY-TO-KILL" half-way through the failover phase
//   and wait for a line on stdin (the test kills a broker meanwhile); REPORT: the JSON file written at the end.
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.DltHandler;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.listener.AbstractConsumerSeekAware;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.requestreply.ReplyingKafkaTemplate;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.serializer.ErrorHandlingDeserializer;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.util.backoff.FixedBackOff;

public class SpringKafkaApp {
    static String bootstrap;
    static String prefix;
    static String protocol;
    static int replication;
    // The seek records' timestamps: an hour ago, well within retention.ms (records older than it are deleted by the
    // broker's first retention check, 30 s after its start on Kafka as on pykbroker: seen with a 2023 timestamp)
    static final long BASE_TS = System.currentTimeMillis() / 1000 * 1000 - 3_600_000L;
    static final Map<String, Object> report = new TreeMap<>();

    // --- what the listeners saw -------------------------------------------------------------------------------
    static final List<String> orders = new CopyOnWriteArrayList<>();
    static final List<String> batch = new CopyOnWriteArrayList<>();
    static final List<Integer> batchSizes = new CopyOnWriteArrayList<>();
    static final List<String> acks = new CopyOnWriteArrayList<>();
    static final List<String> seeks = new CopyOnWriteArrayList<>();
    static final List<String> assigned = new CopyOnWriteArrayList<>();
    static final List<String> paused = new CopyOnWriteArrayList<>();
    static final Map<String, Integer> errorAttempts = new ConcurrentHashMap<>();
    static final Map<String, Integer> retryAttempts = new ConcurrentHashMap<>();
    static final List<String> retryTopicsSeen = new CopyOnWriteArrayList<>();
    static final List<String> retryDlt = new CopyOnWriteArrayList<>();
    static final List<String> poison = new CopyOnWriteArrayList<>();
    static final Map<String, Integer> rpwAttempts = new ConcurrentHashMap<>();
    static final Set<String> failover = ConcurrentHashMap.newKeySet();

    static String t(String name) { return prefix + name; }

    static String strip(String name) { return name.startsWith(prefix) ? name.substring(prefix.length()) : name; }

    static String rec(ConsumerRecord<?, ?> r) {
        return strip(r.topic()) + "/" + r.partition() + "@" + r.offset() + " " + r.key() + "=" + r.value() + headers(r);
    }

    static String headers(ConsumerRecord<?, ?> r) {
        StringBuilder b = new StringBuilder();
        for (Header h : r.headers()) {
            if (h.key().startsWith("app-")) {
                b.append(" ").append(h.key()).append(":").append(new String(h.value(), StandardCharsets.UTF_8));
            }
        }
        return b.toString();
    }

    static List<String> sorted(Collection<String> c) { return new ArrayList<>(new TreeSet<>(c)); }

    // --- configuration ----------------------------------------------------------------------------------------
    static Map<String, Object> consumerProps() {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000);
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
        }
        return p;
    }

    static Map<String, Object> producerProps() {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        return p;
    }

    @Configuration
    @EnableKafka
    @EnableTransactionManagement
    public static class AppConfig {
        @Bean
        public KafkaAdmin admin() {
            KafkaAdmin admin = new KafkaAdmin(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
            admin.setModifyTopicConfigs(true);
            admin.setFatalIfBrokerNotAvailable(true);
            return admin;
        }

        @Bean public NewTopic ordersTopic() { return TopicBuilder.name(t("orders")).partitions(3).replicas(replication).build(); }
        @Bean public NewTopic batchTopic() { return TopicBuilder.name(t("batch")).partitions(2).replicas(replication).build(); }
        @Bean public NewTopic acksTopic() { return TopicBuilder.name(t("acks")).partitions(1).replicas(replication).build(); }
        @Bean public NewTopic seekTopic() { return TopicBuilder.name(t("seek")).partitions(1).replicas(replication).build(); }
        @Bean public NewTopic pauseTopic() { return TopicBuilder.name(t("pause")).partitions(1).replicas(replication).build(); }
        @Bean public NewTopic errorsTopic() { return TopicBuilder.name(t("errors")).partitions(2).replicas(replication).build(); }
        @Bean public NewTopic errorsDlt() { return TopicBuilder.name(t("errors-dlt")).partitions(2).replicas(replication).build(); }
        @Bean public NewTopic poisonTopic() { return TopicBuilder.name(t("poison")).partitions(1).replicas(replication).build(); }
        @Bean public NewTopic poisonDlt() { return TopicBuilder.name(t("poison-dlt")).partitions(1).replicas(replication).build(); }
        @Bean public NewTopic txTopic() { return TopicBuilder.name(t("tx")).partitions(1).replicas(replication).build(); }
        @Bean public NewTopic rpwIn() { return TopicBuilder.name(t("rpw-in")).partitions(2).replicas(replication).build(); }
        @Bean public NewTopic rpwOut() { return TopicBuilder.name(t("rpw-out")).partitions(2).replicas(replication).build(); }
        @Bean public NewTopic requests() { return TopicBuilder.name(t("requests")).partitions(2).replicas(replication).build(); }
        @Bean public NewTopic replies() { return TopicBuilder.name(t("replies")).partitions(2).replicas(replication).build(); }
        @Bean public NewTopic failoverOut() { return TopicBuilder.name(t("failover-out")).partitions(3).replicas(replication).build(); }
        @Bean public NewTopic failoverTopic() { return TopicBuilder.name(t("failover")).partitions(3).replicas(replication).build(); }

        @Bean
        public NewTopic grow() {
            return TopicBuilder.name(t("grow")).partitions(2).replicas(replication)
                    .config("retention.ms", "3600000").config("cleanup.policy", "compact").build();
        }

        @Bean
        public ProducerFactory<String, String> producerFactory() {
            return new DefaultKafkaProducerFactory<>(producerProps());
        }

        @Bean
        public ProducerFactory<String, String> txProducerFactory() {
            DefaultKafkaProducerFactory<String, String> pf = new DefaultKafkaProducerFactory<>(producerProps());
            pf.setTransactionIdPrefix(t("tx-"));
            return pf;
        }

        @Bean
        public KafkaTemplate<String, String> template() {
            KafkaTemplate<String, String> template = new KafkaTemplate<>(producerFactory());
            template.setConsumerFactory(consumerFactory());
            return template;
        }

        @Bean
        public KafkaTemplate<String, String> txTemplate() {
            ReadProcessWrite.txTemplate = new KafkaTemplate<>(txProducerFactory());
            return ReadProcessWrite.txTemplate;
        }

        @Bean
        public KafkaTemplate<String, byte[]> bytesTemplate() {
            Map<String, Object> p = producerProps();
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
            return new KafkaTemplate<>(new DefaultKafkaProducerFactory<>(p));
        }

        @Bean
        public KafkaTransactionManager<String, String> kafkaTransactionManager() {
            return new KafkaTransactionManager<>(txProducerFactory());
        }

        @Bean
        public ThreadPoolTaskScheduler taskScheduler() {
            ThreadPoolTaskScheduler s = new ThreadPoolTaskScheduler();
            s.setPoolSize(2);
            return s;
        }

        @Bean
        public DefaultKafkaConsumerFactory<String, String> consumerFactory() {
            return new DefaultKafkaConsumerFactory<>(consumerProps());
        }

        @Bean
        public ConcurrentKafkaListenerContainerFactory<String, String> kafkaListenerContainerFactory() {
            ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
            f.setConsumerFactory(consumerFactory());
            f.setReplyTemplate(template());
            return f;
        }

        @Bean
        public ConcurrentKafkaListenerContainerFactory<String, String> manualFactory() {
            ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
            f.setConsumerFactory(consumerFactory());
            f.getContainerProperties().setAckMode(ContainerProperties.AckMode.MANUAL_IMMEDIATE);
            return f;
        }

        @Bean
        public ConcurrentKafkaListenerContainerFactory<String, String> dltFactory() {
            ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
            f.setConsumerFactory(consumerFactory());
            Map<Class<?>, KafkaOperations<?, ?>> templates = new LinkedHashMap<>();
            templates.put(byte[].class, bytesTemplate());
            templates.put(Object.class, template());
            DeadLetterPublishingRecoverer recoverer = new DeadLetterPublishingRecoverer(templates,
                    (r, e) -> new TopicPartition(r.topic() + "-dlt", r.partition()));
            f.setCommonErrorHandler(new DefaultErrorHandler(recoverer, new FixedBackOff(100L, 2L)));
            return f;
        }

        @Bean
        public ConcurrentKafkaListenerContainerFactory<String, String> txFactory() {
            ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
            f.setConsumerFactory(consumerFactory());
            f.getContainerProperties().setKafkaAwareTransactionManager(kafkaTransactionManager());
            f.setCommonErrorHandler(new DefaultErrorHandler(new FixedBackOff(100L, 5L)));
            return f;
        }

        // Read-process-write through a broker's kill -9: retried (rolled back and sought) until it goes through
        @Bean
        public ConcurrentKafkaListenerContainerFactory<String, String> failoverFactory() {
            ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
            f.setConsumerFactory(consumerFactory());
            f.getContainerProperties().setKafkaAwareTransactionManager(kafkaTransactionManager());
            f.setCommonErrorHandler(new DefaultErrorHandler(new FixedBackOff(500L, 600L)));
            return f;
        }

        @Bean
        public ConcurrentMessageListenerContainer<String, String> repliesContainer() {
            ContainerProperties props = new ContainerProperties(t("replies"));
            props.setGroupId(t("replies-group"));
            return new ConcurrentMessageListenerContainer<>(consumerFactory(), props);
        }

        @Bean
        public ReplyingKafkaTemplate<String, String, String> replyingTemplate() {
            ReplyingKafkaTemplate<String, String, String> r = new ReplyingKafkaTemplate<>(producerFactory(), repliesContainer());
            r.setDefaultReplyTimeout(Duration.ofSeconds(60));
            return r;
        }

        @Bean public Listeners listeners() { return new Listeners(); }
        @Bean public SeekListener seekListener() { return new SeekListener(); }
        @Bean public RetryListener retryListener() { return new RetryListener(); }
        @Bean public TxService txService() { return new TxService(); }
    }

    public static class Listeners {
        @KafkaListener(id = "orders", topics = "${p}orders", groupId = "${p}orders-group", concurrency = "3")
        public void orders(ConsumerRecord<String, String> r) { orders.add(rec(r)); }

        @KafkaListener(id = "batch", topics = "${p}batch", groupId = "${p}batch-group", batch = "true")
        public void batch(List<ConsumerRecord<String, String>> records) {
            batchSizes.add(records.size());
            records.forEach(r -> batch.add(rec(r)));
        }

        @KafkaListener(id = "acks", topics = "${p}acks", groupId = "${p}acks-group", containerFactory = "manualFactory")
        public void acks(ConsumerRecord<String, String> r, Acknowledgment ack) {
            acks.add(rec(r));
            if (!r.value().startsWith("unacked")) {
                ack.acknowledge();
            }
        }

        @KafkaListener(id = "pause", topics = "${p}pause", groupId = "${p}pause-group")
        public void pause(ConsumerRecord<String, String> r) { paused.add(rec(r)); }

        @KafkaListener(id = "errors", topics = "${p}errors", groupId = "${p}errors-group", containerFactory = "dltFactory")
        public void errors(ConsumerRecord<String, String> r) {
            if (r.value().startsWith("bad")) {
                errorAttempts.merge(r.value(), 1, Integer::sum);
                throw new IllegalStateException("refused " + r.value());
            }
        }

        @KafkaListener(id = "poison", topics = "${p}poison", groupId = "${p}poison-group", containerFactory = "dltFactory",
                properties = {"value.deserializer=org.springframework.kafka.support.serializer.ErrorHandlingDeserializer",
                        "spring.deserializer.value.delegate.class=org.apache.kafka.common.serialization.LongDeserializer"})
        public void poison(ConsumerRecord<String, Long> r) { poison.add(rec(r)); }

        @KafkaListener(id = "rpw", topics = "${p}rpw-in", groupId = "${p}rpw-group", containerFactory = "txFactory")
        public void readProcessWrite(ConsumerRecord<String, String> r) { ReadProcessWrite.process(r); }

        @KafkaListener(id = "server", topics = "${p}requests", groupId = "${p}server-group")
        @SendTo
        public String serve(String request) { return request.toUpperCase(); }

        // Partitions assigned explicitly, from an initial offset: no group membership, offsets committed to the group
        @KafkaListener(id = "assigned", groupId = "${p}assigned-group", autoStartup = "false", topicPartitions =
                @org.springframework.kafka.annotation.TopicPartition(topic = "${p}orders", partitionOffsets =
                        @org.springframework.kafka.annotation.PartitionOffset(partition = "1", initialOffset = "2")))
        public void assigned(ConsumerRecord<String, String> r) { assigned.add(rec(r)); }

        @KafkaListener(id = "failover", topics = "${p}failover", groupId = "${p}failover-group", autoStartup = "false",
                containerFactory = "failoverFactory")
        public void failover(ConsumerRecord<String, String> r) {
            ReadProcessWrite.txTemplate.send(t("failover-out"), r.key(), r.value() + "-out");
            failover.add(r.value());
        }
    }

    public static class SeekListener extends AbstractConsumerSeekAware {
        @KafkaListener(id = "seek", topics = "${p}seek", groupId = "${p}seek-group", autoStartup = "false")
        public void seek(ConsumerRecord<String, String> r) { seeks.add(rec(r) + " ts=" + (r.timestamp() - BASE_TS)); }

        @Override
        public void onPartitionsAssigned(Map<TopicPartition, Long> assignments, ConsumerSeekCallback callback) {
            super.onPartitionsAssigned(assignments, callback);
            callback.seekToTimestamp(assignments.keySet(), BASE_TS + 2500);
        }
    }

    public static class RetryListener {
        @RetryableTopic(attempts = "3", backOff = @BackOff(delay = 200), numPartitions = "2", kafkaTemplate = "template",
                replicationFactor = "${replication}")
        @KafkaListener(id = "retry", topics = "${p}retry", groupId = "${p}retry-group")
        public void retry(ConsumerRecord<String, String> r) {
            retryTopicsSeen.add(strip(r.topic()) + " " + r.value());
            if (r.value().startsWith("bad")) {
                retryAttempts.merge(r.value(), 1, Integer::sum);
                throw new IllegalArgumentException("retry refused " + r.value());
            }
        }

        @DltHandler
        public void dlt(ConsumerRecord<String, String> r) { retryDlt.add(strip(r.topic()) + " " + r.value()); }
    }

    public static class TxService {
        @Transactional("kafkaTransactionManager")
        public void sendBoth(KafkaTemplate<String, String> template, String a, String b, boolean fail) {
            template.send(t("tx"), "k", a);
            template.send(t("tx"), "k", b);
            template.flush();
            if (fail) {
                throw new IllegalStateException("rolled back");
            }
        }
    }

    // The read-process-write listener: the container's transaction covers the send and the offsets.
    public static class ReadProcessWrite {
        static volatile KafkaTemplate<String, String> txTemplate;

        static void process(ConsumerRecord<String, String> r) {
            int attempt = rpwAttempts.merge(r.value(), 1, Integer::sum);
            txTemplate.send(t("rpw-out"), r.key(), r.value() + "-out");
            if (r.value().startsWith("fail-once") && attempt == 1) {
                throw new IllegalStateException("first attempt of " + r.value() + " fails");
            }
        }
    }

    // --- helpers ------------------------------------------------------------------------------------------------
    static void await(String what, long seconds, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after " + seconds + " s waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    static String meta(RecordMetadata m) { return strip(m.topic()) + "/" + m.partition() + "@" + m.offset(); }

    /** Every record of ``topic`` (read_committed or not), from the beginning, once ``count`` have come. */
    static List<ConsumerRecord<String, byte[]>> readAll(String topic, int count, boolean committed) throws Exception {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, committed ? "read_committed" : "read_uncommitted");
        List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(p, new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).collect(Collectors.toList());
            c.assign(parts);
            c.seekToBeginning(parts);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (out.size() < count && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
            Thread.sleep(300);
            c.poll(Duration.ofMillis(500)).forEach(out::add);  // anything past ``count`` is reported too
        }
        out.sort((a, b) -> a.partition() != b.partition() ? Integer.compare(a.partition(), b.partition())
                : Long.compare(a.offset(), b.offset()));
        return out;
    }

    /** A DLT record: where it is, its value and its Spring headers (but stack traces and timestamps). */
    static Map<String, Object> dltRecord(ConsumerRecord<String, byte[]> r) {
        Map<String, Object> m = new TreeMap<>();
        m.put("at", strip(r.topic()) + "/" + r.partition() + "@" + r.offset());
        m.put("key", r.key());
        m.put("value", r.value() == null ? null : new String(r.value(), StandardCharsets.ISO_8859_1));
        Map<String, Object> h = new TreeMap<>();
        for (Header header : r.headers()) {
            String k = header.key();
            if (k.contains("stacktrace") || k.contains("timestamp") && !k.contains("timestamp-type")) {
                h.put(k, "(present)");
                continue;
            }
            byte[] v = header.value();
            Object decoded;
            if (v != null && (k.endsWith("-partition") || k.endsWith("attempts")) && v.length == 4) {
                decoded = ByteBuffer.wrap(v).getInt();
            } else if (v != null && k.endsWith("-offset") && v.length == 8) {
                decoded = ByteBuffer.wrap(v).getLong();
            } else {
                decoded = v == null ? null : strip(new String(v, StandardCharsets.UTF_8));
            }
            h.put(k, decoded);
        }
        m.put("headers", h);
        return m;
    }

    static Map<String, Object> describe(Admin admin, Collection<String> topics) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS);
        List<ConfigResource> resources = topics.stream().map(n -> new ConfigResource(ConfigResource.Type.TOPIC, n))
                .collect(Collectors.toList());
        Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get(30, TimeUnit.SECONDS);
        for (String name : topics) {
            Map<String, Object> m = new TreeMap<>();
            TopicDescription td = d.get(name);
            m.put("partitions", td.partitions().size());
            m.put("replicas", td.partitions().get(0).replicas().size());
            m.put("internal", td.isInternal());
            Map<String, String> set = new TreeMap<>();
            for (ConfigEntry e : configs.get(new ConfigResource(ConfigResource.Type.TOPIC, name)).entries()) {
                if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) {
                    set.put(e.name(), e.value());
                }
            }
            m.put("configs", set);
            out.put(strip(name), m);
        }
        return out;
    }

    static Map<String, Long> committed(Admin admin, String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(t(group))
                .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        Map<String, Long> out = new TreeMap<>();
        offsets.forEach((tp, o) -> out.put(strip(tp.topic()) + "/" + tp.partition(), o == null ? null : o.offset()));
        return out;
    }

    /** The exception chain's classes and messages (topic names without the prefix). */
    static List<String> chain(Throwable e) {
        List<String> out = new ArrayList<>();
        for (Throwable c = e; c != null && out.size() < 5; c = c.getCause()) {
            out.add(c.getClass().getName() + ": " + (c.getMessage() == null ? null : c.getMessage().replace(prefix, "")));
        }
        return out;
    }

    static Object refusal(KafkaAdmin admin, NewTopic topic) {
        try {
            admin.createOrModifyTopics(topic);
            return "accepted";
        } catch (Exception e) {
            return chain(e);
        }
    }

    interface Phase {
        void run() throws Exception;
    }

    static void phase(String name, Phase body) {
        long started = System.nanoTime();
        try {
            body.run();
        } catch (Throwable e) {
            report.put(name + ".failed", e.getClass().getName() + ": " + e.getMessage());
            e.printStackTrace();
        }
        System.out.println("PHASE " + name + " " + (System.nanoTime() - started) / 1_000_000 + " ms");
    }

    // --- the run ------------------------------------------------------------------------------------------------
    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        prefix = args[1];
        protocol = args[2];
        replication = Integer.parseInt(args[3]);
        boolean withFailover = Boolean.parseBoolean(args[4]);
        File out = new File(args[5]);
        System.out.println("PREFIX " + prefix);

        AnnotationConfigApplicationContext ctx = new AnnotationConfigApplicationContext();
        ctx.getEnvironment().getPropertySources().addFirst(
                new MapPropertySource("app", Map.of("p", prefix, "replication", String.valueOf(replication))));
        ctx.register(AppConfig.class);
        ctx.refresh();
        KafkaListenerEndpointRegistry registry = ctx.getBean(KafkaListenerEndpointRegistry.class);
        KafkaAdmin kafkaAdmin = ctx.getBean(KafkaAdmin.class);
        @SuppressWarnings("unchecked")
        KafkaTemplate<String, String> template = ctx.getBean("template", KafkaTemplate.class);
        @SuppressWarnings("unchecked")
        KafkaTemplate<String, String> txTemplate = ctx.getBean("txTemplate", KafkaTemplate.class);
        Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));

        phase("admin", () -> {
            // Raise partitions and change configs of a declared topic, as a second start with new NewTopic beans does.
            kafkaAdmin.createOrModifyTopics(TopicBuilder.name(t("grow")).partitions(4).replicas(replication)
                    .config("retention.ms", "7200000").config("cleanup.policy", "compact")
                    .config("max.message.bytes", "200000").build());
            // A topic declared again with fewer partitions: KafkaAdmin logs it and leaves the topic alone.
            kafkaAdmin.createOrModifyTopics(TopicBuilder.name(t("batch")).partitions(1).replicas(replication).build());
            // Topics the broker refuses: what KafkaAdmin throws (its cause is the broker's error and message).
            report.put("admin.refused.replication", refusal(kafkaAdmin, TopicBuilder.name(t("too-many-replicas"))
                    .partitions(1).replicas(replication + 3).build()));
            report.put("admin.refused.config", refusal(kafkaAdmin, TopicBuilder.name(t("bad-config"))
                    .partitions(1).replicas(replication).config("cleanup.policy", "sometimes").build()));
            report.put("admin.refused.alter", refusal(kafkaAdmin, TopicBuilder.name(t("grow")).partitions(4)
                    .replicas(replication).config("retention.ms", "7200000").config("cleanup.policy", "compact")
                    .config("max.message.bytes", "200000").config("min.insync.replicas", "-3").build()));
            try {
                kafkaAdmin.describeTopics(t("missing"));
                report.put("admin.describeMissing", "described");
            } catch (Exception e) {
                report.put("admin.describeMissing", chain(e));
            }
            if (replication == 3) {
                // Replicas placed by the application (brokers 1-3): the order kept, the first the leader
                kafkaAdmin.createOrModifyTopics(TopicBuilder.name(t("placed")).assignReplicas(0, List.of(1, 2, 3))
                        .assignReplicas(1, List.of(3, 1, 2)).assignReplicas(2, List.of(2, 3, 1)).build());
                List<String> placed = new ArrayList<>();
                kafkaAdmin.describeTopics(t("placed")).get(t("placed")).partitions().forEach(p -> placed.add(
                        p.partition() + " replicas=" + p.replicas().stream().map(n -> n.id()).collect(Collectors.toList())
                        + " leader=" + (p.leader() == null ? null : p.leader().id())));
                report.put("admin.placedReplicas", placed);
                // more partitions for an application-placed topic (KafkaAdmin lets the broker place them)
                kafkaAdmin.createOrModifyTopics(TopicBuilder.name(t("placed")).partitions(5).replicas(3).build());
                await("placed described with 5 partitions", 30,
                        () -> kafkaAdmin.describeTopics(t("placed")).get(t("placed")).partitions().size() == 5);
            }
            Map<String, Object> m = new TreeMap<>();
            kafkaAdmin.describeTopics(t("grow"), t("batch")).forEach((k, v) -> m.put(strip(k), v.partitions().size()));
            report.put("admin.describeTopics.immediately", m);
            await("grow described with 4 partitions", 30,
                    () -> kafkaAdmin.describeTopics(t("grow")).get(t("grow")).partitions().size() == 4);
            Map<String, Object> settled = new TreeMap<>();
            kafkaAdmin.describeTopics(t("grow"), t("batch")).forEach((k, v) -> settled.put(strip(k), v.partitions().size()));
            report.put("admin.describeTopics.partitions", settled);
        });

        phase("orders", () -> {
            ConcurrentMessageListenerContainer<?, ?> c = (ConcurrentMessageListenerContainer<?, ?>) registry.getListenerContainer("orders");
            await("3 consumers with a partition each", 90, () -> {
                Map<String, Collection<TopicPartition>> a = c.getAssignmentsByClientId();
                return a != null && a.size() == 3 && a.values().stream().allMatch(p -> p != null && p.size() == 1);
            });
            List<String> sent = new ArrayList<>();
            for (int i = 0; i < 9; i++) {
                sent.add("sync " + meta(template.send(t("orders"), "key-" + i, "sync-" + i).get(30, TimeUnit.SECONDS).getRecordMetadata()));
            }
            sent.add("partition " + meta(template.send(t("orders"), 2, "key-x", "to-partition-2").get(30, TimeUnit.SECONDS).getRecordMetadata()));
            List<java.util.concurrent.CompletableFuture<org.springframework.kafka.support.SendResult<String, String>>> futures = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                ProducerRecord<String, String> pr = new ProducerRecord<>(t("orders"), i % 3, "h-" + i, "async-" + i,
                        List.of(new RecordHeader("app-n", String.valueOf(i).getBytes(StandardCharsets.UTF_8)),
                                new RecordHeader("app-kind", "async".getBytes(StandardCharsets.UTF_8))));
                futures.add(template.send(pr));
            }
            template.flush();
            for (var f : futures) {
                sent.add("async " + meta(f.get(30, TimeUnit.SECONDS).getRecordMetadata()));
            }
            // A topic nobody declared: created by the broker on the first send (auto.create.topics.enable)
            sent.add("auto-created " + meta(template.send(t("auto"), "a", "auto").get(60, TimeUnit.SECONDS).getRecordMetadata()));
            report.put("orders.sent", sent);
            ConsumerRecord<String, String> one = template.receive(t("orders"), 2, 4, Duration.ofSeconds(30));
            report.put("orders.templateReceive", one == null ? null : rec(one));
            await("16 records in orders", 60, () -> orders.size() >= 16);
            Thread.sleep(500);
            report.put("orders.received", sorted(orders));
            Map<String, Collection<TopicPartition>> a = c.getAssignmentsByClientId();
            report.put("orders.partitionsPerConsumer", a.values().stream().map(Collection::size).sorted().collect(Collectors.toList()));
        });

        phase("assigned", () -> {
            registry.getListenerContainer("assigned").start();
            await("orders/1 from offset 2", 60, () -> assigned.size() >= 3);
            Thread.sleep(1000);
            registry.getListenerContainer("assigned").stop();
            report.put("assigned.received", new ArrayList<>(assigned));
            report.put("assigned.committed", committed(admin, "assigned-group"));
        });

        phase("batch", () -> {
            for (int i = 0; i < 20; i++) {
                template.send(t("batch"), i % 2, "b", "batch-" + i);
            }
            template.flush();
            await("20 batch records", 60, () -> batch.size() >= 20);
            Thread.sleep(500);
            report.put("batch.received", sorted(batch));
            report.put("batch.total", batchSizes.stream().mapToInt(Integer::intValue).sum());
        });

        phase("acks", () -> {
            for (int i = 0; i < 5; i++) {
                template.send(t("acks"), "a", "acked-" + i).get(30, TimeUnit.SECONDS);
            }
            template.send(t("acks"), "a", "unacked-5").get(30, TimeUnit.SECONDS);
            await("6 ack records", 60, () -> acks.size() >= 6);
            MessageListenerContainer c = registry.getListenerContainer("acks");
            c.stop();
            report.put("acks.committedAfterStop", committed(admin, "acks-group"));
            template.send(t("acks"), "a", "while-stopped-6").get(30, TimeUnit.SECONDS);
            report.put("acks.beforeRestart", sorted(acks));
            c.start();
            await("the unacked and the new record after the restart", 60, () -> acks.size() >= 8);
            Thread.sleep(1000);
            report.put("acks.afterRestart", new ArrayList<>(acks));
            report.put("acks.committedAtEnd", committed(admin, "acks-group"));
        });

        phase("seek", () -> {
            for (int i = 0; i < 6; i++) {
                template.send(new ProducerRecord<>(t("seek"), 0, BASE_TS + i * 1000L, "s", "seek-" + i)).get(30, TimeUnit.SECONDS);
            }
            registry.getListenerContainer("seek").start();
            await("3 records after the timestamp", 60, () -> seeks.size() >= 3);
            Thread.sleep(1000);
            report.put("seek.received", new ArrayList<>(seeks));
        });

        phase("pause", () -> {
            for (int i = 0; i < 3; i++) {
                template.send(t("pause"), "p", "before-" + i).get(30, TimeUnit.SECONDS);
            }
            await("3 records before the pause", 60, () -> paused.size() >= 3);
            MessageListenerContainer c = registry.getListenerContainer("pause");
            c.pause();
            await("the container paused", 30, c::isContainerPaused);
            for (int i = 0; i < 3; i++) {
                template.send(t("pause"), "p", "during-" + i).get(30, TimeUnit.SECONDS);
            }
            Thread.sleep(3000);
            report.put("pause.receivedWhilePaused", paused.size() - 3);
            c.resume();
            await("6 records after the resume", 60, () -> paused.size() >= 6);
            report.put("pause.received", new ArrayList<>(paused));
        });

        phase("errors", () -> {
            for (int i = 0; i < 4; i++) {
                template.send(t("errors"), i % 2, "e", (i == 1 || i == 2 ? "bad-" : "good-") + i).get(30, TimeUnit.SECONDS);
            }
            List<ConsumerRecord<String, byte[]>> dlt = readAll(t("errors-dlt"), 2, false);
            report.put("errors.attempts", new TreeMap<>(errorAttempts));
            report.put("errors.dlt", dlt.stream().map(SpringKafkaApp::dltRecord).collect(Collectors.toList()));
        });

        phase("poison", () -> {
            Map<String, Object> p = producerProps();
            try (KafkaProducer<String, byte[]> raw = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
                LongSerializer longs = new LongSerializer();
                raw.send(new ProducerRecord<>(t("poison"), "n", longs.serialize(null, 41L))).get(30, TimeUnit.SECONDS);
                raw.send(new ProducerRecord<>(t("poison"), "n", "xyz".getBytes(StandardCharsets.UTF_8))).get(30, TimeUnit.SECONDS);
                raw.send(new ProducerRecord<>(t("poison"), "n", longs.serialize(null, 43L))).get(30, TimeUnit.SECONDS);
            }
            List<ConsumerRecord<String, byte[]>> dlt = readAll(t("poison-dlt"), 1, false);
            await("the two good records", 60, () -> poison.size() >= 2);
            report.put("poison.received", new ArrayList<>(poison));
            report.put("poison.dlt", dlt.stream().map(SpringKafkaApp::dltRecord).collect(Collectors.toList()));
        });

        phase("retry", () -> {
            template.send(t("retry"), 0, "r", "good-0").get(30, TimeUnit.SECONDS);
            template.send(t("retry"), 1, "r", "bad-1").get(30, TimeUnit.SECONDS);
            await("bad-1 in the retry DLT", 90, () -> retryDlt.size() >= 1);
            Thread.sleep(1000);
            report.put("retry.attempts", new TreeMap<>(retryAttempts));
            report.put("retry.seen", new ArrayList<>(retryTopicsSeen));
            report.put("retry.dltHandler", new ArrayList<>(retryDlt));
            List<String> dltTopics = admin.listTopics().names().get(30, TimeUnit.SECONDS).stream()
                    .filter(n -> n.startsWith(t("retry-")) && n.endsWith("dlt")).collect(Collectors.toList());
            List<Map<String, Object>> dlt = new ArrayList<>();
            for (String n : dltTopics) {
                readAll(n, 1, false).forEach(r -> dlt.add(dltRecord(r)));
            }
            report.put("retry.dlt", dlt);
        });

        phase("transactions", () -> {
            txTemplate.executeInTransaction(op -> {
                op.send(t("tx"), "k", "execute-a");
                op.send(t("tx"), "k", "execute-b");
                return null;
            });
            try {
                txTemplate.executeInTransaction(op -> {
                    op.send(t("tx"), "k", "execute-rolled-back");
                    op.flush();  // the aborted record is written (and takes its offset) before the abort
                    throw new IllegalStateException("rolled back");
                });
            } catch (IllegalStateException expected) {
                report.put("tx.executeRollback", expected.getMessage());
            }
            TxService service = ctx.getBean(TxService.class);
            service.sendBoth(txTemplate, "annotated-c", "annotated-d", false);
            try {
                service.sendBoth(txTemplate, "annotated-rolled-back-e", "annotated-rolled-back-f", true);
            } catch (IllegalStateException expected) {
                report.put("tx.annotatedRollback", expected.getMessage());
            }
            report.put("tx.readCommitted", readAll(t("tx"), 4, true).stream()
                    .map(r -> r.offset() + " " + new String(r.value(), StandardCharsets.UTF_8)).collect(Collectors.toList()));
            report.put("tx.readUncommitted", readAll(t("tx"), 7, false).stream()
                    .map(r -> r.offset() + " " + new String(r.value(), StandardCharsets.UTF_8)).collect(Collectors.toList()));
            Map<TopicPartition, OffsetSpec> latest = Map.of(new TopicPartition(t("tx"), 0), OffsetSpec.latest());
            report.put("tx.endOffset", admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS)
                    .get(new TopicPartition(t("tx"), 0)).offset());
        });

        phase("readProcessWrite", () -> {
            for (int i = 0; i < 6; i++) {
                template.send(t("rpw-in"), i % 2, "w-" + i, (i == 3 ? "fail-once-" : "in-") + i).get(30, TimeUnit.SECONDS);
            }
            List<ConsumerRecord<String, byte[]>> outRecords = readAll(t("rpw-out"), 6, true);
            report.put("rpw.outputCommitted", outRecords.stream()
                    .map(r -> r.partition() + " " + r.key() + "=" + new String(r.value(), StandardCharsets.UTF_8))
                    .sorted().collect(Collectors.toList()));
            report.put("rpw.attempts", new TreeMap<>(rpwAttempts));
            await("rpw offsets committed", 60, () -> {
                try {
                    Map<String, Long> c = committed(admin, "rpw-group");
                    return c.values().stream().mapToLong(Long::longValue).sum() >= 6;
                } catch (Exception e) {
                    return false;
                }
            });
        });

        phase("replies", () -> {
            @SuppressWarnings("unchecked")
            ReplyingKafkaTemplate<String, String, String> replying = ctx.getBean(ReplyingKafkaTemplate.class);
            if (!replying.waitForAssignment(Duration.ofSeconds(60))) {
                throw new IllegalStateException("the reply container got no partitions in 60 s");
            }
            List<String> replies = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                ConsumerRecord<String, String> reply = replying.sendAndReceive(new ProducerRecord<>(t("requests"), "q-" + i, "request-" + i))
                        .get(60, TimeUnit.SECONDS);
                replies.add(reply.key() + "=" + reply.value());
            }
            report.put("replies", replies);
        });

        if (withFailover) {
            phase("failover", () -> {
                registry.getListenerContainer("failover").start();
                BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (int i = 0; i < 300; i++) {
                    if (i == 100) {
                        System.out.println("READY-TO-KILL");
                        System.out.flush();
                        stdin.readLine();
                    }
                    template.send(t("failover"), "f-" + i, "failover-" + i).get(120, TimeUnit.SECONDS);
                }
                await("300 records through the failover", 180, () -> failover.size() >= 300);
                report.put("failover.distinct", failover.size());
                // exactly once: every input's output committed once, though the listener may have seen it twice
                List<ConsumerRecord<String, byte[]>> outRecords = readAll(t("failover-out"), 300, true);
                report.put("failover.outputCommitted", outRecords.size());
                report.put("failover.outputDistinct", outRecords.stream()
                        .map(r -> new String(r.value(), StandardCharsets.UTF_8)).distinct().count());
            });
        }

        phase("shutdown", () -> {
            registry.stop();
            Map<String, Object> groups = new TreeMap<>();
            List<String> ours = new ArrayList<>(List.of("orders-group", "batch-group", "acks-group", "seek-group",
                    "pause-group", "errors-group", "poison-group", "rpw-group", "server-group", "retry-group"));
            if (withFailover) {
                ours.add("failover-group");
            }
            for (String g : ours) {
                groups.put(g, committed(admin, g));
            }
            report.put("committed", groups);
            Map<String, Object> described = new TreeMap<>();
            List<String> names = new ArrayList<>(groups.keySet());
            names.add("assigned-group");
            Map<String, org.apache.kafka.clients.admin.ConsumerGroupDescription> ds = admin.describeConsumerGroups(
                    names.stream().map(SpringKafkaApp::t).collect(Collectors.toList())).all().get(30, TimeUnit.SECONDS);
            ds.forEach((g, d) -> described.put(strip(g), d.type() + " " + d.groupState() + " simple=" + d.isSimpleConsumerGroup()
                    + " members=" + d.members().size() + " assignor=" + d.partitionAssignor()));
            report.put("groups", described);
            List<String> topics = admin.listTopics().names().get(30, TimeUnit.SECONDS).stream()
                    .filter(n -> n.startsWith(prefix)).sorted().collect(Collectors.toList());
            report.put("topics", describe(admin, topics));
        });
        admin.close();
        ctx.close();
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
                .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
        mapper.writeValue(out, report);
        System.out.println("DONE");
        System.exit(0);
    }
}
