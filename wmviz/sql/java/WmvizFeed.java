package wmviz.flinksql;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.table.connector.RuntimeConverter;
import org.apache.flink.table.connector.sink.DynamicTableSink.DataStructureConverter;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.Row;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The one in-JVM coordinator between a replay's driver and the running job (wmviz.flinksql).
 *
 * <p>The driver offers one input row at a time to a (table, partition) queue; the stand-in
 * sources take rows from their split's queue; the stand-in sinks hand every row they receive back
 * here, stamped with the step the driver is at. The job runs on a MiniCluster in this same JVM, so
 * the static state is shared by driver, sources and sinks. In planning mode nothing is offered and
 * nothing runs.
 */
public final class WmvizFeed {

    private WmvizFeed() {}

    private static final Map<String, List<ArrayDeque<Map<String, Object>>>> QUEUES = new LinkedHashMap<>();
    private static final List<Map<String, Object>> SINK_ROWS = new ArrayList<>();
    private static CompletableFuture<Void> available = new CompletableFuture<>();
    private static volatile int step;
    private static volatile boolean finished;
    private static volatile ZoneId zone = ZoneId.of("UTC");
    private static long offered;
    private static int announced;
    private static long taken;

    /**
     * Empty the feed as a new JVM has it: the oracle runs several jobs one after the other in one
     * JVM (tools/flink/sql's batch), and each must start with no queue, row, count or end of input
     * left from the one before.
     */
    public static synchronized void reset() {
        QUEUES.clear();
        SINK_ROWS.clear();
        available = new CompletableFuture<>();
        step = 0;
        finished = false;
        zone = ZoneId.of("UTC");
        offered = 0;
        announced = 0;
        taken = 0;
    }

    /** Declare a table's partitions (its splits) before the job starts. */
    public static synchronized void declare(String table, int partitions) {
        List<ArrayDeque<Map<String, Object>>> queues = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            queues.add(new ArrayDeque<>());
        }
        QUEUES.put(table, queues);
    }

    /** How many splits a table has (0 if the driver declared none: the table never receives rows). */
    public static synchronized int partitions(String table) {
        List<ArrayDeque<Map<String, Object>>> queues = QUEUES.get(table);
        return queues == null ? 0 : queues.size();
    }

    /** The session time zone, for TIMESTAMP_LTZ values in and out. */
    public static void zone(ZoneId sessionZone) {
        zone = sessionZone;
    }

    public static ZoneId zone() {
        return zone;
    }

    /** The step every sink row received from now on belongs to. */
    public static void step(int current) {
        step = current;
    }

    /** Hand one row (column name to its external Java value) to a split's reader. */
    public static synchronized void offer(String table, int partition, Map<String, Object> row) {
        QUEUES.get(table).get(partition).add(row);
        offered++;
        wake();
    }

    /** The end of input: readers finish once their queues are empty. */
    public static synchronized void finish() {
        finished = true;
        wake();
    }

    /** A reader created the output of one more split (its split exists for the watermark now). */
    static synchronized void announced() {
        announced++;
    }

    /** How many splits readers have created outputs for: the driver starts once all have. */
    public static synchronized int announcedSplits() {
        return announced;
    }

    /** Make every waiting reader poll again (new splits to announce). */
    static synchronized void wake() {
        CompletableFuture<Void> old = available;
        available = new CompletableFuture<>();
        old.complete(null);
    }

    static boolean finished() {
        return finished;
    }

    /** The next row of a split, or null. */
    static synchronized Map<String, Object> take(String table, int partition) {
        Map<String, Object> row = QUEUES.get(table).get(partition).poll();
        if (row != null) {
            taken++;
        }
        return row;
    }

    static synchronized boolean hasRows(String table, List<Integer> partitions) {
        for (int p : partitions) {
            if (!QUEUES.get(table).get(p).isEmpty()) {
                return true;
            }
        }
        return false;
    }

    /** Completed now if any of the partitions has a row (or input ended), else when one comes. */
    static synchronized CompletableFuture<Void> whenAvailable(String table, List<Integer> partitions) {
        if (finished || hasRows(table, partitions)) {
            return CompletableFuture.completedFuture(null);
        }
        return available;
    }

    /** Rows offered but not yet taken by a reader (a paused split keeps its rows). */
    public static synchronized long pending() {
        return offered - taken;
    }

    /** How many sink rows were collected since the last drain. */
    public static synchronized long sinkRowCount() {
        return SINK_ROWS.size();
    }

    /** Every sink row collected since the last call, each {sink, step, kind, row}. */
    public static synchronized List<Map<String, Object>> drainSinkRows() {
        List<Map<String, Object>> rows = new ArrayList<>(SINK_ROWS);
        SINK_ROWS.clear();
        return rows;
    }

    static synchronized void collect(String sink, String kind, Map<String, Object> row) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sink", sink);
        out.put("step", step);
        out.put("kind", kind);
        out.put("row", row);
        SINK_ROWS.add(out);
    }

    /** The column under which the driver passes a row's Kafka record timestamp (an Instant), if any. */
    public static final String RECORD_TIME = "\u0000record-time";

    private static final DateTimeFormatter TEXT = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS");

    /** A sink value as JSON: timestamps as `YYYY-MM-DD HH:MM:SS.fff` text (LTZ in the session zone). */
    static Object jsonValue(Object value) {
        if (value instanceof LocalDateTime) {
            return TEXT.format((LocalDateTime) value);
        }
        if (value instanceof Instant) {
            return TEXT.format(LocalDateTime.ofInstant((Instant) value, zone));
        }
        if (value == null || value instanceof Number || value instanceof Boolean || value instanceof String) {
            return value;
        }
        return value.toString();
    }

    /** The stand-in sinks' runtime: every row, converted to Java values, to {@link #collect}. */
    static final class CollectSink implements Sink<RowData> {
        private static final long serialVersionUID = 1L;
        private final String table;
        private final DataStructureConverter converter;

        CollectSink(String table, DataStructureConverter converter) {
            this.table = table;
            this.converter = converter;
        }

        @Override
        public SinkWriter<RowData> createWriter(WriterInitContext context) {
            converter.open(RuntimeConverter.Context.create(CollectSink.class.getClassLoader()));
            return new SinkWriter<RowData>() {
                @Override
                public void write(RowData element, Context context) {
                    Row row = (Row) converter.toExternal(element);
                    Map<String, Object> values = new LinkedHashMap<>();
                    for (String name : row.getFieldNames(true)) {
                        values.put(name, jsonValue(row.getField(name)));
                    }
                    collect(table, row.getKind().shortString(), values);
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }
}
