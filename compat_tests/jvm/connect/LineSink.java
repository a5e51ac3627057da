import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/** The tests' sink connector: its topics' records appended to a text file ("file"), one line each, written
 *  when the worker commits offsets (so a task killed with -9 leaves whole lines only). */
public class LineSink extends SinkConnector {
    static final ConfigDef CONFIG = new ConfigDef()
            .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the file to append to");
    private Map<String, String> props;

    @Override public void start(Map<String, String> props) { this.props = props; }
    @Override public Class<? extends Task> taskClass() { return LineSinkTask.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }
    @Override public void stop() { }
    @Override public ConfigDef config() { return CONFIG; }
    @Override public String version() { return "1"; }
}
