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
    n = len(NAMES)
    for size in (java.presized_table_size(n), java.grown_table_size(n), java.concurrent_table_size(n)):
        assert java.iteration_order(NAMES, size) == JAVA_ORDER


def test_table_sizes_follow_each_constructors_resize_rule():
    # HashMap by puts: resize once size > 0.75 * table; HashSet(collection): tableSizeFor(n / 0.75 + 1);
    # ConcurrentHashMap (Properties): resize once size >= 0.75 * table
    assert [java.grown_table_size(n) for n in (0, 12, 13, 24, 25)] == [16, 16, 32, 32, 64]
    assert [java.presized_table_size(n) for n in (0, 11, 12, 24, 25)] == [16, 16, 32, 64, 64]
    assert [java.concurrent_table_size(n) for n in (0, 11, 12, 23, 24)] == [16, 16, 32, 32, 64]
