/*
 * wmviz differential-test harness around the REAL Flink 2.3.0 window operator.
 *
 * flink-dist ships no operator test harness (KeyedOneInputStreamOperatorTestHarness lives in
 * Flink's test jars), so every trace runs as a real DataStream pipeline on a local MiniCluster:
 *
 *   fromData(events) -> assignTimestampsAndWatermarks(generator) -> marker map -> filter(records)
 *     -> reinterpretAsKeyedStream(key) -> window(Tumbling|Sliding EventTimeWindows with an offset,
 *        or EventTimeSessionWindows.withGap)
 *     -> allowedLateness -> sideOutputLateData -> ProcessWindowFunction (list) or
 *        aggregate(count, ProcessWindowFunction)
 *
 * Parallelism 1 and a forward (reinterpreted) keyed edge chain the whole pipeline into ONE task,
 * so everything a trace causes happens on one thread, in order: the marker map logs "I <index>"
 * when input <index> reaches the window operator, and what the window function, the late side
 * output and the watermarks that follow the input produce is logged after it. A watermark input
 * is a marker event from which a punctuated generator emits exactly that watermark (Flink's
 * watermark output drops it unless it is higher than the last one, like a one-channel valve);
 * in generator mode every record goes through Flink's own BoundedOutOfOrdernessWatermarks,
 * asked for its watermark after each record. A final END marker separates the end-of-input
 * flush (the source's MAX watermark) from the last input. Many traces run as independent
 * pipelines of one job, and a batch of jobs in one JVM. No Flink code is copied here.
 *
 * Usage: WmvizWindowHarness windows <input file> <traces per job>
 *   input:  T <id> <size> <slide, 0 = tumbling> <lateness> <list|count> <wm|gen> <ooo> <offset>
 *             <session gap, 0 = not sessions> <1: run it as a job of its own>
 *           R <key> <event time>     a record (its element is its input index)
 *           W <watermark>            a watermark input
 *           E                        end of the trace
 *   output: T <id>, then the trace's log lines:
 *           I <index>                input <index> reached the operator (the END marker is
 *                                    the number of inputs)
 *           F <key> <start> <end> L <i>,<i>,...   a firing of list contents (input indexes)
 *           F <key> <start> <end> C <count>        a firing of the count
 *           D <index>                input <index> went to the late side output
 *           M                        the generator is about to emit a watermark (what
 *                                    follows in the segment is caused by that watermark)
 *           X <exception>            the job failed (a failing batch is halved until the
 *                                    failing trace runs alone)
 */

import org.apache.flink.api.common.eventtime.BoundedOutOfOrdernessWatermarks;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamUtils;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.datastream.WindowedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

public final class WmvizWindowHarness {

    static final int RECORD = 0;
    static final int WATERMARK = 1;
    static final int END = 2;

    /** One element of a trace's source: a record, a watermark marker or the END marker. */
    public static final class Ev {
        public int trace;
        public int idx;
        public int kind;
        public String key;
        public long ts;

        public Ev() {}

        Ev(int trace, int idx, int kind, String key, long ts) {
            this.trace = trace;
            this.idx = idx;
            this.kind = kind;
            this.key = key;
            this.ts = ts;
        }
    }

    static final class Spec {
        int id;
        long size;
        long slide;
        long lateness;
        boolean count;
        boolean generated;
        long ooo;
        long offset;
        long gap;
        boolean alone;
        final List<Ev> events = new ArrayList<>();
    }

    /** What each trace's pipeline logged, by trace id; each list is written by one task thread. */
    static final Map<Integer, List<String>> LOG = new ConcurrentHashMap<>();

    /** The thread that ran each trace: everything must run chained on one thread. */
    static final Map<Integer, Long> THREAD = new ConcurrentHashMap<>();

    static void log(int trace, String line) {
        long me = Thread.currentThread().getId();
        Long first = THREAD.putIfAbsent(trace, me);
        if (first != null && first != me) {
            throw new IllegalStateException("trace " + trace + " ran on two threads: not chained");
        }
        LOG.get(trace).add(line);
    }

