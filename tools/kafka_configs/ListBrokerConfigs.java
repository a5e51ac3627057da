// Lists Apache Kafka's broker config definitions (KafkaConfig's ConfigDef) with their dynamic update mode
// (DynamicBrokerConfig.dynamicConfigUpdateModes: a static Java method from Kafka 4.4, the Scala object's before),
// one tab-separated line each, sorted by name:
// name, type, default (ConfigDef.convertToString, "<none>" without one), internal (true/false),
// update mode (read-only, per-broker or cluster-wide). Run by tools/generate_kafka_broker_configs.py.
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;

public class ListBrokerConfigs {
    public static void main(String[] args) throws Exception {
        ConfigDef def = (ConfigDef) Class.forName("kafka.server.KafkaConfig").getMethod("configDef").invoke(null);
        Map<String, String> modes = updateModes();
        for (ConfigDef.ConfigKey key : new TreeMap<>(def.configKeys()).values()) {
            String dflt = key.hasDefault() ? String.valueOf(ConfigDef.convertToString(key.defaultValue, key.type)) : "<none>";
            String mode = modes.getOrDefault(key.name, "read-only");
            System.out.println(key.name + "\t" + key.type + "\t" + dflt + "\t" + key.internalConfig + "\t" + mode);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> updateModes() throws Exception {
        try {
            Class<?> dynamic = Class.forName("org.apache.kafka.server.config.DynamicBrokerConfig");
            return (Map<String, String>) dynamic.getMethod("dynamicConfigUpdateModes").invoke(null);
        } catch (ClassNotFoundException | NoSuchMethodException older) {
            Class<?> dynamic = Class.forName("kafka.server.DynamicBrokerConfig$");
            Object module = dynamic.getField("MODULE$").get(null);
            return (Map<String, String>) dynamic.getMethod("dynamicConfigUpdateModes").invoke(module);
        }
    }
}
