"""What `bench/bench_journeys.py` runs as a user's own code: client scripts (``python -c``), the journeys'
task module (a slow task, a buggy one) and the sitecustomize that simulates a client-only install.

The draining client: a warm-up call, then a call in flight (10 half-second sleeps on one worker, more
than the server's 3 s grace period); the bench SIGTERMs the server, waits for health NOT_SERVING and writes
a line on stdin: the client then starts a late call. Times are ``time.monotonic()`` (system-wide on Linux),
so the bench compares them with its own.
"""

CLIENT_CLOSED = """
import sys, time
from trainer_client import RewardClient
start = time.monotonic()
try:
    with RewardClient(sys.argv[1]) as client:
        client.score([{"id": "r0", "task": "gsm8k", "completion": "#### 4", "reference": "4"}])
    print("no error")
except Exception as exc:
    print(f"{time.monotonic() - start:.3f} {type(exc).__module__}.{type(exc).__name__}: {exc}")
"""

CLIENT_BATCH = """
import json, sys
from trainer_client import RewardClient
with RewardClient(sys.argv[1], timeout_s=120) as client:
    for r in client.score(json.loads(sys.stdin.read())):
        print(json.dumps({"id": r.id, "status": r.status.name, "score": r.score, "scored": r.scored,
                          "error": r.error}))
"""

CLIENT_DRAIN = """
import json, sys, threading, time
from trainer_client import RewardClient

def rollouts(prefix, n, seconds):
    return [{"id": f"{prefix}-{i}", "task": "sleep", "completion": f"{prefix}{i}", "reference": {"seconds": seconds}}
            for i in range(n)]

def outcome(call):
    try:
        results = call()
        statuses = {}
        for r in results:
            statuses[r.status.name] = statuses.get(r.status.name, 0) + 1
        errors = sorted({r.error for r in results if r.error})
        return {"t": time.monotonic(), "what": f"{statuses}", "error": errors[0] if errors else ""}
    except Exception as exc:
        return {"t": time.monotonic(), "what": type(exc).__name__, "error": str(exc)}

answers = {}
with RewardClient(sys.argv[1], timeout_s=600) as client:
    client.score(rollouts("warm", 1, 0.0))
    load = rollouts("load", 10, 0.5)
    flight = threading.Thread(target=lambda: answers.update(flight=outcome(lambda: client.score(load))))
    flight.start()
    print("READY", flush=True)
    sys.stdin.readline()
    answers["late"] = outcome(lambda: client.score(rollouts("late", 1, 0.0)))
    flight.join()
print(json.dumps(answers), flush=True)
"""

JOURNEY_TASKS = '''
"""The journeys' own tasks: a slow, well-behaved one and a buggy one."""
import time

from reward_service.task_api import Task, TaskOutcome


class SleepTask(Task):
    name = "sleep"
    description = "sleeps reference.seconds, then scores 1"
    required_reference_fields = ("seconds",)
    batch_size = 1
    cacheable = False

    def score(self, completion, reference, prompt=""):
        time.sleep(float(reference["seconds"]))
        return TaskOutcome.binary(True)


class RaiseTask(Task):
    name = "raise"
    description = "a buggy verifier: raises on 'raise'"

    def score(self, completion, reference, prompt=""):
        if completion == "raise":
            raise RuntimeError("verifier bug in journey_tasks")
        return TaskOutcome.binary(True)
'''

SLOW_CALL = """
import sys, time
from trainer_client import RewardClient
with RewardClient(sys.argv[1], timeout_s=3) as client:
    start = time.monotonic()
    try:
        client.score([{"id": "slow-0", "task": "sleep", "completion": "s", "reference": {"seconds": 8}}])
        print(f"{time.monotonic() - start:.3f} no error")
    except Exception as exc:
        typed = not type(exc).__module__.startswith("grpc")  # the client's own exception, in our words
        kind = type(exc).__name__ if typed or not hasattr(exc, "code") else f"grpc.RpcError {exc.code().name}"
        code = f" {exc.code().name}" if typed and hasattr(exc, "code") else ""
        said = exc if typed else getattr(exc, "details", lambda: exc)()
        print(f"{time.monotonic() - start:.3f} {kind}{code}: {said}")
"""

BLOCK_EXTRAS = """
import sys
for name in ("torch", "transformers", "safetensors", "starlette", "uvicorn", "tensorboard", "matplotlib"):
    sys.modules[name] = None
"""
