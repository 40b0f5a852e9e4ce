package wmviz.flinksql;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.table.api.internal.TableEnvironmentInternal;

import java.io.Reader;
import java.io.StringReader;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

/**
 * A script cut into statements by Flink's own SQL lexer (wmviz.flinksql), as Flink's SQL client
 * does: the token manager of Flink's generated SQL parser, switched to the back-quoted identifier
 * state Flink parses in, finds the semicolons that end statements (one inside a string, a quoted
 * name or a comment is no token, so it splits nothing) and the table hints {@code /*+ OPTIONS(…) *}{@code /}.
 *
 * <p>The lexer lives inside the planner jar, behind the planner loader's class loader, so it is
 * reached by reflection through the loader of the planner's own parser class.
 */
final class WmvizTokens {

    private WmvizTokens() {}

    /** One statement: its text exactly as written and where it starts in the script. */
    static final class Statement {
        final String text;
        final int line;
        final int column;

        Statement(String text, int line, int column) {
            this.text = text;
            this.line = line;
            this.column = column;
        }

        /** A script position for a position inside this statement (both 1-based). */
        int[] toScript(int statementLine, int statementColumn) {
            return new int[] {
                line + statementLine - 1, statementLine == 1 ? column + statementColumn - 1 : statementColumn
            };
        }

        /**
         * The error Flink raised for this statement, at the script position of the parser's or
         * validator's own position (read from the exception objects, not from their text), or at
         * the statement's start when Flink gives none.
         */
        WmvizScript.ScriptError error(Throwable thrown) {
            for (Throwable t = thrown; t != null; t = t.getCause()) {
                int[] at = position(t);
                if (at != null) {
                    int[] script = toScript(at[0], at[1]);
                    return new WmvizScript.ScriptError(script[0], script[1], message(thrown, t));
                }
            }
            return new WmvizScript.ScriptError(line, column, message(thrown, null));
        }
    }

    /** Calcite's parse position (SqlParseException.getPos) or validation position, if `t` has one. */
    static int[] position(Throwable t) {
        try {
            Method pos = t.getClass().getMethod("getPos");
            Object p = pos.invoke(t);
            if (p != null) {
                int l = (Integer) p.getClass().getMethod("getLineNum").invoke(p);
                int c = (Integer) p.getClass().getMethod("getColumnNum").invoke(p);
                return l > 0 ? new int[] {l, c} : null;
            }
        } catch (ReflectiveOperationException | ClassCastException ignored) {
            // not a parse exception
        }
        try {
            int l = (Integer) t.getClass().getMethod("getPosLine").invoke(t);
            int c = (Integer) t.getClass().getMethod("getPosColumn").invoke(t);
            return l > 0 ? new int[] {l, c} : null;
        } catch (ReflectiveOperationException | ClassCastException ignored) {
            return null;
        }
    }

    /**
     * The message a person needs: for a positioned Calcite error, what it says without its own
     * (statement-relative) position; else Flink's message and, when it adds something, the root cause's.
     */
    static String message(Throwable top, Throwable positioned) {
        if (positioned != null) {
            if (positioned.getCause() != null && positioned.getCause().getMessage() != null
                    && positioned.getClass().getSimpleName().equals("CalciteContextException")) {
                return positioned.getCause().getMessage();
            }
            String text = String.valueOf(positioned.getMessage());
            String first = text.split("\n", 2)[0].trim();
            int at = first.lastIndexOf(" at line ");
            return at > 0 ? first.substring(0, at) : first;
        }
        String text = String.valueOf(top.getMessage());
        Throwable root = top;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        if (root != top && root.getMessage() != null && !text.contains(root.getMessage())) {
            text = text + "\n" + root.getMessage();
        }
        return text;
    }

    /** The line and column just after the script's last character. */
    static int[] endOf(String text) {
        String[] lines = text.split("\n", -1);
        return new int[] {lines.length, lines[lines.length - 1].length() + 1};
    }

    /** The script's statements; the table hints found on the way are added to `hints`. */
    static List<Statement> split(TableEnvironmentInternal env, String text, ArrayNode hints)
            throws WmvizScript.ScriptError {
        Lexer lexer = new Lexer(env.getParser().getClass().getClassLoader(), text);
        List<Statement> statements = new ArrayList<>();
        List<Object> tokens = new ArrayList<>();
        int[] lineStarts = lineStarts(text);
        while (true) {
            Object token = lexer.next();
            int kind = lexer.kind(token);
            if (kind == lexer.hintBegin) {
                hint(lexer, tokens, token, hints);
                continue;
            }
            if (kind == lexer.semicolon || kind == lexer.eof) {
                if (!tokens.isEmpty()) {
                    Object first = tokens.get(0);
                    Object last = tokens.get(tokens.size() - 1);
                    int from = lineStarts[lexer.beginLine(first) - 1] + lexer.beginColumn(first) - 1;
                    int to = lineStarts[lexer.endLine(last) - 1] + lexer.endColumn(last);
                    statements.add(new Statement(text.substring(from, to), lexer.beginLine(first), lexer.beginColumn(first)));
                }
                tokens.clear();
                if (kind == lexer.eof) {
                    return statements;
                }
                continue;
            }
            tokens.add(token);
        }
    }

