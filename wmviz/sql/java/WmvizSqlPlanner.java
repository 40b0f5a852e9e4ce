package wmviz.flinksql;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.api.config.OptimizerConfigOptions;
import org.apache.flink.table.api.config.TableConfigOptions;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.operations.ModifyOperation;
import org.apache.flink.table.operations.Operation;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * `java … wmviz.flinksql.WmvizSqlPlanner`: plan SQL scripts with Flink's own planner. Stdin is a
 * JSON array of script texts; stdout is one JSON array, per script {"plan_json", "explain",
 * "tables", "config", "hints", "defaults", "session"} or {"error": {"line", "column", "message"}}
 * (wmviz.sql.planner reads it; nothing else is printed there). Flink's logging goes to stderr.
 */
public final class WmvizSqlPlanner {

    private WmvizSqlPlanner() {}

    /** The options whose defaults the plan reader needs to say "default" (Flink's own ConfigOptions). */
    static final List<ConfigOption<?>> WATERMARK_OPTIONS =
            List.of(
                    ExecutionConfigOptions.TABLE_EXEC_SOURCE_IDLE_TIMEOUT,
                    PipelineOptions.AUTO_WATERMARK_INTERVAL,
                    TableConfigOptions.LOCAL_TIME_ZONE,
                    ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ENABLED,
                    ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ALLOW_LATENCY,
                    ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_SIZE,
                    OptimizerConfigOptions.TABLE_OPTIMIZER_AGG_PHASE_STRATEGY,
                    FactoryUtil.SOURCE_IDLE_TIMEOUT,
                    FactoryUtil.WATERMARK_EMIT_STRATEGY,
                    FactoryUtil.WATERMARK_ALIGNMENT_GROUP,
                    FactoryUtil.WATERMARK_ALIGNMENT_MAX_DRIFT,
                    FactoryUtil.WATERMARK_ALIGNMENT_UPDATE_INTERVAL);

    public static void main(String[] args) throws Exception {
        PrintStream out = System.out;
        System.setOut(System.err);  // whatever Flink prints, stdout carries the one JSON answer
        JsonNode scripts = WmvizScript.JSON.readTree(System.in.readAllBytes());
        ArrayNode answers = WmvizScript.JSON.createArrayNode();
        for (JsonNode script : scripts) {
            answers.add(answer(script.asText()));
        }
        out.println(WmvizScript.JSON.writeValueAsString(answers));
        out.flush();
        System.exit(0);
    }

    /** One script's plan, or its error; each script in a fresh table environment. */
    static ObjectNode answer(String text) {
        try {
            return plan(text);
        } catch (WmvizScript.ScriptError e) {
            return error(e.line, e.column, e.getMessage());
        } catch (Throwable t) {
            t.printStackTrace();
            return error(0, 0, "Flink's planner failed: " + t);
        }
    }

    static ObjectNode error(int line, int column, String message) {
        ObjectNode result = WmvizScript.JSON.createObjectNode();
        ObjectNode e = result.putObject("error");
        e.put("line", line);
        e.put("column", column);
        e.put("message", message);
        return result;
    }

    static ObjectNode plan(String text) throws Exception {
        WmvizScript script = new WmvizScript(text, false);
        String planJson = compile(script, script.inserts);
        List<Operation> operations = new ArrayList<>(script.inserts);
        String explain = script.env.explainInternal(operations);
        ObjectNode result = WmvizScript.JSON.createObjectNode();
        result.put("plan_json", restoreConnectors(planJson));
        result.put("explain", explain);
        result.set("tables", script.tables);
        result.set("config", script.config);
        result.set("hints", script.hints);
        ObjectNode defaults = result.putObject("defaults");
        ObjectNode session = result.putObject("session");
        for (ConfigOption<?> option : WATERMARK_OPTIONS) {
            put(defaults, option.key(), option.hasDefaultValue() ? option.defaultValue() : null);
            boolean table = option.key().startsWith("scan.");
            put(session, option.key(), table ? null : script.env.getConfig().get(option));
        }
        return result;
    }

    /**
     * COMPILE PLAN of every INSERT together; a planning error is placed at the INSERT that causes
     * it (each is planned alone to find it), at the first INSERT if none does alone.
     */
    static String compile(WmvizScript script, List<ModifyOperation> inserts) throws WmvizScript.ScriptError {
        try {
            script.resetNodeIds();
            return script.env.compilePlan(inserts).asJsonString();
        } catch (Throwable together) {
            for (int i = 0; i < inserts.size(); i++) {
                try {
                    script.resetNodeIds();
                    script.env.compilePlan(Collections.singletonList(inserts.get(i)));
                } catch (Throwable alone) {
                    int[] at = script.insertPositions.get(i);
                    throw new WmvizTokens.Statement("", at[0], at[1]).error(alone);
                }
            }
            int[] at = script.insertPositions.get(0);
            throw new WmvizTokens.Statement("", at[0], at[1]).error(together);
        }
    }

    /**
     * The plan JSON as if the user's connectors had planned it: wherever a table's options name
     * the stand-in, the original connector is put back and the stand-in's marker removed.
     */
    static String restoreConnectors(String planJson) throws Exception {
        JsonNode root = WmvizScript.JSON.readTree(planJson);
        restore(root);
        return WmvizScript.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(root);
    }

    private static void restore(JsonNode node) {
        if (node.isObject()) {
            ObjectNode object = (ObjectNode) node;
            JsonNode original = object.get(WmvizStandIn.ORIGINAL);
            if (original != null && WmvizStandIn.IDENTIFIER.equals(object.path("connector").asText())) {
                object.put("connector", original.asText());
                object.remove(WmvizStandIn.ORIGINAL);
            }
            Iterator<Map.Entry<String, JsonNode>> fields = object.fields();
            while (fields.hasNext()) {
                restore(fields.next().getValue());
            }
        } else if (node.isArray()) {
            for (JsonNode item : node) {
                restore(item);
            }
        }
    }

    private static void put(ObjectNode node, String key, Object value) {
        if (value == null) {
            node.putNull(key);
        } else if (value instanceof Duration) {
            node.put(key, ((Duration) value).toMillis());
        } else if (value instanceof Boolean) {
            node.put(key, (Boolean) value);
        } else if (value instanceof Number) {
            node.put(key, ((Number) value).longValue());
        } else if (value instanceof Enum) {
            node.put(key, ((Enum<?>) value).name().toLowerCase().replace('_', '-'));
        } else {
            node.put(key, value.toString());
        }
    }
}
