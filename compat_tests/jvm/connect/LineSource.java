import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;

/** The tests' source connector: the lines of a text file ("file") into a topic ("topic"), one task; its offset
 *  is the number of lines written, so a restarted task goes on from the last committed line. It supports
 *  exactly-once (KIP-618): its records and offsets go in the worker's transactions. */
public class LineSource extends SourceConnector {
    static final ConfigDef CONFIG = new ConfigDef()
            .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the file to read")
            .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the topic to write");
    private Map<String, String> props;

    @Override public void start(Map<String, String> props) { this.props = props; }
    @Override public Class<? extends Task> taskClass() { return LineSourceTask.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }
    @Override public void stop() { }
    @Override public ConfigDef config() { return CONFIG; }
    @Override public String version() { return "1"; }
    @Override public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
        return ExactlyOnceSupport.SUPPORTED;
    }
}
