/*
 * wmviz differential-test harness around Flink 2.3.0's REAL per-split watermarking of a FLIP-27
 * source reader, composed as ProgressiveTimestampsAndWatermarks composes it for split-local
 * outputs: per split, Flink's WatermarksWithIdleness around BoundedOutOfOrdernessWatermarks (a
 * ManualClock as its RelativeClock), writing records' updates to the split's immediate output and
 * periodic ones to its deferred output of one WatermarkOutputMultiplexer, whose combined
 * watermark goes to Flink's WatermarkToDataOutput. A periodic emission asks every split's
 * generator first, then the multiplexer, as SplitLocalOutputs.emitPeriodicWatermark does. No
 * Flink code is copied here.
 *
 * Line protocol over stdin/stdout; every command line produces exactly one reply line.
 *   N <splits> <ooo> <timeout>   a fresh reader of that many splits (and a fresh clock at 0)
 *   R <split> <event time>       onEvent on that split's generator
 *   P <time ms>                  the clock moves to <time>; one periodic emission
 * Reply: space-separated emissions of the reader's output in order, each 0:W<long>, 0:S:IDLE or
 * 0:S:ACTIVE (empty if none); "ok" for N; "E <exception>" if Flink threw.
 */

import org.apache.flink.api.common.eventtime.BoundedOutOfOrdernessWatermarks;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkOutputMultiplexer;
import org.apache.flink.api.common.eventtime.WatermarksWithIdleness;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.streaming.api.operators.source.WatermarkToDataOutput;
import org.apache.flink.streaming.api.watermark.Watermark;
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

public final class WmvizSplitHarness {

    /** Collects what the reader's output emitted. */
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
        public void emitWatermark(Watermark watermark) {
            add("W" + watermark.getTimestamp());
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus status) {
            add(status.isIdle() ? "S:IDLE" : "S:ACTIVE");
        }

        @Override
        public void emitRecord(StreamRecord<Object> record) {
            add("X:record");
        }

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

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        StringBuilder reply = new StringBuilder();
        ManualClock clock = new ManualClock();
        long nowNanos = 0;
        WatermarksWithIdleness<Object>[] generators = null;
        WatermarkOutput[] immediate = null;
        WatermarkOutput[] deferred = null;
        WatermarkOutputMultiplexer multiplexer = null;
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
                        int splits = Integer.parseInt(f[1]);
                        Duration ooo = Duration.ofMillis(Long.parseLong(f[2]));
                        Duration timeout = Duration.ofMillis(Long.parseLong(f[3]));
                        clock = new ManualClock();
                        nowNanos = 0;
                        multiplexer = new WatermarkOutputMultiplexer(new WatermarkToDataOutput(new Recording(reply)));
                        @SuppressWarnings("unchecked")
                        WatermarksWithIdleness<Object>[] made = new WatermarksWithIdleness[splits];
                        generators = made;
                        immediate = new WatermarkOutput[splits];
                        deferred = new WatermarkOutput[splits];
                        for (int s = 0; s < splits; s++) {
                            String id = "s" + s;
                            multiplexer.registerNewOutput(id);
                            immediate[s] = multiplexer.getImmediateOutput(id);
                            deferred[s] = multiplexer.getDeferredOutput(id);
                            generators[s] =
                                    new WatermarksWithIdleness<>(
                                            new BoundedOutOfOrdernessWatermarks<>(ooo), timeout, clock);
                        }
                        reply.append("ok");
                        break;
                    }
                    case "R": {
                        int s = Integer.parseInt(f[1]);
                        generators[s].onEvent(null, Long.parseLong(f[2]), immediate[s]);
                        break;
                    }
                    case "P": {
                        long targetNanos = Math.multiplyExact(Long.parseLong(f[1]), 1_000_000L);
                        if (targetNanos < nowNanos) {
                            throw new IllegalArgumentException("the clock cannot go back");
                        }
                        clock.advanceTime(Duration.ofNanos(targetNanos - nowNanos));
                        nowNanos = targetNanos;
                        for (int s = 0; s < generators.length; s++) {
                            generators[s].onPeriodicEmit(deferred[s]);
                        }
                        multiplexer.onPeriodicEmit();
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
