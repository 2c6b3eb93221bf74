"""`qls.verify`, `qls.render` and `qls.check` from the installed wheel: the same answers as the
installed `qls` command (one native implementation)."""

from __future__ import annotations

import json
import subprocess

import pytest

import qls
from conftest import DATA, ROOT, qls_bin

SHOP = ROOT / "examples" / "shop" / "agent.yaml"


def test_verify_gives_the_commands_findings_gate_and_exit_code(tmp_path):
    sarif, findings = tmp_path / "qls.sarif", tmp_path / "findings.json"
    result = qls.verify(SHOP, sarif=sarif, json=findings)
    assert (result.exit_code, result.gate, result.passed) == (0, "passed", True)
    p = subprocess.run([qls_bin(), "verify", str(SHOP)], capture_output=True, text=True)
    assert p.returncode == 0
    assert qls.render(result) == p.stdout  # the text report, byte for byte
    assert {(f.rule, f.subject) for f in result.findings} == {(f["rule"], f["subject"]) for f in json.loads(findings.read_text())["findings"]}
    assert json.loads(sarif.read_text())["version"] == "2.1.0"  # written by the same run


def test_a_bad_input_raises_with_the_commands_message(tmp_path):
    bad = tmp_path / "agent.yaml"
    bad.write_text("agents:\n  desk:\n    tools: [nope]\n    privilege: sky\n")
    with pytest.raises(qls.QlsInputError, match="agent.yaml:"):
        qls.verify(bad)


def test_check_decides_a_batch_as_the_command_and_the_guard_do(tmp_path):
    calls = [{"tool": "lookup_credit", "args": {"customer": "a"}}, {"tool": "lookup_credit", "args": {"customer": "b"}},
             {"tool": "charge_card", "args": {"order_id": "1", "amount": 5}}, {"tool": "get_order", "args": {"order_id": "1"}}]
    history = {"session": "s", "entries": []}
    out = qls.check(DATA / "desk.catalogue.yaml", history, calls)
    assert [d["decision"] for d in out["decisions"]] == ["allow", "refuse", "confirm", "not_run"]
    (tmp_path / "h.json").write_text(json.dumps(history))
    (tmp_path / "c.json").write_text(json.dumps({"calls": calls}))
    p = subprocess.run([qls_bin(), "check", "--catalogue", str(DATA / "desk.catalogue.yaml"), "--history",
                        str(tmp_path / "h.json"), "--call", str(tmp_path / "c.json")], capture_output=True, text=True)
    assert json.loads(p.stdout) == out
    g = qls.Guard(DATA / "desk.catalogue.yaml", key=b"qls-dev-key", session="s")
    guarded = g.decide([qls.Call(c["tool"], c["args"]) for c in calls])
    assert [(d["decision"], d["reasons"]) for d in guarded] == [(d["decision"], d["reasons"]) for d in out["decisions"]]


def test_check_takes_values_and_paths_alike(tmp_path):
    """The values are handed to the native check as they are (no file between): the same answer
    as the same JSON in files, and a bad value is a QlsInputError naming it."""
    call = {"tool": "get_order", "args": {"order_id": "1"}, "origins": {"order_id": "typed"}}
    history = {"session": "s", "entries": []}
    h, c = tmp_path / "h.json", tmp_path / "c.json"
    h.write_text(json.dumps(history))
    c.write_text(json.dumps(call))
    by_value = qls.check(DATA / "desk.catalogue.yaml", history, call)
    assert by_value["decision"] == "allow"
    assert qls.check(DATA / "desk.catalogue.yaml", h, c) == by_value
    assert qls.check(DATA / "desk.catalogue.yaml", str(h), call) == by_value
    appended = qls.check(DATA / "desk.catalogue.yaml", history, call, append=True)
    assert [e["tool"] for e in appended["entries"]] == ["get_order"]
    with pytest.raises(qls.QlsInputError, match="<call>:1:26: not a valid call .*unknown field `argz`"):
        qls.check(DATA / "desk.catalogue.yaml", history, {"tool": "get_order", "argz": {}})
    with pytest.raises(qls.QlsInputError, match="<history>:1: not a history"):
        qls.check(DATA / "desk.catalogue.yaml", {"entries": 3}, call)
    with pytest.raises(qls.QlsInputError, match=r"<call>: not a JSON value \(a set\)"):
        qls.check(DATA / "desk.catalogue.yaml", history, {"tool": "get_order", "args": {"ids": {1, 2}}})
    with pytest.raises(qls.QlsInputError, match="not a finite number"):
        qls.check(DATA / "desk.catalogue.yaml", history, {"tool": "get_order", "args": {"n": float("nan")}})


