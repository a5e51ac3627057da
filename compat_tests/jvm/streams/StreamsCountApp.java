// A small stateful Kafka Streams application, written as its users write one, run as a single-file Java program
// by compat_tests/streams_app.py:
//
//     input (value = a key name) -> selectKey(value) -> repartition -> groupByKey().count() -> output (key, count)
//
// Usage: java -cp '.cache/jars/*' StreamsCountApp.java BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [name=value ...]
// Extra name=value pairs are Streams (or client) properties, e.g. processing.guarantee=exactly_once_v2,
// group.protocol=streams, num.standby.replicas=1, except two the application itself reads:
//   app.table=TOPIC    join the counts with the table TOPIC holds (a KStream-KTable join, TOPIC keyed by key name
//                      and co-partitioned with the counts); the output value becomes "<table value> <count>"
//   app.leave=true     leave the group on close (as Kafka's offline migration to group.protocol=streams asks)
//   app.extra=IN:OUT   add a second sub-topology: IN (value = a key name) -> groupBy(value) (repartition "extra-by-key")
//                      -> count into the store "extra-counts" -> OUT (key, count); an application restarted with it
//                      has changed its topology
// Lines starting with "APP " on stdout report what a test waits for: "APP STATE <new state>" on every state change,
// "APP ERROR <exception>" for an uncaught exception (the thread is replaced, as an operator who wants the
// application to survive broker failures configures it), "APP RESTORE <changelog partition> <from> <to>" when a
// store starts restoring and "APP RESTORED <changelog partition> <records>" when it is done.
// A line "metadata N" on stdin prints the interactive-query metadata (application.server names each instance):
// "APP META <host:port> <topic partitions> <standby topic partitions> <stores>" per client of
// KafkaStreams.metadataForAllStreamsClients(), "APP KEY <key> <active host:port> <standby hosts> <partition>" of
// queryMetadataForKey("counts", ...) for the N keys key-0000..., then "APP META END" (lists comma-separated, "-" if
// empty). It stops cleanly when stdin closes or on SIGTERM.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Collection;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyQueryMetadata;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.StateRestoreListener;

public class StreamsCountApp {
    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: StreamsCountApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [name=value ...]");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        String table = null;
        boolean leave = false;
        String extra = null;
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            String name = args[i].substring(0, eq);
            String value = args[i].substring(eq + 1);
            if (name.equals("app.table")) {
                table = value;
            } else if (name.equals("app.extra")) {
                extra = value;
            } else if (name.equals("app.leave")) {
                leave = Boolean.parseBoolean(value);
            } else {
                props.put(name, value);
            }
        }

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> counts = builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((key, value) -> value)
            .repartition(Repartitioned.<String, String>as("by-key").withKeySerde(Serdes.String())
                .withValueSerde(Serdes.String()))
            .groupByKey()
            .count(Materialized.as("counts"))
            .toStream()
            .mapValues(count -> Long.toString(count));
        if (table != null) {
            KTable<String, String> labels = builder.table(table, Consumed.with(Serdes.String(), Serdes.String()),
                Materialized.as("labels"));
            counts = counts.join(labels, (count, label) -> label + " " + count);
        }
        counts.to(args[3], Produced.with(Serdes.String(), Serdes.String()));
        if (extra != null) {
            String[] topics = extra.split(":");
            builder.stream(topics[0], Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((key, value) -> value, Grouped.<String, String>as("extra-by-key")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .count(Materialized.as("extra-counts"))
                .toStream()
                .mapValues(count -> Long.toString(count))
                .to(topics[1], Produced.with(Serdes.String(), Serdes.String()));
        }

        KafkaStreams streams = new KafkaStreams(builder.build(props), props);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition partition, String store, long from, long to) {
                System.out.println("APP RESTORE " + partition + " " + from + " " + to);
                System.out.flush();
            }

            @Override
            public void onBatchRestored(TopicPartition partition, String store, long batchEnd, long records) {
            }

            @Override
            public void onRestoreEnd(TopicPartition partition, String store, long records) {
                System.out.println("APP RESTORED " + partition + " " + records);
                System.out.flush();
            }
        });
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((newState, oldState) -> {
            System.out.println("APP STATE " + newState);
            System.out.flush();
            if (newState == KafkaStreams.State.NOT_RUNNING || newState == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(exception -> {
            System.out.println("APP ERROR " + exception);
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(30))));
        streams.start();
        Thread stdin = new Thread(() -> {
            try {
                BufferedReader reader = new BufferedReader(new InputStreamReader(System.in));
                String line;
                while ((line = reader.readLine()) != null) {  // until the test closes our stdin
                    if (line.startsWith("metadata ")) {
                        printMetadata(streams, Integer.parseInt(line.substring("metadata ".length()).trim()));
                    }
                }
            } catch (java.io.IOException ignored) {
            }
            stopped.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        stopped.await();
        streams.close(CloseOptions.timeout(Duration.ofSeconds(30)).withGroupMembershipOperation(leave
            ? CloseOptions.GroupMembershipOperation.LEAVE_GROUP : CloseOptions.GroupMembershipOperation.DEFAULT));
        System.out.println("APP CLOSED");
        System.out.flush();
    }

    static String joined(Collection<?> items) {
        TreeSet<String> sorted = new TreeSet<>();
        for (Object item : items) {
            sorted.add(item.toString());
        }
        return sorted.isEmpty() ? "-" : String.join(",", sorted);
    }

    static synchronized void printMetadata(KafkaStreams streams, int keys) {
        StringBuilder out = new StringBuilder();
        try {
            for (StreamsMetadata client : streams.metadataForAllStreamsClients()) {
                out.append("APP META ").append(client.host()).append(':').append(client.port()).append(' ')
                    .append(joined(client.topicPartitions())).append(' ')
                    .append(joined(client.standbyTopicPartitions())).append(' ')
                    .append(joined(client.stateStoreNames())).append('\n');
            }
            for (int i = 0; i < keys; i++) {
                String key = String.format("key-%04d", i);
                KeyQueryMetadata found = streams.queryMetadataForKey("counts", key, Serdes.String().serializer());
                TreeSet<String> standbys = new TreeSet<>();
                found.standbyHosts().forEach(h -> standbys.add(h.host() + ":" + h.port()));
                out.append("APP KEY ").append(key).append(' ').append(found.activeHost().host()).append(':')
                    .append(found.activeHost().port()).append(' ').append(joined(standbys)).append(' ')
                    .append(found.partition()).append('\n');
            }
        } catch (RuntimeException e) {  // e.g. StreamsNotStartedException while rebalancing: the test asks again
            out.append("APP META ERROR ").append(e.toString().replace('\n', ' ')).append('\n');
        }
        out.append("APP META END");
        System.out.println(out);
        System.out.flush();
    }
}
