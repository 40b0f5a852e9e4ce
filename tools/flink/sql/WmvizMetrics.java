package wmviz.flinksql;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * An in-process metric reporter (test tooling): the MiniCluster of a replay runs in this JVM and
 * hands every metric it registers to this reporter, which keeps the ones a replay reads: each
 * operator's record counters, current input/output watermarks and late-drop counter, and each
 * source split's current watermark. Read by {@link WmvizSqlRun} between input lines.
 */
public final class WmvizMetrics implements MetricReporter {

    /** One metric the replay reads, with the operator (and split) it belongs to. */
    static final class Entry {
        final String operator;
        final String split;
        final String name;
        final Metric metric;

        Entry(String operator, String split, String name, Metric metric) {
            this.operator = operator;
            this.split = split;
            this.name = name;
            this.metric = metric;
        }

        /** The value now (a counter's count, a watermark gauge's value), or null. */
        Long value() {
            if (metric instanceof Counter) {
                return ((Counter) metric).getCount();
            }
            Object v = ((Gauge<?>) metric).getValue();
            return v instanceof Number ? ((Number) v).longValue() : null;
        }

        String key() {
            return operator + "|" + (split == null ? "" : split) + "|" + name;
        }
    }

    private static final List<Entry> ENTRIES = new ArrayList<>();

    /** Every kept metric, by a stable key (operator|split|name): kept after its task ends too. */
    static synchronized Map<String, Entry> entries() {
        Map<String, Entry> byKey = new TreeMap<>();
        for (Entry e : ENTRIES) {
            byKey.put(e.key(), e);
        }
        return byKey;
    }

    /** A late-drop counter: numLateRecordsDropped, or a window join's per side (left..., right...). */
    static boolean isLateDrops(String name) {
        return name.equals("numLateRecordsDropped")
                || name.equals("leftNumLateRecordsDropped")
                || name.equals("rightNumLateRecordsDropped");
    }

    /** Forget every kept metric: the next run (a batch's next request) starts a new job. */
    static synchronized void reset() {
        ENTRIES.clear();
    }

    static boolean wanted(String name) {
        return name.equals("currentOutputWatermark")
                || name.equals("currentInputWatermark")
                || name.startsWith("currentInput") && name.endsWith("Watermark")
                || name.equals("numRecordsIn")
                || name.equals("numRecordsOut")
                || isLateDrops(name)
                || name.equals("currentWatermark");
    }

    @Override
    public void open(MetricConfig config) {}

    @Override
    public void close() {}

    @Override
    public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
        Map<String, String> variables = group.getAllVariables();
        String operator = variables.get("<operator_name>");
        if (operator == null || !wanted(name)) {
            return;
        }
        String split = variables.get("<split>");  // the group Flink adds per split: split.<id>.watermark
        synchronized (WmvizMetrics.class) {
            ENTRIES.add(new Entry(operator, split, name, metric));
        }
    }

    @Override
    public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {}

    /** Named by `metrics.reporter.wmviz.factory.class`. */
    public static final class Factory implements MetricReporterFactory {
        @Override
        public MetricReporter createMetricReporter(Properties properties) {
            return new WmvizMetrics();
        }
    }
}
