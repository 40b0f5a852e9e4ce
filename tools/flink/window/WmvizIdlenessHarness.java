/*
 * wmviz differential-test harness around Flink 2.3.0's REAL idleness detection.
 *
 * Each channel gets what a FLIP-27 source split gets for
 * WatermarkStrategy.forBoundedOutOfOrderness(ooo).withIdleness(timeout): Flink's own
 * WatermarksWithIdleness around BoundedOutOfOrdernessWatermarks, driven by a ManualClock
 * (the RelativeClock its constructor takes) and writing into Flink's WatermarkToDataOutput, the
 * source output that drops non-increasing watermarks, emits IDLE once and turns ACTIVE again
 * only together with a higher watermark. No Flink code is copied here.
 *
 * Line protocol over stdin/stdout; every command line produces exactly one reply line.
 *   N <channels> <ooo> <timeout>   fresh generators (and a fresh clock at 0)
 *   R <channel> <event time>       onEvent on that channel's generator
 *   P <time ms>                    the clock moves to <time>; onPeriodicEmit on every channel
 * Reply: space-separated emissions in order, each <channel>:W<long>, <channel>:S:IDLE or
 * <channel>:S:ACTIVE (empty if none); "ok" for N; "E <exception>" if Flink threw.
 */

import org.apache.flink.api.common.eventtime.BoundedOutOfOrdernessWatermarks;
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

public final class WmvizIdlenessHarness {

    /** Collects what one channel's source output emitted. */
    private static final class Recording implements DataOutput<Object> {
        private final int channel;
        private final StringBuilder reply;

        Recording(int channel, StringBuilder reply) {
            this.channel = channel;
            this.reply = reply;
        }

        private void add(String token) {
            if (reply.length() > 0) {
                reply.append(' ');
            }
            reply.append(channel).append(':').append(token);
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
        WatermarkToDataOutput[] outputs = null;
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
                        int channels = Integer.parseInt(f[1]);
                        Duration ooo = Duration.ofMillis(Long.parseLong(f[2]));
                        Duration timeout = Duration.ofMillis(Long.parseLong(f[3]));
                        clock = new ManualClock();
                        nowNanos = 0;
                        @SuppressWarnings("unchecked")
                        WatermarksWithIdleness<Object>[] made = new WatermarksWithIdleness[channels];
                        generators = made;
                        outputs = new WatermarkToDataOutput[channels];
                        for (int c = 0; c < channels; c++) {
                            generators[c] =
                                    new WatermarksWithIdleness<>(
                                            new BoundedOutOfOrdernessWatermarks<>(ooo), timeout, clock);
                            outputs[c] = new WatermarkToDataOutput(new Recording(c, reply));
                        }
                        reply.append("ok");
                        break;
                    }
                    case "R": {
                        int c = Integer.parseInt(f[1]);
                        generators[c].onEvent(null, Long.parseLong(f[2]), outputs[c]);
                        break;
                    }
                    case "P": {
                        long targetNanos = Math.multiplyExact(Long.parseLong(f[1]), 1_000_000L);
                        if (targetNanos < nowNanos) {
                            throw new IllegalArgumentException("the clock cannot go back");
                        }
                        clock.advanceTime(Duration.ofNanos(targetNanos - nowNanos));
                        nowNanos = targetNanos;
                        for (int c = 0; c < generators.length; c++) {
                            generators[c].onPeriodicEmit(outputs[c]);
                        }
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
