"""The acknowledgement stream every lab's client loop feeds (labs/infra/acks.py)."""

import threading
import time

from labs.infra.acks import AckStream


def test_waiting_for_the_first_acknowledgement_says_why_none_came():
    # As every lab's client loop is awaited; a plain thread stands in for the SSH reader.
    arriving = AckStream("true")
    arriving.thread = threading.Thread(target=lambda: (time.sleep(0.3),
                                                       arriving.acks.append((1, 0.3))))
    arriving.thread.start()
    assert arriving.wait_for_first(timeout_s=10) is None and arriving.acked == 1

    ended = AckStream("true", ended="loop ended (exit 1)")
    ended.thread = threading.Thread(target=lambda: None)
    ended.thread.start()
    ended.thread.join()
    assert ended.wait_for_first(timeout_s=10) == "loop ended (exit 1)"

    silent = AckStream("true")
    silent.thread = threading.Thread(target=lambda: time.sleep(2))
    silent.thread.start()
    assert silent.wait_for_first(timeout_s=0.3) == "no answer within 0.3 s"
