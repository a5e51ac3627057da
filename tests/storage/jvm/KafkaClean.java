import java.io.File;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/** Runs Apache Kafka's own Cleaner.doClean once on a partition directory:
 *  KafkaClean <dir> <now_ms> <first_dirty_offset> <first_uncleanable_offset> <segment_bytes> <delete_retention_ms>. */
public class KafkaClean {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        long now = Long.parseLong(args[1]);
        Time time = new Time() {
            public long milliseconds() { return now; }
            public long nanoseconds() { return System.nanoTime(); }
            public void sleep(long ms) { }
            public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) { }
        };
        Properties props = new Properties();
        props.put("cleanup.policy", "compact");
        props.put("internal.segment.bytes", args[4]);
        props.put("delete.retention.ms", args[5]);
        props.put("min.cleanable.dirty.ratio", "0");
        props.put("file.delete.delay.ms", "0");
        LogConfig config = new LogConfig(props);
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        UnifiedLog log = UnifiedLog.create(dir, config, 0L, 0L, scheduler, new BrokerTopicStats(), time, 900000,
                new ProducerStateManagerConfig(Integer.MAX_VALUE, false), 600000, new LogDirFailureChannel(1), false,
                Optional.empty());
        log.updateHighWatermark(log.logEndOffset());
        Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(1 << 20), 1 << 20, 1 << 24, 0.9,
                new Throttler(Double.MAX_VALUE, Long.MAX_VALUE, "throttler", "entries", time), time, tp -> { });
        var result = cleaner.doClean(new LogToClean(log, Long.parseLong(args[2]), Long.parseLong(args[3]), false), now);
        System.out.println("next_dirty_offset " + result.getKey() + " lso " + log.lastStableOffset());
        log.close();
        scheduler.shutdown();
    }
}
