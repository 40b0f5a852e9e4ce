package wmviz.flinksql;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.types.logical.LogicalType;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * A replay's input rows read against the table's columns (test tooling): each value becomes the
 * Java object Flink's converters take for the column's type, or a RowError naming the line and
 * column. Timestamps are `YYYY-MM-DD HH:MM:SS[.fff]` text; a TIMESTAMP_LTZ column also takes epoch
 * milliseconds, and its text is read in the session time zone.
 */
final class WmvizRows {

    private WmvizRows() {}

    /** A bad input line: its 1-based line and the column (key) at fault. */
    static final class RowError extends Exception {
        final int line;
        final String column;

        RowError(int line, String column, String message) {
            super(message);
            this.line = line;
            this.column = column;
        }
    }

    /** The row's values as the Java objects its physical columns hold. */
    static Map<String, Object> values(ResolvedSchema schema, JsonNode row, int line, ZoneId zone) throws RowError {
        Map<String, Object> values = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> fields = row.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> field = fields.next();
            Column column = schema.getColumn(field.getKey()).orElse(null);
            if (column == null || !column.isPhysical()) {
                throw new RowError(line, field.getKey(), column == null
                        ? "no such column"
                        : "a computed or metadata column cannot be given");
            }
            values.put(field.getKey(), convert(column.getDataType().getLogicalType(), field.getValue(), line, field.getKey(), zone));
        }
        return values;
    }

    private static final DateTimeFormatter TEXT = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss[.SSS][.SS][.S]");

    private static Object convert(LogicalType type, JsonNode value, int line, String column, ZoneId zone) throws RowError {
        if (value.isNull()) {
            return null;
        }
        try {
            switch (type.getTypeRoot()) {
                case CHAR:
                case VARCHAR:
                    if (!value.isTextual()) {
                        throw new RowError(line, column, "expected text for " + type);
                    }
                    return value.asText();
                case BOOLEAN:
                    if (!value.isBoolean()) {
                        throw new RowError(line, column, "expected true or false");
                    }
                    return value.asBoolean();
                case TINYINT:
                    return (byte) integral(value, line, column);
                case SMALLINT:
                    return (short) integral(value, line, column);
                case INTEGER:
                    return (int) integral(value, line, column);
                case BIGINT:
                    return integral(value, line, column);
                case FLOAT:
                    return (float) number(value, line, column);
                case DOUBLE:
                    return number(value, line, column);
                case DECIMAL:
                    return new BigDecimal(value.asText());
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                    return LocalDateTime.parse(text(value, line, column), TEXT);
                case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                    if (value.isNumber()) {
                        return Instant.ofEpochMilli(value.asLong());
                    }
                    return LocalDateTime.parse(text(value, line, column), TEXT).atZone(zone).toInstant();
                case DATE:
                    return LocalDate.parse(text(value, line, column));
                case TIME_WITHOUT_TIME_ZONE:
                    return LocalTime.parse(text(value, line, column));
                default:
                    throw new RowError(line, column, "columns of type " + type + " are not supported by the oracle");
            }
        } catch (DateTimeParseException | NumberFormatException e) {
            throw new RowError(line, column, "cannot read " + value + " as " + type + " (timestamps: YYYY-MM-DD HH:MM:SS[.fff])");
        }
    }

    private static String text(JsonNode value, int line, String column) throws RowError {
        if (!value.isTextual()) {
            throw new RowError(line, column, "expected a YYYY-MM-DD HH:MM:SS[.fff] text");
        }
        return value.asText();
    }

    private static long integral(JsonNode value, int line, String column) throws RowError {
        if (!value.isIntegralNumber()) {
            throw new RowError(line, column, "expected a whole number");
        }
        return value.asLong();
    }

    private static double number(JsonNode value, int line, String column) throws RowError {
        if (!value.isNumber()) {
            throw new RowError(line, column, "expected a number");
        }
        return value.asDouble();
    }
}