def test_verify_takes_each_option_as_a_typed_value():
    """Each keyword is set on the proof's arguments with its flag's type (no command line): a
    keyword no flag has, or a value of the wrong type, is a QlsInputError saying so."""
    assert qls.verify(SHOP, session_steps="1", step_limit=10).report == qls.verify(SHOP, session_steps=1, step_limit=10).report
    with pytest.raises(qls.QlsInputError, match="`sesion_steps` is no option of qls verify"):
        qls.verify(SHOP, sesion_steps=2)
    with pytest.raises(qls.QlsInputError, match="option `session_steps`: session_steps must be at least 1"):
        qls.verify(SHOP, session_steps=0)
    with pytest.raises(qls.QlsInputError, match="option `replay`: expected true or false"):
        qls.verify(SHOP, replay="yes")
    with pytest.raises(qls.QlsInputError, match="option `engine`: `z3` is not one of both, bmc, bfs"):
        qls.verify(SHOP, engine="z3")


def test_verify_decides_tasks_from_a_file_or_a_mapping(tmp_path):
    """`qls.verify(..., tasks=...)` (SPEC §1.5): a tasks file's path, or the mapping itself, is
    decided as `qls verify --tasks` decides it — each verdict in `report["tasks"]`, the text's
    `Tasks:` line the command's."""
    tasks = ROOT / "examples" / "shop" / "tasks.yaml"
    result = qls.verify(SHOP, tasks=tasks)
    p = subprocess.run([qls_bin(), "verify", str(SHOP), "--tasks", str(tasks)], capture_output=True, text=True)
    assert qls.render(result) == p.stdout
    assert "Tasks: 1 of 1 possible without a person; 1 attack goal blocked." in p.stdout
    got = {t["name"]: (t["verdict"], t["bfs"], t["bmc"]) for t in result.report["tasks"]}
    assert got == {"look_up": ("possible", "reachable", "reachable"), "inbox_refund": ("blocked", "unreachable", "unreachable")}
    # The mapping: a task that needs a person over two turns, and a goal some run reaches (QG025).
    mapping = {
        "charge": {"calls": [{"tool": "get_order", "args": {"order_id": "typed"}},
                             {"tool": "charge_card", "args": {"order_id": "tool:get_order", "amount": "model"}}]},
        "inbox_lookup": {"never": True, "after": "untrusted", "calls": [{"tool": "get_order", "args": {"order_id": "model"}}]},
    }
    result = qls.verify(SHOP, tasks=mapping, session_steps=2)
    got = {t["name"]: t["verdict"] for t in result.report["tasks"]}
    assert got == {"charge": "needs_person", "inbox_lookup": "reachable"}
    assert ("QG025", "inbox_lookup") in {(f.rule, f.subject) for f in result.findings}
    assert result.report["tasks"][1]["witness"]["obligation"] == "QG025:inbox_lookup"
    # A task naming a tool no catalogue declares is refused, with the nearest name.
    with pytest.raises(qls.QlsInputError, match="get_ordr.*get_order"):
        qls.verify(SHOP, tasks={"t": {"calls": [{"tool": "get_ordr", "args": {}}]}})


def test_tasks_from_trace_reads_a_run_as_the_command_does(tmp_path):
    """`qls.tasks_from_trace` on an Agents SDK run's items (a value, and the same as a file) gives
    the command's task; a run that is none of the formats raises at its line."""
    run = [{"role": "user", "content": "Where is order 4411?"},
           {"type": "function_call", "name": "get_order", "arguments": "{\"order_id\": \"4411\"}", "call_id": "c1"},
           {"type": "function_call_output", "call_id": "c1", "output": "{\"status\": \"paid\", \"amount\": 40}"},
           {"type": "function_call", "name": "refund_card", "arguments": "{\"order_id\": \"4411\", \"amount\": 40}", "call_id": "c2"},
           {"type": "function_call_output", "call_id": "c2", "output": "refunded"}]
    yaml = qls.tasks_from_trace(run, name="refund")
    path = tmp_path / "refund.json"
    path.write_text(json.dumps(run, indent=1))
    p = subprocess.run([qls_bin(), "tasks", "from-trace", str(path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    body = yaml.split("\n", 1)[1]  # the header names the file
    assert p.stdout.split("\n", 1)[1] == body
    # "4411" is typed (the person's message, and the result's `status` carries no 4411); the
    # refund's amount came from get_order's result.
    assert body.splitlines()[-2:] == ["      - {tool: get_order, args: {order_id: typed}}",
                                      "      - {tool: refund_card, args: {order_id: typed, amount: tool:get_order}}"]
    assert qls.tasks_from_trace(path) == p.stdout
    with pytest.raises(qls.QlsInputError, match=r"<run>:\d+: .*`web_search_call`"):
        qls.tasks_from_trace([{"role": "user", "content": "hi"}, {"type": "web_search_call", "id": "w"}])
