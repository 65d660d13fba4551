"""The network guard refuses non-local addresses (tested without sending any packet)."""

from __future__ import annotations

import socket

import pytest

from course_utils import netguard


@pytest.fixture
def guard(monkeypatch, tmp_path):
    calls = []
    netguard.install()
    # Replace the real connect so that even a broken guard could send nothing anywhere.
    real_connect = netguard._ORIGINAL["connect"]
    netguard._ORIGINAL["connect"] = lambda sock, addr: calls.append(addr)
    monkeypatch.setenv("COURSE_NETGUARD_LOG", str(tmp_path / "log"))
    yield calls
    netguard._ORIGINAL["connect"] = real_connect
    netguard.uninstall()


def test_refuses_remote_connect_and_logs(guard, tmp_path) -> None:
    with socket.socket() as sock:
        with pytest.raises(netguard.NetworkBlockedError, match="offline"):
            sock.connect(("203.0.113.7", 80))
    assert guard == [] and "203.0.113.7" in (tmp_path / "log").read_text()


def test_allows_loopback(guard) -> None:
    with socket.socket() as sock:
        sock.connect(("127.0.0.1", 9))
    assert guard == [("127.0.0.1", 9)]


def test_refuses_lookup_of_remote_names(guard) -> None:
    with pytest.raises(netguard.NetworkBlockedError):
        socket.getaddrinfo("example.invalid", 80)


def test_uninstall_restores() -> None:
    original = socket.socket.connect
    netguard.install()
    assert socket.socket.connect is not original and netguard.installed()
    netguard.uninstall()
    assert socket.socket.connect is original and not netguard.installed()
