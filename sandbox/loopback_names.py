"""The names a sandboxed program resolves: loopback only, the same on both backends.

A program that serves on loopback and connects by name (its own tests' server and client) finds
``localhost`` and the sandbox's hostname, as on any Linux machine. There is no network beyond loopback,
so there is no resolver to ask: the process backend writes these files into the sandbox's /etc
(process_backend.etc_written_fds), and the docker backend gives each container this hostname and its
address (docker writes the container's /etc/hosts from them, with localhost, under network mode "none"; with
NetworkDisabled, which the containers once had too, it wrote an empty one).
"""

from __future__ import annotations

HOSTNAME = "sandbox"
#: Where the hostname points, as Debian's installer writes it (not 127.0.0.1: `localhost` stays the first name
#: of that address).
HOSTNAME_ADDRESS = "127.0.1.1"
#: /etc/hosts and /etc/nsswitch.conf of the process backend's sandbox (never the host's: its hosts file names
#: the host's network, its nsswitch.conf may name services).
ETC_FILES = {
    "hosts": f"127.0.0.1\tlocalhost\n{HOSTNAME_ADDRESS}\t{HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "nsswitch.conf": "hosts: files\n",
}
