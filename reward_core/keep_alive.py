"""How long the HTTP servers we run keep an idle connection open.

A server must keep an idle keep-alive connection open longer than its clients keep it in their
pools; otherwise a client can send its next request on a connection the server is closing at that
moment, and the request dies with "connection reset by peer". uvicorn closes idle connections after
5 s by default, and httpx (so the ``openai`` client) keeps them for exactly 5 s: the two race.
Every uvicorn server of ours (the HTTP door, the judge endpoint, the fault proxy, the inspector)
uses this value instead, as nginx (75 s) and gunicorn do; idle connections cost a file descriptor.
"""

from __future__ import annotations

#: Seconds uvicorn keeps an idle connection open (its ``timeout_keep_alive``).
SERVER_KEEP_ALIVE_S = 75
