/*
 * wmviz differential-test harness around two REAL operators of Flink 2.3.0's flink-table-runtime:
 * WatermarkAssignerOperator (a SQL table's watermark when the planner cannot push it into the
 * source) and RowTimeMiniBatchAssginerOperator (the row-time mini-batch assigner).
 *
 * Both need a running task (metrics, the back-pressure listener of the assigner's idleness clock),
 * so one tiny job runs on a MiniCluster: a single element reaches the Driver operator, which then,
 * on the task thread, builds a fresh operator per trace with the task's own context, gives it a
 * manual processing-time service (its clock moves only when the trace says so) and an output that
 * logs every watermark and status the operator emits, and feeds it the trace. The time passes as
 * in a running job: moving the clock to T fires every timer due before T at its own time, in time
 * order (each fired timer may register the next one), then sets the clock to T; a record at T runs
 * after that, a timer at exactly T at the next move (a `P` line moves to T inclusively); the
 * operator opens at the first line's processing time, as wmviz takes it. The
 * assigner's expression is a stand-in for the generated one: the row's BIGINT minus a delay, or
 * NULL for an `N` row. No Flink code is copied here.
 *
 * Usage: WmvizSqlOpsHarness <input file>
 *   input:  T <id> A <auto-watermark-interval> <idle-timeout> <delay>   a WatermarkAssignerOperator
 *           T <id> M <mini-batch interval>                             a RowTimeMiniBatchAssginerOperator
 *           R <proc> <ts> | N <proc> <ts>   a row (N: its watermark expression is NULL)
 *           W <proc> <ms> | S <proc> <IDLE|ACTIVE>   an upstream watermark / status
 *           P <proc>                        the processing clock moves to proc (timers at proc fire)
 *           E                               end of the trace
 *   output: T <id>, then per input I <index>; W <ms> / S <IDLE|ACTIVE> for each emission (a timer's
 *           emissions are logged under the input whose clock move fired it); X <exception>.
 */

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.operators.ProcessingTimeService.ProcessingTimeCallback;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.generated.WatermarkGenerator;
import org.apache.flink.table.runtime.operators.wmassigners.RowTimeMiniBatchAssginerOperator;
import org.apache.flink.table.runtime.operators.wmassigners.WatermarkAssignerOperator;
import org.apache.flink.util.OutputTag;
import org.apache.flink.util.clock.Clock;
import org.apache.flink.util.clock.ManualClock;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

public final class WmvizSqlOpsHarness {

    static String inputPath;
    static final StringBuilder OUT = new StringBuilder();

    static void log(String line) {
        OUT.append(line).append('\n');
    }

    /** Logs every watermark and status an operator emits; records are dropped. */
    static final class LogOutput implements Output<StreamRecord<RowData>> {
        @Override
        public void emitWatermark(Watermark mark) {
            log("W " + mark.getTimestamp());
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus status) {
            log("S " + (status.isIdle() ? "IDLE" : "ACTIVE"));
        }

        @Override
        public <X> void collect(OutputTag<X> tag, StreamRecord<X> record) {}

        @Override
        public void emitLatencyMarker(LatencyMarker marker) {}

        @Override
        public void emitRecordAttributes(RecordAttributes attributes) {}

        @Override
        public void emitWatermark(WatermarkEvent event) {
            log("G " + event);
        }

        @Override
        public void collect(StreamRecord<RowData> record) {}

        @Override
        public void close() {}
    }