    /** Emits exactly the watermark a marker carries. */
    static final class Punctuated implements WatermarkGenerator<Ev> {
        @Override
        public void onEvent(Ev e, long ts, WatermarkOutput out) {
            if (e.kind == WATERMARK) {
                log(e.trace, "M");
                out.emitWatermark(new Watermark(e.ts));
            }
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput out) {}
    }

    /** Flink's BoundedOutOfOrdernessWatermarks, asked for its watermark after every record. */
    static final class PerRecord implements WatermarkGenerator<Ev> {
        private final BoundedOutOfOrdernessWatermarks<Ev> inner;

        PerRecord(long ooo) {
            inner = new BoundedOutOfOrdernessWatermarks<>(Duration.ofMillis(ooo));
        }

        @Override
        public void onEvent(Ev e, long ts, WatermarkOutput out) {
            if (e.kind == RECORD) {
                inner.onEvent(e, ts, out);
                log(e.trace, "M");
                inner.onPeriodicEmit(out);
            }
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput out) {
            inner.onPeriodicEmit(out);
        }
    }

    static final class Marker implements MapFunction<Ev, Ev> {
        @Override
        public Ev map(Ev e) {
            log(e.trace, "I " + e.idx);
            return e;
        }
    }

    static final class OnlyRecords implements FilterFunction<Ev> {
        @Override
        public boolean filter(Ev e) {
            return e.kind == RECORD;
        }
    }

    static final class ListFiring extends ProcessWindowFunction<Ev, Integer, String, TimeWindow> {
        private final int trace;

        ListFiring(int trace) {
            this.trace = trace;
        }

        @Override
        public void process(String key, Context ctx, Iterable<Ev> elements, Collector<Integer> out) {
            StringBuilder line = new StringBuilder();
            line.append("F ").append(key).append(' ').append(ctx.window().getStart()).append(' ');
            line.append(ctx.window().getEnd()).append(" L ");
            boolean first = true;
            for (Ev e : elements) {
                line.append(first ? "" : ",").append(e.idx);
                first = false;
            }
            log(trace, line.toString());
        }
    }

