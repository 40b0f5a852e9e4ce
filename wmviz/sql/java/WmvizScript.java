package wmviz.flinksql;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.internal.TableEnvironmentInternal;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ContextResolvedTable;
import org.apache.flink.table.catalog.ObjectIdentifier;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.WatermarkSpec;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.abilities.SupportsSourceWatermark;
import org.apache.flink.table.connector.source.abilities.SupportsWatermarkPushDown;
import org.apache.flink.table.factories.DynamicTableFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.operations.ModifyOperation;
import org.apache.flink.table.operations.Operation;
import org.apache.flink.table.operations.QueryOperation;
import org.apache.flink.table.operations.StatementSetOperation;
import org.apache.flink.table.operations.command.SetOperation;
import org.apache.flink.table.operations.ddl.CreateTableOperation;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A SQL script run statement by statement into a table environment (wmviz.flinksql), as Flink's
 * SQL client runs a file: statements are split where Flink's own SQL lexer finds a semicolon,
 * each is parsed and validated by Flink's planner, SETs change the session's configuration, DDL
 * creates tables and views, and the INSERTs are kept to be planned together as one statement set.
 *
 * <p>A CREATE TABLE whose connector Flink cannot load here (or, for a replay, every table) is
 * created with the stand-in connector instead ({@link WmvizStandIn}), the user's connector kept
 * as the option {@code wmviz.original-connector}; everything else in the table stays as written.
 */
final class WmvizScript {

    /** A statement error at a position of the user's script (1-based line and column). */
    static final class ScriptError extends Exception {
        final int line;
        final int column;

        ScriptError(int line, int column, String message) {
            super(message);
            this.line = line;
            this.column = column;
        }
    }

    static final ObjectMapper JSON = new ObjectMapper();

    final TableEnvironmentInternal env;
    final List<ModifyOperation> inserts = new ArrayList<>();
    final List<int[]> insertPositions = new ArrayList<>();
    final ArrayNode config = JSON.createArrayNode();
    final ArrayNode tables = JSON.createArrayNode();
    final ArrayNode hints = JSON.createArrayNode();
    final Map<String, String> originals = new HashMap<>();
    private final boolean replaceEveryConnector;

    /** Run `text` into a fresh streaming table environment; `replay` puts a stand-in under every table. */
    WmvizScript(String text, boolean replay) throws ScriptError {
        this(text, replay, new Configuration());
    }

    /** The same, the environment (and the MiniCluster a replay runs on) started with `configuration`. */
    WmvizScript(String text, boolean replay, Configuration configuration) throws ScriptError {
        EnvironmentSettings settings =
                EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(configuration).build();
        this.env = (TableEnvironmentInternal) TableEnvironment.create(settings);
        this.replaceEveryConnector = replay;
        for (WmvizTokens.Statement statement : WmvizTokens.split(env, text, hints)) {
            run(statement);
        }
        if (inserts.isEmpty()) {
            int[] end = WmvizTokens.endOf(text);
            throw new ScriptError(end[0], end[1], "the script has no INSERT INTO … SELECT …: nothing to plan");
        }
    }

    /**
     * Number the next plan's nodes from 1 again. Flink numbers ExecNodes from one counter per JVM;
     * a script planned (or run) in a fresh JVM starts at 1, and so does every script here, so the
     * ids of a plan and of the running job's operator names (`WatermarkAssigner[3]`) agree.
     */
    void resetNodeIds() {
        try {
            env.getParser()
                    .getClass()
                    .getClassLoader()
                    .loadClass("org.apache.flink.table.planner.plan.nodes.exec.ExecNodeContext")
                    .getMethod("resetIdCounter")
                    .invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Flink's ExecNode id counter is not where Flink 2.3.0 keeps it", e);
        }
    }

    private void run(WmvizTokens.Statement statement) throws ScriptError {
        List<Operation> operations;
        try {
            operations = env.getParser().parse(statement.text);
        } catch (Throwable t) {
            throw statement.error(t);
        }
        for (Operation operation : operations) {
            try {
                apply(operation, statement);
            } catch (ScriptError e) {
                throw e;
            } catch (Throwable t) {
                throw statement.error(t);
            }
        }
    }

    private void apply(Operation operation, WmvizTokens.Statement statement) throws ScriptError {
        if (operation instanceof SetOperation) {
            SetOperation set = (SetOperation) operation;
            if (set.getKey().isPresent() && set.getValue().isPresent()) {
                ObjectNode entry = config.addObject();
                entry.put("key", set.getKey().get());
                entry.put("value", set.getValue().get());
                entry.put("line", statement.line);
                env.getConfig().getConfiguration().setString(set.getKey().get(), set.getValue().get());
            }
        } else if (operation instanceof CreateTableOperation) {
            createTable((CreateTableOperation) operation, statement);
        } else if (operation instanceof StatementSetOperation) {
            for (ModifyOperation insert : ((StatementSetOperation) operation).getOperations()) {
                inserts.add(insert);
                insertPositions.add(new int[] {statement.line, statement.column});
            }
        } else if (operation instanceof ModifyOperation) {
            inserts.add((ModifyOperation) operation);
            insertPositions.add(new int[] {statement.line, statement.column});
        } else if (operation instanceof QueryOperation) {
            throw new ScriptError(
                    statement.line,
                    statement.column,
                    "a query alone has nowhere to go: write it as INSERT INTO <table> SELECT …");
        } else {
            env.executeInternal(operation);
        }
    }

