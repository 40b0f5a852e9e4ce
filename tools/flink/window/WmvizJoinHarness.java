/*
 * wmviz differential-test harness around the REAL released interval join of Flink 2.3.0:
 * flink-table-runtime's RowTimeIntervalJoin inside KeyedCoProcessOperatorWithWatermarkDelay, the
 * operator the planner builds for a row-time interval join.
 *
 * A two-input operator in a running job reads its two inputs in whatever order the network
 * delivers them, so the trace's exact interleaving of left and right inputs cannot be replayed
 * through two sources. Instead the operator is subclassed into a ONE-input operator: a single
 * source carries every input of the trace, in order, and the subclass hands each one to the
 * method the two-input task would call: processElement1/2 for a left/right row, and, through
 * one real StatusWatermarkValve per input (as the two-input task has), processWatermark1/2 and
 * processWatermarkStatus1/2 for watermarks and statuses. Keys are BinaryRowData rows of one
 * STRING field, as the planner's key selector makes them; the residual join condition is TRUE.
 * Parallelism 1 and a forward keyed edge chain everything into one task, so each input's
 * effects are logged, in order, right after its "I <index>" line. No Flink code is copied here.
 *
 * Usage: WmvizJoinHarness <input file> <traces per job>
 *   input:  T <id> <inner|left|right|full> <lower> <upper> <min cleanup interval>
 *           L <key> <time> | R <key> <time>     a left/right row (its id is its input index)
 *           WL <ms> | WR <ms>                   a watermark on the left/right input
 *           SL <IDLE|ACTIVE> | SR <IDLE|ACTIVE> a status on the left/right input
 *           E                                   end of the trace
 *   output: T <id>, then I <index>; O <+I|-U|+U|-D> <left id|-> <right id|-> <timestamp|->
 *           for an output row; W <ms> for an output watermark; X <exception> if the job failed.
 *           Lines after the last input's (the END marker's) are the source's end of input.
 */

import org.apache.flink.api.common.functions.AbstractRichFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamUtils;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.io.PushingAsyncDataInput.DataOutput;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.StatusWatermarkValve;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.table.runtime.generated.GeneratedJoinCondition;
import org.apache.flink.table.runtime.generated.JoinCondition;
import org.apache.flink.table.runtime.operators.join.FlinkJoinType;
import org.apache.flink.table.runtime.operators.join.KeyedCoProcessOperatorWithWatermarkDelay;
import org.apache.flink.table.runtime.operators.join.interval.IntervalJoinFunction;
import org.apache.flink.table.runtime.operators.join.interval.RowTimeIntervalJoin;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

public final class WmvizJoinHarness {

    static final int LEFT = 0, RIGHT = 1, WM_LEFT = 2, WM_RIGHT = 3, ST_LEFT = 4, ST_RIGHT = 5, END = 6;

    /** One input of a trace. */
    public static final class Ev {
        public int trace;
        public int idx;
        public int kind;
        public String key;
        public long ts;
        public boolean active;

        public Ev() {}

        Ev(int trace, int idx, int kind, String key, long ts, boolean active) {
            this.trace = trace;
            this.idx = idx;
            this.kind = kind;
            this.key = key;
            this.ts = ts;
            this.active = active;
        }
    }

    static final class Spec {
        int id;
        FlinkJoinType type;
        long lower;
        long upper;
        long minCleanup;
        final List<Ev> events = new ArrayList<>();
    }

    static final Map<Integer, List<String>> LOG = new ConcurrentHashMap<>();
    static final Map<Integer, Long> THREAD = new ConcurrentHashMap<>();

    static void log(int trace, String line) {
        long me = Thread.currentThread().getId();
        Long first = THREAD.putIfAbsent(trace, me);
        if (first != null && first != me) {
            throw new IllegalStateException("trace " + trace + " ran on two threads: not chained");
        }
        LOG.get(trace).add(line);
    }

    /** A row (key STRING, time BIGINT, id INT): left and right rows have the same shape. */
    static final RowType ROW =
            RowType.of(new LogicalType[] {new VarCharType(VarCharType.MAX_LENGTH), new BigIntType(), new IntType()});

    static final RowType KEY = RowType.of(new LogicalType[] {new VarCharType(VarCharType.MAX_LENGTH)});

    static final int TIME_FIELD = 1;
    static final int ID_FIELD = 2;

    /** The join key as the planner's key selector makes it: a BinaryRowData of the key column. */
    static final class KeyOf implements KeySelector<Ev, RowData> {
        @Override
        public RowData getKey(Ev e) {
            BinaryRowData row = new BinaryRowData(1);
            BinaryRowWriter writer = new BinaryRowWriter(row);
            writer.writeString(0, StringData.fromString(e.key));
            writer.complete();
            return row;
        }
    }

