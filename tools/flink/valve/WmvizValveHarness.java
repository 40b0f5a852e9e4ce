/*
 * wmviz differential-test harness around the REAL Flink StatusWatermarkValve.
 *
 * It lives in Flink's package only so that it may read the valve's protected per-channel state
 * (getSubpartitionStatus and the protected fields of SubpartitionStatus). The two private fields
 * holding the valve's last output are read with reflection. No Flink code is copied here: the
 * harness only drives the class from the flink-dist jar and reports what it observes.
 *
 * Trace mode (no arguments): line protocol over stdin/stdout. Every command line produces exactly
 * one output line, so the caller can pair requests and replies without framing.
 *
 *   N <channels>          start a fresh valve
 *   W <channel> <long>    inputWatermark(new Watermark(long), channel, out)
 *   S <channel> IDLE      inputWatermarkStatus(WatermarkStatus.IDLE, channel, out)
 *   S <channel> ACTIVE    inputWatermarkStatus(WatermarkStatus.ACTIVE, channel, out)
 *
 * Reply:  <emissions>|<lastWm> <lastStatus>|<wm>,<I|A>,<0|1> <wm>,<I|A>,<0|1> ...
 *   emissions: space separated, in emission order: W<long>, S:IDLE, S:ACTIVE (empty if none);
 *   then the valve's last output watermark and status, then every channel's watermark,
 *   status (I = idle, A = active) and aligned flag. Watermarks are plain decimal longs.
 * If the valve throws, the reply is "E <exception class>: <message>" and the trace goes on.
 *
 * Bench mode:  bench <file> [warmupRounds] [timedRounds]
 *   The file is big-endian: int channels, int count, then count int channels, count bytes of
 *   kind (0 = watermark, 1 = IDLE, 2 = ACTIVE), count longs of values. Everything is read into
 *   primitive arrays before timing; each round feeds all inputs into a fresh valve and only that
 *   loop is timed. Prints one line of key=value pairs.
 */
package org.apache.flink.streaming.runtime.watermarkstatus;

import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.io.PushingAsyncDataInput.DataOutput;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;

public final class WmvizValveHarness {

    private static final Field LAST_WATERMARK;
    private static final Field LAST_STATUS;

    static {
        try {
            // Private in Flink: reflection is the only way to observe the valve's output state.
            LAST_WATERMARK = StatusWatermarkValve.class.getDeclaredField("lastOutputWatermark");
            LAST_STATUS = StatusWatermarkValve.class.getDeclaredField("lastOutputWatermarkStatus");
            LAST_WATERMARK.setAccessible(true);
            LAST_STATUS.setAccessible(true);
        } catch (NoSuchFieldException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Records emissions as protocol tokens; anything but watermarks and statuses is a surprise. */
    private static final class RecordingOutput implements DataOutput<Object> {
        final StringBuilder tokens = new StringBuilder();

        private void add(String token) {
            if (tokens.length() > 0) {
                tokens.append(' ');
            }
            tokens.append(token);
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

    /** Counts emissions and keeps a checksum, so the JIT cannot discard the benchmark's work. */
    private static final class CountingOutput implements DataOutput<Object> {
        long watermarks;
        long statuses;
        long lastWatermark = Long.MIN_VALUE;

        @Override
        public void emitWatermark(Watermark watermark) {
            watermarks++;
            lastWatermark = watermark.getTimestamp();
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus status) {
            statuses++;
        }

        @Override
        public void emitRecord(StreamRecord<Object> record) {}

        @Override
        public void emitLatencyMarker(LatencyMarker latencyMarker) {}

        @Override
        public void emitRecordAttributes(RecordAttributes recordAttributes) {}

        @Override
        public void emitWatermark(WatermarkEvent watermark) {}
    }

    private WmvizValveHarness() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("bench")) {
            int warmup = args.length >= 3 ? Integer.parseInt(args[2]) : 5;
            int rounds = args.length >= 4 ? Integer.parseInt(args[3]) : 5;
            bench(args[1], warmup, rounds);
        } else if (args.length == 0) {
            traces();
        } else {
            System.err.println("usage: WmvizValveHarness [bench <file> [warmup] [rounds]]");
            System.exit(2);
        }
    }

    // ---- trace mode -----------------------------------------------------------------------------

    private static void traces() throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        PrintWriter out =
                new PrintWriter(
                        new BufferedWriter(
                                new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16));
        StatusWatermarkValve valve = null;
        int channels = 0;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split(" ");
            RecordingOutput output = new RecordingOutput();
            try {
                switch (parts[0]) {
                    case "N":
                        channels = Integer.parseInt(parts[1]);
                        valve = new StatusWatermarkValve(channels);
                        break;
                    case "W":
                        valve.inputWatermark(
                                new Watermark(Long.parseLong(parts[2])),
                                Integer.parseInt(parts[1]),
                                output);
                        break;
                    case "S":
                        valve.inputWatermarkStatus(
                                parseStatus(parts[2]), Integer.parseInt(parts[1]), output);
                        break;
                    default:
                        throw new IllegalArgumentException("unknown command: " + line);
                }
                out.println(output.tokens + "|" + describe(valve, channels));
            } catch (Exception e) {
                // Keep going: one bad step must not cost the remaining traces of this JVM run.
                out.println("E " + e.getClass().getName() + ": " + e.getMessage());
            }
        }
        out.flush();
    }