    /** Create the table as written, under the stand-in if its connector cannot be loaded here. */
    private void createTable(CreateTableOperation create, WmvizTokens.Statement statement) {
        ResolvedCatalogTable table = create.getCatalogTable();
        Map<String, String> written = table.getOptions();
        String connector = written.get(FactoryUtil.CONNECTOR.key());
        boolean standIn = connector != null && (replaceEveryConnector || !loadable(connector));
        ResolvedCatalogTable created = table;
        if (standIn) {
            Map<String, String> options = new LinkedHashMap<>(written);
            options.put(FactoryUtil.CONNECTOR.key(), WmvizStandIn.IDENTIFIER);
            options.put(WmvizStandIn.ORIGINAL, connector);
            created = table.copy(options);
            originals.put(create.getTableIdentifier().getObjectName(), connector);
        }
        env.executeInternal(
                new CreateTableOperation(
                        create.getTableIdentifier(), created, create.isIgnoreIfExists(), create.isTemporary()));
        tables.add(describe(create.getTableIdentifier(), written, standIn, statement));
    }

    private boolean loadable(String connector) {
        try {
            FactoryUtil.discoverFactory(
                    Thread.currentThread().getContextClassLoader(), DynamicTableFactory.class, connector);
            return true;
        } catch (Throwable t) {
            return false;
        }
    }

    private ObjectNode describe(
            ObjectIdentifier id, Map<String, String> written, boolean standIn, WmvizTokens.Statement statement) {
        ContextResolvedTable resolved = env.getCatalogManager().getTable(id).get();
        ResolvedSchema schema = resolved.getResolvedSchema();
        ObjectNode node = JSON.createObjectNode();
        node.put("name", id.getObjectName());
        node.put("identifier", id.asSummaryString());
        node.put("line", statement.line);
        node.put("column", statement.column);
        node.put("temporary", resolved.isTemporary());
        String connector = written.get(FactoryUtil.CONNECTOR.key());
        node.put("connector", connector);
        node.put("stand_in", standIn);
        node.put("known_connector", !standIn || WmvizStandIn.Ability.of(connector) != WmvizStandIn.Ability.NONE);
        ObjectNode options = node.putObject("options");
        written.forEach(options::put);
        ArrayNode columns = node.putArray("columns");
        for (Column column : schema.getColumns()) {
            ObjectNode c = columns.addObject();
            c.put("name", column.getName());
            c.put("type", column.getDataType().getLogicalType().asSerializableString());
            if (column instanceof Column.ComputedColumn) {
                c.put("kind", "computed");
                c.put("expression", ((Column.ComputedColumn) column).getExpression().asSerializableString());
            } else if (column instanceof Column.MetadataColumn) {
                c.put("kind", "metadata");
                c.put("metadata_key", ((Column.MetadataColumn) column).getMetadataKey().orElse(column.getName()));
            } else {
                c.put("kind", "physical");
            }
        }
        List<WatermarkSpec> specs = schema.getWatermarkSpecs();
        if (specs.isEmpty()) {
            node.putNull("watermark");
        } else {
            ObjectNode w = node.putObject("watermark");
            w.put("rowtime", specs.get(0).getRowtimeAttribute());
            w.put("expression", specs.get(0).getWatermarkExpression().asSerializableString());
        }
        ArrayNode key = node.putArray("primary_key");
        schema.getPrimaryKey().ifPresent(pk -> pk.getColumns().forEach(key::add));
        abilities(node, id, resolved);
        return node;
    }

    /** Ask the source the table's connector creates (stand-in or real) what it can do. */
    private void abilities(ObjectNode node, ObjectIdentifier id, ContextResolvedTable resolved) {
        try {
            DynamicTableSource source =
                    FactoryUtil.createDynamicTableSource(
                            null,
                            id,
                            resolved.getResolvedTable(),
                            Collections.emptyMap(),
                            env.getConfig(),
                            Thread.currentThread().getContextClassLoader(),
                            resolved.isTemporary());
            node.put("source", true);
            node.put("pushes_down_watermark", source instanceof SupportsWatermarkPushDown);
            node.put("supports_source_watermark", source instanceof SupportsSourceWatermark);
        } catch (Throwable t) {
            // A sink-only connector (print, blackhole) cannot be read: it is no source.
            node.put("source", false);
            node.putNull("pushes_down_watermark");
            node.putNull("supports_source_watermark");
        }
    }
}