    static final class Count implements AggregateFunction<Ev, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Ev e, Long acc) {
            return acc + 1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    static final class CountFiring extends ProcessWindowFunction<Long, Integer, String, TimeWindow> {
        private final int trace;

        CountFiring(int trace) {
            this.trace = trace;
        }

        @Override
        public void process(String key, Context ctx, Iterable<Long> counts, Collector<Integer> out) {
            long n = counts.iterator().next();
            log(trace, "F " + key + " " + ctx.window().getStart() + " " + ctx.window().getEnd() + " C " + n);
        }
    }

    static final class LateDrop implements MapFunction<Ev, Integer> {
        @Override
        public Integer map(Ev e) {
            log(e.trace, "D " + e.idx);
            return e.idx;
        }
    }

    static void addPipeline(StreamExecutionEnvironment env, Spec spec) {
        TypeInformation<Ev> type = TypeInformation.of(Ev.class);
        long ooo = spec.ooo;
        WatermarkStrategy<Ev> strategy =
                spec.generated
                        ? WatermarkStrategy.<Ev>forGenerator(ctx -> new PerRecord(ooo))
                        : WatermarkStrategy.<Ev>forGenerator(ctx -> new Punctuated());
        DataStream<Ev> records =
                env.fromData(spec.events, type)
                        .assignTimestampsAndWatermarks(strategy.withTimestampAssigner((e, prev) -> e.ts))
                        .map(new Marker())
                        .returns(type)
                        .filter(new OnlyRecords());
        KeyedStream<Ev, String> keyed =
                DataStreamUtils.reinterpretAsKeyedStream(records, e -> e.key, Types.STRING);
        WindowAssigner<Object, TimeWindow> assigner;
        if (spec.gap > 0) {
            assigner = EventTimeSessionWindows.withGap(Duration.ofMillis(spec.gap));
        } else if (spec.slide == 0) {
            assigner = TumblingEventTimeWindows.of(Duration.ofMillis(spec.size), Duration.ofMillis(spec.offset));
        } else {
            assigner =
                    SlidingEventTimeWindows.of(
                            Duration.ofMillis(spec.size),
                            Duration.ofMillis(spec.slide),
                            Duration.ofMillis(spec.offset));
        }
        OutputTag<Ev> late = new OutputTag<>("late-" + spec.id, type);
        WindowedStream<Ev, String, TimeWindow> windowed =
                keyed.window(assigner)
                        .allowedLateness(Duration.ofMillis(spec.lateness))
                        .sideOutputLateData(late);
        SingleOutputStreamOperator<Integer> fired =
                spec.count
                        ? windowed.aggregate(new Count(), new CountFiring(spec.id), Types.LONG, Types.LONG, Types.INT)
                        : windowed.process(new ListFiring(spec.id), Types.INT);
        fired.sinkTo(new DiscardingSink<>());
        fired.getSideOutput(late).map(new LateDrop()).returns(Types.INT).sinkTo(new DiscardingSink<>());
    }

    /** One MiniCluster for the whole run: starting one (and its RPC system) costs about a second. */
    static MiniCluster cluster;

    static Configuration jobConfig() {
        Configuration conf = new Configuration();
        conf.setString("pipeline.auto-watermark-interval", "0 ms");
        return conf;
    }

    static void startCluster() throws Exception {
        Configuration conf = jobConfig();
        conf.setString("rest.bind-port", "0");
        conf.setString("taskmanager.memory.network.max", "64m");
        cluster =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(conf)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(1)
                                .build());
        cluster.start();
    }

    static void runJob(List<Spec> batch) throws Exception {
        StreamExecutionEnvironment env = new StreamExecutionEnvironment(jobConfig());
        env.setParallelism(1);
        env.getConfig().setAutoWatermarkInterval(0);
        for (Spec spec : batch) {
            LOG.put(spec.id, Collections.synchronizedList(new ArrayList<>()));
            THREAD.remove(spec.id);
            addPipeline(env, spec);
        }
        cluster.executeJobBlocking(env.getStreamGraph().getJobGraph());
    }

    static List<Spec> parse(List<String> lines) {
        List<Spec> specs = new ArrayList<>();
        Spec spec = null;
        for (String line : lines) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split(" ");
            switch (f[0]) {
                case "T":
                    spec = new Spec();
                    spec.id = Integer.parseInt(f[1]);
                    spec.size = Long.parseLong(f[2]);
                    spec.slide = Long.parseLong(f[3]);
                    spec.lateness = Long.parseLong(f[4]);
                    spec.count = f[5].equals("count");
                    spec.generated = f[6].equals("gen");
                    spec.ooo = Long.parseLong(f[7]);
                    spec.offset = Long.parseLong(f[8]);
                    spec.gap = Long.parseLong(f[9]);
                    spec.alone = f[10].equals("1");
                    break;
                case "R":
                    spec.events.add(new Ev(spec.id, spec.events.size(), RECORD, f[1], Long.parseLong(f[2])));
                    break;
                case "W":
                    spec.events.add(new Ev(spec.id, spec.events.size(), WATERMARK, "", Long.parseLong(f[1])));
                    break;
                case "E":
                    spec.events.add(new Ev(spec.id, spec.events.size(), END, "", 0L));
                    specs.add(spec);
                    spec = null;
                    break;
                default:
                    throw new IllegalArgumentException("bad input line: " + line);
            }
        }
        return specs;
    }

    /** Runs the traces as one job; if it fails, halves the batch until the failing traces are alone. */
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

    static void windows(String file, int perJob, PrintWriter out) throws Exception {
        List<Spec> specs = parse(Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8));
        int from = 0;
        while (from < specs.size()) {
            int to = from + 1;
            while (to < specs.size() && to - from < perJob && !specs.get(from).alone && !specs.get(to).alone) {
                to++;
            }
            List<Spec> batch = specs.subList(from, to);
            from = to;
            runOrBisect(batch);
            for (Spec spec : batch) {
                out.println("T " + spec.id);
                for (String line : LOG.remove(spec.id)) {
                    out.println(line);
                }
            }
            out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        PrintWriter out =
                new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)));
        if (args.length == 3 && args[0].equals("windows")) {
            startCluster();
            windows(args[1], Integer.parseInt(args[2]), out);
        } else {
            System.err.println("usage: WmvizWindowHarness windows <file> <traces per job>");
            System.exit(2);
        }
        out.flush();
        System.exit(0);
    }
}
