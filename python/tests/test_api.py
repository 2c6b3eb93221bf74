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
