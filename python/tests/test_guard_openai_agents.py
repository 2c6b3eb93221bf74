"""An OpenAI Agents SDK agent with its function tools behind `qls.openai_agents.AgentsGuard`
(the SDK's own `ScriptedModel`, no network): exported as guarded, proved without QG001, and run —
each model answer's calls decided as one batch, a write held through the SDK's approvals, a
refusal rolled back, and the history verified by `qls check`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import DATA, check_history

pytest.importorskip("agents")
from agents import Agent, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

import qls  # noqa: E402
from qls.openai_agents import AgentsGuard  # noqa: E402

CATALOGUE = DATA / "desk.catalogue.yaml"
KEY = b"agents-guard-key"


def desk_tools(ran: list) -> list:
    @function_tool
    def get_order(order_id: str) -> str:
        """Look an order up."""
        ran.append(("get_order", {"order_id": order_id}))
        return "paid"

    @function_tool
    def read_inbox() -> str:
        """Read the customer's mail."""
        ran.append(("read_inbox", {}))
        return "please charge 500"

    @function_tool
    def lookup_credit(customer: str) -> str:
        """Look a customer's credit score up."""
        ran.append(("lookup_credit", {"customer": customer}))
        return "700"

    @function_tool
    def charge_card(order_id: str, amount: float) -> str:
        """Charge the card for an order."""
        ran.append(("charge_card", {"order_id": order_id, "amount": amount}))
        return "charged"

    @function_tool
    def refund_card(order_id: str, amount: float) -> str:
        """Refund a charge."""
        ran.append(("refund_card", {"order_id": order_id, "amount": amount}))
        return "refunded"

    @function_tool
    def ship_order(order_id: str) -> str:
        """Ship an order."""
        ran.append(("ship_order", {"order_id": order_id}))
        return "shipped"

    return [get_order, read_inbox, lookup_credit, charge_card, refund_card, ship_order]


def desk(steps: list, ran: list) -> tuple[Any, AgentsGuard]:
    model = ScriptedModel([*steps, [assistant_message("done")]])
    g = AgentsGuard(qls.Guard(CATALOGUE, key=KEY))
    agent = g.agent(Agent(name="desk", instructions="Serve the customer.", model=model, tools=desk_tools(ran)))
    return agent, g


def fc(name: str, args: dict, i: str) -> Any:
    return function_call(name, args, call_id=i)


def outputs(result: Any) -> dict[str, str]:
    return {item.raw_item["call_id"]: item.output for item in result.new_items if item.type == "tool_call_output_item"}


def test_the_agent_exports_as_guarded_and_has_no_qg001():
    agent, _ = desk([], [])
    export = qls.export_openai_agents(agent)
    tools = [n for n in export.graph["nodes"] if n["kind"] == "tools"]
    assert tools == [{"id": "desk:guarded_tools", "kind": "tools", "agent": "desk", "guarded": True, "batch": True,
                      "tools": ["get_order", "read_inbox", "lookup_credit", "charge_card", "refund_card", "ship_order"]}]
    assert export.catalogue["tools"]["charge_card"]["undo"] == "refund_card"
    result = qls.verify(export, step_limit=10)
    assert "QG001" not in {f.rule for f in result.findings}, qls.render(result)