    /** The residual condition: TRUE (the equi-key is the keyBy). */
    static final class True extends AbstractRichFunction implements JoinCondition {
        @Override
        public boolean apply(RowData left, RowData right) {
            return true;
        }
    }

    static final class TrueCondition extends GeneratedJoinCondition {
        TrueCondition() {
            super("True", "", new Object[0]);
        }

        @Override
        public JoinCondition newInstance(ClassLoader classLoader) {
            return new True();
        }

        @Override
        public JoinCondition newInstance(ClassLoader classLoader, Object... args) {
            return new True();
        }
    }

    /** Forwards one valve's output to the operator's input 1 or 2, as the two-input task does. */
    static final class ToInput implements DataOutput<Object> {
        private final Driver driver;
        private final boolean left;

        ToInput(Driver driver, boolean left) {
            this.driver = driver;
            this.left = left;
        }

        @Override
        public void emitWatermark(Watermark watermark) throws Exception {
            if (left) {
                driver.processWatermark1(watermark);
            } else {
                driver.processWatermark2(watermark);
            }
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus status) throws Exception {
            if (left) {
                driver.processWatermarkStatus1(status);
            } else {
                driver.processWatermarkStatus2(status);
            }
        }

        @Override
        public void emitRecord(StreamRecord<Object> record) {
            throw new IllegalStateException("a valve emitted a record");
        }

        @Override
        public void emitLatencyMarker(LatencyMarker latencyMarker) {}

        @Override
        public void emitRecordAttributes(RecordAttributes recordAttributes) {}

        @Override
        public void emitWatermark(WatermarkEvent watermark) {}
    }

    /** The released operator, fed one trace input at a time in the trace's order. */
    static final class Driver extends KeyedCoProcessOperatorWithWatermarkDelay<RowData, RowData, RowData, RowData>
            implements OneInputStreamOperator<Ev, RowData> {
        private final int trace;
        private transient StatusWatermarkValve leftValve;
        private transient StatusWatermarkValve rightValve;
        private transient ToInput leftInput;
        private transient ToInput rightInput;

        Driver(RowTimeIntervalJoin join, int trace) {
            super(join, join.getMaxOutputDelay());
            this.trace = trace;
        }

        @Override
        public void open() throws Exception {
            super.open();
            leftValve = new StatusWatermarkValve(1);
            rightValve = new StatusWatermarkValve(1);
            leftInput = new ToInput(this, true);
            rightInput = new ToInput(this, false);
        }

        @Override
        public void processElement(StreamRecord<Ev> record) throws Exception {
            Ev e = record.getValue();
            log(trace, "I " + e.idx);
            switch (e.kind) {
                case LEFT:
                    processElement1(new StreamRecord<>(row(e), e.ts));
                    break;
                case RIGHT:
                    processElement2(new StreamRecord<>(row(e), e.ts));
                    break;
                case WM_LEFT:
                    leftValve.inputWatermark(new Watermark(e.ts), 0, leftInput);
                    break;
                case WM_RIGHT:
                    rightValve.inputWatermark(new Watermark(e.ts), 0, rightInput);
                    break;
                case ST_LEFT:
                    leftValve.inputWatermarkStatus(status(e), 0, leftInput);
                    break;
                case ST_RIGHT:
                    rightValve.inputWatermarkStatus(status(e), 0, rightInput);
                    break;
                default:
                    break; // END: what follows is the source's end of input
            }
        }

        private static RowData row(Ev e) {
            return GenericRowData.of(StringData.fromString(e.key), e.ts, e.idx);
        }

        private static WatermarkStatus status(Ev e) {
            return e.active ? WatermarkStatus.ACTIVE : WatermarkStatus.IDLE;
        }
    }

    /** Logs every output row and output watermark of the join, in order. */
    static final class OutputLog extends AbstractStreamOperator<Integer> implements OneInputStreamOperator<RowData, Integer> {
        private final int trace;

        OutputLog(int trace) {
            this.trace = trace;
        }

        private static String id(RowData row, int field) {
            return row.isNullAt(field) ? "-" : Integer.toString(row.getInt(field));
        }

        @Override
        public void processElement(StreamRecord<RowData> record) {
            RowData row = record.getValue();
            String ts = record.hasTimestamp() ? Long.toString(record.getTimestamp()) : "-";
            log(
                    trace,
                    "O " + row.getRowKind().shortString() + " " + id(row, ID_FIELD) + " "
                            + id(row, ROW.getFieldCount() + ID_FIELD) + " " + ts);
        }

        @Override
        public void processWatermark(Watermark mark) {
            log(trace, "W " + mark.getTimestamp());
        }
    }

