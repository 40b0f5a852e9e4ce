/*
 * wmviz differential-test harness around Flink 2.3.0's REAL SourceOperator with watermark
 * alignment (FLIP-182 for the subtask, FLIP-217 for its splits), several subtasks in one JVM.
 *
 * flink-dist ships no operator test harness (SourceOperatorTestContext and its mock environment
 * live in Flink's test jars), so the operator is built here from the jar's own classes: a
 * StreamTask instance whose only state is a stand-in Environment (java.lang.reflect.Proxy
 * answering the few calls the operator makes: metric groups, task info, execution config), a
 * manual ProcessingTimeService whose periodic callbacks are captured and fired on command, an
 * in-memory reader state, a gateway recording what the operator sends its coordinator, and a
 * SourceReader holding per-split queues of records that honours pauseOrResumeSplits (a paused
 * split's records wait, as a real split reader's do). The watermark strategy is Flink's own
 * forBoundedOutOfOrderness, withIdleness when asked, withWatermarkAlignment(group, drift,
 * interval). The coordinator is NOT run here: the driver (alignment_harness.py) computes the
 * announcement from the reports and delivers it as a WatermarkAlignmentEvent. No Flink code is
 * copied here.
 *
 * Line protocol over stdin/stdout; every command line produces exactly one reply line.
 *   N <ooo> <timeout|-> <buffer size> <update interval> <splits of subtask 0> <splits of 1> ...
 *        (splits comma-separated) fresh subtasks, clock at 0                  reply "ok"
 *   R <subtask> <split> <row> <event time>   the split's reader has one more record; the task
 *                                            then reads whatever it may
 *   P <time>     the clock moves to <time>; each subtask's periodic watermark emission, in order
 *   U <time>     the clock moves to <time>; each subtask's alignment timer (sample, check, report)
 *   G <max>      each subtask receives WatermarkAlignmentEvent(max); then the tasks read
 *   Q            the state: per subtask "<s>:wait" or "<s>:read", then "<s>:paused=<a,b|->"
 * Reply: what happened, in order: "<s>:W<wm>", "<s>:S:IDLE", "<s>:S:ACTIVE" (the operator's
 * output), "<s>:R<row>" (a record read), "<s>:report=<wm>" (a ReportedWatermarkEvent);
 * "E <exception>" if Flink threw.
 */

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobInfoImpl;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.operators.ProcessingTimeService.ProcessingTimeCallback;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.runtime.accumulators.AccumulatorRegistry;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.externalresource.ExternalResourceInfoProvider;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.runtime.operators.coordination.OperatorEvent;
import org.apache.flink.runtime.operators.coordination.OperatorEventGateway;
import org.apache.flink.runtime.source.event.AddSplitEvent;
import org.apache.flink.runtime.source.event.ReportedWatermarkEvent;
import org.apache.flink.runtime.source.event.WatermarkAlignmentEvent;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.taskmanager.TaskManagerRuntimeInfo;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.operators.SourceOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.runtime.io.PushingAsyncDataInput.DataOutput;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.streaming.runtime.tasks.SourceOperatorStreamTask;
import org.apache.flink.streaming.runtime.tasks.StreamTask;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.UserCodeClassLoader;
import org.apache.flink.util.clock.ManualClock;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

public final class WmvizAlignmentHarness {

    private static final StringBuilder REPLY = new StringBuilder();

    static void say(int subtask, String token) {
        if (REPLY.length() > 0) {
            REPLY.append(' ');
        }
        REPLY.append(subtask).append(':').append(token);
    }

    /** A stand-in for an interface: the given answers by method name, else a neutral value. */
    @SuppressWarnings("unchecked")
    static <T> T stub(Class<T> type, Map<String, Object> answers) {
        return (T)
                Proxy.newProxyInstance(
                        WmvizAlignmentHarness.class.getClassLoader(),
                        new Class<?>[] {type},
                        (proxy, method, args) -> {
                            if (answers.containsKey(method.getName())) {
                                return answers.get(method.getName());
                            }
                            if (method.getName().equals("toString")) {
                                return type.getSimpleName() + " stand-in";
                            }
                            if (method.getName().equals("hashCode")) {
                                return System.identityHashCode(proxy);
                            }
                            if (method.getName().equals("equals")) {
                                return proxy == args[0];
                            }
                            if (method.isDefault()) {
                                return java.lang.reflect.InvocationHandler.invokeDefault(proxy, method, args);
                            }
                            Class<?> r = method.getReturnType();
                            if (r == boolean.class) {
                                return false;
                            }
                            if (r == int.class || r == long.class) {
                                return r == int.class ? (Object) 0 : (Object) 0L;
                            }
                            if (r == void.class) {
                                return null;
                            }
                            throw new UnsupportedOperationException("stand-in " + type.getSimpleName() + "." + method.getName());
                        });
    }

