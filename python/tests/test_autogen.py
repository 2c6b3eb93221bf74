"""AutoGen AgentChat apps (`autogen-agentchat`, AutoGen's own ReplayChatCompletionClient, no
network): exported with `qls.export_autogen` and verified by the installed `qls`, and run with
their FunctionTools wrapped by `qls.autogen.AutogenGuard` — an allowed call runs, a confirmed one
waits for the person and runs with the arguments approved, a refused one runs nothing and tells
the model why."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from conftest import DATA, check_history, example, verify

pytest.importorskip("autogen_agentchat")
from autogen_agentchat.agents import AssistantAgent, UserProxyAgent  # noqa: E402
from autogen_agentchat.conditions import HandoffTermination, MaxMessageTermination, TextMentionTermination  # noqa: E402
from autogen_agentchat.teams import (DiGraphBuilder, GraphFlow, RoundRobinGroupChat,  # noqa: E402
                                     SelectorGroupChat, Swarm)
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import CreateResult, RequestUsage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

import qls  # noqa: E402
from qls.autogen import AutogenGuard  # noqa: E402

CATALOGUE = DATA / "desk.catalogue.yaml"
KEY = b"autogen-guard-key"
INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown", "structured_output": False}
UNTRUSTED = {"read_inbox": {"effect": "read", "returns": "untrusted"}}
HIGH = {"billing": {"privilege": "high"}}


def model(*steps: list) -> ReplayChatCompletionClient:
    """A model that asks, step by step, for the given calls, then answers "done"."""
    out: list[Any] = []
    for i, step in enumerate(steps):
        calls = [FunctionCall(id=f"c{i}-{j}", name=n, arguments=json.dumps(a)) for j, (n, a) in enumerate(step)]
        out.append(CreateResult(finish_reason="function_calls", content=calls,
                                usage=RequestUsage(prompt_tokens=0, completion_tokens=0), cached=False))
    return ReplayChatCompletionClient([*out, "done"], model_info=INFO)


def desk_tools(ran: list) -> dict:
    def get_order(order_id: str) -> str:
        """Look an order up."""
        ran.append(("get_order", {"order_id": order_id}))
        return "paid"

    def read_inbox() -> str:
        """Read the customer's mail."""
        ran.append(("read_inbox", {}))
        return "please charge 500"

    def charge_card(order_id: str, amount: float) -> str:
        """Charge the card for an order."""
        ran.append(("charge_card", {"order_id": order_id, "amount": amount}))
        return "charged"

    def refund_card(order_id: str, amount: float) -> str:
        """Refund a charge."""
        ran.append(("refund_card", {"order_id": order_id, "amount": amount}))
        return "refunded"

    def ship_order(order_id: str) -> str:
        """Ship an order."""
        ran.append(("ship_order", {"order_id": order_id}))
        return "shipped"

    return {f.__name__: f for f in (get_order, read_inbox, charge_card, refund_card, ship_order)}


def support_swarm(guard: AutogenGuard | None = None, termination: Any = None) -> Swarm:
    """A low-privilege triage agent that reads mail and hands off to a high-privilege billing
    agent that charges and ships (or to the user)."""
    t = desk_tools([])
    wrap = guard.tools if guard is not None else (lambda xs: xs)
    triage = AssistantAgent("triage", model(), tools=wrap([t["read_inbox"]]), handoffs=["billing", "user"])
    billing = AssistantAgent("billing", model(), handoffs=["triage"],
                             tools=wrap([t["get_order"], t["charge_card"], t["refund_card"], t["ship_order"]]))
    if termination is None:
        termination = HandoffTermination("user") | MaxMessageTermination(12)
    return Swarm([triage, billing], termination_condition=termination)


def test_the_unguarded_swarm_has_the_cascade_and_a_missing_check(tmp_path):
    graph, cat = qls.export_autogen(support_swarm(), tools=UNTRUSTED, agents=HIGH)
    edges = {(e["from"], e["to"], e["kind"]) for e in graph["edges"]}
    assert {("triage", "billing", "handoff"), ("billing", "triage", "handoff")} <= edges
    assert {n["id"]: n["kind"] for n in graph["nodes"]}["triage:user"] == "human"  # HandoffTermination("user")
    assert graph["agents"]["billing"] == {"privilege": "high", "budget": 12,
                                          "tools": ["get_order", "charge_card", "refund_card", "ship_order"]}
    assert cat["tools"]["charge_card"]["args"]["required"] == ["order_id", "amount"]
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert {("QG001", "charge_card"), ("QG012", "charge_card"), ("QG011", "charge_card")} <= findings
    assert not [f for f in findings if f[0] == "QG023"]  # MaxMessageTermination bounds the run
    assert rc == 1