    private static WatermarkStatus parseStatus(String name) {
        switch (name) {
            case "IDLE":
                return WatermarkStatus.IDLE;
            case "ACTIVE":
                return WatermarkStatus.ACTIVE;
            default:
                throw new IllegalArgumentException("unknown status: " + name);
        }
    }

    private static String describe(StatusWatermarkValve valve, int channels) throws Exception {
        StringBuilder sb = new StringBuilder();
        WatermarkStatus last = (WatermarkStatus) LAST_STATUS.get(valve);
        sb.append(LAST_WATERMARK.getLong(valve)).append(' ').append(last.isIdle() ? "IDLE" : "ACTIVE");
        sb.append('|');
        for (int c = 0; c < channels; c++) {
            StatusWatermarkValve.SubpartitionStatus s = valve.getSubpartitionStatus(c);
            if (c > 0) {
                sb.append(' ');
            }
            sb.append(s.watermark)
                    .append(',')
                    .append(s.watermarkStatus.isIdle() ? 'I' : 'A')
                    .append(',')
                    .append(s.isWatermarkAligned ? '1' : '0');
        }
        return sb.toString();
    }

    // ---- bench mode -----------------------------------------------------------------------------

    private static void bench(String file, int warmup, int rounds) throws Exception {
        ByteBuffer buf = ByteBuffer.wrap(Files.readAllBytes(Paths.get(file)));
        int channels = buf.getInt();
        int count = buf.getInt();
        int[] chans = new int[count];
        byte[] kinds = new byte[count];
        long[] values = new long[count];
        buf.asIntBuffer().get(chans);
        buf.position(buf.position() + 4 * count);
        buf.get(kinds);
        buf.asLongBuffer().get(values);

        for (int r = 0; r < warmup; r++) {
            runOnce(channels, chans, kinds, values);
        }
        long[] times = new long[rounds];
        CountingOutput last = null;
        for (int r = 0; r < rounds; r++) {
            CountingOutput output = new CountingOutput();
            StatusWatermarkValve valve = new StatusWatermarkValve(channels);
            long t0 = System.nanoTime();
            feed(valve, output, chans, kinds, values);
            times[r] = System.nanoTime() - t0;
            last = output;
        }
        Arrays.sort(times);
        long best = times[0];
        long median = times[rounds / 2];
        System.out.println(
                "bench inputs=" + count
                        + " channels=" + channels
                        + " warmup=" + warmup
                        + " rounds=" + rounds
                        + " best_ns=" + best
                        + " median_ns=" + median
                        + " best_rate=" + (count * 1e9 / best)
                        + " median_rate=" + (count * 1e9 / median)
                        + " watermarks=" + last.watermarks
                        + " statuses=" + last.statuses
                        + " last_wm=" + last.lastWatermark
                        + " java=" + System.getProperty("java.version"));
    }

    private static void runOnce(int channels, int[] chans, byte[] kinds, long[] values)
            throws Exception {
        feed(new StatusWatermarkValve(channels), new CountingOutput(), chans, kinds, values);
    }

    private static void feed(
            StatusWatermarkValve valve,
            CountingOutput output,
            int[] chans,
            byte[] kinds,
            long[] values)
            throws Exception {
        for (int i = 0; i < chans.length; i++) {
            switch (kinds[i]) {
                case 0:
                    // A Watermark object per input, as the network stack deserialises one per event.
                    valve.inputWatermark(new Watermark(values[i]), chans[i], output);
                    break;
                case 1:
                    valve.inputWatermarkStatus(WatermarkStatus.IDLE, chans[i], output);
                    break;
                default:
                    valve.inputWatermarkStatus(WatermarkStatus.ACTIVE, chans[i], output);
                    break;
            }
        }
    }
}
