import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/** LineSink's task: records buffered by put, appended in one write by flush (before the offsets commit). */
public class LineSinkTask extends SinkTask {
    private Path file;
    private final StringBuilder buffer = new StringBuilder();

    @Override public String version() { return "1"; }
    @Override public void start(Map<String, String> props) { file = Path.of(props.get("file")); }

    @Override public void put(Collection<SinkRecord> records) {
        for (SinkRecord record : records) {
            buffer.append(record.value()).append('\n');
        }
    }

    @Override public void flush(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (buffer.length() == 0) {
            return;
        }
        try {
            Files.writeString(file, buffer, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new ConnectException(e);
        }
        buffer.setLength(0);
    }

    @Override public void stop() { buffer.setLength(0); }
}
