// One Java KafkaShareConsumer for the share benchmark: every record acknowledged on its own (ACCEPT, explicit
// mode; the acknowledgements go with the next poll), timed from its first record to its last, so neither the
// JVM start nor the group join is in the measured part.
// Run as a single-file program:
//   java -cp "<kafka 4.2 jars>/*" ShareConsumerBench.java BOOTSTRAP GROUP TOPIC IDLE_MS
// Prints READY after its first poll, then, once it has had records and then none for IDLE_MS:
//   RESULT <records> <first record, epoch ms> <last record, epoch ms>
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;

public class ShareConsumerBench {
    public static void main(String[] args) {
        String bootstrap = args[0], group = args[1], topic = args[2];
        long idleMs = Long.parseLong(args[3]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", "share-bench");
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        props.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        long count = 0, first = 0, last = 0;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            boolean ready = false;
            while (true) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                if (!ready) {
                    System.out.println("READY");
                    System.out.flush();
                    ready = true;
                }
                long now = System.currentTimeMillis();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    count++;
                }
                if (!records.isEmpty()) {
                    if (first == 0) {
                        first = now;
                    }
                    last = now;
                } else if (count > 0 && now - last >= idleMs) {
                    break;
                }
            }
            consumer.commitSync(Duration.ofSeconds(30));
        }
        System.out.println("RESULT " + count + " " + first + " " + last);
    }
}