    static void addPipeline(StreamExecutionEnvironment env, Spec spec) {
        InternalTypeInfo<RowData> rowType = InternalTypeInfo.of(ROW);
        RowType joined = RowType.of(concat(ROW.getChildren(), ROW.getChildren()));
        IntervalJoinFunction joinFunction =
                new IntervalJoinFunction(new TrueCondition(), InternalTypeInfo.of(joined), new boolean[] {true});
        RowTimeIntervalJoin join =
                new RowTimeIntervalJoin(
                        spec.type, spec.lower, spec.upper, 0L, spec.minCleanup, rowType, rowType, joinFunction,
                        TIME_FIELD, TIME_FIELD);
        TypeInformation<Ev> type = TypeInformation.of(Ev.class);
        DataStream<Ev> inputs = env.fromData(spec.events, type);
        DataStreamUtils.reinterpretAsKeyedStream(inputs, new KeyOf(), InternalTypeInfo.of(KEY))
                .transform("join-" + spec.id, InternalTypeInfo.of(joined), new Driver(join, spec.id))
                .transform("log-" + spec.id, Types.INT, new OutputLog(spec.id));
    }

    static LogicalType[] concat(List<LogicalType> a, List<LogicalType> b) {
        List<LogicalType> all = new ArrayList<>(a);
        all.addAll(b);
        return all.toArray(new LogicalType[0]);
    }

    static MiniCluster cluster;

    static void runJob(List<Spec> batch) throws Exception {
        StreamExecutionEnvironment env = new StreamExecutionEnvironment(new Configuration());
        env.setParallelism(1);
        for (Spec spec : batch) {
            LOG.put(spec.id, Collections.synchronizedList(new ArrayList<>()));
            THREAD.remove(spec.id);
            addPipeline(env, spec);
        }
        cluster.executeJobBlocking(env.getStreamGraph().getJobGraph());
    }

    static void runOrBisect(List<Spec> batch) {
        try {
            runJob(batch);
        } catch (Exception failure) {
            if (batch.size() == 1) {
                Throwable root = failure;
                while (root.getCause() != null) {
                    root = root.getCause();
                }
                String message = String.valueOf(root.getMessage()).replace('\n', ' ');
                LOG.get(batch.get(0).id).add("X " + root.getClass().getName() + ": " + message);
                return;
            }
            int half = batch.size() / 2;
            runOrBisect(batch.subList(0, half));
            runOrBisect(batch.subList(half, batch.size()));
        }
    }

    static List<Spec> parse(List<String> lines) {
        List<Spec> specs = new ArrayList<>();
        Spec spec = null;
        for (String line : lines) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split(" ");
            int idx = spec == null ? 0 : spec.events.size();
            switch (f[0]) {
                case "T":
                    spec = new Spec();
                    spec.id = Integer.parseInt(f[1]);
                    spec.type = FlinkJoinType.valueOf(f[2].toUpperCase());
                    spec.lower = Long.parseLong(f[3]);
                    spec.upper = Long.parseLong(f[4]);
                    spec.minCleanup = Long.parseLong(f[5]);
                    break;
                case "L":
                case "R":
                    spec.events.add(
                            new Ev(spec.id, idx, f[0].equals("L") ? LEFT : RIGHT, f[1], Long.parseLong(f[2]), true));
                    break;
                case "WL":
                case "WR":
                    spec.events.add(
                            new Ev(spec.id, idx, f[0].equals("WL") ? WM_LEFT : WM_RIGHT, "", Long.parseLong(f[1]), true));
                    break;
                case "SL":
                case "SR":
                    spec.events.add(
                            new Ev(spec.id, idx, f[0].equals("SL") ? ST_LEFT : ST_RIGHT, "", 0L, f[1].equals("ACTIVE")));
                    break;
                case "E":
                    spec.events.add(new Ev(spec.id, idx, END, "", 0L, true));
                    specs.add(spec);
                    spec = null;
                    break;
                default:
                    throw new IllegalArgumentException("bad input line: " + line);
            }
        }
        return specs;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: WmvizJoinHarness <file> <traces per job>");
            System.exit(2);
        }
        PrintWriter out =
                new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)));
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        cluster =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(conf)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(1)
                                .build());
        cluster.start();
        List<Spec> specs = parse(Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8));
        int perJob = Integer.parseInt(args[1]);
        for (int from = 0; from < specs.size(); from += perJob) {
            List<Spec> batch = specs.subList(from, Math.min(from + perJob, specs.size()));
            runOrBisect(batch);
            for (Spec spec : batch) {
                out.println("T " + spec.id);
                for (String line : LOG.remove(spec.id)) {
                    out.println(line);
                }
            }
            out.flush();
        }
        out.flush();
        System.exit(0);
    }
}