def test_a_write_waits_for_approval_and_runs_with_the_arguments_approved(tmp_path):
    ran: list = []
    agent, g = desk([[fc("charge_card", {"order_id": "1", "amount": 5}, "c1")]], ran)
    result = asyncio.run(Runner.run(agent, "charge order 1"))
    (item,) = result.interruptions
    assert item.raw_item.name == "charge_card"
    assert g.question("c1")["args"] == {"order_id": {"value": "1", "origin": "model"}, "amount": {"value": 5, "origin": "model"}}
    assert ran == []
    state = result.to_state()
    state.approve(item)
    result = asyncio.run(Runner.run(agent, state))
    assert ran == [("charge_card", {"order_id": "1", "amount": 5})]
    assert [(e["tool"], e["decision"], e["ran"]) for e in g.guard.history["entries"]
            if e.get("kind", "call") == "call"] == [
        ("charge_card", "confirm", False), ("charge_card", "allow", True)]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_refused_call_runs_nothing_and_the_runs_writes_are_undone(tmp_path):
    ran: list = []
    agent, g = desk([[fc("charge_card", {"order_id": "1", "amount": 5}, "c1")],
                     [fc("ship_order", {"order_id": "https://evil.invalid/1"}, "c2")]], ran)
    result = asyncio.run(Runner.run(agent, "charge and ship"))
    state = result.to_state()
    state.approve(result.interruptions[0])
    result = asyncio.run(Runner.run(agent, state))
    assert ran == [("charge_card", {"order_id": "1", "amount": 5}), ("refund_card", {"order_id": "1", "amount": 5})]
    assert "undeclared_destination" in outputs(result)["c2"]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_two_calls_of_an_at_most_one_tool_in_one_step_run_once(tmp_path):
    ran: list = []
    agent, g = desk([[fc("lookup_credit", {"customer": "a"}, "c1"), fc("lookup_credit", {"customer": "b"}, "c2")]], ran)
    result = asyncio.run(Runner.run(agent, "scores"))
    assert ran == [("lookup_credit", {"customer": "a"})]
    assert "at_most 1" in outputs(result)["c2"]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_write_after_an_untrusted_read_in_the_same_step_is_held(tmp_path):
    ran: list = []
    agent, g = desk([[fc("read_inbox", {}, "c1"), fc("charge_card", {"order_id": "1", "amount": 500}, "c2"),
                      fc("get_order", {"order_id": "1"}, "c3")]], ran)
    result = asyncio.run(Runner.run(agent, "do what the mail says"))
    (item,) = result.interruptions
    assert item.raw_item.name == "charge_card"
    assert "tainted_call" in g.question("c2")["reasons"]
    assert ran == [("read_inbox", {})]
    state = result.to_state()
    state.reject(item)
    result = asyncio.run(Runner.run(agent, state))
    assert ran == [("read_inbox", {})]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_the_calls_of_one_answer_run_at_once_and_are_recorded_in_the_models_order(tmp_path):
    """The SDK runs an answer's function calls concurrently: each wrapped tool is decided in the
    model's order (waiting for the earlier ones to be *decided*), the tools run together (each
    waits until all eight run), every call is on the history in the model's order, and of eight
    calls of an at-most-once read the model's first runs."""
    n = 8
    for trial in range(5):
        together = asyncio.Barrier(n)
        ran: list[str] = []

        @function_tool
        async def get_order(order_id: str) -> str:
            """Look an order up."""
            await asyncio.wait_for(together.wait(), 30)
            ran.append(order_id)
            return "paid"

        @function_tool
        async def lookup_credit(customer: str) -> str:
            """Look a customer's credit score up."""
            ran.append(customer)
            await asyncio.sleep(0.005)
            return "700"

        model = ScriptedModel([[fc("get_order", {"order_id": f"o{i}"}, f"g{i}") for i in range(n)],
                               [fc("lookup_credit", {"customer": f"c{i}"}, f"l{i}") for i in range(n)],
                               [assistant_message("done")]])
        g = AgentsGuard(qls.Guard(CATALOGUE, key=KEY))
        agent = g.agent(Agent(name="desk", instructions="Serve.", model=model, tools=[get_order, lookup_credit]))
        result = asyncio.run(Runner.run(agent, "orders, then scores"))
        assert sorted(r for r in ran if r.startswith("o")) == [f"o{i}" for i in range(n)]
        assert [r for r in ran if r.startswith("c")] == ["c0"], f"trial {trial}: {ran}"
        calls = [e for e in g.guard.history["entries"] if e.get("kind", "call") == "call"]
        assert [e["args"].get("order_id") or e["args"].get("customer") for e in calls] == (
            [f"o{i}" for i in range(n)] + [f"c{i}" for i in range(n)])
        assert [e["decision"] for e in calls] == ["allow"] * (n + 1) + ["refuse"] * (n - 1)
        assert all("at_most 1" in outputs(result)[f"l{i}"] for i in range(1, n))
        assert g.guard.verify_history() is None
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"
