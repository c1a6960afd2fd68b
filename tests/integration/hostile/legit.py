"""Correct programs that a defence must not fail: the controls of the hostile suite.

A limit that is really about something else -- RLIMIT_AS counting the address space every
thread reserves (a malloc arena, a stack) rather than memory -- fails correct solutions,
and a correct solution scored 0 is a wrong reward. Each program here is run on every
backend and must be ACCEPTED, with the hostile suite's limits (time aside: they do real work).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from reward_core.sandbox_contract import ExecutionRequest, Limits, TestCase, TestStyle


@dataclass(frozen=True)
class LegitProgram:
    name: str
    code: str
    expected_stdout: str
    description: str
    language: str = "python"
    limits: Mapping[str, float] = field(default_factory=lambda: {"wall_s": 20.0, "cpu_s": 20.0})


def to_request(program: LegitProgram, base_limits: Limits) -> ExecutionRequest:
    return ExecutionRequest(code=textwrap.dedent(program.code), style=TestStyle.STDIO, language=program.language,
                            id=program.name, limits=replace(base_limits, **program.limits),
                            cases=(TestCase(stdin="", expected_stdout=program.expected_stdout),))


PROGRAMS: list[LegitProgram] = [
    LegitProgram(
        "four_threads_200mb_python", expected_stdout="1999963\n",
        description="4 threads, each sorting a list of 1.2M ints (~180 MB in all, under a 256 MB limit)",
        code='''
            import threading
            N, SIZE = 4, 1_200_000
            out = [0] * N
            def work(i):
                xs = [(j * 7919 + i) % 1000003 for j in range(SIZE)]
                xs.sort()
                out[i] = xs[SIZE // 2]
            threads = [threading.Thread(target=work, args=(i,)) for i in range(N)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print(sum(out))
        '''),
    LegitProgram(
        "four_threads_190mb_cpp", language="cpp", expected_stdout="59940000000\n",
        description="C++: 4 threads, each a 48 MB std::vector (~190 MB in all, under a 256 MB limit)",
        code=r'''
            #include <cstdio>
            #include <numeric>
            #include <thread>
            #include <vector>
            int main() {
                const int n = 4;
                long long sums[n];
                std::vector<std::thread> threads;
                for (int i = 0; i < n; ++i)
                    threads.emplace_back([i, &sums] {
                        std::vector<int> xs;
                        xs.reserve(12000000);
                        for (int j = 0; j < 12000000; ++j) xs.push_back(j % 1000 * (i + 1));
                        sums[i] = std::accumulate(xs.begin(), xs.end(), 0LL);
                    });
                for (auto& t : threads) t.join();
                printf("%lld\n", std::accumulate(sums, sums + n, 0LL));
            }
        '''),
]
