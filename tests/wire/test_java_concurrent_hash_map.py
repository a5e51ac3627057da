"""wire.java.JavaConcurrentHashMap: a ConcurrentHashMap's iteration order after puts and removes, against orders
Java 17 printed, and against Java itself (java_orders/HashOrders.java) for random histories of colliding keys, in a
ConcurrentHashMap and in a java.util.Properties."""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from wire import java

# 16 keys of one String.hashCode ("Aa" and "BB" hash alike), put sorted: the 9th asks tryPresize(32), which takes
# the 16-bucket table to 128; the 10th makes the bucket a tree, each later key iterating first.
SAME_HASH = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=4)]
JAVA_17_SAME_HASH = ["BBBBBBBB", "BBBBBBAa", "BBBBAaBB", "BBBBAaAa", "BBAaBBBB", "BBAaBBAa", "AaAaAaAa", "AaAaAaBB",
                     "AaAaBBAa", "AaAaBBBB", "AaBBAaAa", "AaBBAaBB", "AaBBBBAa", "AaBBBBBB", "BBAaAaAa", "BBAaAaBB"]
# ... then the first 6 removed (the tree is big enough to stay one) and the first 3 put again, in front.
JAVA_17_AFTER_REMOVES = ["AaAaBBAa", "AaAaAaBB", "AaAaAaAa", "BBBBBBBB", "BBBBBBAa", "BBBBAaBB", "BBBBAaAa",
                         "BBAaBBBB", "BBAaBBAa", "AaBBBBAa", "AaBBBBBB", "BBAaAaAa", "BBAaAaBB"]
# 12 keys: the table doubles at the 12th (a HashMap waits for the 13th), and the keys of one old bucket that
# precede its last run bound for one half come out reversed.
TWELVE = [f"diff-sub-{i}" for i in range(12)]
JAVA_17_TWELVE = ["diff-sub-7", "diff-sub-8", "diff-sub-5", "diff-sub-6", "diff-sub-9", "diff-sub-11", "diff-sub-0",
                  "diff-sub-10", "diff-sub-3", "diff-sub-4", "diff-sub-1", "diff-sub-2"]


def _replay(ops: list[str]) -> java.JavaConcurrentHashMap:
    m = java.JavaConcurrentHashMap()
    for op in ops:
        (m.put if op[0] == "+" else m.remove)(op[1:])
    return m


def test_orders_java_17_printed():
    assert list(_replay([f"+{k}" for k in SAME_HASH])) == JAVA_17_SAME_HASH
    assert list(_replay([f"+{k}" for k in SAME_HASH] + [f"-{k}" for k in SAME_HASH[:6]] +
                        [f"+{k}" for k in SAME_HASH[:3]])) == JAVA_17_AFTER_REMOVES
    twelve = _replay([f"+{k}" for k in TWELVE])
    assert list(twelve) == JAVA_17_TWELVE != java.hash_set_order(TWELVE)
    assert java.concurrent_hash_map_order(TWELVE) == JAVA_17_TWELVE


def test_put_remove_and_membership():
    m = java.JavaConcurrentHashMap()
    assert m.put("a") and not m.put("a") and "a" in m and len(m) == 1
    assert m.remove("a") and not m.remove("a") and "a" not in m and len(m) == 0 and list(m) == []
    assert not m.remove("never") and 3 not in m


def _random_histories(rng: random.Random, count: int) -> list[list[str]]:
    same = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=7)]  # 128 keys of one hash
    pools = [same, [f"k{i}" for i in range(300)], same[:40] + [f"s{i}" for i in range(60)],
             [f"x{i}.{j}" for i in range(12) for j in range(12)]]
    histories = []
    for _ in range(count):
        pool = rng.choice(pools)[:rng.randint(9, 300)]
        remove_rate = rng.choice([0.0, 0.2, 0.5])
        ops = [("-" if rng.random() < remove_rate else "+") + rng.choice(pool) for _ in range(rng.randint(1, 400))]
        histories.append(ops)
    return histories


@pytest.mark.skipif(shutil.which("javac") is None, reason="javac is not installed: no Java to compare with")
def test_random_histories_iterate_as_javas_own():
    source = Path(__file__).parent / "java_orders" / "HashOrders.java"
    histories = _random_histories(random.Random(714), 60)
    # and a java.util.Properties, whose entries are a ConcurrentHashMap of the default 16 buckets (config synonyms)
    kinds = ["/"] * len(histories) + ["/p"] * 20
    histories += _random_histories(random.Random(1191), 20)
    text = "".join(kind + "\n" + "".join(op + "\n" for op in ops) + "=\n" for kind, ops in zip(kinds, histories, strict=True))
    printed = subprocess.run(["java", str(source)], input=text, capture_output=True,  # compiled and run at once
                             text=True, check=True, timeout=120).stdout.splitlines()
    for ops, expected in zip(histories, printed, strict=True):
        assert "\t".join(_replay(ops)) == expected, ops

