"""Extract AgentDojo suites into plain JSON for qls's provenance measurement.

Run with the `agentdojo` package installed (0.1.35; MIT licence, ethz-spylab/agentdojo):

    python benchmarks/agentdojo/extract.py workspace travel banking slack > benchmarks/agentdojo/data/suites.json

For each suite of benchmark v1.2.1 this writes the tools (name, description, the JSON Schema
pydantic gives their parameters), every user task (its prompt and its ground-truth calls, each
executed in the suite's own default environment through the suite's own `FunctionsRuntime`, with
the JSON of its result), and which results carry attacker-controlled text. That last column is
measured, not judged: the environment is loaded a second time with every injection vector set to
a unique canary string, the same calls run again, and a result that contains a canary is one an
attacker can write into. The file is data for `provenance.py`; nothing here is qls.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from agentdojo.functions_runtime import FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suite

VERSION = "v1.2.1"


def _json(value: Any) -> Any:
    """The JSON a host would see for a tool's result (pydantic models dumped in JSON mode)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _run(suite: Any, env: Any, calls: list[Any]) -> list[dict[str, Any]]:
    runtime = FunctionsRuntime(suite.tools)
    out = []
    for call in calls:
        result, error = runtime.run_function(env, call.function, call.args)
        out.append({"function": call.function, "args": _json(dict(call.args)),
                    "result": _json(result), "error": error})
    return out


def _contains(value: Any, needles: list[str]) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    return any(n in text for n in needles)


def extract(name: str) -> dict[str, Any]:
    suite = get_suite(VERSION, name)
    vectors = sorted(suite.get_injection_vector_defaults())
    canaries = {v: f"QLSCANARY{i:03d}" for i, v in enumerate(vectors)}
    tools = [{"name": f.name, "description": f.description,
              "parameters": f.parameters.model_json_schema()} for f in suite.tools]
    tasks = []
    for task_id, task in sorted(suite.user_tasks.items(), key=lambda kv: int(kv[0].split("_")[-1])):
        env = suite.load_and_inject_default_environment({})
        calls = _run(suite, env, task.ground_truth(env))
        env_c = suite.load_and_inject_default_environment(canaries)
        canaried = _run(suite, env_c, task.ground_truth(env_c))
        for c, cc in zip(calls, canaried):
            c["attacker_writes_result"] = _contains(cc["result"], list(canaries.values()))
        tasks.append({"id": task_id, "prompt": task.PROMPT, "calls": calls})
    injections = []
    for task_id, task in sorted(suite.injection_tasks.items(), key=lambda kv: int(kv[0].split("_")[-1])):
        env = suite.load_and_inject_default_environment({})
        injections.append({"id": task_id, "goal": task.GOAL,
                           "calls": [{"function": c.function, "args": _json(dict(c.args))}
                                     for c in task.ground_truth(env)]})
    return {"suite": name, "benchmark_version": VERSION, "tools": tools,
            "user_tasks": tasks, "injection_tasks": injections}


def main(argv: list[str]) -> None:
    import agentdojo  # noqa: F401 -- the version is recorded below

    from importlib.metadata import version

    out = {"source": {"package": "agentdojo", "version": version("agentdojo"),
                      "repository": "https://github.com/ethz-spylab/agentdojo", "licence": "MIT"},
           "suites": [extract(n) for n in argv]}
    json.dump(out, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
