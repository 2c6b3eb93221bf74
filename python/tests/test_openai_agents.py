"""An OpenAI Agents SDK triage agent with hand-offs, exported with `export_openai_agents` and verified
with the `qls` binary (nothing is run: the SDK's objects are only read)."""

from __future__ import annotations

import pytest

from conftest import verify

agents = pytest.importorskip("agents")
from agents import Agent, Handoff, function_tool, handoff  # noqa: E402

from qls import QlsExportNote, export_openai_agents  # noqa: E402


@function_tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return ""


@function_tool
def read_inbox() -> str:
    """Read the customer's latest mail."""
    return ""


@function_tool(needs_approval=True)
def refund_order(order_id: str, amount: int) -> str:
    """Refund an order."""
    return ""


@function_tool
def change_address(order_id: str, address: str) -> str:
    """Change where an order ships."""
    return ""


def triage(approval: bool = True) -> Agent:
    billing = Agent(name="billing", instructions="Refunds.", tools=[lookup_order, refund_order if approval else change_address])
    shipping = Agent(name="shipping", instructions="Addresses.", tools=[lookup_order, change_address])
    return Agent(name="triage", instructions="Route the customer.", tools=[read_inbox],
                 handoffs=[billing, handoff(shipping)])


TOOLS = {"lookup_order": {"effect": "read"}, "read_inbox": {"effect": "read", "returns": "untrusted"}}


def test_triage_agent_hands_off_and_approval_gates_the_refund(tmp_path):
    graph, cat = export_openai_agents(triage(), tools=TOOLS)
    ids = {n["id"]: n["kind"] for n in graph["nodes"]}
    assert graph["entry"] == "triage"
    assert ids["billing:approval"] == "human"
    assert cat["tools"]["refund_order"]["effect"] == "write"  # nobody said: the dangerous reading
    assert cat["tools"]["refund_order"]["args"]["required"] == ["order_id", "amount"]
    handoffs = {(e["from"], e["to"]) for e in graph["edges"] if e["kind"] == "handoff"}
    assert ("triage", "billing") in handoffs
    assert ("triage", "shipping") in handoffs  # a `handoff(agent)` object, read through
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert ("QG001", "refund_order") in findings  # the SDK runs tools with no qls check
    assert ob["QG012:refund_order"] == "unreachable"  # approved by a person each time
    assert rc == 1


def test_a_handoff_whose_agent_cannot_be_read_is_written_as_unmodelled(tmp_path):
    async def invoke(ctx, args):  # pragma: no cover - never run
        raise AssertionError

    opaque = Handoff(tool_name="transfer_to_legacy", tool_description="Legacy desk.",
                     input_json_schema={}, on_invoke_handoff=invoke, agent_name="legacy")
    agent = Agent(name="front", instructions="Route.", tools=[lookup_order], handoffs=[opaque])
    with pytest.warns(QlsExportNote, match="Handoff object"):
        graph, cat = export_openai_agents(agent, tools={"lookup_order": {"effect": "read"}})
    dyn = [e for e in graph["edges"] if e["kind"] == "dynamic"]
    assert dyn and dyn[0]["targets"] is None
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG016", "front:handoff:legacy") in findings
    assert rc == 1  # not a clean proof


def test_approval_decided_by_a_function_earns_no_credit():
    @function_tool(needs_approval=lambda ctx, params, call_id: params.get("amount", 0) > 100)
    def refund_small(order_id: str, amount: int) -> str:
        """Refund an order; large refunds need a person."""
        return ""

    agent = Agent(name="desk", instructions="Refunds.", tools=[refund_small])
    with pytest.warns(QlsExportNote, match="never approved"):
        graph, _ = export_openai_agents(agent)
    assert all(n["kind"] != "human" for n in graph["nodes"])
