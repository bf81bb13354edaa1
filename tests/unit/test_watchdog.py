"""placement.db.watchdog: a watched socket is shut down once its deadline
passes, unless it was disarmed first; deadlines nest to the sooner."""
import socket
import time

import pytest

from placement.db import watchdog


@pytest.fixture
def pair():
    ours, peer = socket.socketpair()
    yield ours, peer
    ours.close()
    peer.close()


def test_a_socket_held_past_its_deadline_is_cut(pair):
    ours, _peer = pair
    ours.settimeout(5)
    started = time.monotonic()
    watchdog.WATCHDOG.arm(ours.fileno(), started + 0.2)
    # A read that would wait for ever ends when the watchdog cuts it.
    assert ours.recv(1) == b''
    assert 0.15 < time.monotonic() - started < 2


def test_a_disarmed_socket_is_left_alone(pair):
    ours, peer = pair
    token = watchdog.WATCHDOG.arm(ours.fileno(), time.monotonic() + 0.1)
    watchdog.WATCHDOG.disarm(token)
    time.sleep(0.3)
    peer.sendall(b'x')
    ours.settimeout(2)
    assert ours.recv(1) == b'x'


def test_the_socket_armed_is_cut_even_if_its_number_was_reused(pair):
    ours, peer = pair
    number = ours.fileno()
    watchdog.WATCHDOG.arm(number, time.monotonic() + 0.2)
    # The driver closes its descriptor; the number goes to another socket.
    ours.close()
    other, other_peer = socket.socketpair()
    try:
        time.sleep(0.4)
        other_peer.sendall(b'y')
        other.settimeout(2)
        assert other.recv(1) == b'y'
        # The connection armed was cut: its peer sees the end of it.
        peer.settimeout(2)
        assert peer.recv(1) == b''
    finally:
        other.close()
        other_peer.close()


def test_deadlines_nest_to_the_sooner():
    assert watchdog.remaining() == float('inf')
    with watchdog.deadline(10):
        assert 9 < watchdog.remaining() <= 10
        with watchdog.deadline(60):
            assert watchdog.remaining() <= 10
        with watchdog.deadline(1):
            assert watchdog.remaining() <= 1
        # 0: no deadline of its own, the enclosing one holds.
        with watchdog.deadline(0):
            assert watchdog.remaining() <= 10
    assert watchdog.remaining() == float('inf')
