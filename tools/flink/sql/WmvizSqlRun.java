package wmviz.flinksql;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.catalog.ObjectIdentifier;
import org.apache.flink.table.catalog.ResolvedSchema;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The replay oracle (test tooling): run a SQL script for real on given rows, one line at a time.
 *
 * <p>Stdin: {"script": TEXT, "lines": [...the rows file's lines, each with its file "line"...],
 * "partitions": {TABLE: COUNT}, "rest_port": INT|null}. Stdout: one JSON object, {"events": [...],
 * "timing_ms": {...}, "rest_plan": ..., "rest_job": ...} or {"error": {"line", "column",
 * "message", "where": "script" | "rows" | "job"}}. Or stdin {"batch": [REQUEST, ...]} and stdout
 * {"answers": [ANSWER, ...]}: the requests run one after the other in this JVM, each on its own
 * MiniCluster with the feed and the metrics emptied before it, so a run answers exactly as it does
 * alone while the JVM's start and the planner's first (cold) planning are paid once.
 *
 * <p>Every table of the script gets the stand-in connector; the job runs on a MiniCluster in this
 * JVM at parallelism 1, the stand-in sources fed from {@link WmvizFeed}. After each input line the
 * driver waits until the job is quiescent: every kept metric (records in and out of every
 * operator, every watermark gauge, every late-drop counter) and the sinks' row count unchanged
 * for a settle window longer than twice the periodic watermark interval and the alignment update
 * interval, every task thread of the job waiting on its mailbox throughout that window, and the
 * row taken by its reader (or, with alignment, unchanged for a longer window: its split may be
 * paused). Why that is deterministic: at parallelism 1 with a buffer timeout of 0 every record and
 * watermark is flushed downstream as soon as it is produced, so once the metrics stop moving and
 * no task is working nothing is in flight; the only things that can still happen without a new
 * line are processing-time timers (periodic watermark emission and the WatermarkAssigner's
 * timer, both shorter than the settle window, and idle timeouts, which the rows' wall time never
 * reaches when the run is shorter than the timeout). Processing time is wall time here, so a line
 * with "proc_ms" is refused.
 */
public final class WmvizSqlRun {

    private WmvizSqlRun() {}

    private static final Pattern NODE_ID = Pattern.compile("\\[(\\d+)\\]");
    /** A task's own thread: "name (1/1)#0" (see taskMainThreads). */
    private static final Pattern TASK_THREAD = Pattern.compile(".*\\(\\d+/\\d+\\)#\\d+");

    public static void main(String[] args) throws Exception {
        PrintStream out = System.out;
        System.setOut(System.err);
        JsonNode input = WmvizScript.JSON.readTree(System.in.readAllBytes());
        ObjectNode result;
        if (input.has("batch")) {
            result = WmvizScript.JSON.createObjectNode();
            ArrayNode answers = result.putArray("answers");
            for (JsonNode request : input.get("batch")) {
                WmvizFeed.reset();
                WmvizMetrics.reset();
                answers.add(answer(request));
            }
        } else {
            result = answer(input);
        }
        out.println(WmvizScript.JSON.writeValueAsString(result));
        out.flush();
        System.exit(0);
    }

    /** One request's answer: its events, or the error naming where its input is wrong. */
    private static ObjectNode answer(JsonNode request) throws Exception {
        ObjectNode result;
        try {
            result = new WmvizSqlRun.Run(request).run();
        } catch (WmvizScript.ScriptError e) {
            result = WmvizSqlPlanner.error(e.line, e.column, e.getMessage());
            ((ObjectNode) result.get("error")).put("where", "script");
        } catch (WmvizRows.RowError e) {
            result = WmvizSqlPlanner.error(e.line, 0, e.getMessage());
            ((ObjectNode) result.get("error")).put("where", "rows");
            ((ObjectNode) result.get("error")).put("column", e.column);
        } catch (JobFailed e) {
            result = WmvizSqlPlanner.error(e.line, 0, e.getMessage());
            ((ObjectNode) result.get("error")).put("where", "job");
        }
        return result;
    }

    /** The job failed while the line at file line `line` was carried through it (0: at start). */
    static final class JobFailed extends Exception {
        final int line;

        JobFailed(int line, String message) {
            super(message);
            this.line = line;
        }
    }

    private static final class Run {
        private final JsonNode input;
        private final ArrayNode events = WmvizScript.JSON.createArrayNode();
        private final Map<String, Long> last = new HashMap<>();
        private final Map<String, Integer> nodeOfTable = new HashMap<>();
        private WmvizScript script;
        private final List<Integer> numbers = new ArrayList<>();
        private List<Thread> tasksAtStart = new ArrayList<>();
        private Integer lostAt;  // the file line after which a task thread was first seen gone
        private java.util.concurrent.CompletableFuture<org.apache.flink.api.common.JobExecutionResult> result;
        private long settleMs;
        private long alignmentMs;  // read once from the tables: needed() asks on every poll
        private long busyPolls;  // polls with every metric still but a task thread working
        private static ThreadGroup taskThreadGroup;  // Flink's, static in Task: one per JVM

        Run(JsonNode input) {
            this.input = input;
        }

        ObjectNode run() throws Exception {
            Configuration conf = new Configuration();
            conf.set(CoreOptions.DEFAULT_PARALLELISM, 1);
            conf.set(ExecutionOptions.BUFFER_TIMEOUT, Duration.ZERO);
            conf.setString("metrics.reporter.wmviz.factory.class", WmvizMetrics.Factory.class.getName());
            JsonNode restPort = input.get("rest_port");
            if (restPort != null && !restPort.isNull()) {
                conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
                conf.set(RestOptions.ADDRESS, "127.0.0.1");
                conf.set(RestOptions.BIND_PORT, restPort.asText());
            }
            long started = System.currentTimeMillis();
            script = new WmvizScript(input.get("script").asText(), true, conf);
            ZoneId zone = script.env.getConfig().getLocalTimeZone();
            WmvizFeed.zone(zone);
            long interval = script.env.getConfig().get(PipelineOptions.AUTO_WATERMARK_INTERVAL).toMillis();
            alignmentMs = alignmentInterval();
            settleMs = Math.max(150, Math.max(interval, alignmentMs) * 2 + 100);
            List<Object[]> lines = readLines(zone);
            mapSourcesToNodes();
            script.resetNodeIds();
            List<Thread> earlier = taskMainThreads();  // a batch's earlier runs', maybe still ending
            TableResult tableResult = script.env.executeInternal(script.inserts);
            JobClient job = tableResult.getJobClient().get();
            result = job.getJobExecutionResult();
            awaitRunning(job);
            quiesce();
            long running = System.currentTimeMillis();
            record(-1);  // the state before any line: not reported, only remembered
            events.removeAll();
            tasksAtStart = taskMainThreads();
            tasksAtStart.removeAll(earlier);
            for (int step = 0; step < lines.size(); step++) {
                Object[] line = lines.get(step);
                WmvizFeed.step(step);
                if (line != null) {
                    WmvizFeed.offer((String) line[0], (Integer) line[1], cast(line[2]));
                    quiesce();
                    noteALostTask(numbers.get(step));
                    failedOnce(numbers.get(step));
                }
                record(step);
            }
            ObjectNode answer = WmvizScript.JSON.createObjectNode();
            if (restPort != null && !restPort.isNull()) {
                String base = "http://127.0.0.1:" + restPort.asText() + "/jobs/" + job.getJobID();
                answer.set("rest_plan", WmvizScript.JSON.readTree(get(base + "/plan")));
                answer.set("rest_job", WmvizScript.JSON.readTree(get(base)));
            }
            long fed = System.currentTimeMillis();
            WmvizFeed.step(lines.size());
            WmvizFeed.finish();
            try {
                result.get(120, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                int end = numbers.isEmpty() ? 1 : numbers.get(numbers.size() - 1) + 1;
                throw new JobFailed(lostAt != null ? lostAt : end, rootMessage(e));
            }
            record(lines.size());
            answer.set("events", events);
            ObjectNode timing = answer.putObject("timing_ms");
            timing.put("settle", settleMs);
            timing.put("busy_polls", busyPolls);
            timing.put("plan_and_start", running - started);
            timing.put("lines", fed - running);
            timing.put("per_line", lines.isEmpty() ? 0 : (fed - running) / lines.size());
            timing.put("end", System.currentTimeMillis() - fed);
            return answer;
        }

        /**
         * The longest watermark-alignment update interval of the script's tables (0 without
         * alignment): pausing and resuming splits happens on that period, so the settle window
         * must outlast it too. (An alignment set only by an OPTIONS hint is not seen here.)
         */
        private long alignmentInterval() {
            long longest = 0;
            for (JsonNode t : script.tables) {
                JsonNode options = t.get("options");
                if (options.has("scan.watermark.alignment.group")) {
                    JsonNode every = options.get("scan.watermark.alignment.update-interval");
                    longest = Math.max(longest, every == null ? 1000
                            : org.apache.flink.util.TimeUtils.parseDuration(every.asText()).toMillis());
                }
            }
            return longest;
        }

        @SuppressWarnings("unchecked")
        private static Map<String, Object> cast(Object row) {
            return (Map<String, Object>) row;
        }

        /**
         * Each line as {table, partition, values} (null for a partition count); every table's
         * partitions declared to the feed (the counts come computed by wmviz.sql.rows; a table no
         * line names has 1).
         */
        private List<Object[]> readLines(ZoneId zone) throws WmvizRows.RowError {
            List<Object[]> lines = new ArrayList<>();
            for (JsonNode line : input.get("lines")) {
                int number = line.get("line").asInt();
                numbers.add(number);
                String table = line.get("table").asText();
                ResolvedSchema schema = schemaOf(table, number);
                if (line.has("partitions")) {
                    lines.add(null);
                    continue;
                }
                int partition = line.get("partition").asInt();
                lines.add(new Object[] {table, partition, WmvizRows.values(schema, line.get("row"), number, zone)});
            }
            JsonNode counts = input.get("partitions");
            for (ObjectIdentifier id : tableIds()) {
                String table = id.getObjectName();
                WmvizFeed.declare(table, counts.has(table) ? counts.get(table).asInt() : 1);
            }
            return lines;
        }

        private List<ObjectIdentifier> tableIds() {
            List<ObjectIdentifier> ids = new ArrayList<>();
            for (JsonNode t : script.tables) {
                String[] parts = t.get("identifier").asText().split("\\.", 3);
                ids.add(ObjectIdentifier.of(parts[0], parts[1], parts[2]));
            }
            return ids;
        }

        private ResolvedSchema schemaOf(String table, int line) throws WmvizRows.RowError {
            for (ObjectIdentifier id : tableIds()) {
                if (id.getObjectName().equals(table)) {
                    return script.env.getCatalogManager().getTable(id).get().getResolvedSchema();
                }
            }
            throw new WmvizRows.RowError(line, "table", "the script declares no table " + table);
        }

        /** Each source table's scan node in the compiled plan (its operator name carries no id). */
        private void mapSourcesToNodes() throws Exception {
            script.resetNodeIds();
            JsonNode plan = WmvizScript.JSON.readTree(script.env.compilePlan(script.inserts).asJsonString());
            for (JsonNode node : plan.get("nodes")) {
                JsonNode scan = node.path("scanTableSource").path("table").path("identifier");
                if (!scan.isMissingNode()) {
                    nodeOfTable.put(scan.asText().replace("`", ""), node.get("id").asInt());
                }
            }
        }

        private Integer nodeOf(String operator) {
            Matcher m = NODE_ID.matcher(operator);
            if (m.find()) {
                return Integer.valueOf(m.group(1));
            }
            for (Map.Entry<String, Integer> e : nodeOfTable.entrySet()) {
                if (operator.endsWith(e.getKey())) {
                    return e.getValue();
                }
            }
            return null;
        }

        /**
         * Remember the first line after which a task's own thread is no longer alive: a task that
         * fails on a line ends its thread while the line is carried, but the job's result says so
         * only once the job master has heard and cancelled the rest. Beside a CPU hog that took
         * longer than the settle window, and a job failing on its only line was reported failed
         * at the end of input. A task that ends otherwise before the input does (a table's source
         * cannot: each is the stand-in, which ends only with the feed; a query's own VALUES could)
         * costs one wait of failedOnce's.
         */
        private void noteALostTask(int line) {
            if (lostAt == null && tasksAtStart.stream().anyMatch(t -> !t.isAlive())) {
                lostAt = line;
            }
        }

        /**
         * With a task gone, wait for the job's result rather than feed it more lines (each would
         * wait out the quiescence timeout: its row is never read): a JobFailed at the lost line. A
         * job still running after that long lost a task for another reason: go on.
         */
        private void failedOnce(int line) throws JobFailed {
            if (lostAt != null && !result.isDone()) {
                try {
                    result.get(120, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    // failed: said below, at lostAt
                } catch (java.util.concurrent.TimeoutException e) {
                    failed(line);  // ended just now: said at lostAt; else still running: fed on
                    lostAt = null;
                    tasksAtStart.removeIf(t -> !t.isAlive());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new JobFailed(line, "interrupted");
                }
            }
            failed(line);
        }

        /**
         * Each task's own thread ("name (1/1)#0"), not the threads a task starts in its group
         * ("Time Trigger for ...", "Canceler for ...") nor a legacy source's ("Legacy Source
         * Thread - ..."), which end on their own.
         */
        private static List<Thread> taskMainThreads() {
            ThreadGroup tasks = taskThreads();
            List<Thread> found = new ArrayList<>();
            if (tasks == null) {
                return found;
            }
            Thread[] threads = new Thread[tasks.activeCount() * 2 + 8];
            int count = tasks.enumerate(threads, true);
            for (int i = 0; i < count; i++) {
                String name = threads[i].getName();
                if (TASK_THREAD.matcher(name).matches() && !name.contains(" for ")
                        && !name.startsWith("Legacy Source Thread")) {
                    found.add(threads[i]);
                }
            }
            return found;
        }

        /** A JobFailed if the job ended (its local MiniCluster is gone then: ask its result). */
        private void failed(int step) throws JobFailed {
            if (!result.isDone()) {
                return;
            }
            int line = lostAt != null ? lostAt : step;
            try {
                result.get();
                throw new JobFailed(line, "Flink's job ended before the end of input");
            } catch (java.util.concurrent.ExecutionException e) {
                throw new JobFailed(line, "Flink's job failed: " + rootMessage(e));
            } catch (InterruptedException e) {
                throw new JobFailed(step, "interrupted");
            }
        }

        private static String rootMessage(Throwable t) {
            Throwable root = t;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            return root.getClass().getSimpleName() + ": " + root.getMessage();
        }

        /** Until the job runs and every split of every table it reads has its output. */
        private void awaitRunning(JobClient job) throws Exception {
            int splits = 0;
            for (JsonNode t : script.tables) {
                if (nodeOfTable.containsKey(t.get("identifier").asText())) {
                    splits += WmvizFeed.partitions(t.get("name").asText());
                }
            }
            long deadline = System.currentTimeMillis() + 120_000;
            while (true) {
                failed(0);
                if (job.getJobStatus().get() == JobStatus.RUNNING && WmvizFeed.announcedSplits() >= splits) {
                    return;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the job did not start within 120 s");
                }
                Thread.sleep(20);
            }
        }

        /** Wait until nothing moves (see the class comment). */
        private void quiesce() throws InterruptedException {
            Map<String, Long> before = snapshot();
            long stableSince = System.currentTimeMillis();
            long deadline = stableSince + 60_000;
            while (System.currentTimeMillis() < deadline) {
                Thread.sleep(10);
                Map<String, Long> now = snapshot();
                if (!now.equals(before)) {
                    before = now;
                    stableSince = System.currentTimeMillis();
                    continue;
                }
                if (aTaskIsWorking()) {
                    busyPolls++;
                    stableSince = System.currentTimeMillis();
                    continue;
                }
                if (System.currentTimeMillis() - stableSince >= needed(WmvizFeed.pending())) {
                    return;
                }
            }
        }

        /**
         * Whether a task thread of the job is running rather than waiting for its mailbox. Metrics
         * alone missed work in flight: on a loaded machine the first row's trip through a network
         * exchange (the serializers' and the downstream operator's first use) moved no metric for
         * longer than the settle window, and a row-time deduplication's output for step 0 was
         * reported at step 1. A task with nothing to do parks on its mailbox (WAITING or
         * TIMED_WAITING); a task thread seen RUNNABLE or BLOCKED is still carrying something.
         */
        private static boolean aTaskIsWorking() {
            ThreadGroup tasks = taskThreads();
            if (tasks == null) {
                return false;  // no task has started yet: the metrics say all there is
            }
            Thread[] threads = new Thread[tasks.activeCount() * 2 + 8];
            int count = tasks.enumerate(threads, true);
            for (int i = 0; i < count; i++) {
                Thread.State state = threads[i].getState();
                if (state == Thread.State.RUNNABLE || state == Thread.State.BLOCKED) {
                    return true;
                }
            }
            return false;
        }

        /** Flink's group of task threads (Task's "Flink Task Threads"), once a task has made it. */
        private static ThreadGroup taskThreads() {
            if (taskThreadGroup == null) {
                ThreadGroup root = Thread.currentThread().getThreadGroup();
                while (root.getParent() != null) {
                    root = root.getParent();
                }
                ThreadGroup[] groups = new ThreadGroup[root.activeGroupCount() * 2 + 8];
                int count = root.enumerate(groups, true);
                for (int i = 0; i < count; i++) {
                    if (groups[i].getName().equals("Flink Task Threads")) {
                        taskThreadGroup = groups[i];
                    }
                }
            }
            return taskThreadGroup;
        }

        /**
         * How long nothing may move before the job counts as quiescent. With the fed row still in
         * its queue, the job is not done with it: only a split paused by watermark alignment keeps
         * a row there for good, so without alignment the driver waits for the reader to take it
         * (a reader on a busy machine took longer than 1.5 s, and the step's watermark was then
         * reported a step late); with alignment a row left for 1.5 s is read as a paused split.
         */
        private long needed(long pending) {
            if (pending == 0) {
                return settleMs;
            }
            return alignmentMs > 0 ? Math.max(settleMs, 1500) : Long.MAX_VALUE;
        }

        private Map<String, Long> snapshot() {
            Map<String, Long> values = new HashMap<>();
            for (Map.Entry<String, WmvizMetrics.Entry> e : WmvizMetrics.entries().entrySet()) {
                values.put(e.getKey(), e.getValue().value());
            }
            values.put("feed|pending", WmvizFeed.pending());
            values.put("feed|sink-rows", WmvizFeed.sinkRowCount());
            return values;
        }

        /** Report what changed since the last step: sink rows, late drops, watermarks. */
        private void record(int step) {
            List<Map<String, Object>> rows = WmvizFeed.drainSinkRows();
            rows.sort((a, b) -> ((String) a.get("sink")).compareTo((String) b.get("sink")));
            for (Map<String, Object> row : rows) {
                events.add(WmvizScript.JSON.valueToTree(row));
            }
            for (Map.Entry<String, WmvizMetrics.Entry> e : WmvizMetrics.entries().entrySet()) {
                WmvizMetrics.Entry m = e.getValue();
                Long value = m.value();
                Long previous = last.put(e.getKey(), value);
                if (value == null || value.equals(previous)) {
                    continue;
                }
                if (WmvizMetrics.isLateDrops(m.name)) {
                    long delta = value - (previous == null ? 0 : previous);
                    if (delta != 0) {
                        ObjectNode drop = events.addObject();
                        drop.put("step", step);
                        drop.put("metric", m.name);
                        drop.put("operator", m.operator);
                        drop.put("delta", delta);
                    }
                } else if (isOutputWatermark(m) && value != Long.MIN_VALUE) {
                    ObjectNode wm = events.addObject();
                    wm.put("step", step);
                    wm.put("operator", m.operator);
                    Integer node = nodeOf(m.operator);
                    if (node == null) {
                        wm.putNull("node");
                    } else {
                        wm.put("node", node);
                    }
                    if (m.split != null) {
                        wm.put("split", m.split);
                    }
                    wm.put("watermark", value);
                }
            }
        }

        private static boolean isOutputWatermark(WmvizMetrics.Entry m) {
            return m.name.equals("currentOutputWatermark") || m.split != null && m.name.equals("currentWatermark");
        }

        private static String get(String url) throws Exception {
            HttpResponse<String> response =
                    HttpClient.newHttpClient()
                            .send(HttpRequest.newBuilder(URI.create(url)).GET().build(), HttpResponse.BodyHandlers.ofString());
            return response.body();
        }
    }
}
