"""A free TCP port, for a server that another process is about to start.

A server started in this process binds port 0 and reports the port it got (``create_server``);
this is for the cases where the port must be known first: a child process's ``--port`` flag, a
``--metrics-port``, an address to hand out before the server is up. The port is free when this
returns; nothing holds it, so start the server right away.
"""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing on ``host`` listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
