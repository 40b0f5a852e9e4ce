/*
 * The JDK's own java.util.HashMap<Long, Integer>, driven by a line protocol, so wmviz's
 * JavaLongMap (wmviz/core/java/hashmap.py) can be compared with the real iteration order: Flink's heap
 * state backend keeps every MapState in such a map, and the released interval join iterates it.
 *
 *   N        a new, empty map (new HashMap<>(), as HeapMapState makes one)
 *   P <k>    put(k, 0)
 *   R <k>    remove k through an entry-set iterator (as the interval join removes expired rows)
 *   O        reply with the keys in iteration order, space-separated (the only command that replies)
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

public final class WmvizHashMapHarness {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        HashMap<Long, Integer> map = new HashMap<>();
        StringBuilder reply = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            char op = line.charAt(0);
            if (op == 'N') {
                map = new HashMap<>();
            } else if (op == 'P') {
                map.put(Long.parseLong(line.substring(2)), 0);
            } else if (op == 'R') {
                long key = Long.parseLong(line.substring(2));
                Iterator<Map.Entry<Long, Integer>> it = map.entrySet().iterator();
                while (it.hasNext()) {
                    if (it.next().getKey() == key) {
                        it.remove();
                        break;
                    }
                }
            } else if (op == 'O') {
                reply.setLength(0);
                for (Long key : map.keySet()) {
                    if (reply.length() > 0) {
                        reply.append(' ');
                    }
                    reply.append(key);
                }
                out.println(reply);
            } else {
                throw new IllegalArgumentException("bad command: " + line);
            }
        }
        out.flush();
    }
}
