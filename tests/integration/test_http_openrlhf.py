"""OpenRLHF's remote reward through the front door, driven by OpenRLHF's own client code.

The client is ``openrlhf/utils/agent.py`` of the ``openrlhf`` wheel (``pip install --no-deps
openrlhf``; 0.11.2 when written): ``SingleTurnAgentExecutor.execute`` builds the query with a
real tokenizer (our tiny character tokenizer) and posts it, reading ``rewards`` / ``scores`` /
``extra_logs`` as in training. The module is loaded by its file path, like OpenRLHF's own
tests/test_agent.py does, because ``openrlhf/utils/__init__.py`` imports heavy unrelated
dependencies (deepspeed, pylatexenc); its one import of ours, ``openrlhf.utils.logging_utils``,
is the real file loaded the same way. Nothing of the client is stubbed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace

import httpx
import pytest
from starlette.applications import Starlette

from reward_core.contract import Rollout
from reward_service.http_door import openrlhf as door_openrlhf
from reward_service.http_door.openrlhf import response_from_query
from tests.http_fixtures import batches_only_when_full, serve_app
from trainer_client import RewardClient

pytest.importorskip("aiohttp", reason="OpenRLHF's client posts with aiohttp")
ORL_SPEC = importlib.util.find_spec("openrlhf")
if ORL_SPEC is None or not ORL_SPEC.submodule_search_locations:
    pytest.skip("OpenRLHF's client is not installed (pip install --no-deps openrlhf)", allow_module_level=True)
ORL_ROOT = Path(next(iter(ORL_SPEC.submodule_search_locations)))


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def agent() -> Iterator[ModuleType]:
    saved = sys.modules.get("openrlhf.utils.logging_utils")
    sys.modules["openrlhf.utils.logging_utils"] = _load("openrlhf.utils.logging_utils",
                                                        ORL_ROOT / "utils" / "logging_utils.py")
    try:
        yield _load("_openrlhf_agent_client", ORL_ROOT / "utils" / "agent.py")
    finally:
        if saved is None:
            sys.modules.pop("openrlhf.utils.logging_utils", None)
        else:
            sys.modules["openrlhf.utils.logging_utils"] = saved


@pytest.fixture(scope="module")
def door(reward_server) -> Iterator[tuple[str, Starlette]]:
    with serve_app(reward_server.address, [door_openrlhf.routes], max_batch=64) as served:
        yield served


@pytest.fixture(scope="module")
def tokenizer():
    from examples.tiny.tokenizer import build_tokenizer

    return build_tokenizer()


class ScriptedEngine:
    """Stands in for vLLM: "generates" the given text (then <eos>) with the run's tokenizer."""

    def __init__(self, tokenizer, text: str) -> None:
        self.ids = tokenizer(text=text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        out = SimpleNamespace(token_ids=self.ids, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[out])


def run_openrlhf(agent, tokenizer, url: str, prompt: str, response: str, label) -> dict:
    """One sample as OpenRLHF 0.11 scores it after generation: the executor's output dict."""
    executor = agent.SingleTurnAgentExecutor(url)
    params = SimpleNamespace(max_tokens=64, logprobs=None)
    rendered = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                             add_generation_prompt=True)
    return asyncio.run(executor.execute(rendered, label, params, 512, tokenizer, ScriptedEngine(tokenizer, response)))


CASES = [  # (reward, prompt, response, label, our reference)
    ("gsm8k", "What is 2+2?", "2+2 = 4\n#### 4", "4", {"answer": "4"}),
    ("gsm8k", "What is 2+3?", "#### 6", "5", {"answer": "5"}),
    ("gsm8k", "What is 2+3?", "I do not know", "5", {"answer": "5"}),
    ("gsm8k", "Half of 10?", "#### 5", '{"answer": "5"}', {"answer": "5"}),
    ("math_with_format", "Solve x+1=3", "<think>x=2</think><answer>\\boxed{2}</answer>", "2", {"answer": "2"}),
    ("math_with_format", "Solve x+1=3", "x is \\boxed{3}", "2", {"answer": "2"}),
]


def test_every_reward_equals_grpc_score(agent, tokenizer, door, reward_server):
    url, _ = door
    with RewardClient(reward_server.address, timeout_s=60) as client:
        expected = client.score([Rollout(str(i), task, response, ref, prompt)
                                 for i, (task, prompt, response, _, ref) in enumerate(CASES)])
    assert all(r.scored for r in expected)
    for (task, prompt, response, label, _), want in zip(CASES, expected):
        out = run_openrlhf(agent, tokenizer, f"{url}/openrlhf/{task}", prompt, response, label)
        assert out["reward"] == [want.score] and out["scores"] == [want.score], (task, response, out)
        assert out["extra_logs"] == {name: [value] for name, value in want.components.items()}


