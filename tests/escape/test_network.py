#!/usr/bin/env python3
"""No network when the policy denies it: not TCP, not UDP, not the host's abstract
unix sockets, not even the host's interfaces."""
import os
import socket
import sys
import threading
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402


class Listeners:
    """TCP, UDP and abstract unix listeners on the host, counting contacts."""

    def __init__(self):
        self.hits = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.abstract_name = "govex-escape-%s" % uuid.uuid4().hex
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.abstract_name)
        self.unix.listen(8)
        for s in (self.tcp, self.udp, self.unix):
            s.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop:
            for kind, s in (("tcp", self.tcp), ("unix", self.unix)):
                try:
                    c, _ = s.accept()
                    self.hits.append(kind)
                    c.close()
                except OSError:
                    pass
            try:
                data, addr = self.udp.recvfrom(64)
                self.hits.append("udp")
                self.udp.sendto(b"pong", addr)
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.thread.join(2)
        for s in (self.tcp, self.udp, self.unix):
            s.close()


def test_network_denied(t):
    e.need_restricted("network_deny")
    ls = Listeners()
    t.defer(ls.close)
    ops = [["tcp", "127.0.0.1", ls.tcp.getsockname()[1], {"as": "tcp"}],
           ["udp", "127.0.0.1", ls.udp.getsockname()[1], {"as": "udp"}],
           ["abstract", ls.abstract_name, {"as": "abstract"}],
           ["netdev", {"as": "netdev"}]]
    _, doc, res = e.run_probe(t, ops)
    e.denied(res, "tcp", "EAFNOSUPPORT")
    e.denied(res, "udp", "EAFNOSUPPORT")
    # no socket() of any family, AF_UNIX included (abstract names also live in the
    # network namespace, where the host's are not)
    e.denied(res, "abstract", "EAFNOSUPPORT")
    g.eq(e.allowed(res, "netdev"), ["lo"], "network interfaces inside")
    g.eq(ls.hits, [], "contacts that reached the host's listeners")


def test_abstract_socket_scoped_with_network(t):
    """With network allowed there is no network namespace: Landlock's scope (ABI 6)
    still keeps the host's abstract unix sockets out of reach."""
    e.need_restricted()
    if e.landlock_abi() < 6:
        e.skip("landlock", "Landlock ABI %d has no abstract socket scoping"
               % e.landlock_abi())
    ls = Listeners()
    t.defer(ls.close)
    pol = e.policy(t, network="allow")
    ops = [["abstract", ls.abstract_name, {"as": "abstract"}],
           ["tcp", "127.0.0.1", ls.tcp.getsockname()[1], {"as": "tcp"}]]
    _, doc, res = e.run_probe(t, ops, pol=pol)
    e.denied(res, "abstract", "EPERM")
    e.allowed(res, "tcp")   # the policy allows the network
    g.check("unix" not in ls.hits, "the abstract socket was reached")


if __name__ == "__main__":
    sys.exit(g.main([
        ("TCP, UDP, abstract unix and interfaces are denied", test_network_denied),
        ("abstract unix sockets are scoped even with network", test_abstract_socket_scoped_with_network),
    ]))
