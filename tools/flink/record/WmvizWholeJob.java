/*
 * A real Flink 2.3.0 job for the whole-job recorder and `wmviz blame`: a MiniCluster with its REST
 * endpoint on 127.0.0.1 (a free port) runs
 *
 *   Source: orders (FLIP-27, parallelism 2, one split per reader) --hash--> join input 1
 *   Source: payments (FLIP-27, parallelism 2) --rescale--> widen (a map, parallelism 4)
 *     --hash--> join input 2
 *   join (a keyed two-input process function, parallelism 2)
 *     --hash--> window (keyed 1 s tumbling event-time windows) -> Sink: discard (chained)
 *   widen --rescale--> merge input 1, Source: orders --rebalance--> merge input 2
 *   merge (a pass-through operator of two inputs, parallelism 2) -> Sink: drop (chained)
 *
 * The join runs in a two-input task, which reports only the minimum of its inputs' watermarks;
 * merge runs in a multiple-input task, which reports each one's (`currentInput{N}Watermark`).
 * merge's input 1 is payments' side and input 2 orders', the reverse of the order in which the
 * plan lists its edges (orders' first).
 * Readers emit one record every 100 ms stamped with the wall clock minus a skew; orders' subtask
 * 1 goes silent SILENT_FROM_MS after it starts and stays silent (no idleness is configured), so
 * from a little later on it holds the join, the window and the sink. Until then payments' subtask
 * 0, PAYMENTS_SKEW_MS behind the clock, holds them. The skew also tells the rescale edge's
 * channels apart: widen's subtasks 0 and 1 read payments' subtask 0, its subtasks 2 and 3 read
 * payments' subtask 1 (Flink's pointwise pattern), so their input watermarks differ by the skew;
 * merge's subtask 0 reads widen's 0 and 1, its subtask 1 widen's 2 and 3, so merge's input 1
 * watermarks differ by it too.
 * Every reader ends after <seconds>.
 *
 * A scale factor k (default 1: the job above, unchanged) multiplies every vertex's parallelism:
 * sources 2k each, widen 4k, join, window and merge 2k, on 4k slots, and the network memory by k.
 * The culprits stay where they were: orders' subtask 1 falls silent, payments' subtask 0 runs
 * behind; every other reader is on the clock. The rescale edges keep their pattern (payments'
 * subtask i feeds widen's 2i and 2i+1; merge's subtask j reads widen's 2j and 2j+1).
 *
 * Arguments: <seconds> [<ignored>] [<scale>] [<go file>] (the second is the buffer timeout
 * tools/flink/record/job.py passes every job; this one always flushes at once). With a go file the
 * readers emit on the clock as above but their time (the silence, the end) starts only once that
 * file exists: a test creates it once its recorder is sampling, so a busy machine that starts the
 * recorder late cannot make it miss the first phase. Prints
 * "REST <url>" and "JOB <job id>" once the job is submitted, "SILENT <source> <subtask> <split id>
 * <event ms>" when the silent reader stops (the last event time it emitted), "FINISHED <status>"
 * when the job ends, and exits when its standard input closes. No Flink code is copied here.
 */

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.operators.AbstractInput;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorV2;
import org.apache.flink.streaming.api.operators.Input;
import org.apache.flink.streaming.api.operators.MultipleInputStreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.transformations.MultipleInputTransformation;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.Collector;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

public final class WmvizWholeJob {

    static final long SILENT_FROM_MS = 8000;
    static final long EVERY_MS = 100;
    static final long PAYMENTS_SKEW_MS = 1500;

