"""Provenance, not authorship (SPEC §2), through the OpenAI Agents SDK's `AgentsGuard` with the
SDK's own `ScriptedModel` (no network): the guard's `on_llm_start` hook records the person's
input as a `user` history entry, and each call is decided with `origins="auto"`. A recipient the
person typed is `typed` (it runs without a person); one copied from an untrusted file is `tool`
with `external` (taint applies); a made-up one is the model's (a person approves)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import DATA, check_history
from provenance import BILL, IN_FILE, MADE_UP, TYPED, assert_task_possible

pytest.importorskip("agents")
from agents import Agent, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

import qls  # noqa: E402
from qls.openai_agents import AgentsGuard  # noqa: E402

KEY = b"agents-provenance-key"


def bank(steps: list, ran: list) -> tuple[Any, AgentsGuard]:
    @function_tool
    def read_file(file_path: str) -> str:
        """Read a file."""
        ran.append(("read_file", {"file_path": file_path}))
        return BILL

    @function_tool
    def send_money(recipient: str, amount: float, subject: str) -> str:
        """Send money."""
        ran.append(("send_money", {"recipient": recipient, "amount": amount, "subject": subject}))
        return "sent"

    model = ScriptedModel([*steps, [assistant_message("done")]])
    g = AgentsGuard(qls.Guard(DATA / "bank.catalogue.yaml", settings=DATA / "bank.agent.yaml", key=KEY))
    agent = g.agent(Agent(name="bank", instructions="Pay what the person asks.", model=model,
                          tools=[read_file, send_money]))
    return agent, g


def pay(recipient: str, amount: float, i: str) -> Any:
    return function_call("send_money", {"recipient": recipient, "amount": amount, "subject": "as asked"}, call_id=i)


def calls(g: AgentsGuard, tool: str) -> list[dict]:
    return [e for e in g.guard.history["entries"] if e.get("tool") == tool]


def test_a_recipient_the_person_typed_runs_without_a_person(tmp_path) -> None:
    ran: list = []
    agent, g = bank([[pay(TYPED, 120, "c1")]], ran)
    result = asyncio.run(Runner.run(agent, f"Please pay my landlord 120 at {TYPED}"))
    assert not result.interruptions
    assert ran == [("send_money", {"recipient": TYPED, "amount": 120, "subject": "as asked"})]
    entries = g.guard.history["entries"]
    assert entries[0] == {"kind": "user", "text": f"Please pay my landlord 120 at {TYPED}", "mac": entries[0]["mac"]}
    e = calls(g, "send_money")[0]
    assert e["origins"] == {"recipient": "typed", "amount": "typed", "subject": "model"}
    assert e["sources"] == {"recipient": 0, "amount": 0}
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def approve(agent: Any, result: Any) -> Any:
    """The person's yes to the one call waiting: the run resumes and the call runs."""
    (item,) = result.interruptions
    state = result.to_state()
    state.approve(item)
    return asyncio.run(Runner.run(agent, state))


def test_a_recipient_copied_from_an_untrusted_file_is_tool_and_tainted() -> None:
    ran: list = []
    agent, g = bank([[function_call("read_file", {"file_path": "bill.txt"}, call_id="c1")],
                     [pay(IN_FILE, 98.70, "c2")]], ran)
    result = asyncio.run(Runner.run(agent, "Pay the bill in bill.txt"))
    (item,) = result.interruptions
    assert item.raw_item.name == "send_money"
    q = g.question("c2")
    assert q["reasons"] == ["tainted_call"]
    assert q["args"]["recipient"] == {"value": IN_FILE, "origin": "tool"}
    assert [t for t, _ in ran] == ["read_file"]
    # Approved, the call is recorded with its origins as traced: to the file's entry, `external`.
    approve(agent, result)
    assert [t for t, _ in ran] == ["read_file", "send_money"]
    (read,) = calls(g, "read_file")
    assert read["marks"] == ["external"]
    at = g.guard.history["entries"].index(read)
    assert [(e["decision"], e["origins"]["recipient"], e["sources"]["recipient"]) for e in calls(g, "send_money")] \
        == [("confirm", "tool", at), ("allow", "tool", at)]


def test_a_made_up_recipient_is_the_models_and_waits_for_approval() -> None:
    ran: list = []
    agent, g = bank([[pay(MADE_UP, 120, "c1")]], ran)
    result = asyncio.run(Runner.run(agent, "Please pay my landlord 120"))
    (item,) = result.interruptions
    q = g.question("c1")
    assert q["reasons"] == ["argument_origin"]
    assert q["args"]["recipient"] == {"value": MADE_UP, "origin": "model"}
    assert q["args"]["amount"] == {"value": 120, "origin": "typed"}
    assert ran == []
    approve(agent, result)
    assert [t for t, _ in ran] == ["send_money"]
    assert [(e["decision"], e["origins"], e["sources"]) for e in calls(g, "send_money")] == [
        (d, {"recipient": "model", "amount": "typed", "subject": "model"}, {"amount": 0}) for d in ("confirm", "allow")]


def test_the_run_becomes_a_task_verify_finds_possible(tmp_path) -> None:
    """`qls tasks from-trace` on the guard's history and on the run's own items
    (`result.to_input_list()`): the transfer the person asked for, a task that stays possible
    (issue 51's done-when)."""
    ran: list = []
    agent, g = bank([[pay(TYPED, 120, "c1")]], ran)
    result = asyncio.run(Runner.run(agent, f"Please pay my landlord 120 at {TYPED}"))
    assert [t for t, _ in ran] == ["send_money"]
    assert_task_possible(tmp_path, g.guard.history)
    assert_task_possible(tmp_path, result.to_input_list())