    /** A processing-time service whose clock moves only when told; timers fire in time order. */
    static final class ManualTime implements ProcessingTimeService {
        final ManualClock clock = new ManualClock(0);
        long now = 0;
        long seq = 0;
        final PriorityQueue<long[]> order = new PriorityQueue<>((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        final List<ProcessingTimeCallback> callbacks = new ArrayList<>();

        void set(long to) {
            if (to > now) {
                clock.advanceTime(Duration.ofMillis(to - now));
                now = to;
            }
        }

        /** Fire every timer before `to` (or at it, when inclusive) at its own time, then set the clock to `to`. */
        void moveTo(long to, boolean inclusive) throws Exception {
            while (!order.isEmpty() && (order.peek()[0] < to || (inclusive && order.peek()[0] == to))) {
                long[] next = order.poll();
                set(next[0]);
                callbacks.get((int) next[2]).onProcessingTime(next[0]);
            }
            set(to);
        }

        @Override
        public long getCurrentProcessingTime() {
            return now;
        }

        @Override
        public Clock getClock() {
            return clock;
        }

        @Override
        public ScheduledFuture<?> registerTimer(long timestamp, ProcessingTimeCallback target) {
            callbacks.add(target);
            order.add(new long[] {timestamp, seq++, callbacks.size() - 1});
            return null;
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(ProcessingTimeCallback callback, long initialDelay, long period) {
            throw new UnsupportedOperationException();
        }

        @Override
        public ScheduledFuture<?> scheduleWithFixedDelay(ProcessingTimeCallback callback, long initialDelay, long period) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> quiesce() {
            return CompletableFuture.completedFuture(null);
        }
    }

    /** Stand-in for the generated expression: field 0 minus a delay; field 1 true means NULL. */
    static final class Minus extends WatermarkGenerator {
        final long delay;

        Minus(long delay) {
            this.delay = delay;
        }

        @Override
        public long extractTimestamp(RowData row) {
            return row.getLong(0);
        }

        @Override
        public Long currentWatermark(RowData row) {
            return row.getBoolean(1) ? null : row.getLong(0) - delay;
        }
    }

    /** The released assigner; only its execution config (the auto-watermark interval) is ours. */
    static final class Assigner extends WatermarkAssignerOperator {
        final ExecutionConfig executionConfig = new ExecutionConfig();

        Assigner(StreamOperatorParameters<RowData> parameters, long interval, long idle, long delay, ManualTime time) {
            super(parameters, 0, new Minus(delay), idle, time);
            executionConfig.setAutoWatermarkInterval(interval);
        }

        @Override
        public ExecutionConfig getExecutionConfig() {
            return executionConfig;
        }
    }

    /** The released mini-batch assigner, set up in the driver's task. */
    static final class MiniBatch extends RowTimeMiniBatchAssginerOperator {
        MiniBatch(long interval, Driver driver, Output<StreamRecord<RowData>> output) {
            super(interval);
            setup(driver.getContainingTask(), driver.getOperatorConfig(), output);
        }
    }

    /** Runs every trace of the input file when its one element arrives. */
    static final class Driver extends AbstractStreamOperator<Integer> implements OneInputStreamOperator<Integer, Integer> {
        @Override
        public void processElement(StreamRecord<Integer> element) throws Exception {
            List<String> lines = Files.readAllLines(Paths.get(inputPath), StandardCharsets.UTF_8);
            List<String> trace = new ArrayList<>();
            for (String line : lines) {
                if (line.isEmpty()) {
                    continue;
                }
                trace.add(line);
                if (line.equals("E")) {
                    runTrace(trace);
                    trace = new ArrayList<>();
                }
            }
        }

        private void runTrace(List<String> trace) {
            String[] head = trace.get(0).split(" ");
            log("T " + head[1]);
            try {
                ManualTime time = new ManualTime();
                LogOutput output = new LogOutput();
                OneInputStreamOperator<RowData, RowData> op;
                if (head[2].equals("A")) {
                    StreamOperatorParameters<RowData> parameters =
                            new StreamOperatorParameters<>(getContainingTask(), getOperatorConfig(), output, () -> time, null, null);
                    op = new Assigner(parameters, Long.parseLong(head[3]), Long.parseLong(head[4]), Long.parseLong(head[5]), time);
                } else {
                    op = new MiniBatch(Long.parseLong(head[3]), this, output);
                }
                // The operator opens at the trace's first processing time, as wmviz takes it.
                time.set(Long.parseLong(trace.get(1).split(" ")[1]));
                op.open();
                for (int i = 1; i < trace.size() - 1; i++) {
                    String[] f = trace.get(i).split(" ");
                    log("I " + (i - 1));
                    long proc = Long.parseLong(f[1]);
                    time.moveTo(proc, f[0].equals("P"));
                    switch (f[0]) {
                        case "R":
                        case "N":
                            long ts = Long.parseLong(f[2]);
                            op.processElement(new StreamRecord<>(GenericRowData.of(ts, f[0].equals("N")), ts));
                            break;
                        case "W":
                            op.processWatermark(new Watermark(Long.parseLong(f[2])));
                            break;
                        case "S":
                            op.processWatermarkStatus(f[2].equals("IDLE") ? WatermarkStatus.IDLE : WatermarkStatus.ACTIVE);
                            break;
                        default:
                            break; // P: the clock move above is all
                    }
                }
            } catch (Exception failure) {
                Throwable root = failure;
                while (root.getCause() != null) {
                    root = root.getCause();
                }
                log("X " + root.getClass().getName() + ": " + String.valueOf(root.getMessage()).replace('\n', ' '));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: WmvizSqlOpsHarness <input file>");
            System.exit(2);
        }
        inputPath = args[0];
        Configuration configuration = new Configuration();
        MiniClusterConfiguration cluster =
                new MiniClusterConfiguration.Builder().setConfiguration(configuration).setNumTaskManagers(1).setNumSlotsPerTaskManager(1).build();
        try (MiniCluster mini = new MiniCluster(cluster)) {
            mini.start();
            StreamExecutionEnvironment env = new StreamExecutionEnvironment(new Configuration());
            env.setParallelism(1);
            env.fromData(1).transform("wmviz-sql-ops", Types.INT, new Driver());
            mini.executeJobBlocking(env.getStreamGraph().getJobGraph());
        }
        System.out.print(OUT);
        System.out.flush();
    }
}
