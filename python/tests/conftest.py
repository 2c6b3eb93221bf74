"""Shared helpers: a fake chat model (no network) and a runner for the `qls` binary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[2]


def qls_bin() -> str:
    named = os.environ.get("QLS_BIN")
    b = named or str(ROOT / "target" / "debug" / "qls")
    if not Path(b).exists():
        # A binary the caller named must be there (scripts/test-python.sh names it); without one named,
        # the tests cannot run and say so.
        if named:
            pytest.fail(f"QLS_BIN={named} does not exist")
        pytest.skip(f"no qls binary at {b}: build it (cargo build -p prover --bin qls) or set QLS_BIN")
    return b


def verify(tmp_path: Path, graph: dict, catalogue: dict, *extra: str) -> tuple[int, set, dict]:
    """Writes both files, runs `qls verify --graph … --format json`; returns (exit code,
    {(rule, subject)}, {obligation id: verdict})."""
    from qls_export import write

    g, c = tmp_path / "graph.json", tmp_path / "tools.catalogue.json"
    write(graph, catalogue, str(g), str(c))
    return run(["verify", "--graph", str(g), "--catalogue", str(c), "--format", "json",
                "--step-limit", "10", *extra])


def run(args: list[str]) -> tuple[int, set, dict]:
    p = subprocess.run([qls_bin(), *args], capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    r = json.loads(p.stdout)
    findings = {(f["rule"], f["subject"]) for f in r["findings"]}
    obligations = {o["id"]: o["verdict"] for o in r["obligations"]}
    return p.returncode, findings, obligations


def fake_model():
    """A chat model that answers once and never calls the network; `bind_tools` is a no-op."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class Fake(GenericFakeChatModel):
        def bind_tools(self, tools, **kw):
            return self

    return Fake(messages=iter([AIMessage(content="done")]))


def tool_of(name: str, doc: str, **params: type):
    """A LangChain tool with typed, required parameters that returns an empty string."""
    from langchain_core.tools import StructuredTool
    from pydantic import create_model

    schema = create_model(name, **{k: (t, ...) for k, t in params.items()})
    return StructuredTool.from_function(func=lambda **kw: "", name=name, description=doc, args_schema=schema)
