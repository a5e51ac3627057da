import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/** LineSource's task: each poll returns up to 50 complete lines after the committed offset. */
public class LineSourceTask extends SourceTask {
    private Path file;
    private String topic;
    private Map<String, String> partition;
    private long next;

    @Override public String version() { return "1"; }

    @Override public void start(Map<String, String> props) {
        file = Path.of(props.get("file"));
        topic = props.get("topic");
        partition = Map.of("file", file.toString());
        Map<String, Object> offset = context.offsetStorageReader().offset(partition);
        next = offset == null ? 0 : ((Number) offset.get("line")).longValue();
    }

    @Override public List<SourceRecord> poll() throws InterruptedException {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new org.apache.kafka.connect.errors.ConnectException(e);
        }
        String[] lines = text.substring(0, text.lastIndexOf('\n') + 1).split("\n", -1);
        List<SourceRecord> records = new ArrayList<>();
        for (long i = next; i < lines.length - 1 && records.size() < 50; i++) {
            records.add(new SourceRecord(partition, Map.of("line", i + 1), topic, null, null, null,
                    Schema.STRING_SCHEMA, lines[(int) i]));
        }
        if (records.isEmpty()) {
            Thread.sleep(100);
            return null;
        }
        next += records.size();
        return records;
    }

    @Override public void stop() { }
}