    /** NumberSequenceSource's enumerator and serializers (one split per reader), a paced reader. */
    static final class PacedSource
            implements Source<Long, NumberSequenceSplit, Collection<NumberSequenceSplit>> {
        final NumberSequenceSource numbers;
        final String name;
        final long durationMs;
        final long[] skewMs;
        final int silentIndex;
        final String goFile;

        PacedSource(String name, long durationMs, long[] skewMs, int silentIndex, String goFile) {
            this.goFile = goFile;
            // One number per reader: as many splits as readers, each reader gets one (a reader
            // without a split would hold its downstream at the start of time).
            this.numbers = new NumberSequenceSource(0, skewMs.length - 1);
            this.name = name;
            this.durationMs = durationMs;
            this.skewMs = skewMs;
            this.silentIndex = silentIndex;
        }

        @Override
        public Boundedness getBoundedness() {
            return Boundedness.CONTINUOUS_UNBOUNDED;
        }

        @Override
        public SourceReader<Long, NumberSequenceSplit> createReader(SourceReaderContext ctx) {
            return new PacedReader(ctx, name, durationMs, skewMs, silentIndex, goFile);
        }

        @Override
        public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> createEnumerator(
                SplitEnumeratorContext<NumberSequenceSplit> ctx) {
            return numbers.createEnumerator(ctx);
        }

        @Override
        public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> restoreEnumerator(
                SplitEnumeratorContext<NumberSequenceSplit> ctx, Collection<NumberSequenceSplit> state)
                throws Exception {
            return numbers.restoreEnumerator(ctx, state);
        }

        @Override
        public SimpleVersionedSerializer<NumberSequenceSplit> getSplitSerializer() {
            return numbers.getSplitSerializer();
        }

        @Override
        public SimpleVersionedSerializer<Collection<NumberSequenceSplit>> getEnumeratorCheckpointSerializer() {
            return numbers.getEnumeratorCheckpointSerializer();
        }
    }

    static final class PacedReader implements SourceReader<Long, NumberSequenceSplit> {
        final SourceReaderContext ctx;
        final long durationMs;
        final long[] skewMs;
        final int silentIndex;
        final int index;
        final List<NumberSequenceSplit> splits = new ArrayList<>();
        ScheduledExecutorService timer;
        CompletableFuture<Void> available = new CompletableFuture<>();
        final String name;
        long startMs;
        long nextMs;
        long lastMs = Long.MIN_VALUE;
        boolean toldSilent;
        final String goFile;
        boolean gone;

        PacedReader(
                SourceReaderContext ctx, String name, long durationMs, long[] skewMs, int silentIndex, String goFile) {
            this.ctx = ctx;
            this.goFile = goFile;
            this.gone = goFile == null;
            this.name = name;
            this.durationMs = durationMs;
            this.skewMs = skewMs;
            this.silentIndex = silentIndex;
            this.index = ctx.getIndexOfSubtask();
        }

        @Override
        public void start() {
            timer = Executors.newSingleThreadScheduledExecutor();
            startMs = System.currentTimeMillis();
            nextMs = startMs;
            ctx.sendSplitRequest();
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Long> output) {
            long now = System.currentTimeMillis();
            if (!gone && new java.io.File(goFile).exists()) {
                gone = true;
                startMs = now; // the reader's time starts now
            }
            long sinceStart = gone ? now - startMs : 0;
            if (sinceStart >= durationMs) {
                return InputStatus.END_OF_INPUT;
            }
            if (splits.isEmpty()) {
                return waitUntil(now + EVERY_MS);
            }
            if (index == silentIndex && sinceStart >= SILENT_FROM_MS) {
                // The silent partition: no record, no idleness (the strategy has none), until the end.
                if (!toldSilent) {
                    toldSilent = true;
                    System.out.println("SILENT " + name + " " + index + " " + splits.get(0).splitId() + " " + lastMs);
                    System.out.flush();
                }
                return waitUntil(startMs + durationMs);
            }
            if (now < nextMs) {
                return waitUntil(nextMs);
            }
            lastMs = now - skewMs[index];
            output.createOutputForSplit(splits.get(0).splitId()).collect(lastMs);
            nextMs = now + EVERY_MS;
            return waitUntil(nextMs);
        }

        private InputStatus waitUntil(long untilMs) {
            CompletableFuture<Void> future = new CompletableFuture<>();
            available = future;
            long delay = Math.max(1, untilMs - System.currentTimeMillis());
            timer.schedule(() -> future.complete(null), delay, TimeUnit.MILLISECONDS);
            return InputStatus.NOTHING_AVAILABLE;
        }

        @Override
        public List<NumberSequenceSplit> snapshotState(long checkpointId) {
            return Collections.unmodifiableList(splits);
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return available;
        }

        @Override
        public void addSplits(List<NumberSequenceSplit> newSplits) {
            splits.addAll(newSplits);
            available.complete(null);
        }

        @Override
        public void notifyNoMoreSplits() {}

        @Override
        public void close() {
            if (timer != null) {
                timer.shutdownNow();
            }
        }
    }

    /** Forwards every record of its two inputs; run by a MultipleInputStreamTask. */
    static final class Merge extends AbstractStreamOperatorV2<Long> implements MultipleInputStreamOperator<Long> {
        Merge(StreamOperatorParameters<Long> parameters) {
            super(parameters, 2);
        }

