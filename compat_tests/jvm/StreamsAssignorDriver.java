import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentConfigsImpl;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberMetadataAndStateImpl;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;

/**
 * Runs Kafka's own streams StickyTaskAssignor on cases read from stdin, one a line, and prints each member's
 * active and standby tasks, so that compat_tests/test_streams_assignor_placement.py can compare pykbroker's
 * assignor with it member by member.
 *
 * A case: {@code standbys<TAB>topology<TAB>member<TAB>member...}; topology {@code sub:tasks:stateful(0|1),...};
 * member {@code id;process;active;standby;offsets} with tasks {@code sub-partition,...} and offsets
 * {@code sub-partition=offset,...}. Members go into the group's HashMap in the order given, as the
 * coordinator's TargetAssignmentBuilder puts them. The answer: {@code id;active;standby} per member, tab
 * separated, members and tasks sorted.
 */
public class StreamsAssignorDriver {

    private static Map<String, Set<Integer>> tasks(String text) {
        Map<String, Set<Integer>> out = new HashMap<>();
        if (text.isEmpty()) return out;
        for (String task : text.split(",")) {
            String[] sp = task.split("-");
            out.computeIfAbsent(sp[0], k -> new HashSet<>()).add(Integer.parseInt(sp[1]));
        }
        return out;
    }

    private static Map<String, Map<Integer, Long>> offsets(String text) {
        Map<String, Map<Integer, Long>> out = new HashMap<>();
        if (text.isEmpty()) return out;
        for (String entry : text.split(",")) {
            String[] kv = entry.split("=");
            String[] sp = kv[0].split("-");
            out.computeIfAbsent(sp[0], k -> new HashMap<>()).put(Integer.parseInt(sp[1]), Long.parseLong(kv[1]));
        }
        return out;
    }

    private static String show(Map<String, Set<Integer>> tasks) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, Set<Integer>> e : new TreeMap<>(tasks).entrySet()) {
            for (int p : new TreeSet<>(e.getValue())) out.add(e.getKey() + "-" + p);
        }
        return String.join(",", out);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StickyTaskAssignor assignor = new StickyTaskAssignor();
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            int standbys = Integer.parseInt(fields[0]);
            List<String> subtopologies = new ArrayList<>();
            Map<String, Integer> partitions = new HashMap<>();
            Set<String> stateful = new HashSet<>();
            for (String sub : fields[1].split(",")) {
                String[] parts = sub.split(":");
                subtopologies.add(parts[0]);
                partitions.put(parts[0], Integer.parseInt(parts[1]));
                if (parts[2].equals("1")) stateful.add(parts[0]);
            }
            Map<String, MemberMetadataAndStateImpl> members = new HashMap<>();
            for (int i = 2; i < fields.length; i++) {
                String[] m = fields[i].split(";", -1);
                members.put(m[0], new MemberMetadataAndStateImpl(Optional.empty(), Optional.empty(), m[1], Map.of(),
                    tasks(m[2]), tasks(m[3]), Map.of(), offsets(m[4]), Map.of()));
            }
            TopologyDescriber topology = new TopologyDescriber() {
                public List<String> subtopologies() { return subtopologies; }
                public int maxNumInputPartitions(String s) { return partitions.get(s); }
                public boolean isStateful(String s) { return stateful.contains(s); }
            };
            GroupAssignment result = assignor.assign(
                new GroupSpecImpl(members, new AssignmentConfigsImpl(standbys, List.of())), topology);
            List<String> out = new ArrayList<>();
            for (Map.Entry<String, MemberAssignment> e : new TreeMap<>(result.members()).entrySet()) {
                out.add(e.getKey() + ";" + show(e.getValue().activeTasks()) + ";" + show(e.getValue().standbyTasks()));
            }
            System.out.println(String.join("\t", out));
        }
    }
}
