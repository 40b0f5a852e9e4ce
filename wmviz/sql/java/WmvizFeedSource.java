package wmviz.flinksql;

import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.SplitsAssignment;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.table.connector.RuntimeConverter;
import org.apache.flink.table.connector.source.DynamicTableSource.DataStructureConverter;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.DataType;
import org.apache.flink.types.Row;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The stand-in's FLIP-27 source (wmviz.flinksql): one split per partition of its table, all
 * assigned to the one reader, which emits each row through its split's own output, as Kafka's
 * reader does, so the framework's per-split watermark generation, idleness and alignment apply.
 * Rows come from {@link WmvizFeed}, one at a time as the driver offers them.
 */
final class WmvizFeedSource implements Source<RowData, WmvizFeedSource.Split, Integer> {
    private static final long serialVersionUID = 1L;

    private final String table;
    private final List<String> physicalNames;
    private final int[][] projection;
    private final List<String> metadataKeys;
    private final DataStructureConverter converter;

    WmvizFeedSource(
            String table,
            DataType physical,
            int[][] projection,
            List<String> metadataKeys,
            DataStructureConverter converter) {
        this.table = table;
        this.physicalNames = org.apache.flink.table.types.utils.DataTypeUtils.flattenToNames(physical);
        this.projection = projection;
        this.metadataKeys = new ArrayList<>(metadataKeys);
        this.converter = converter;
    }

    /** A partition of the table; its id is `<table>-<partition>`, like Kafka's `<topic>-<partition>`. */
    static final class Split implements SourceSplit {
        final String table;
        final int partition;

        Split(String table, int partition) {
            this.table = table;
            this.partition = partition;
        }

        @Override
        public String splitId() {
            return table + "-" + partition;
        }
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SplitEnumerator<Split, Integer> createEnumerator(SplitEnumeratorContext<Split> context) {
        return new Enumerator(table, context);
    }

    @Override
    public SplitEnumerator<Split, Integer> restoreEnumerator(
            SplitEnumeratorContext<Split> context, Integer checkpoint) {
        return new Enumerator(table, context);
    }

    @Override
    public SimpleVersionedSerializer<Split> getSplitSerializer() {
        return new SplitSerializer(table);
    }

    @Override
    public SimpleVersionedSerializer<Integer> getEnumeratorCheckpointSerializer() {
        return new IntSerializer();
    }

    @Override
    public SourceReader<RowData, Split> createReader(SourceReaderContext context) {
        converter.open(RuntimeConverter.Context.create(WmvizFeedSource.class.getClassLoader()));
        return new Reader();
    }

    /** Gives every partition of the table to the reader that registers (parallelism 1). */
    private static final class Enumerator implements SplitEnumerator<Split, Integer> {
        private final String table;
        private final SplitEnumeratorContext<Split> context;

        Enumerator(String table, SplitEnumeratorContext<Split> context) {
            this.table = table;
            this.context = context;
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int subtask, String host) {}

        @Override
        public void addSplitsBack(List<Split> splits, int subtask) {}

        @Override
        public void addReader(int subtask) {
            List<Split> splits = new ArrayList<>();
            for (int p = 0; p < WmvizFeed.partitions(table); p++) {
                splits.add(new Split(table, p));
            }
            if (!splits.isEmpty()) {
                context.assignSplits(new SplitsAssignment<>(Collections.singletonMap(subtask, splits)));
            }
        }

        @Override
        public Integer snapshotState(long checkpointId) {
            return 0;
        }

        @Override
        public void close() {}
    }

    /** Takes a split's rows in the order the driver offered them, through the split's own output. */
    private final class Reader implements SourceReader<RowData, Split> {
        private final List<Split> splits = new ArrayList<>();
        private final Set<String> announced = new HashSet<>();
        private final Set<String> paused = new HashSet<>();
        private long offset;

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<RowData> output) {
            for (Split split : splits) {
                if (announced.add(split.splitId())) {
                    // A split's output exists from its assignment on: a silent split holds the
                    // watermark back until it is idle, as a silent Kafka partition does.
                    output.createOutputForSplit(split.splitId());
                    WmvizFeed.announced();
                }
            }
            for (Split split : splits) {
                if (paused.contains(split.splitId())) {
                    continue;
                }
                Map<String, Object> row = WmvizFeed.take(table, split.partition);
                if (row != null) {
                    output.createOutputForSplit(split.splitId()).collect(toRowData(row, split));
                    return InputStatus.MORE_AVAILABLE;
                }
            }
            if (WmvizFeed.finished() && !WmvizFeed.hasRows(table, partitions())) {
                return InputStatus.END_OF_INPUT;
            }
            return InputStatus.NOTHING_AVAILABLE;
        }

        private List<Integer> partitions() {
            List<Integer> partitions = new ArrayList<>();
            for (Split split : splits) {
                if (!paused.contains(split.splitId())) {
                    partitions.add(split.partition);
                }
            }
            return partitions;
        }

        private RowData toRowData(Map<String, Object> values, Split split) {
            int width = (projection == null ? physicalNames.size() : projection.length) + metadataKeys.size();
            Row row = new Row(width);
            int i = 0;
            if (projection == null) {
                for (String name : physicalNames) {
                    row.setField(i++, values.get(name));
                }
            } else {
                for (int[] path : projection) {
                    row.setField(i++, values.get(physicalNames.get(path[0])));
                }
            }
            for (String key : metadataKeys) {
                row.setField(i++, metadata(key, split, values));
            }
            offset++;
            return (RowData) converter.toInternal(row);
        }

        private Object metadata(String key, Split split, Map<String, Object> values) {
            switch (key) {
                case "topic":
                    return table;
                case "partition":
                    return split.partition;
                case "offset":
                    return offset;
                case "timestamp":
                    return values.get(WmvizFeed.RECORD_TIME);
                case "timestamp-type":
                    return "CreateTime";
                case "headers":
                    return Collections.emptyMap();
                default:
                    return null;
            }
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            return new ArrayList<>(splits);
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            if (announced.size() < splits.size()) {
                return CompletableFuture.completedFuture(null);
            }
            return WmvizFeed.whenAvailable(table, partitions());
        }

        @Override
        public void addSplits(List<Split> newSplits) {
            splits.addAll(newSplits);
            WmvizFeed.wake();  // poll again, so the new splits' outputs are created at once
        }

        @Override
        public void notifyNoMoreSplits() {}

        @Override
        public void pauseOrResumeSplits(Collection<String> toPause, Collection<String> toResume) {
            paused.addAll(toPause);
            paused.removeAll(toResume);
        }

        @Override
        public void close() {}
    }

    private static final class SplitSerializer implements SimpleVersionedSerializer<Split> {
        private final String table;

        SplitSerializer(String table) {
            this.table = table;
        }

        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Split split) {
            return ByteBuffer.allocate(4).putInt(split.partition).array();
        }

        @Override
        public Split deserialize(int version, byte[] bytes) {
            return new Split(table, ByteBuffer.wrap(bytes).getInt());
        }
    }

    private static final class IntSerializer implements SimpleVersionedSerializer<Integer> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Integer value) {
            return ByteBuffer.allocate(4).putInt(value).array();
        }

        @Override
        public Integer deserialize(int version, byte[] bytes) {
            return ByteBuffer.wrap(bytes).getInt();
        }
    }
}
