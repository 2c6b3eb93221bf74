"""Shared helpers: a fake chat model (no network), the installed `qls` command, and the rule that
these tests run against the installed wheel and never skip."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"


def pytest_configure(config: pytest.Config) -> None:
    import qls

    where = Path(qls.__file__).resolve()
    if (ROOT / "python") in where.parents:
        raise pytest.UsageError(f"`qls` was imported from the source tree ({where}): the tests run against the "
                                "installed wheel (scripts/test-python.sh installs it into a fresh virtual environment)")


_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A skipped test is a test that did not run: fail the run (what a skip hides is untested).
    if _skipped and session.exitstatus == 0:
        session.exitstatus = 1


def qls_bin() -> str:
    """The installed `qls` console script (the wheel's)."""
    b = shutil.which("qls")
    if b is None:
        pytest.fail("no `qls` on PATH: install the wheel (scripts/test-python.sh)")
    return b


def verify(tmp_path: Path, graph: dict, catalogue: dict, *extra: str) -> tuple[int, set, dict]:
    """Writes both files, runs `qls verify --graph … --format json`; returns (exit code,
    {(rule, subject)}, {obligation id: verdict})."""
    from qls import write

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
    return scripted_model([])


def scripted_model(steps: list[list[tuple[str, dict]]]):
    """A chat model that asks, step by step, for the given tool calls (one list per model step),
    then answers "done"; no network."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class Fake(GenericFakeChatModel):
        def bind_tools(self, tools, **kw):
            return self

    messages = [AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"call-{i}-{j}"}
                                                  for j, (n, a) in enumerate(step)])
                for i, step in enumerate(steps)]
    return Fake(messages=iter([*messages, AIMessage(content="done")]))


def tool_of(name: str, doc: str, **params: type):
    """A LangChain tool with typed, required parameters that returns an empty string."""
    from langchain_core.tools import StructuredTool
    from pydantic import create_model

    schema = create_model(name, **{k: (t, ...) for k, t in params.items()})
    return StructuredTool.from_function(func=lambda **kw: "", name=name, description=doc, args_schema=schema)


def check_history(tmp_path: Path, history_json: str, key: bytes) -> dict:
    """`qls check` (the installed command) deciding a typed read against a guard's history with
    its key: `allow` says the history the guard left verifies (else `history_invalid`)."""
    h, k, c = tmp_path / "history.json", tmp_path / "history.key", tmp_path / "call.json"
    h.write_text(history_json)
    k.write_bytes(key)
    c.write_text(json.dumps({"tool": "get_order", "args": {"order_id": "1"}, "origins": {"order_id": "typed"}}))
    p = subprocess.run([qls_bin(), "check", "--catalogue", str(DATA / "desk.catalogue.yaml"), "--history", str(h),
                        "--call", str(c), "--key-file", str(k)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def example(name: str):
    """An example app of data/examples/ (a framework's own published example, rebuilt with the
    model as a parameter; provenance in data/examples/README.md)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"qls_example_{name}", DATA / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
