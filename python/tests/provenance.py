"""What every guard's provenance test asserts about the history it left (SPEC §2 "Provenance, not
authorship"), on the bank of `data/bank.catalogue.yaml`: a transfer whose recipient the person
typed, one copied from an untrusted file's content, one found nowhere."""

from __future__ import annotations

from typing import Any, Mapping

TYPED = "GB29NWBK60161331926819"
IN_FILE = "US133000000121212121212"
MADE_UP = "DE89370400440532013000"
#: What `read_file` returns: the file's content, holding `IN_FILE`.
BILL = f"Bill for December: 98.70. Pay to {IN_FILE} by Friday."


def calls(history: Mapping[str, Any], tool: str) -> list[dict]:
    """The history's entries of calls to `tool`."""
    return [e for e in history["entries"] if e.get("tool") == tool]


def users(history: Mapping[str, Any]) -> list[str]:
    """The person's messages the history records (its `user` entries), in order."""
    return [e["text"] for e in history["entries"] if e.get("kind") == "user"]


def assert_typed(history: Mapping[str, Any], said: str) -> None:
    """`said` is the first and only `user` entry, and the transfer it asked for ran on it: the
    recipient and the amount traced to it (`typed`), the subject the model's (it may word it)."""
    assert history["entries"][0]["kind"] == "user" and users(history) == [said]
    (e,) = calls(history, "send_money")
    assert e["origins"] == {"recipient": "typed", "amount": "typed", "subject": "model"}
    assert e["sources"] == {"recipient": 0, "amount": 0}
    assert e["decision"] == "allow"


def assert_from_file(history: Mapping[str, Any], question: Mapping[str, Any]) -> None:
    """The transfer's recipient and amount traced to the file's entry (`tool`), which carries
    `external` (`returns: untrusted`): the call waits for a person (`tainted_call`), who is shown
    where the recipient came from."""
    (read,) = calls(history, "read_file")
    assert read["marks"] == ["external"]
    (e,) = calls(history, "send_money")
    assert e["origins"]["recipient"] == "tool" and e["origins"]["amount"] == "tool"
    assert e["sources"]["recipient"] == history["entries"].index(read)
    assert e["decision"] == "confirm"
    assert question["reasons"] == ["tainted_call"]
    assert question["args"]["recipient"] == {"value": IN_FILE, "origin": "tool"}


def assert_made_up(history: Mapping[str, Any], question: Mapping[str, Any]) -> None:
    """The recipient found nowhere is the model's (`argument_origin`: a person is asked); the
    amount the person typed (the first entry) is `typed`."""
    (e,) = calls(history, "send_money")
    assert e["origins"] == {"recipient": "model", "amount": "typed", "subject": "model"}
    assert e["sources"] == {"amount": 0}
    assert e["decision"] == "confirm"
    assert question["reasons"] == ["argument_origin"]
    assert question["args"]["recipient"] == {"value": MADE_UP, "origin": "model"}


def assert_asked(history: Mapping[str, Any], ran: list, asked: list, *, made_up: bool) -> None:
    """A guard that asks a person and waits (ADK, CrewAI, AutoGen) asked once, and the person's
    no left the transfer unrun: ``assert_made_up`` or ``assert_from_file`` on what was asked."""
    (q,) = asked
    if made_up:
        assert ran == []
        assert_made_up(history, q)
    else:
        assert [t for t, _ in ran] == ["read_file"]
        assert_from_file(history, q)


#: The task a run paying `TYPED` the amount the person typed makes: what `assert_task_possible` reads.
PAID = "- {tool: send_money, args: {recipient: typed, amount: typed, subject: model}}"


def task_calls(yaml: str) -> list[str]:
    """A tasks file's call lines (what `qls tasks from-trace` writes after `calls:`)."""
    lines = [ln.strip() for ln in yaml.splitlines()]
    return lines[lines.index("calls:") + 1:]


def assert_task_possible(tmp_path: Any, run: Any, *, name: str = "pay") -> dict:
    """Issue 51's done-when, on one recorded run of the bank (a guard's history, or the
    framework's own record of the run): `qls tasks from-trace` (the installed command) and
    `qls.tasks_from_trace` give the same task — the transfer to the recipient the person typed —
    and `qls.verify(bank.agent.yaml, tasks=...)` finds it possible without a person, its witness
    replayed, both engines agreeing. Returns the task's report."""
    import json
    import subprocess

    import qls
    from conftest import DATA, qls_bin

    yaml = qls.tasks_from_trace(run, name=name, catalogue=DATA / "bank.catalogue.yaml")
    assert task_calls(yaml)[-1] == PAID, yaml
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run, indent=1))
    p = subprocess.run([qls_bin(), "tasks", "from-trace", str(path), "--name", name, "--catalogue",
                        str(DATA / "bank.catalogue.yaml")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert task_calls(p.stdout) == task_calls(yaml)
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(yaml)
    r = qls.verify(DATA / "bank.agent.yaml", tasks=str(tasks), session_steps=1)
    (t,) = r.report["tasks"]
    assert (t["name"], t["kind"], t["verdict"], t["bfs"], t["bmc"]) == (name, "user", "possible", "reachable", "reachable"), t
    assert t["witness"]["obligation"] == f"QG024:{name}"
    return t
