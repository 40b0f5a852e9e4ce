package wmviz.flinksql;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.ProviderContext;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.connector.source.DataStreamScanProvider;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.abilities.SupportsProjectionPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsReadingMetadata;
import org.apache.flink.table.connector.source.abilities.SupportsWatermarkPushDown;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.types.DataType;
import org.apache.flink.types.RowKind;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The stand-in for a connector Flink cannot load here (wmviz.flinksql).
 *
 * <p>The planner decides where a watermark is made from the abilities of the table source, so the
 * stand-in keeps exactly the abilities of the connector it replaces, named by the option {@code
 * wmviz.original-connector}: {@code kafka} and {@code upsert-kafka} read metadata, take projections
 * and take the watermark strategy into the source (like the released KafkaDynamicSource, which
 * implements SupportsReadingMetadata, SupportsWatermarkPushDown and SupportsProjectionPushDown,
 * and not SupportsSourceWatermark); {@code filesystem} takes projections only, so the planner keeps a
 * separate WatermarkAssigner after it; any other connector gets no ability at all. No connector
 * that ships with Flink or its Kafka connector implements SupportsSourceWatermark (only the
 * DataStream bridge's virtual table does), so the stand-in never does either and the planner
 * refuses SOURCE_WATERMARK() for every table a script declares, as it would for real.
 *
 * <p>At run time the source is a FLIP-27 source fed row by row by {@link WmvizFeed}, one split per
 * partition, emitting through per-split outputs; the sink hands every row to the same feed.
 */
public final class WmvizStandIn implements DynamicTableSourceFactory, DynamicTableSinkFactory {

    /** The connector identifier the stand-in is registered under. */
    public static final String IDENTIFIER = "wmviz-stand-in";

    /** The option that keeps the connector the user wrote. */
    public static final String ORIGINAL = "wmviz.original-connector";

    /** What a stand-in can do, by the connector it replaces. */
    enum Ability {
        /** Kafka's source: metadata, projection and watermark push-down. */
        PUSHDOWN,
        /** The filesystem source: projection push-down only. */
        PROJECTION,
        /** A connector wmviz does not know: no ability, said so by the planner's report. */
        NONE;

        static Ability of(String connector) {
            switch (connector) {
                case "kafka":
                case "upsert-kafka":
                    return PUSHDOWN;
                case "filesystem":
                    return PROJECTION;
                default:
                    return NONE;
            }
        }
    }

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Collections.emptySet();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Collections.emptySet();
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        Map<String, String> options = context.getCatalogTable().getOptions();
        String original = options.getOrDefault(ORIGINAL, "");
        String table = context.getObjectIdentifier().getObjectName();
        String summary = context.getObjectIdentifier().asSummaryString();
        DataType physical = context.getPhysicalRowDataType();
        ChangelogMode mode = changelogMode(original, options);
        Ability ability = Ability.of(original);
        if (ability == Ability.PUSHDOWN) {
            return new PushDownSource(table, summary, physical, mode);
        }
        if (ability == Ability.PROJECTION) {
            return new ProjectingSource(table, summary, physical, mode);
        }
        return new PlainSource(table, summary, physical, mode);
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        Map<String, String> options = context.getCatalogTable().getOptions();
        String original = options.getOrDefault(ORIGINAL, "");
        return new CollectingSink(
                context.getObjectIdentifier().getObjectName(),
                context.getPhysicalRowDataType(),
                original,
                changelogMode(original, options));
    }

    /**
     * The changes the connector produces (as a source) or accepts (as a sink): upsert-kafka
     * upserts, a Kafka or filesystem table with a CDC format carries every kind, the rest inserts.
     */
    static ChangelogMode changelogMode(String connector, Map<String, String> options) {
        if (connector.equals("upsert-kafka")) {
            return ChangelogMode.upsert();
        }
        String format = options.getOrDefault("value.format", options.getOrDefault("format", ""));
        if (format.endsWith("debezium-json") || format.endsWith("canal-json")
                || format.endsWith("maxwell-json") || format.endsWith("ogg-json")) {
            return ChangelogMode.all();
        }
        return ChangelogMode.insertOnly();
    }

    /** A source with no ability: the planner keeps a separate WatermarkAssigner after it. */
    static class PlainSource implements ScanTableSource {
        final String table;
        final String summary;
        final DataType physical;
        final ChangelogMode mode;
        DataType produced;
        int[][] projection;
        List<String> metadataKeys = Collections.emptyList();
        WatermarkStrategy<RowData> watermarks;

        PlainSource(String table, String summary, DataType physical, ChangelogMode mode) {
            this.table = table;
            this.summary = summary;
            this.physical = physical;
            this.mode = mode;
            this.produced = physical;
        }

        @Override
        public ChangelogMode getChangelogMode() {
            return mode;
        }

        @Override
        public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
            WmvizFeedSource source =
                    new WmvizFeedSource(
                            table,
                            physical,
                            projection,
                            metadataKeys,
                            context.createDataStructureConverter(produced));
            if (!(this instanceof PushDownSource)) {
                return SourceProvider.of(source);
            }
            // Kafka's source builds its stream itself, named "KafkaSource-<table identifier>",
            // with the pushed-down strategy (or none): so does its stand-in.
            return new DataStreamScanProvider() {
                @Override
                public DataStream<RowData> produceDataStream(
                        ProviderContext providerContext, StreamExecutionEnvironment env) {
                    WatermarkStrategy<RowData> strategy =
                            watermarks != null ? watermarks : WatermarkStrategy.noWatermarks();
                    return env.fromSource(source, strategy, "KafkaSource-" + summary);
                }

                @Override
                public boolean isBounded() {
                    return false;
                }
            };
        }

        <T extends PlainSource> T copyInto(T copy) {
            copy.produced = produced;
            copy.projection = projection;
            copy.metadataKeys = metadataKeys;
            copy.watermarks = watermarks;
            return copy;
        }

        @Override
        public DynamicTableSource copy() {
            return copyInto(new PlainSource(table, summary, physical, mode));
        }

        @Override
        public String asSummaryString() {
            return "wmviz stand-in source";
        }
    }

    /** The filesystem source's abilities: projection push-down only. */
    static class ProjectingSource extends PlainSource implements SupportsProjectionPushDown {
        ProjectingSource(String table, String summary, DataType physical, ChangelogMode mode) {
            super(table, summary, physical, mode);
        }

        @Override
        public boolean supportsNestedProjection() {
            return false;
        }

        @Override
        public void applyProjection(int[][] fields, DataType producedDataType) {
            this.projection = fields;
            this.produced = producedDataType;
        }

        @Override
        public DynamicTableSource copy() {
            return copyInto(new ProjectingSource(table, summary, physical, mode));
        }
    }

    /** Kafka's source abilities: metadata, projection and watermark push-down. */
    static final class PushDownSource extends ProjectingSource
            implements SupportsReadingMetadata, SupportsWatermarkPushDown {
        PushDownSource(String table, String summary, DataType physical, ChangelogMode mode) {
            super(table, summary, physical, mode);
        }

        @Override
        public Map<String, DataType> listReadableMetadata() {
            // Kafka's connector metadata, in its order (the formats' own metadata left out).
            Map<String, DataType> keys = new LinkedHashMap<>();
            keys.put("topic", DataTypes.STRING().notNull());
            keys.put("partition", DataTypes.INT().notNull());
            keys.put("headers", DataTypes.MAP(DataTypes.STRING().nullable(), DataTypes.BYTES().nullable()).notNull());
            keys.put("leader-epoch", DataTypes.INT().nullable());
            keys.put("offset", DataTypes.BIGINT().notNull());
            keys.put("timestamp", DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(3).notNull());
            keys.put("timestamp-type", DataTypes.STRING().notNull());
            return keys;
        }

        @Override
        public void applyReadableMetadata(List<String> keys, DataType producedDataType) {
            this.metadataKeys = keys;
            this.produced = producedDataType;
        }

        @Override
        public boolean supportsNestedProjection() {
            return true;
        }

        @Override
        public void applyWatermark(WatermarkStrategy<RowData> strategy) {
            this.watermarks = strategy;
        }

        @Override
        public DynamicTableSource copy() {
            return copyInto(new PushDownSource(table, summary, physical, mode));
        }
    }

    /** Every row a sink receives goes to {@link WmvizFeed}, which stamps it with the step. */
    static final class CollectingSink implements DynamicTableSink {
        private final String table;
        private final DataType physical;
        private final String original;
        private final ChangelogMode accepted;

        CollectingSink(String table, DataType physical, String original, ChangelogMode accepted) {
            this.table = table;
            this.physical = physical;
            this.original = original;
            this.accepted = accepted;
        }

        @Override
        public ChangelogMode getChangelogMode(ChangelogMode requested) {
            // A connector wmviz does not know takes whatever the query produces.
            if (Ability.of(original) == Ability.NONE) {
                return requested;
            }
            if (accepted.contains(RowKind.UPDATE_AFTER)) {
                // An upsert sink takes the changes without UPDATE_BEFORE, as upsert-kafka does.
                ChangelogMode.Builder builder = ChangelogMode.newBuilder();
                for (RowKind kind : requested.getContainedKinds()) {
                    if (kind != RowKind.UPDATE_BEFORE) {
                        builder.addContainedKind(kind);
                    }
                }
                return builder.build();
            }
            return accepted;
        }

        @Override
        public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
            return SinkV2Provider.of(
                    new WmvizFeed.CollectSink(table, context.createDataStructureConverter(physical)));
        }

        @Override
        public DynamicTableSink copy() {
            return new CollectingSink(table, physical, original, accepted);
        }

        @Override
        public String asSummaryString() {
            return "wmviz stand-in sink";
        }
    }
}
