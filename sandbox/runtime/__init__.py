"""The in-sandbox runtime: zygote, trusted supervisor (A), untrusted runner (B), wire codec.

Stdlib only and free of imports from our other packages: the same files run
inside bubblewrap with the host's base interpreter and inside the docker image
with Debian's python3.11 (copied to /opt/sandbox/runtime). The host imports
the pure parts (codec, framing, check_split) as ``sandbox.runtime.*``.
"""
