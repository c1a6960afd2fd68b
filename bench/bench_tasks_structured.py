"""`make bench-tasks`: ``json_valid``, ``json_schema`` and ``tool_call``, single process, beside peers.

Why: a reward server spends its CPU here. ``json_schema`` is timed beside what NeMo Gym's
``structured_outputs`` server does per row (``json.loads``, make the schema strict, then
``openapi_schema_validator.validate``; the server itself needs Python >= 3.13), both strict, with
the verdicts' agreement printed. ``json_valid`` is timed beside a bare ``json.loads``. ``tool_call``
has no pip-installable peer (NeMo Gym's ``xlam_fc`` is a resources server): ours alone, Hermes
and OpenAI forms. Same rows, same run, repeats interleaved, median repeat.

    make bench-tasks
    .venv/bin/python -m bench.bench_tasks_structured --rows 2000 --repeats 5
"""

from __future__ import annotations

import copy
import json
import random

from bench.task_timing import interleaved, parse_bench_args, print_table
from reward_service.tasks.json_task import JsonSchemaTask, JsonValidTask
from reward_service.tasks.tool_call_task import ToolCallTask

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                      "tags": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"title": {"type": "string"}, "year": {"type": ["integer", "null"]},
                                      "tracks": {"type": "array", "items": {"type": "object", "properties": {
                                          "n": {"type": "integer"}, "title": {"type": "string"}}}}}},
]


def instance(rng: random.Random, schema: dict) -> dict:
    if "name" in schema["properties"]:
        value = {"name": "Ada", "age": rng.choice([36, "36"]), "tags": ["x"] * rng.randint(0, 5)}
    else:
        value = {"title": "In Montreux", "year": rng.choice([1990, None, "1990"]),
                 "tracks": [{"n": i, "title": f"t{i}"} for i in range(rng.randint(1, 12))]}
    if rng.random() < 0.2:
        value["extra"] = 1
    return value


def make_rows(n: int, seed: int) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        schema = rng.choice(SCHEMAS)
        text = json.dumps(instance(rng, schema))
        rows.append((text if rng.random() < 0.95 else text[:-3], schema))
    return rows


def gym_strict(schema):
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node:
                node["required"], node["additionalProperties"] = list(node["properties"]), False
            for value in node.values():
                walk(value)
    walk(schema)
    return schema


def main() -> None:
    args = parse_bench_args(__doc__.splitlines()[0])
    from openapi_schema_validator import validate

    rows = make_rows(args.rows, args.seed)
    ours_schema, ours_valid = JsonSchemaTask(extract="whole", strict=True), JsonValidTask(extract="whole")
    refs = {id(s): {"schema_str": json.dumps(s), "schema_type": "json"} for s in SCHEMAS}

    def gym(row):
        try:
            validate(json.loads(row[0]), gym_strict(json.loads(refs[id(row[1])]["schema_str"])))
            return 1.0
        except Exception:  # noqa: BLE001 - the peer's own catch-all, reproduced
            return 0.0

    agree = sum(ours_schema.score(t, refs[id(s)]).score == gym((t, s)) for t, s in rows)
    print(f"structured: {len(rows)} rows, {args.repeats} interleaved repeats, median repeat; json_schema verdicts "
          f"equal to the Gym-style peer on {agree}/{len(rows)}")
    print_table("JSON Schema conformance (strict)", interleaved({
        "ours json_schema [strict, schema_str]": lambda row: ours_schema.score(row[0], refs[id(row[1])]),
        "peer Gym-style openapi_schema_validator": gym,
    }, rows, args.repeats))

    def loads(row):
        try:
            return json.loads(row[0])
        except ValueError:
            return None

    print_table("JSON validity", interleaved({"ours json_valid": lambda row: ours_valid.score(row[0], {}),
                                              "peer json.loads": loads}, rows, args.repeats))
    rng = random.Random(args.seed)
    calls = [[{"name": f"fn_{rng.randint(0, 5)}", "arguments": {"city": "Paris", "days": rng.randint(1, 5)}}
              for _ in range(rng.randint(1, 3))] for _ in range(args.rows)]
    hermes = [("\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in cs[::-1]), cs) for cs in calls]
    openai = [(json.dumps({"tool_calls": [{"type": "function", "function": {"name": c["name"], "arguments": json.dumps(
        c["arguments"])}} for c in cs]}), cs) for cs in calls]
    task = ToolCallTask()
    def ours(row):
        return task.score(row[0], {"tool_calls": row[1]})

    timings = {**interleaved({"ours tool_call [Hermes blocks]": ours}, hermes, args.repeats),
               **interleaved({"ours tool_call [OpenAI tool_calls JSON]": ours}, openai, args.repeats)}
    print_table("tool calls", timings, "peer: NeMo Gym's xlam_fc server, not pip-installable")


if __name__ == "__main__":
    main()
