"""wire.java: String.hashCode and hash-table iteration orders, against values printed by Java 17 itself
(``"hello".hashCode()``, and the key order of a HashSet, HashMap and Properties of the same names)."""

from __future__ import annotations

from wire import java

NAMES = [f"name.{i}.x" for i in range(20)]
# new ArrayList<>(new HashSet<>(NAMES)); a HashMap and a Properties filled by puts iterate the same here
JAVA_ORDER = ("name.9.x,name.15.x,name.14.x,name.17.x,name.16.x,name.19.x,name.18.x,name.11.x,name.0.x,"
              "name.10.x,name.13.x,name.12.x,name.3.x,name.4.x,name.1.x,name.2.x,name.7.x,name.8.x,name.5.x,"
              "name.6.x").split(",")


def test_string_hash_is_javas_including_overflow_and_surrogate_pairs():
    assert java.string_hash("hello") == 99162322
    assert java.string_hash("polygenelubricants") == -(1 << 31)
    assert java.string_hash("\U0001F600") == 1772899
    assert java.string_hash("") == 0


def test_iteration_orders_are_javas():
    """new HashSet<>(NAMES), a HashMap and a Properties filled by puts."""
    assert java.hash_set_order(NAMES, java.hash_set_capacity(len(NAMES))) == JAVA_ORDER
    assert java.hash_set_order(NAMES) == JAVA_ORDER
    assert java.concurrent_hash_map_order(NAMES) == JAVA_ORDER


def test_hash_map_order_puts_at_a_buckets_tail_and_compute_if_absent_at_its_head():
    # what Java 17 printed for a HashMap filled by put, and for new HashMap<>(8) filled by computeIfAbsent of
    # the first map's values in its order (two of those share bucket 5: the later one comes first)
    members = ["gihufHJHJVFhiTV4Imv6Kp", "SuFA67eyLwl9lu9zphM6l9", "A4627PO6F0yP7WRNRfzBBe", "f_uhVJjMDfLzAa_sssq65j",
               "1dDDKRL82jBwMeIiSrOXcw", "FButJinpLTzDGYAQJ0bXm1", "n6TNnwUHMUDGJgmZ_9YuHX", "8QqqcUIHfzrLYYjik_Xe9m"]
    assert java.hash_map_order(members) == [members[i] for i in (6, 5, 1, 4, 3, 2, 0, 7)]
    processes = ["676b572d-1e89-be84-5379-14885f7951ed", "56749a9a-eeb9-39d4-6009-cc826cfc6783",
                 "20769e8f-92bd-4e33-928c-9aaf7270cee8", "e31bb83b-4676-e0cc-6f9f-fcaf07310bfa"]
    assert java.hash_map_order(processes, 8, compute_if_absent=True) == [processes[i] for i in (2, 1, 3, 0)]
    assert java.hash_map_order(processes, 8) == [processes[i] for i in (2, 1, 0, 3)]
    assert java.hash_map_order(NAMES) == JAVA_ORDER


def test_priority_queue_breaks_ties_as_javas_heap():
    # Java 17: new PriorityQueue<>(comparingInt(x -> x / 10)), these adds and polls
    q: java.PriorityQueue[int] = java.PriorityQueue(lambda a, b: a // 10 - b // 10)
    for x in (31, 12, 35, 17, 11, 33, 14, 19, 38, 15):
        q.offer(x)
    out = [q.poll() for _ in range(4)]
    q.offer(13)
    q.offer(32)
    while len(q):
        out.append(q.poll())
    assert out == [12, 15, 17, 19, 11, 14, 13, 33, 31, 38, 32, 35]
    assert q.poll() is None


def test_timeline_order_is_kafkas_timeline_hash_map():
    # Java 17, Kafka 4.4's TimelineHashMap: put a1 a2 b1 c1 c2 c3, remove a2, put b2 xx yy zz ww qq
    keys = ["a1", "b1", "c1", "c2", "c3", "b2", "xx", "yy", "zz", "ww", "qq"]
    assert java.timeline_table_size(11) == 16 and java.timeline_table_size(2) == 2
    assert java.timeline_order(keys, 16) == "yy,c1,xx,c3,ww,b2,c2,a1,qq,zz,b1".split(",")
    assert java.timeline_order(["a1", "a2", "b1"], java.timeline_table_size(3)) == ["a2", "a1", "b1"]
