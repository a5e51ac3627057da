// A Java KafkaShareConsumer that accepts every record it gets, one commitSync per poll, and says what happened.
// Run as a single-file program:
//   java -cp "<kafka 4.2 jars>/*" ShareConsumerDriver.java BOOTSTRAP GROUP TOPIC COUNT SECONDS [PAUSE_MS [KEY=VALUE...]]  (driver.stop.on=TEXT: end at the first poll error holding TEXT)
// (PAUSE_MS: a pause after each poll of at most 100 records (share.acquire.mode record_limit), so a test can
// act in the middle of the consumption; KEY=VALUE: more consumer properties, e.g. SASL settings.)
//
// Prints, in order, one line per event:
//   GOT <partition> <offset> <delivery count>   a record was delivered to this consumer
//   ACK <partition> <offset>                    its acceptance was confirmed by the broker (commitSync, no error)
//   ERR <text>                                  an exception from poll or commitSync (the loop goes on)
//   DONE <confirmed>                            COUNT distinct records confirmed, or SECONDS passed
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;

public class ShareConsumerDriver {
    public static void main(String[] args) {
        String bootstrap = args[0], group = args[1], topic = args[2];
        int count = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]) * 1000;
        long pauseMs = args.length > 5 ? Long.parseLong(args[5]) : 0;
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", "share-driver");
        props.put("share.acknowledgement.mode", "explicit");
        for (int i = 6; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        // driver.stop.on=TEXT (the driver's own option, not the consumer's): end at the first poll error whose
        // text holds TEXT, so a test expecting that error need not wait out SECONDS
        String stopOn = (String) props.remove("driver.stop.on");
        if (pauseMs > 0) {
            props.put("max.poll.records", "100");
            props.put("share.acquire.mode", "record_limit");
        }
        props.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        props.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        Set<String> confirmed = new HashSet<>();
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (confirmed.size() < count && System.currentTimeMillis() < deadline) {
                List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
                try {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        System.out.println("GOT " + r.partition() + " " + r.offset() + " " + r.deliveryCount().orElse((short) -1));
                        consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                        got.add(r);
                    }
                } catch (KafkaException e) {
                    System.out.println("ERR poll " + e);
                    if (stopOn != null && e.toString().contains(stopOn)) {
                        break;
                    }
                }
                if (got.isEmpty()) {
                    continue;
                }
                try {
                    Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync(Duration.ofSeconds(30));
                    for (ConsumerRecord<byte[], byte[]> r : got) {
                        boolean ok = false;
                        for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : result.entrySet()) {
                            if (e.getKey().partition() == r.partition() && e.getKey().topic().equals(r.topic())) {
                                ok = e.getValue().isEmpty();
                                if (!ok) {
                                    System.out.println("ERR commit " + r.partition() + " " + e.getValue().get());
                                }
                            }
                        }
                        if (ok) {
                            System.out.println("ACK " + r.partition() + " " + r.offset());
                            confirmed.add(r.partition() + ":" + r.offset());
                        }
                    }
                } catch (KafkaException e) {
                    System.out.println("ERR commit " + e);
                }
                System.out.flush();
                if (pauseMs > 0) {
                    try {
                        Thread.sleep(pauseMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }
        System.out.println("DONE " + confirmed.size());
    }
}
