/*
 * A real Flink 2.3.0 job for `wmviz record`'s end-to-end test: a MiniCluster with its REST
 * endpoint on 127.0.0.1 (a free port) runs
 *
 *   Source: skewed (FLIP-27, parallelism 3, one split per reader, bounded out-of-orderness
 *   500 ms, idleness 1.5 s) -> rebalance -> downstream (parallelism 2) -> Sink: discard
 *
 * Each source reader emits one record every 100 ms, stamped with the wall clock minus its skew
 * (subtask 0: 0 s, 1: 1 s behind, 2: 3 s behind), so subtask 2 holds the downstream watermark.
 * Subtask 2 sends nothing from 5 s to 11 s after it starts (it goes idle, then resumes), and
 * every reader ends after <seconds>, which finishes the job. The reader never blocks its thread:
 * between records it returns NOTHING_AVAILABLE with a future a timer completes, so the periodic
 * watermark and idleness checks run as in any live source.
 *
 * Arguments: <seconds> [<buffer timeout ms>, default 100 as in Flink] [<go file>]. With a go file the
 * readers emit on the clock as above but their time (the silence, the end) starts only once that
 * file exists: a test creates it once its recorder is sampling, so a busy machine that starts the
 * recorder late cannot make it miss the silence.
 * Prints "REST <url>" and "JOB <job id>" once the job is submitted, "FINISHED <status>" when it
 * ends, and exits when its standard input closes. No Flink code is copied here.
 */

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
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
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
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

public final class WmvizRecordJob {

    static final long[] SKEW_MS = {0, 1000, 3000};
    static final long SILENT_FROM_MS = 5000;
    static final long SILENT_TO_MS = 11000;
    static final long EVERY_MS = 100;

    /** NumberSequenceSource's enumerator and serializers (one split per reader), a paced reader. */
    static final class PacedSource
            implements Source<Long, NumberSequenceSplit, Collection<NumberSequenceSplit>> {
        final NumberSequenceSource numbers = new NumberSequenceSource(0, 2);
        final long durationMs;

        final String goFile;

        PacedSource(long durationMs, String goFile) {
            this.durationMs = durationMs;
            this.goFile = goFile;
        }

        @Override
        public Boundedness getBoundedness() {
            return Boundedness.CONTINUOUS_UNBOUNDED;
        }

        @Override
        public SourceReader<Long, NumberSequenceSplit> createReader(SourceReaderContext ctx) {
            return new PacedReader(ctx, durationMs, goFile);
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
        final int index;
        final List<NumberSequenceSplit> splits = new ArrayList<>();
        ScheduledExecutorService timer;
        CompletableFuture<Void> available = new CompletableFuture<>();
        final String goFile;
        long startMs;
        long nextMs;
        boolean gone;

        PacedReader(SourceReaderContext ctx, long durationMs, String goFile) {
            this.ctx = ctx;
            this.durationMs = durationMs;
            this.goFile = goFile;
            this.gone = goFile == null;
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
            boolean silent = index == 2 && sinceStart >= SILENT_FROM_MS && sinceStart < SILENT_TO_MS;
            if (silent) {
                nextMs = startMs + SILENT_TO_MS;
                return waitUntil(nextMs);
            }
            if (now < nextMs) {
                return waitUntil(nextMs);
            }
            output.createOutputForSplit(splits.get(0).splitId()).collect(now - SKEW_MS[index]);
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

    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        long bufferTimeoutMs = args.length > 1 ? Long.parseLong(args[1]) : 100;
        String goFile = args.length > 2 ? args[2] : null;
        Configuration conf = new Configuration();
        conf.setString("rest.bind-address", "127.0.0.1");
        conf.setString("rest.address", "127.0.0.1");
        conf.setString("rest.bind-port", "0");
        conf.setString("metrics.fetcher.update-interval", "50 ms");
        conf.setString("taskmanager.memory.network.max", "64m");
        MiniCluster cluster =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(conf)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(3)
                                .build());
        cluster.start();

        StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
        env.getConfig().setAutoWatermarkInterval(200);
        // Watermarks travel in network buffers, flushed every buffer timeout (100 ms by default):
        // a sample can catch one in flight for that long. 0 flushes after every element.
        env.setBufferTimeout(bufferTimeoutMs);
        WatermarkStrategy<Long> strategy =
                WatermarkStrategy.<Long>forBoundedOutOfOrderness(Duration.ofMillis(500))
                        .withIdleness(Duration.ofMillis(1500))
                        .withTimestampAssigner((value, ts) -> value);
        env.fromSource(new PacedSource(seconds * 1000, goFile), strategy, "skewed")
                .setParallelism(3)
                .rebalance()
                .process(
                        new ProcessFunction<Long, Long>() {
                            @Override
                            public void processElement(Long value, Context ctx, Collector<Long> out) {
                                out.collect(value);
                            }
                        })
                .name("downstream")
                .setParallelism(2)
                .sinkTo(new DiscardingSink<>())
                .name("discard")
                .setParallelism(2);
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