    /** The split: only its id matters. */
    static final class Split implements SourceSplit {
        final String id;

        Split(String id) {
            this.id = id;
        }

        @Override
        public String splitId() {
            return id;
        }
    }

    static final class SplitSerializer implements SimpleVersionedSerializer<Split> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Split split) {
            return split.id.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public Split deserialize(int version, byte[] bytes) {
            return new Split(new String(bytes, StandardCharsets.UTF_8));
        }
    }

    /** A pending record: its trace row and event time. */
    record Pending(String split, long row, long eventTime) {}

    /** A split reader: records wait in arrival order; a paused split's records are not read. */
    static final class Reader implements SourceReader<Long, Split> {
        final int subtask;
        final ArrayDeque<Pending> pending = new ArrayDeque<>();
        final Set<String> paused = new TreeSet<>();
        final Set<String> splits = new HashSet<>();

        Reader(int subtask) {
            this.subtask = subtask;
        }

        Pending next() {
            for (Pending p : pending) {
                if (!paused.contains(p.split)) {
                    return p;
                }
            }
            return null;
        }

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<Long> output) {
            Pending p = next();
            if (p == null) {
                return InputStatus.NOTHING_AVAILABLE;
            }
            pending.remove(p);
            say(subtask, "R" + p.row);
            output.createOutputForSplit(p.split).collect(p.row, p.eventTime);
            return next() == null ? InputStatus.NOTHING_AVAILABLE : InputStatus.MORE_AVAILABLE;
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            return new ArrayList<>();
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void addSplits(List<Split> added) {
            for (Split s : added) {
                splits.add(s.id);
            }
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

    /** The operator's output: watermarks and statuses are reported, records are not. */
    static final class Recording implements DataOutput<Long> {
        final int subtask;

        Recording(int subtask) {
            this.subtask = subtask;
        }

        @Override
        public void emitWatermark(org.apache.flink.streaming.api.watermark.Watermark watermark) {
            say(subtask, "W" + watermark.getTimestamp());
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus status) {
            say(subtask, status.isIdle() ? "S:IDLE" : "S:ACTIVE");
        }

        @Override
        public void emitRecord(StreamRecord<Long> record) {}

        @Override
        public void emitLatencyMarker(LatencyMarker latencyMarker) {
            say(subtask, "X:latency");
        }

        @Override
        public void emitRecordAttributes(RecordAttributes recordAttributes) {
            say(subtask, "X:attributes");
        }

        @Override
        public void emitWatermark(WatermarkEvent watermark) {
            say(subtask, "X:event");
        }
    }

    /** A processing-time service on a manual clock: periodic callbacks are kept, fired on command. */
    static final class ManualTime implements ProcessingTimeService {
        final ManualClock clock;
        final List<ProcessingTimeCallback> periodic = new ArrayList<>();
        final List<Long> periods = new ArrayList<>();

        ManualTime(ManualClock clock) {
            this.clock = clock;
        }

        @Override
        public long getCurrentProcessingTime() {
            return clock.absoluteTimeMillis();
        }

        @Override
        public org.apache.flink.util.clock.Clock getClock() {
            return clock;
        }

        @Override
        public ScheduledFuture<?> registerTimer(long timestamp, ProcessingTimeCallback target) {
            throw new UnsupportedOperationException("no one-off timers in this harness");
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(ProcessingTimeCallback callback, long delay, long period) {
            return scheduleWithFixedDelay(callback, delay, period);
        }

        @Override
        public ScheduledFuture<?> scheduleWithFixedDelay(ProcessingTimeCallback callback, long delay, long period) {
            periodic.add(callback);
            periods.add(period);
            return null;
        }

        @Override
        public CompletableFuture<Void> quiesce() {
            return CompletableFuture.completedFuture(null);
        }

        /** Fire the callbacks whose period is `period` (the watermark emission or alignment). */
        void fire(long period) throws Exception {
            for (int i = 0; i < periodic.size(); i++) {
                if (periods.get(i) == period) {
                    periodic.get(i).onProcessingTime(getCurrentProcessingTime());
                }
            }
        }
    }

    /** One source subtask: the real operator, its reader and its output. */
    static final class Subtask {
        final int index;
        final Reader reader;
        final Recording output;
        final SourceOperator<Long, Split> operator;
        final ManualTime time;

        Subtask(int index, Reader reader, Recording output, SourceOperator<Long, Split> operator, ManualTime time) {
            this.index = index;
            this.reader = reader;
            this.output = output;
            this.operator = operator;
            this.time = time;
        }

        /** The task's loop: read while the operator is available and the reader has a record it may emit. */
        void run() throws Exception {
            int guard = 0;
            while (operator.getAvailableFuture().isDone() && reader.next() != null) {
                operator.emitNext(output);
                if (++guard > 1_000_000) {
                    throw new IllegalStateException("the task loop does not end");
                }
            }
        }

        boolean waiting() {
            return !operator.getAvailableFuture().isDone();
        }
    }

    static StreamTask<?, ?> task(Environment environment) throws Exception {
        Field unsafeField = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        unsafeField.setAccessible(true);
        sun.misc.Unsafe unsafe = (sun.misc.Unsafe) unsafeField.get(null);
        // Only the environment is read by the operator: no task machinery is started.
        StreamTask<?, ?> task = (StreamTask<?, ?>) unsafe.allocateInstance(SourceOperatorStreamTask.class);
        Field env = StreamTask.class.getDeclaredField("environment");
        env.setAccessible(true);
        env.set(task, environment);
        return task;
    }

    static Subtask subtask(
            int index, int count, String[] splits, WatermarkStrategy<Long> strategy, int bufferSize, long autoInterval)
            throws Exception {
        ManualClock clock = SHARED_CLOCK;
        ManualTime time = new ManualTime(clock);
        ExecutionConfig executionConfig = new ExecutionConfig();
        executionConfig.setAutoWatermarkInterval(autoInterval);
        Map<String, Object> info = new HashMap<>();
        info.put("getConfiguration", new Configuration());
        TaskManagerRuntimeInfo tmInfo = stub(TaskManagerRuntimeInfo.class, info);
        Map<String, Object> loader = new HashMap<>();
        loader.put("asClassLoader", WmvizAlignmentHarness.class.getClassLoader());
        JobID job = new JobID();
        Map<String, Object> answers = new HashMap<>();
        answers.put("getExecutionConfig", executionConfig);
        answers.put("getTaskManagerInfo", tmInfo);
        answers.put("getMetricGroup", UnregisteredMetricGroups.createUnregisteredTaskMetricGroup());
        answers.put("getTaskInfo", new TaskInfoImpl("wmviz-source", count, index, count, 0));
        answers.put("getJobInfo", new JobInfoImpl(job, "wmviz"));
        answers.put("getJobID", job);
        answers.put("getJobConfiguration", new Configuration());
        answers.put("getTaskConfiguration", new Configuration());
        answers.put("getAccumulatorRegistry", new AccumulatorRegistry(job, ExecutionAttemptID.randomId()));
        answers.put("getExternalResourceInfoProvider", ExternalResourceInfoProvider.NO_EXTERNAL_RESOURCES);
        answers.put("getUserCodeClassLoader", stub(UserCodeClassLoader.class, loader));
        answers.put("getDistributedCacheEntries", new HashMap<>());
        Environment environment = stub(Environment.class, answers);
        StreamConfig config = new StreamConfig(new Configuration());
        config.setOperatorID(new OperatorID());
        config.setOperatorName("wmviz-source");
        @SuppressWarnings("unchecked")
        Output<StreamRecord<Long>> output = stub(Output.class, new HashMap<>());
        StreamOperatorParameters<Long> parameters =
                new StreamOperatorParameters<>(task(environment), config, output, () -> time, null, null);
        Configuration conf = new Configuration();
        conf.set(PipelineOptions.WATERMARK_ALIGNMENT_BUFFER_SIZE, bufferSize);
        Reader reader = new Reader(index);
        OperatorEventGateway gateway =
                new OperatorEventGateway() {
                    @Override
                    public void sendEventToCoordinator(OperatorEvent event) {
                        if (event instanceof ReportedWatermarkEvent) {
                            say(index, "report=" + ((ReportedWatermarkEvent) event).getWatermark());
                        }
                    }
                };
        SourceOperator<Long, Split> operator =
                new SourceOperator<>(
                        parameters,
                        context -> reader,
                        gateway,
                        new SplitSerializer(),
                        strategy,
                        time,
                        conf,
                        "localhost",
                        true,
                        () -> true,
                        new HashMap<>(),
                        false,
                        false);
        Map<String, Object> store = new HashMap<>();
        store.put("getListState", new MemoryListState());
        Map<String, Object> context = new HashMap<>();
        context.put("getOperatorStateStore", stub(OperatorStateStore.class, store));
        context.put("isRestored", false);
        operator.initializeState(stub(StateInitializationContext.class, context));
        operator.open();
        Recording recording = new Recording(index);
        operator.emitNext(recording); // the main output is created (the task's first call)
        List<Split> initial = new ArrayList<>();
        for (String id : splits) {
            if (!id.isEmpty()) {
                initial.add(new Split(id));
            }
        }
        operator.handleOperatorEvent(new AddSplitEvent<>(initial, new SplitSerializer()));
        return new Subtask(index, reader, recording, operator, time);
    }

    /** Reader state in memory (never restored here). */
    static final class MemoryListState implements ListState<Object> {
        final List<Object> values = new ArrayList<>();

        @Override
        public Iterable<Object> get() {
            return values;
        }

        @Override
        public void add(Object value) {
            values.add(value);
        }

        @Override
        public void update(List<Object> update) {
            values.clear();
            values.addAll(update);
        }

        @Override
        public void addAll(List<Object> more) {
            values.addAll(more);
        }

        @Override
        public void clear() {
            values.clear();
        }
    }

    static ManualClock SHARED_CLOCK = new ManualClock();
    static long nowNanos = 0;

    static void moveClock(long millis) {
        long target = Math.multiplyExact(millis, 1_000_000L);
        if (target < nowNanos) {
            throw new IllegalArgumentException("the clock cannot go back");
        }
        SHARED_CLOCK.advanceTime(Duration.ofNanos(target - nowNanos));
        nowNanos = target;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        List<Subtask> subtasks = new ArrayList<>();
        long autoInterval = 200;
        long updateInterval = 1000;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split(" ");
            REPLY.setLength(0);
            try {
                switch (f[0]) {
                    case "N": {
                        long ooo = Long.parseLong(f[1]);
                        int buffer = Integer.parseInt(f[3]);
                        autoInterval = Long.parseLong(f[4]);
                        updateInterval = Long.parseLong(f[5]);
                        if (autoInterval == updateInterval) {
                            throw new IllegalArgumentException("the two periods must differ to be told apart");
                        }
                        WatermarkStrategy<Long> strategy =
                                WatermarkStrategy.<Long>forBoundedOutOfOrderness(Duration.ofMillis(ooo));
                        if (!f[2].equals("-")) {
                            strategy = strategy.withIdleness(Duration.ofMillis(Long.parseLong(f[2])));
                        }
                        strategy =
                                strategy.withWatermarkAlignment(
                                        "wmviz", Duration.ofMillis(1), Duration.ofMillis(updateInterval));
                        SHARED_CLOCK = new ManualClock();
                        nowNanos = 0;
                        subtasks.clear();
                        int count = f.length - 6;
                        for (int i = 0; i < count; i++) {
                            String[] splits = f[6 + i].equals("-") ? new String[0] : f[6 + i].split(",");
                            subtasks.add(subtask(i, count, splits, strategy, buffer, autoInterval));
                        }
                        REPLY.setLength(0);
                        REPLY.append("ok");
                        break;
                    }
                    case "R": {
                        Subtask s = subtasks.get(Integer.parseInt(f[1]));
                        s.reader.pending.add(new Pending(f[2], Long.parseLong(f[3]), Long.parseLong(f[4])));
                        s.run();
                        break;
                    }
                    case "P":
                        moveClock(Long.parseLong(f[1]));
                        for (Subtask s : subtasks) {
                            s.time.fire(autoInterval);
                        }
                        break;
                    case "U":
                        moveClock(Long.parseLong(f[1]));
                        for (Subtask s : subtasks) {
                            s.time.fire(updateInterval);
                        }
                        break;
                    case "G": {
                        long max = Long.parseLong(f[1]);
                        for (Subtask s : subtasks) {
                            s.operator.handleOperatorEvent(new WatermarkAlignmentEvent(max));
                        }
                        for (Subtask s : subtasks) {
                            s.run();
                        }
                        break;
                    }
                    case "Q":
                        for (Subtask s : subtasks) {
                            say(s.index, s.waiting() ? "wait" : "read");
                            say(s.index, "paused=" + (s.reader.paused.isEmpty() ? "-" : String.join(",", s.reader.paused)));
                        }
                        break;
                    default:
                        throw new IllegalArgumentException("bad command: " + line);
                }
            } catch (Exception e) {
                REPLY.setLength(0);
                REPLY.append("E ").append(e.getClass().getName()).append(": ").append(e.getMessage());
                e.printStackTrace();
            }
            out.println(REPLY);
            out.flush();
        }
        out.flush();
    }
}
