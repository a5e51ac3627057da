import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The oracle of tests/wire/test_java_concurrent_hash_map.py and test_java_hash_map.py: reads one op a line ("+key"
 * put, "-key" remove, "=" print the keys in iteration order, tab-separated) into a map that "/" starts: "/" a new
 * ConcurrentHashMap, "/p" a new Properties, "/hN" a new HashMap of initial capacity N.
 */
public class HashOrders {
    public static void main(String[] args) throws Exception {
        Map<Object, Object> map = new ConcurrentHashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.startsWith("+")) {
                map.put(line.substring(1), true);
            } else if (line.startsWith("-")) {
                map.remove(line.substring(1));
            } else if (line.equals("=")) {
                StringBuilder keys = new StringBuilder();
                for (Object key : map.keySet()) {
                    keys.append(keys.length() == 0 ? "" : "\t").append(key);
                }
                out.append(keys).append('\n');
            } else if (line.equals("/")) {
                map = new ConcurrentHashMap<>();
            } else if (line.equals("/p")) {
                map = new Properties();
            } else if (line.startsWith("/h")) {
                map = new HashMap<>(Integer.parseInt(line.substring(2)));
            }
        }
        System.out.print(out);
    }
}