        @Override
        @SuppressWarnings("rawtypes")
        public List<Input> getInputs() {
            List<Input> inputs = new ArrayList<>();
            for (int id = 1; id <= 2; id++) {
                inputs.add(
                        new AbstractInput<Long, Long>(this, id) {
                            @Override
                            public void processElement(StreamRecord<Long> element) {
                                output.collect(element);
                            }
                        });
            }
            return inputs;
        }
    }

    static final class MergeFactory extends AbstractStreamOperatorFactory<Long> {
        @Override
        @SuppressWarnings("unchecked")
        public <T extends StreamOperator<Long>> T createStreamOperator(StreamOperatorParameters<Long> parameters) {
            return (T) new Merge(parameters);
        }

        @Override
        @SuppressWarnings("rawtypes")
        public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader loader) {
            return Merge.class;
        }
    }

    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        int scale = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        String goFile = args.length > 3 ? args[3] : null;
        Configuration conf = new Configuration();
        conf.setString("rest.bind-address", "127.0.0.1");
        conf.setString("rest.address", "127.0.0.1");
        conf.setString("rest.bind-port", "0");
        conf.setString("metrics.fetcher.update-interval", "50 ms");
        conf.setString("taskmanager.memory.network.max", (64 * scale) + "m");
        MiniCluster cluster =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(conf)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(4 * scale)
                                .build());
        cluster.start();

        StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
        env.getConfig().setAutoWatermarkInterval(200);
        env.setBufferTimeout(0);
        WatermarkStrategy<Long> strategy =
                WatermarkStrategy.<Long>forBoundedOutOfOrderness(Duration.ofMillis(200))
                        .withTimestampAssigner((value, ts) -> value);
        long durationMs = seconds * 1000;
        long[] onTheClock = new long[2 * scale];
        long[] firstBehind = new long[2 * scale];
        firstBehind[0] = PAYMENTS_SKEW_MS;
        DataStream<Long> orders =
                env.fromSource(new PacedSource("orders", durationMs, onTheClock, 1, goFile), strategy, "orders")
                        .setParallelism(2 * scale);
        DataStream<Long> payments =
                env.fromSource(
                                new PacedSource("payments", durationMs, firstBehind, -1, goFile), strategy, "payments")
                        .setParallelism(2 * scale)
                        .rescale()
                        .map(v -> v)
                        .returns(Long.class)
                        .name("widen")
                        .setParallelism(4 * scale);
        orders.keyBy(v -> v % 4)
                .connect(payments.keyBy(v -> v % 4))
                .process(
                        new KeyedCoProcessFunction<Long, Long, Long, Long>() {
                            @Override
                            public void processElement1(Long value, Context ctx, Collector<Long> out) {
                                out.collect(value);
                            }

                            @Override
                            public void processElement2(Long value, Context ctx, Collector<Long> out) {
                                out.collect(value);
                            }
                        })
                .name("join")
                .setParallelism(2 * scale)
                .keyBy(v -> v % 4)
                .window(TumblingEventTimeWindows.of(Duration.ofSeconds(1)))
                .reduce(Long::sum)
                .name("window")
                .setParallelism(2 * scale)
                .sinkTo(new DiscardingSink<>())
                .name("discard")
                .setParallelism(2 * scale);
        MultipleInputTransformation<Long> merge =
                new MultipleInputTransformation<>("merge", new MergeFactory(), Types.LONG, 2);
        merge.addInput(payments.rescale().getTransformation());
        merge.addInput(orders.rebalance().getTransformation());
        env.addOperator(merge);
        if (scale != 1) {
            // At scale 1 merge takes the environment's default, as the job always has (2 here).
            merge.setParallelism(2 * scale);
        }
        new DataStream<>(env, merge).sinkTo(new DiscardingSink<>()).name("drop").setParallelism(2 * scale);
        JobGraph job = env.getStreamGraph().getJobGraph();
        cluster.submitJob(job).get();
        System.out.println("REST " + cluster.getRestAddress().get());
        System.out.println("JOB " + job.getJobID());
        System.out.flush();
        System.out.println("FINISHED " + cluster.requestJobResult(job.getJobID()).get().getJobStatus().map(Object::toString).orElse("UNKNOWN"));
        System.out.flush();
        while (System.in.read() != -1) {
            // keep the REST endpoint up until the caller is done reading it
        }
        cluster.close();
        System.exit(0);
    }
}
