"""`make bench-sandbox-docker`: warm containers (the docker backend) against a `docker run` per execution.

Why: the docker backend keeps one container per slot and forks each execution
inside it, because starting a container per execution is slow (the issue
quotes ~4 executions/s). This measures both on the same HumanEval-sized
program (HumanEval/0, canonical solution and its 7 asserts), with the same
image and the same container settings, on ``--containers`` parallel slots:

1. **docker backend**: ``DockerExecutor(concurrency=N)``, ``--n`` executions
   through ``execute_batch`` (HUMANEVAL style: check in the trusted supervisor);
2. **docker run per execution**: ``N`` threads each running
   ``docker run --rm`` of ``python3 -c "<program + check>"`` (no isolation
   between check and candidate at all -- it is the cheaper of the two designs).

It prints executions/s and p50/p99 latency for each, the ratio, and how long
the pool took to start. ``--fresh-image`` first removes the runner and base
images and times a full rebuild (debootstrap; a minute or two).

    make bench-sandbox-docker
    .venv/bin/python bench/bench_sandbox_docker.py --containers 2 --n 300 --n-run 24
    .venv/bin/python bench/bench_sandbox_docker.py --fresh-image
"""

from __future__ import annotations

import argparse
import concurrent.futures
import statistics
import time

from reward_core.sandbox_contract import ExecutionRequest, Limits, TestStyle, Verdict
from sandbox.docker_backend import DockerConfig, DockerExecutor, container_settings
from sandbox.docker_image import BaseRecipe, docker_client, ensure_image, runner_tag

PROMPT_AND_SOLUTION = '''from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    """ Check if in given list of numbers, are any two numbers closer to each other than
    given threshold.
    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)
    False
    >>> has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)
    True
    """
    for idx, elem in enumerate(numbers):
        for idx2, elem2 in enumerate(numbers):
            if idx != idx2:
                distance = abs(elem - elem2)
                if distance < threshold:
                    return True

    return False
'''
CHECK = '''

METADATA = {
    'author': 'jt',
    'dataset': 'test'
}


def check(candidate):
    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True
    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False
    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True
    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.8) == False
    assert candidate([1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1) == True
    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == True
    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 0.5) == False
'''
LIMITS = Limits(wall_s=5, cpu_s=5)


def _summary(name: str, latencies: list[float], wall_s: float) -> float:
    lat = sorted(latencies)
    rate = len(lat) / wall_s
    print(f"{name:<28} {rate:8.1f} exec/s   p50 {1000 * statistics.median(lat):7.1f} ms   "
          f"p99 {1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))]:7.1f} ms   ({len(lat)} runs, {wall_s:.1f} s)")
    return rate


def bench_backend(containers: int, n: int, image: str) -> float:
    started = time.monotonic()
    executor = DockerExecutor(DockerConfig(concurrency=containers, image=image))
    print(f"pool of {containers} containers ready in {time.monotonic() - started:.2f} s")
    request = ExecutionRequest(code=PROMPT_AND_SOLUTION, style=TestStyle.HUMANEVAL, check_code=CHECK,
                               entry_point="has_close_elements", limits=LIMITS)
    try:
        executor.execute_batch([request] * containers)                       # warm-up
        latencies: list[float] = []

        def one(_: int) -> None:
            t0 = time.monotonic()
            result = executor.execute(request)
            latencies.append(time.monotonic() - t0)
            if result.verdict is not Verdict.ACCEPTED:
                raise AssertionError(f"docker backend: {result.verdict} {result.error}")

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(containers) as pool:
            list(pool.map(one, range(n)))
        return _summary(f"docker backend ({containers} warm)", latencies, time.monotonic() - started)
    finally:
        executor.close()


def bench_docker_run(containers: int, n: int, image: str) -> float:
    client = docker_client()
    settings = container_settings(DockerConfig(concurrency=containers), image, 65534, {"bench": "docker-run"})
    host_config = client.api.create_host_config(**{**settings["host_config"], "auto_remove": False})
    program = PROMPT_AND_SOLUTION + CHECK + "\ncheck(has_close_elements)\n"
    latencies: list[float] = []

    def one(_: int) -> None:
        t0 = time.monotonic()
        cid = client.api.create_container(image, command=["python3", "-I", "-c", program], user="65534:65534",
                                          network_disabled=True, host_config=host_config)["Id"]
        try:
            client.api.start(cid)
            status = client.api.wait(cid)["StatusCode"]
        finally:
            client.api.remove_container(cid, force=True)
        latencies.append(time.monotonic() - t0)
        if status != 0:
            raise AssertionError(f"docker run: exit {status}")

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(containers) as pool:
        list(pool.map(one, range(n)))
    return _summary("docker run per execution", latencies, time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--containers", type=int, default=2, help="warm containers / parallel docker runs")
    parser.add_argument("--n", type=int, default=300, help="executions through the docker backend")
    parser.add_argument("--n-run", type=int, default=24, help="executions as docker run (slow)")
    parser.add_argument("--fresh-image", action="store_true", help="remove the images and time a full rebuild first")
    args = parser.parse_args()
    client = docker_client()
    if args.fresh_image:
        for tag in (runner_tag(), BaseRecipe.for_languages().tag):       # the $SANDBOX_LANGUAGES set's
            if client.images.list(name=tag):
                client.images.remove(tag, force=True)
        started = time.monotonic()
        ensure_image(client)
        print(f"image built from scratch in {time.monotonic() - started:.1f} s (debootstrap + import + runtime layer)")
    started = time.monotonic()
    image = ensure_image(client)
    print(f"image {image} ({time.monotonic() - started:.2f} s to check/build)")
    warm = bench_backend(args.containers, args.n, image)
    cold = bench_docker_run(args.containers, args.n_run, image)
    print(f"warm containers / docker run: {warm / cold:.1f}x")


if __name__ == "__main__":
    main()
