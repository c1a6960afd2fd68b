"""slime's remote reward through the front door, against the exact request slime's client sends.

slime cannot be installed here: it is not on PyPI (the ``slime`` package there is an unrelated
linear mixed-effects library) and it needs Megatron and SGLang. So :func:`slime_remote_rm`
replays what its client does, as read in THUDM/slime ``slime/rollout/rm_hub/__init__.py``
(``remote_rm``): an aiohttp POST of ``{"prompt": sample.prompt, "response": sample.response,
"label": sample.label}`` to ``--rm-url``, ``raise_for_status()``, and ``await resp.json()``
stored as ``sample.reward``; then ``Sample.get_reward_value`` (``slime/utils/types.py``) reads
``reward`` itself, or ``reward[args.reward_key]`` with ``--reward-key``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from reward_core.contract import Rollout
from reward_service.http_door import slime as door_slime
from tests.http_fixtures import batches_only_when_full, serve_app
from trainer_client import RewardClient

aiohttp = pytest.importorskip("aiohttp", reason="slime's client posts with aiohttp")


async def slime_remote_rm(url: str, prompt: Any, response: str, label: Any, reward_key: str = "") -> Any:
    """slime's ``remote_rm`` (one try) and ``get_reward_value``, for one sample."""
    payload = {"prompt": prompt, "response": response, "label": label}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        async with session.post(url, json=payload) as resp:
            resp.raise_for_status()
            reward = await resp.json()
    return reward[reward_key] if reward_key else reward


@pytest.fixture(scope="module")
def door(reward_server) -> Iterator[tuple[str, Starlette]]:
    with serve_app(reward_server.address, [door_slime.routes], max_batch=64) as served:
        yield served


CASES = [  # (reward, prompt, response, label, our reference)
    ("gsm8k", "What is 2+2?", "2+2 = 4\n#### 4", "4", {"answer": "4"}),
    ("gsm8k", "What is 2+3?", "#### 6", "5", {"answer": "5"}),
    ("gsm8k", [{"role": "user", "content": "What is 2+3?"}], "no idea", "5", {"answer": "5"}),
    ("gsm8k", "Half of 10?", "#### 5", '{"answer": "5"}', {"answer": "5"}),
    ("math_with_format", "Solve x+1=3", "<think>x=2</think><answer>\\boxed{2}</answer>", "2", {"answer": "2"}),
    ("math_with_format", "Solve x+1=3", "x is \\boxed{2}", "2", {"answer": "2"}),
]


def _expected(reward_server) -> list:
    with RewardClient(reward_server.address, timeout_s=60) as client:
        prompts = [p if isinstance(p, str) else p[0]["content"] for _, p, _, _, _ in CASES]
        results = client.score([Rollout(str(i), task, response, ref, prompt)
                                for i, ((task, _, response, _, ref), prompt) in enumerate(zip(CASES, prompts))])
    assert all(r.scored for r in results)
    return results


def test_the_plain_reward_equals_grpc_score(door, reward_server):
    url, _ = door
    for (task, prompt, response, label, _), want in zip(CASES, _expected(reward_server)):
        got = asyncio.run(slime_remote_rm(f"{url}/slime/{task}", prompt, response, label))
        assert got == want.score and isinstance(got, float), (task, response, got)


def test_with_a_reward_key_the_object_holds_the_score_and_components(door, reward_server):
    url, _ = door
    for (task, prompt, response, label, _), want in zip(CASES, _expected(reward_server)):
        got = asyncio.run(slime_remote_rm(f"{url}/slime/{task}?key=reward", prompt, response, label, "reward"))
        assert got == want.score
        whole = httpx.post(f"{url}/slime/{task}?key=reward",
                           json={"prompt": prompt, "response": response, "label": label}).json()
        assert whole == {**want.components, "reward": want.score}


def test_an_unknown_reward_is_404(door):
    url, _ = door
    reply = httpx.post(f"{url}/slime/nope", json={"prompt": "Q", "response": "#### 4", "label": "4"})
    assert reply.status_code == 404 and "nope" in reply.json()["message"]


def test_a_bad_body_is_400(door):
    url, _ = door
    for body in (b"{nope", b"[]", b'{"prompt": "Q"}', b'{"prompt": "Q", "response": 4}',
                 b'{"prompt": 7, "response": "#### 4"}', b'{"prompt": "Q", "response": "#### 4", "label": [4]}'):
        reply = httpx.post(f"{url}/slime/gsm8k", content=body)
        assert reply.status_code == 400 and reply.json()["code"] == 3, (body, reply.text)


def test_an_unscored_sample_is_an_http_error_never_a_reward(door):
    url, _ = door
    with pytest.raises(aiohttp.ClientResponseError) as err:
        asyncio.run(slime_remote_rm(f"{url}/slime/raise", "Q", "raise", None))
    assert err.value.status == 500
    invalid = httpx.post(f"{url}/slime/gsm8k", json={"prompt": "Q", "response": "#### 4", "label": None})
    assert invalid.status_code == 400 and "INVALID_REFERENCE" in invalid.json()["message"]


def test_concurrent_single_sample_calls_are_correct_and_merged(door):
    url, app = door
    batcher = app.state.door.up.batcher
    before = batcher.batches_sent
    threads, calls, failures, rewards = 64, 4, [], {}

    def rollout_worker(w: int) -> None:
        async def calls_of_this_worker() -> None:
            for c in range(calls):
                n = w * calls + c
                answer = n if n % 3 else n + 1  # every third one wrong
                rewards[n] = await slime_remote_rm(f"{url}/slime/gsm8k", f"Q{n}?", f"#### {answer}", str(n))

        try:
            asyncio.run(calls_of_this_worker())
        except Exception as exc:  # noqa: BLE001 -- reported below
            failures.append(repr(exc))

    pool = [threading.Thread(target=rollout_worker, args=(w,)) for w in range(threads)]
    with batches_only_when_full(batcher, threads):  # each batch: one call of every worker
        for t in pool:
            t.start()
        for t in pool:
            t.join(timeout=120)
    assert not failures
    assert rewards == {n: 0.0 if n % 3 == 0 else 1.0 for n in range(threads * calls)}
    sent = batcher.batches_sent - before
    assert sent == calls, f"{threads * calls} calls made {sent} upstream Score calls, not {calls} full batches"
