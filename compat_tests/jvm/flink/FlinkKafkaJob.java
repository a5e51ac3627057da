// A Flink job reading and writing Kafka with Flink's own connector, written as its users write one, compiled and run by
// compat_tests/test_flink.py in one JVM (a local MiniCluster):
//
//     KafkaSource(input) -> value.toUpperCase() -> KafkaSink(output, keyed as the input)
//
// Usage: java -cp '.cache/jars/*:CLASSES' FlinkKafkaJob name=value ...
//   bootstrap=HOST:PORT,...  input=TOPIC  output=TOPIC  group=GROUP_ID
//   mode=exactly_once | at_least_once   an unbounded job, checkpointed every second; the sink's delivery guarantee
//   mode=bounded                        read input from the earliest to the latest offsets (read_committed), print
//                                       "RECORD <partition> <key> <value>" per record and end
//   naming=DEFAULT | POOLING            the sink's TransactionNamingStrategy (exactly_once)
//   prefix=TXN_PREFIX                   the sink's transactionalIdPrefix
//   checkpoints=DIR                     where checkpoints are kept (retained when the JVM dies)
//   restore=DIR                         a chk-N directory to start from (optional: else the committed offsets, or
//                                       the earliest where none)
// The source discovers new partitions every second. Lines "JOB ..." on stdout report what the test waits for.

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.KafkaSinkBuilder;
import org.apache.flink.connector.kafka.sink.TransactionNamingStrategy;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

public class FlinkKafkaJob {

    /** A record as "partition \t key \t value". */
    static final class Lines implements KafkaRecordDeserializationSchema<String> {
        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> r, Collector<String> out) {
            String key = r.key() == null ? "" : new String(r.key(), StandardCharsets.UTF_8);
            String value = r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
            out.collect(r.partition() + "\t" + key + "\t" + value);
        }

        @Override
        public TypeInformation<String> getProducedType() {
            return Types.STRING;
        }
    }

    /** One field of "partition \t key \t value" as the output record's key (field 1) or value (field 2). */
    static final class Field implements SerializationSchema<String> {
        private final int index;

        Field(int index) {
            this.index = index;
        }

        @Override
        public byte[] serialize(String line) {
            return line.split("\t", 3)[index].getBytes(StandardCharsets.UTF_8);
        }
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : argv) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        String mode = a.get("mode");
        boolean bounded = mode.equals("bounded");
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        conf.setString("taskmanager.numberOfTaskSlots", "2");
        conf.setString("restart-strategy.type", "fixed-delay");
        conf.setString("restart-strategy.fixed-delay.attempts", "1000");
        conf.setString("restart-strategy.fixed-delay.delay", "1 s");
        if (!bounded) {
            conf.setString("execution.checkpointing.interval", "1 s");
            conf.setString("execution.checkpointing.mode", "EXACTLY_ONCE");
            conf.setString("execution.checkpointing.dir", "file://" + a.get("checkpoints"));
            conf.setString("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
            conf.setString("execution.checkpointing.num-retained", "3");
            conf.setString("execution.checkpointing.tolerable-failed-checkpoints", "1000");
        }
        if (a.containsKey("restore")) {
            conf.setString("execution.state-recovery.path", "file://" + a.get("restore"));
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);

        KafkaSourceBuilder<String> source = KafkaSource.<String>builder()
                .setBootstrapServers(a.get("bootstrap"))
                .setTopics(a.get("input"))
                .setGroupId(a.get("group"))
                .setDeserializer(new Lines())
                .setProperty("isolation.level", "read_committed")
                .setProperty("client.id.prefix", a.get("group"));
        if (bounded) {
            source.setStartingOffsets(OffsetsInitializer.earliest()).setBounded(OffsetsInitializer.latest());
        } else {
            source.setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
                    .setProperty("partition.discovery.interval.ms", "1000");
        }
        DataStream<String> lines = env.fromSource(source.build(), WatermarkStrategy.noWatermarks(), "kafka-source");

        if (bounded) {
            lines.map(line -> "RECORD " + line.replace('\t', ' ')).print();
            env.execute("pykbroker-flink-bounded");
            System.out.println("JOB FINISHED");
            return;
        }
        DataStream<String> upper = lines.map(line -> {
            String[] f = line.split("\t", 3);
            return f[0] + "\t" + f[1] + "\t" + f[2].toUpperCase();
        });
        KafkaSinkBuilder<String> sink = KafkaSink.<String>builder()
                .setBootstrapServers(a.get("bootstrap"))
                // the builder's schema names its topic, which POOLING needs; no partitioner: Kafka's, by key
                .setRecordSerializer(KafkaRecordSerializationSchema.<String>builder()
                        .setTopic(a.get("output"))
                        .setKeySerializationSchema(new Field(1))
                        .setValueSerializationSchema(new Field(2))
                        .build())
                // below Kafka's default transaction.max.timeout.ms (15 min; the connector's default is 1 h)
                .setProperty("transaction.timeout.ms", "120000");
        if (mode.equals("exactly_once")) {
            sink.setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                    .setTransactionalIdPrefix(a.get("prefix"));
            if (!a.get("naming").equals("DEFAULT")) {  // DEFAULT: the connector's default (INCREMENTING), not set
                sink.setTransactionNamingStrategy(TransactionNamingStrategy.valueOf(a.get("naming")));
            }
        } else {
            sink.setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE);
        }
        upper.sinkTo(sink.build()).name("kafka-sink");
        System.out.println("JOB STARTING");
        env.execute("pykbroker-flink-" + mode);
    }
}
