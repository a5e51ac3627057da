import os

import pytest

from storage.errors import CorruptIndexError
from storage.transaction_index import AbortedTxn, TransactionIndex


def test_append_collect_truncate_and_reload(tmp_path):
    path = str(tmp_path / "0.txnindex")
    index = TransactionIndex(path, 0)
    assert not os.path.exists(path)  # created lazily
    index.append(AbortedTxn(1, 0, 10, 11))
    index.append(AbortedTxn(2, 5, 20, 21))
    index.append(AbortedTxn(3, 25, 30, 31))
    assert os.path.getsize(path) == 3 * 34
    found = index.collect_aborted_txns(11, 22)
    assert [t.producer_id for t in found.aborted_transactions] == [2]
    assert found.is_complete  # producer 2's last_stable_offset 21... then 31 >= 22
    with pytest.raises(ValueError):
        index.append(AbortedTxn(4, 0, 30, 40))
    index.truncate_to(20)
    assert [t.producer_id for t in index.entries] == [1]
    index.close()
    again = TransactionIndex(path, 0)
    assert again.entries == [AbortedTxn(1, 0, 10, 11)]
    again.sanity_check()
    again.close()


def test_torn_entry_is_corrupt(tmp_path):
    path = str(tmp_path / "0.txnindex")
    index = TransactionIndex(path, 0)
    index.append(AbortedTxn(1, 0, 10, 11))
    index.close()
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x01")
    broken = TransactionIndex(path, 0)
    with pytest.raises(CorruptIndexError):
        broken.sanity_check()
    broken.close()