    private static int[] lineStarts(String text) {
        List<Integer> starts = new ArrayList<>();
        starts.add(0);
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) == '\n') {
                starts.add(i + 1);
            }
        }
        int[] out = new int[starts.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = starts.get(i);
        }
        return out;
    }

    /**
     * Read one `/*+ NAME(…), … *}{@code /` hint; an OPTIONS hint right after a table name is
     * recorded with that name (as written, dotted parts joined) and the hint's script line.
     */
    private static void hint(Lexer lexer, List<Object> before, Object begin, ArrayNode hints)
            throws WmvizScript.ScriptError {
        String table = tableBefore(lexer, before);
        List<Object> body = new ArrayList<>();
        Object t = lexer.next();
        for (; lexer.kind(t) != lexer.commentEnd; t = lexer.next()) {
            if (lexer.kind(t) == lexer.eof) {
                throw new WmvizScript.ScriptError(
                        lexer.beginLine(begin), lexer.beginColumn(begin), "a hint /*+ is not closed by */");
            }
            body.add(t);
        }
        before.add(begin);
        before.addAll(body);
        before.add(t);
        for (int i = 0; i < body.size(); i++) {
            if (!lexer.image(body.get(i)).equalsIgnoreCase("OPTIONS") || table == null) {
                continue;
            }
            ObjectNode hint = hints.addObject();
            hint.put("table", table);
            hint.put("line", lexer.beginLine(body.get(i)));
            hint.put("column", lexer.beginColumn(body.get(i)));
            ObjectNode options = hint.putObject("options");
            int j = i + 2;  // past OPTIONS and its (
            while (j + 2 < body.size() && lexer.kind(body.get(j + 1)) == lexer.equals) {
                options.put(unquote(lexer.image(body.get(j))), unquote(lexer.image(body.get(j + 2))));
                j += lexer.kind(body.get(j + 3)) == lexer.comma ? 4 : 3;
            }
        }
    }

    /** The dotted name just before a hint, or null when the hint follows SELECT (a query hint). */
    private static String tableBefore(Lexer lexer, List<Object> before) {
        int i = before.size() - 1;
        if (i < 0 || lexer.kind(before.get(i)) == lexer.select) {
            return null;
        }
        StringBuilder name = new StringBuilder(unquote(lexer.image(before.get(i))));
        while (i >= 2 && lexer.kind(before.get(i - 1)) == lexer.dot) {
            name.insert(0, unquote(lexer.image(before.get(i - 2))) + ".");
            i -= 2;
        }
        return name.toString();
    }

    /** A string literal's or quoted name's value: quotes off, doubled quotes single. */
    static String unquote(String image) {
        if (image.length() >= 2) {
            char q = image.charAt(0);
            if ((q == '\'' || q == '`' || q == '"') && image.charAt(image.length() - 1) == q) {
                String doubled = String.valueOf(q) + q;
                return image.substring(1, image.length() - 1).replace(doubled, String.valueOf(q));
            }
        }
        return image;
    }

    /** Flink's generated SQL token manager, driven by reflection. */
    private static final class Lexer {
        final int eof;
        final int semicolon;
        final int hintBegin;
        final int commentEnd;
        final int select;
        final int dot;
        final int comma;
        final int equals;
        private final Object manager;
        private final Method nextToken;
        private final Class<?> tokenClass;

        Lexer(ClassLoader planner, String text) throws WmvizScript.ScriptError {
            try {
                String pkg = "org.apache.flink.sql.parser.impl.";
                Class<?> constants = planner.loadClass(pkg + "FlinkSqlParserImplConstants");
                eof = constants.getField("EOF").getInt(null);
                semicolon = constants.getField("SEMICOLON").getInt(null);
                hintBegin = constants.getField("HINT_BEG").getInt(null);
                commentEnd = constants.getField("COMMENT_END").getInt(null);
                select = constants.getField("SELECT").getInt(null);
                dot = constants.getField("DOT").getInt(null);
                comma = constants.getField("COMMA").getInt(null);
                equals = constants.getField("EQ").getInt(null);
                int backQuotedIdentifiers = constants.getField("BTID").getInt(null);
                Class<?> stream = planner.loadClass(pkg + "SimpleCharStream");
                Class<?> tokens = planner.loadClass(pkg + "FlinkSqlParserImplTokenManager");
                Constructor<?> streamOf = stream.getConstructor(Reader.class);
                // Flink's parser counts a tab as one column (Calcite sets a tab size of 1); the
                // lexer's stream would count 8, so a tab is read as a space: same columns.
                Object chars = streamOf.newInstance(new StringReader(text.replace('\t', ' ')));
                manager = tokens.getConstructor(stream).newInstance(chars);
                tokens.getMethod("SwitchTo", int.class).invoke(manager, backQuotedIdentifiers);
                nextToken = tokens.getMethod("getNextToken");
                tokenClass = planner.loadClass(pkg + "Token");
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("Flink's SQL lexer is not where Flink 2.3.0 keeps it: " + e, e);
            }
        }

        private int[] after = {1, 1};

        Object next() throws WmvizScript.ScriptError {
            try {
                Object token = nextToken.invoke(manager);
                after = new int[] {endLine(token), endColumn(token) + 1};
                return token;
            } catch (java.lang.reflect.InvocationTargetException e) {
                // A lexical error (an unclosed string, quoted name or comment, a stray character):
                // it starts after the last whole token.
                String message = String.valueOf(e.getCause().getMessage()).split("\n", 2)[0];
                int at = message.indexOf(". ");
                throw new WmvizScript.ScriptError(
                        after[0], after[1], "Flink's SQL lexer stopped here: " + (at > 0 ? message.substring(at + 2) : message));
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }

        private int field(Object token, String name) {
            try {
                return tokenClass.getField(name).getInt(token);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }

        int kind(Object token) {
            return field(token, "kind");
        }

        int beginLine(Object token) {
            return field(token, "beginLine");
        }

        int beginColumn(Object token) {
            return field(token, "beginColumn");
        }

        int endLine(Object token) {
            return field(token, "endLine");
        }

        int endColumn(Object token) {
            return field(token, "endColumn");
        }

        String image(Object token) {
            try {
                return String.valueOf(tokenClass.getField("image").get(token));
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