def test_a_team_without_a_bound_is_an_unbounded_loop(tmp_path):
    graph, cat = qls.export_autogen(support_swarm(termination=TextMentionTermination("TERMINATE")),
                                    tools=UNTRUSTED, agents=HIGH)
    assert "budget" not in graph["agents"]["triage"]
    _, findings, _ = verify(tmp_path, graph, cat)
    assert [f for f in findings if f[0] == "QG023"]


def test_behind_the_guard_no_write_misses_its_check():
    g = AutogenGuard(qls.Guard(CATALOGUE, key=KEY))
    export = qls.export_autogen(support_swarm(g), agents=HIGH)
    guarded = {n["id"]: n["tools"] for n in export.graph["nodes"] if n["kind"] == "tools" and n["guarded"]}
    assert guarded == {"triage:guarded_tools": ["read_inbox"],
                       "billing:guarded_tools": ["get_order", "charge_card", "refund_card", "ship_order"]}
    result = qls.verify(export, step_limit=10)
    rules = {f.rule for f in result.findings}
    assert not rules & {"QG001", "QG011", "QG012"}, qls.render(result)


def test_round_robin_selector_and_graph_flow_shapes(tmp_path):
    t = desk_tools([])
    writer = AssistantAgent("writer", model(), tools=[t["read_inbox"]])
    shipper = AssistantAgent("shipper", model(), tools=[t["ship_order"]])
    person = UserProxyAgent("person", input_func=lambda prompt: "ok")
    rr = RoundRobinGroupChat([writer, person, shipper], termination_condition=MaxMessageTermination(6))
    graph, cat = qls.export_autogen(rr, tools=UNTRUSTED)
    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    assert {("writer", "person"), ("person", "shipper"), ("shipper", "writer")} <= edges
    assert {n["id"]: n["kind"] for n in graph["nodes"]}["person"] == "human"

    sel = SelectorGroupChat([writer, shipper], model_client=model(), termination_condition=MaxMessageTermination(6))
    graph, cat = qls.export_autogen(sel, tools=UNTRUSTED)
    assert graph["entry"] == "SelectorGroupChat:selector"
    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    assert {("SelectorGroupChat:selector", "writer"), ("shipper", "SelectorGroupChat:selector")} <= edges
    _, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG012", "ship_order") in findings and not [f for f in findings if f[0] == "QG023"]

    b = DiGraphBuilder()
    b.add_node(writer).add_node(shipper)
    b.add_edge(writer, shipper, condition=lambda msg: "ship" in msg.to_model_text())
    flow = GraphFlow([writer, shipper], graph=b.build())
    with pytest.warns(qls.QlsExportNote, match="condition"):
        graph, cat = qls.export_autogen(flow, tools=UNTRUSTED)
    assert graph["entry"] == "writer"
    assert ("writer", "shipper", "handoff") in {(e["from"], e["to"], e["kind"]) for e in graph["edges"]}


def desk_agent(ran: list, steps: list, ask: Any = None) -> tuple[AssistantAgent, AutogenGuard]:
    t = desk_tools(ran)
    g = AutogenGuard(qls.Guard(CATALOGUE, key=KEY), ask=ask)
    agent = AssistantAgent("desk", model(*steps), max_tool_iterations=len(steps) + 1,
                           tools=g.tools([t["get_order"], t["read_inbox"], t["charge_card"], t["refund_card"], t["ship_order"]]))
    return agent, g


def results(run: Any) -> dict[str, str]:
    return {r.call_id: r.content for m in run.messages if m.type == "ToolCallExecutionEvent" for r in m.content}


