// A small stateful Kafka Streams application, written as its users write one, run as a single-file Java program
// by compat_tests/streams_app.py:
//
//     input (value = a key name) -> selectKey(value) -> repartition -> groupByKey().count() -> output (key, count)
//
// Usage: java -cp '.cache/jars/*' StreamsCountApp.java BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [name=value ...]
// Extra name=value pairs are Streams (or client) properties, e.g. processing.guarantee=exactly_once_v2,
// group.protocol=streams, num.standby.replicas=1. Lines starting with "APP " on stdout report what a test waits for:
// "APP STATE <new state>" on every state change, "APP ERROR <exception>" for an uncaught exception (the thread is
// replaced, as an operator who wants the application to survive broker failures configures it).
// It stops cleanly when stdin closes or on SIGTERM.

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;

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
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((key, value) -> value)
            .repartition(Repartitioned.<String, String>as("by-key").withKeySerde(Serdes.String())
                .withValueSerde(Serdes.String()))
            .groupByKey()
            .count(Materialized.as("counts"))
            .toStream()
            .mapValues(count -> Long.toString(count))
            .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(props), props);
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
                while (System.in.read() >= 0) { /* until the test closes our stdin */ }
            } catch (java.io.IOException ignored) {
            }
            stopped.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        stopped.await();
        streams.close(Duration.ofSeconds(30));
        System.out.println("APP CLOSED");
        System.out.flush();
    }
}
