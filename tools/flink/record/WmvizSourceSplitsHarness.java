/*
 * wmviz differential-test harness around Flink 2.3.0's REAL ProgressiveTimestampsAndWatermarks,
 * the class a FLIP-27 SourceOperator uses in streaming mode: its main output, its split-local
 * outputs (created and released as splits come and go), their WatermarkOutputMultiplexer and the
 * idleness manager between them and WatermarkToDataOutput. The generators come from Flink's own
 * WatermarkStrategy (bounded out-of-orderness, or a punctuated generator that emits on every
 * event), withIdleness on the input activity clocks Flink hands them (a ManualClock underneath).
 * The periodic emission is the class's emitImmediateWatermark. No Flink code is copied here.
 *
 * Line protocol over stdin/stdout; every command line produces exactly one reply line.
 *   N <ooo> <timeout|-> <periodic|punctuated> <split,split,...|->   a fresh reader, clock at 0
 *   A <split>  createOutputForSplit       F <split>  releaseOutputForSplit
 *   I <split>  the split output's markIdle  C <split>  its markActive
 *   R <split> <event time>                 collect on that split's output
 *   P <time ms>                            the clock moves to <time>; one periodic emission
 * Reply: the reader output's emissions in order, each 0:W<long>, 0:S:IDLE or 0:S:ACTIVE (empty if
 * none); "ok" for N; "E <exception>" if Flink threw.
 */

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.streaming.api.operators.source.ProgressiveTimestampsAndWatermarks;
import org.apache.flink.streaming.api.operators.source.TimestampsAndWatermarks;
import org.apache.flink.streaming.runtime.io.PushingAsyncDataInput.DataOutput;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.clock.ManualClock;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

public final class WmvizSourceSplitsHarness {

    /** Collects what the reader's output emitted (records themselves are not reported). */
    private static final class Recording implements DataOutput<Object> {
        private final StringBuilder reply;

        Recording(StringBuilder reply) {
            this.reply = reply;
        }

        private void add(String token) {
            if (reply.length() > 0) {
                reply.append(' ');
            }
            reply.append("0:").append(token);
        }

        @Override
        public void emitWatermark(org.apache.flink.streaming.api.watermark.Watermark watermark) {
            add("W" + watermark.getTimestamp());
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus status) {
            add(status.isIdle() ? "S:IDLE" : "S:ACTIVE");
        }

        @Override
        public void emitRecord(StreamRecord<Object> record) {}

        @Override
        public void emitLatencyMarker(LatencyMarker latencyMarker) {
            add("X:latency");
        }

        @Override
        public void emitRecordAttributes(RecordAttributes recordAttributes) {
            add("X:attributes");
        }

        @Override
        public void emitWatermark(WatermarkEvent watermark) {
            add("X:event");
        }
    }

    /** A punctuated generator: maxSeen - ooo - 1 on every event, nothing periodically. */
    private static final class Punctuated implements WatermarkGenerator<Object> {
        private final long ooo;
        private long maxSeen;

        Punctuated(long ooo) {
            this.ooo = ooo;
            this.maxSeen = Long.MIN_VALUE + ooo + 1;
        }

        @Override
        public void onEvent(Object event, long eventTimestamp, WatermarkOutput output) {
            maxSeen = Math.max(maxSeen, eventTimestamp);
            output.emitWatermark(new Watermark(maxSeen - ooo - 1));
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput output) {}
    }

    private static final class NoListener implements TimestampsAndWatermarks.WatermarkUpdateListener {
        @Override
        public void updateIdle(boolean isIdle) {}

        @Override
        public void updateCurrentEffectiveWatermark(long watermark) {}

        @Override
        public void updateCurrentSplitWatermark(String splitId, long watermark) {}

        @Override
        public void updateCurrentSplitIdle(String splitId, boolean isIdle) {}

        @Override
        public void splitFinished(String splitId) {}
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        StringBuilder reply = new StringBuilder();
        ManualClock clock = new ManualClock();
        long nowNanos = 0;
        ProgressiveTimestampsAndWatermarks<Object> reader = null;
        ReaderOutput<Object> main = null;
        Map<String, SourceOutput<Object>> splits = new HashMap<>();
        Object element = new Object();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split(" ");
            reply.setLength(0);
            try {
                switch (f[0]) {
                    case "N": {
                        long ooo = Long.parseLong(f[1]);
                        WatermarkStrategy<Object> strategy =
                                f[3].equals("punctuated")
                                        ? WatermarkStrategy.forGenerator(context -> new Punctuated(ooo))
                                        : WatermarkStrategy.forBoundedOutOfOrderness(Duration.ofMillis(ooo));
                        if (!f[2].equals("-")) {
                            strategy = strategy.withIdleness(Duration.ofMillis(Long.parseLong(f[2])));
                        }
                        clock = new ManualClock();
                        nowNanos = 0;
                        reader =
                                new ProgressiveTimestampsAndWatermarks<>(
                                        (event, timestamp) -> timestamp,
                                        strategy,
                                        new TimestampsAndWatermarks.TimestampsAndWatermarksContextProvider(
                                                new UnregisteredMetricsGroup()),
                                        null,
                                        Duration.ofMillis(200),
                                        clock,
                                        clock,
                                        UnregisteredMetricGroups.createUnregisteredTaskMetricGroup()
                                                .getIOMetricGroup());
                        main = reader.createMainOutput(new Recording(reply), new NoListener());
                        splits.clear();
                        if (!f[4].equals("-")) {
                            for (String id : f[4].split(",")) {
                                splits.put(id, main.createOutputForSplit(id));
                            }
                        }
                        reply.setLength(0);
                        reply.append("ok");
                        break;
                    }
                    case "A":
                        splits.put(f[1], main.createOutputForSplit(f[1]));
                        break;
                    case "F":
                        main.releaseOutputForSplit(f[1]);
                        splits.remove(f[1]);
                        break;
                    case "I":
                        splits.get(f[1]).markIdle();
                        break;
                    case "C":
                        splits.get(f[1]).markActive();
                        break;
                    case "R":
                        splits.get(f[1]).collect(element, Long.parseLong(f[2]));
                        break;
                    case "P": {
                        long targetNanos = Math.multiplyExact(Long.parseLong(f[1]), 1_000_000L);
                        if (targetNanos < nowNanos) {
                            throw new IllegalArgumentException("the clock cannot go back");
                        }
                        clock.advanceTime(Duration.ofNanos(targetNanos - nowNanos));
                        nowNanos = targetNanos;
                        reader.emitImmediateWatermark(0L);
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("bad command: " + line);
                }
            } catch (Exception e) {
                reply.setLength(0);
                reply.append("E ").append(e.getClass().getName()).append(": ").append(e.getMessage());
            }
            out.println(reply);
        }
        out.flush();
    }
}
