/*
 * wmviz differential-test harness around the REAL generator a SQL WATERMARK becomes when it is
 * pushed into a source (Flink 2.3.0, flink-table-runtime): GeneratedWatermarkGeneratorSupplier's
 * DefaultWatermarkGenerator with scan.watermark.emit.strategy on-event or on-periodic, inside
 * WatermarksWithIdleness (what `withIdleness(scan.watermark.idle-timeout)` adds) on a ManualClock,
 * writing into WatermarkToDataOutput, the FLIP-27 source output. The generated expression is
 * stood in for by `ts - delay` over a one-column row. The protocol is WmvizIdlenessHarness's, with
 * the emit strategy added to N. No Flink code is copied here.
 *
 *   N <channels> <delay> <timeout> <on-event|on-periodic>   fresh generators (and a clock at 0)
 *   R <channel> <event time>       onEvent on that channel's generator
 *   P <time ms>                    the clock moves to <time>; onPeriodicEmit on every channel
 * Reply: space-separated emissions in order, each <channel>:W<long>, <channel>:S:IDLE or
 * <channel>:S:ACTIVE (empty if none); "ok" for N; "E <exception>" if Flink threw.
 */

import org.apache.flink.api.common.eventtime.WatermarksWithIdleness;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.streaming.api.operators.source.WatermarkToDataOutput;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.io.PushingAsyncDataInput.DataOutput;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.generated.GeneratedWatermarkGeneratorSupplier;
import org.apache.flink.table.runtime.generated.WatermarkGenerator;
import org.apache.flink.table.watermark.WatermarkEmitStrategy;
import org.apache.flink.util.clock.ManualClock;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

public final class WmvizSqlSourceHarness {

    /** Stand-in for the generated expression: the row's BIGINT minus a delay. */
    private static final class Minus extends WatermarkGenerator {
        private final long delay;

        Minus(long delay) {
            this.delay = delay;
        }

        @Override
        public long extractTimestamp(RowData row) {
            return row.getLong(0);
        }

        @Override
        public Long currentWatermark(RowData row) {
            return row.getLong(0) - delay;
        }
    }

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
        WatermarksWithIdleness<RowData>[] generators = null;
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
                        long delay = Long.parseLong(f[2]);
                        WatermarkEmitStrategy strategy =
                                f[4].equals("on-event") ? WatermarkEmitStrategy.ON_EVENT : WatermarkEmitStrategy.ON_PERIODIC;
                        Duration timeout = Duration.ofMillis(Long.parseLong(f[3]));
                        clock = new ManualClock();
                        nowNanos = 0;
                        @SuppressWarnings("unchecked")
                        WatermarksWithIdleness<RowData>[] made = new WatermarksWithIdleness[channels];
                        generators = made;
                        outputs = new WatermarkToDataOutput[channels];
                        for (int c = 0; c < channels; c++) {
                            generators[c] =
                                    new WatermarksWithIdleness<>(
                                            new GeneratedWatermarkGeneratorSupplier.DefaultWatermarkGenerator(
                                                    new Minus(delay), strategy),
                                            timeout,
                                            clock);
                            outputs[c] = new WatermarkToDataOutput(new Recording(c, reply));
                        }
                        reply.append("ok");
                        break;
                    }
                    case "R": {
                        int c = Integer.parseInt(f[1]);
                        long ts = Long.parseLong(f[2]);
                        generators[c].onEvent(GenericRowData.of(ts), ts, outputs[c]);
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