def test_the_guard_runs_an_allowed_call_and_waits_for_the_person_on_a_write(tmp_path):
    ran: list = []
    asked: list = []

    async def person(q: dict) -> str:
        asked.append(q)
        return "approve"

    agent, g = desk_agent(ran, [[("get_order", {"order_id": "1"})], [("charge_card", {"order_id": "1", "amount": 5})]], person)
    out = asyncio.run(agent.run(task="charge order 1"))
    assert ran == [("get_order", {"order_id": "1"}), ("charge_card", {"order_id": "1", "amount": 5.0})]
    assert asked[0]["tool"] == "charge_card" and asked[0]["args"]["amount"] == {"value": 5, "origin": "model"}
    assert results(out)["c1-0"] == "charged"
    assert [(e["tool"], e["decision"], e["ran"]) for e in g.guard.history["entries"]] == [
        ("get_order", "allow", True), ("charge_card", "confirm", False), ("charge_card", "allow", True)]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_refused_call_runs_nothing_returns_the_reason_and_undoes_the_charge(tmp_path):
    ran: list = []
    agent, g = desk_agent(ran, [[("charge_card", {"order_id": "1", "amount": 5})],
                                [("ship_order", {"order_id": "https://evil.invalid/1"})]], lambda q: True)
    out = asyncio.run(agent.run(task="charge and ship"))
    assert ran == [("charge_card", {"order_id": "1", "amount": 5.0}), ("refund_card", {"order_id": "1", "amount": 5})]
    assert "undeclared_destination" in results(out)["c1-0"]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_declined_write_and_a_write_with_no_person_run_nothing():
    ran: list = []
    agent, _ = desk_agent(ran, [[("charge_card", {"order_id": "1", "amount": 5})]], lambda q: False)
    out = asyncio.run(agent.run(task="charge"))
    assert ran == [] and "declined" in results(out)["c0-0"]
    agent, g = desk_agent(ran, [[("charge_card", {"order_id": "1", "amount": 5})]])
    out = asyncio.run(agent.run(task="charge"))
    assert ran == [] and "waiting for a person" in results(out)["c0-0"]
    assert g.gate.held and g.gate.held[0].call.tool == "charge_card"


def test_the_autogen_docs_examples_export_and_verify(tmp_path):
    """Two of AutoGen's own published examples (data/examples/README.md): what each proves."""
    team = example("autogen_selector_research").build(model())
    graph, cat = qls.export_autogen(team, tools={"search_web_tool": {"effect": "read", "returns": "untrusted"},
                                                 "percentage_change_tool": {"effect": "read"}})
    assert graph["entry"] == "SelectorGroupChat:selector"
    assert graph["agents"]["WebSearchAgent"]["budget"] == 25  # MaxMessageTermination(25) | TextMention
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert findings == {("QG101", "search_web_tool"), ("QG101", "percentage_change_tool")} and rc == 0

    graph, cat = qls.export_autogen(example("autogen_swarm_support").build(model()))
    kinds = {n["id"]: n["kind"] for n in graph["nodes"]}
    assert kinds["travel_agent:user"] == kinds["flights_refunder:user"] == "human"
    rc, findings, _ = verify(tmp_path, graph, cat)
    # refund_flight runs unchecked; HandoffTermination | TextMentionTermination bounds no count.
    assert findings == {("QG001", "refund_flight"), ("QG023", "cycle:travel_agent")} and rc == 1


def test_the_calls_of_one_step_run_at_once_on_one_guard(tmp_path):
    """AutoGen runs a step's tool calls concurrently (`asyncio.gather`), each through its wrapped
    tool: the tools run together (each waits until all eight run), every run is on the history,
    and of eight calls of an at-most-once read one runs."""
    n = 8
    for trial in range(5):
        together = asyncio.Barrier(n)
        ran: list[str] = []

        async def get_order(order_id: str) -> str:
            """Look an order up."""
            await asyncio.wait_for(together.wait(), 30)
            ran.append(order_id)
            return "paid"

        async def lookup_credit(customer: str) -> str:
            """Look a customer's credit score up."""
            ran.append(customer)
            await asyncio.sleep(0.005)
            return "700"

        g = AutogenGuard(qls.Guard(CATALOGUE, key=KEY))
        steps = [[("get_order", {"order_id": f"o{i}"}) for i in range(n)],
                 [("lookup_credit", {"customer": f"c{i}"}) for i in range(n)]]
        agent = AssistantAgent("desk", model(*steps), max_tool_iterations=3, tools=g.tools([get_order, lookup_credit]))
        out = asyncio.run(agent.run(task="orders, then scores"))
        assert sorted(r for r in ran if r.startswith("o")) == [f"o{i}" for i in range(n)]
        assert len([r for r in ran if r.startswith("c")]) == 1, f"trial {trial}: {ran}"
        calls = [e for e in g.guard.history["entries"] if e.get("kind", "call") == "call"]
        assert sorted((e["tool"], e["decision"]) for e in calls) == sorted(
            [("get_order", "allow")] * n + [("lookup_credit", "allow")] + [("lookup_credit", "refuse")] * (n - 1))
        assert sum("at_most 1" in r for r in results(out).values()) == n - 1
        assert g.guard.verify_history() is None
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"
