// A streams group topology description plugin for Apache Kafka 4.4 (KIP-1331) that keeps the descriptions in
// memory: with it in group.streams.topology.description.plugin.class a Kafka broker asks streams members for their
// topology descriptions, stores them and returns them from StreamsGroupDescribe v1, as pykbroker does with
// group.streams.topology.description.store.enable. Compiled by compat_tests/test_differential_streams_groups.py.
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.coordinator.group.api.streams.StreamsGroupTopologyDescription;
import org.apache.kafka.coordinator.group.api.streams.StreamsGroupTopologyDescriptionPlugin;

public class InMemoryTopologyDescriptionPlugin implements StreamsGroupTopologyDescriptionPlugin {
    private record Stored(int epoch, StreamsGroupTopologyDescription description) { }

    private final Map<String, Stored> byGroup = new ConcurrentHashMap<>();

    @Override public void configure(Map<String, ?> configs) { }

    @Override
    public CompletableFuture<Void> setTopology(String groupId, int topologyEpoch,
                                               StreamsGroupTopologyDescription description) {
        byGroup.put(groupId, new Stored(topologyEpoch, description));
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> deleteTopology(String groupId) {
        byGroup.remove(groupId);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<StreamsGroupTopologyDescription> getTopology(String groupId, int topologyEpoch) {
        Stored s = byGroup.get(groupId);
        return CompletableFuture.completedFuture(s != null && s.epoch() == topologyEpoch ? s.description() : null);
    }

    @Override public void close() { }
}
