// A client telemetry plugin for Apache Kafka that takes every push and keeps nothing: with it in metric.reporters
// a Kafka broker has a receiver (KIP-714), so it advertises GetTelemetrySubscriptions and PushTelemetry as
// pykbroker does with metrics.client.telemetry.enable. Compiled by compat_tests/test_differential_telemetry.py.
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

public class NoopTelemetryExporter implements MetricsReporter, ClientTelemetryExporterProvider {
    @Override public void configure(Map<String, ?> configs) { }
    @Override public void init(List<KafkaMetric> metrics) { }
    @Override public void metricChange(KafkaMetric metric) { }
    @Override public void metricRemoval(KafkaMetric metric) { }
    @Override public void close() { }
    @Override public ClientTelemetryExporter clientTelemetryExporter() { return (context, payload) -> { }; }
}