def test_the_query_is_split_after_the_prompt():
    assert response_from_query("<bos>Q<|assistant|>#### 4<eos>", "<bos>Q<|assistant|>") == "#### 4"
    assert response_from_query("<s>Q: 2+2?\nA: #### 4</s>", "Q: 2+2?\nA:") == " #### 4"  # a BOS before it
    assert response_from_query("Is it ok? Yes.#### 4", "Is it ok ? Yes .") == "#### 4"  # decode cleaned spaces
    long_prompt = "Some long context. " * 4 + "Question: 2+2?\n"
    assert response_from_query(long_prompt[20:] + "#### 4<|im_end|>", long_prompt) == "#### 4"  # cut on the left
    assert response_from_query("#### 4<|im_end|>\n<|endoftext|>", "") == "#### 4"
    assert response_from_query("an unrelated text entirely", "Question: 2+2?") is None


def test_an_empty_call_is_empty_lists(door):
    url, _ = door
    reply = httpx.post(f"{url}/openrlhf/gsm8k", json={"query": [], "prompts": [], "labels": []})
    assert reply.status_code == 200 and reply.json() == {"rewards": [], "scores": [], "extra_logs": {}}


def test_several_rows_in_one_call_keep_their_order(door):
    url, _ = door
    reply = httpx.post(f"{url}/openrlhf/gsm8k", json={"query": ["Q1 #### 1", "Q2 #### 9", "Q3 #### 3"],
                                                      "prompts": ["Q1", "Q2", "Q3"], "labels": ["1", "2", "3"]})
    assert reply.status_code == 200 and reply.json()["rewards"] == [1.0, 0.0, 1.0]


def test_an_unknown_reward_is_404(door):
    url, _ = door
    for query in ([], ["Q #### 4"]):
        reply = httpx.post(f"{url}/openrlhf/nope", json={"query": query, "prompts": ["Q"] * len(query),
                                                          "labels": ["4"] * len(query)})
        assert reply.status_code == 404 and "nope" in reply.json()["message"], reply.text


def test_a_bad_body_is_400(door):
    url, _ = door
    bodies = [b"{nope", b'{"prompts": []}', b'{"query": "Q #### 4"}', b'{"query": ["a"], "prompts": ["a", "b"]}',
              b'{"query": ["Q #### 4"], "prompts": ["Other"], "labels": ["4"]}',
              b'{"query": ["Q #### 4"], "prompts": ["Q"], "labels": [[4]]}']
    for body in bodies:
        reply = httpx.post(f"{url}/openrlhf/gsm8k", content=body)
        assert reply.status_code == 400 and reply.json()["code"] == 3, (body, reply.text)


def test_an_unscored_row_fails_the_call_and_the_client_never_gets_a_reward(agent, tokenizer, door):
    url, _ = door
    reply = httpx.post(f"{url}/openrlhf/raise", json={"query": ["Q ok", "Qraise"], "prompts": ["Q", "Q"],
                                                       "labels": [None, None]})
    assert reply.status_code == 500 and "row 1: ERROR" in reply.json()["message"]
    out = run_openrlhf(agent, tokenizer, f"{url}/openrlhf/raise", "Q", "raise", None)  # 5 tries, 1 s apart
    assert out["reward"] is None and out["scores"] is None


def test_concurrent_single_sample_calls_are_correct_and_merged(agent, door):
    url, app = door
    batcher = app.state.door.up.batcher
    before = batcher.batches_sent
    threads, calls, failures, rewards = 64, 4, [], {}

    def trainer_worker(w: int) -> None:
        executor = agent.SingleTurnAgentExecutor(f"{url}/openrlhf/gsm8k")

        async def calls_of_this_worker() -> None:
            for c in range(calls):
                n = w * calls + c
                answer = n if n % 3 else n + 1  # every third one wrong
                got = await executor._fetch_rewards_via_http([f"Q{n}? #### {answer}"], [f"Q{n}?"], [str(n)])
                rewards[n] = got[0]["rewards"]

        try:
            asyncio.run(calls_of_this_worker())
        except Exception as exc:  # noqa: BLE001 -- reported below
            failures.append(repr(exc))

    pool = [threading.Thread(target=trainer_worker, args=(w,)) for w in range(threads)]
    with batches_only_when_full(batcher, threads):  # each batch: one call of every worker
        for t in pool:
            t.start()
        for t in pool:
            t.join(timeout=120)
    assert not failures
    assert rewards == {n: [0.0 if n % 3 == 0 else 1.0] for n in range(threads * calls)}
    sent = batcher.batches_sent - before
    assert sent == calls, f"{threads * calls} calls made {sent} upstream Score calls, not {calls} full batches"
