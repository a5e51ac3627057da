import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The oracle of tests/wire/test_java_concurrent_hash_map.py: reads one op a line ("+key" put, "-key" remove,
 * "=" print the keys in iteration order, tab-separated, "/" start a new map) into a ConcurrentHashMap.
 */
public class HashOrders {
    public static void main(String[] args) throws Exception {
        Map<String, Boolean> map = new ConcurrentHashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.startsWith("+")) {
                map.put(line.substring(1), true);
            } else if (line.startsWith("-")) {
                map.remove(line.substring(1));
            } else if (line.equals("=")) {
                out.append(String.join("\t", map.keySet())).append('\n');
            } else if (line.equals("/")) {
                map = new ConcurrentHashMap<>();
            }
        }
        System.out.print(out);
    }
}
