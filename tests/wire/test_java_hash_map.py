"""java.util.HashSet's iteration order, as Java 17 (the JVM of the Kafka judging pykbroker) gives it."""

import itertools

from wire.java import JavaHashSet, hash_set_capacity, hash_set_order, string_hash

# 16 strings of one String.hashCode ("Aa" and "BB" hash alike), in the order Java 17's HashSet iterates them after
# adding them sorted: the 9th in one bucket doubles the 16-bucket table (too small to hold a tree), the 10th
# doubles it again, the 11th turns the bucket into a red-black tree, whose root iterates first and every later
# entry right after its tree parent.
COLLIDING = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=4)]
JAVA_17_ORDER = ["AaAaBBBB", "AaAaAaAa", "AaAaAaBB", "AaAaBBAa", "AaBBAaAa", "AaBBAaBB", "AaBBBBAa", "AaBBBBBB",
                 "BBAaAaAa", "BBAaAaBB", "BBAaBBAa", "BBAaBBBB", "BBBBAaAa", "BBBBAaBB", "BBBBBBAa", "BBBBBBBB"]


def test_a_bucket_of_colliding_names_becomes_a_tree_after_two_resizes():
    assert len({string_hash(s) for s in COLLIDING}) == 1
    assert hash_set_order(COLLIDING) == JAVA_17_ORDER
    assert hash_set_order(COLLIDING, hash_set_capacity(len(COLLIDING))) == JAVA_17_ORDER


def test_resizes_and_the_collection_constructor_sizes():
    assert [hash_set_capacity(n) for n in (0, 11, 12, 24, 25, 100)] == [16, 16, 32, 64, 64, 256]
    s = JavaHashSet()
    for i in range(13):  # the 13th add doubles 16 buckets to 32, splitting each bucket in order
        s.add(f"k{i}")
    assert len(s) == 13 and sorted(s) == sorted(f"k{i}" for i in range(13))
    assert not s.add("k3") and len(s) == 13
    assert list(s) == hash_set_order([f"k{i}" for i in range(13)], 32)
