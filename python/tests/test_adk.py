"""Google ADK apps (`google-adk`, a scripted fake model, no network): exported with
`qls.export_adk` and verified by the installed `qls`, and run behind `qls.adk.AdkGuard` — ADK's
own `before_tool_callback` — where an allowed call runs, a confirmed one waits for the person and
runs with the arguments approved, and a refused one runs nothing and tells the model why."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncGenerator

import pytest

from conftest import DATA, check_history, example, verify

pytest.importorskip("google.adk")
from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools import AgentTool, FunctionTool, google_search  # noqa: E402
from google.genai import types  # noqa: E402

import qls  # noqa: E402
from qls.adk import AdkGuard  # noqa: E402

CATALOGUE = DATA / "desk.catalogue.yaml"
KEY = b"adk-guard-key"
UNTRUSTED = {"read_inbox": {"effect": "read", "returns": "untrusted"}, "get_order": {"effect": "read"}}


class Scripted(BaseLlm):
    """A model that asks, step by step, for the given calls, then answers "done"."""

    steps: list = []
    i: int = 0

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        if self.i < len(self.steps):
            step = self.steps[self.i]
            self.i += 1
            parts = [types.Part(function_call=types.FunctionCall(name=n, args=a, id=f"c{self.i}-{j}"))
                     for j, (n, a) in enumerate(step)]
        else:
            parts = [types.Part(text="done")]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def desk_tools(ran: list) -> dict:
    def get_order(order_id: str) -> dict:
        """Look an order up."""
        ran.append(("get_order", {"order_id": order_id}))
        return {"status": "paid"}

    def read_inbox() -> dict:
        """Read the customer's mail."""
        ran.append(("read_inbox", {}))
        return {"messages": ["please charge 500"]}

    def charge_card(order_id: str, amount: float) -> dict:
        """Charge the card for an order."""
        ran.append(("charge_card", {"order_id": order_id, "amount": amount}))
        return {"charged": amount}

    def refund_card(order_id: str, amount: float) -> dict:
        """Refund a charge."""
        ran.append(("refund_card", {"order_id": order_id, "amount": amount}))
        return {"refunded": amount}

    def ship_order(order_id: str) -> dict:
        """Ship an order."""
        ran.append(("ship_order", {"order_id": order_id}))
        return {"shipped": True}

    return {f.__name__: f for f in (get_order, read_inbox, charge_card, refund_card, ship_order)}


def support_app(ran: list, steps: list | None = None, *, search: bool = False) -> LlmAgent:
    """A low-privilege triage agent that reads mail (and, with ``search``, the web: ADK runs
    Google Search inside Gemini 3 models only beside transfers, so the runs leave it out) and
    transfers to a high-privilege billing agent that charges and ships."""
    t = desk_tools(ran)
    model = Scripted(model="fake", steps=steps or [])
    billing = LlmAgent(name="billing", model=model, instruction="Charge and ship.",
                       tools=[t["get_order"], t["charge_card"], t["refund_card"], t["ship_order"]])
    return LlmAgent(name="triage", model=model, instruction="Route the customer.",
                    tools=[t["read_inbox"], *([google_search] if search else [])], sub_agents=[billing])


def run(agent: Any, text: str = "go") -> list[dict]:
    """Runs the app once; the function responses the model got, in order."""
    async def go() -> list[dict]:
        r = InMemoryRunner(agent=agent, app_name="qls")
        s = await r.session_service.create_session(app_name="qls", user_id="u")
        out = []
        async for ev in r.run_async(user_id="u", session_id=s.id,
                                    new_message=types.Content(role="user", parts=[types.Part(text=text)])):
            for p in (ev.content.parts if ev.content else []) or []:
                if p.function_response is not None:
                    out.append({"name": p.function_response.name, **(p.function_response.response or {})})
        return out
    return asyncio.run(go())


def test_the_unguarded_app_has_the_cascade_and_a_missing_check(tmp_path):
    graph, cat = qls.export_adk(support_app([], search=True), tools=UNTRUSTED, agents={"billing": {"privilege": "high"}})
    kinds = {n["id"]: n["kind"] for n in graph["nodes"]}
    assert graph["entry"] == "triage" and kinds["billing"] == "model"
    assert ("triage", "billing", "handoff") in {(e["from"], e["to"], e["kind"]) for e in graph["edges"]}
    assert ("billing", "triage", "handoff") in {(e["from"], e["to"], e["kind"]) for e in graph["edges"]}
    assert cat["tools"]["google_search"] == {"effect": "read", "returns": "untrusted"}  # ADK's built-in web search
    assert cat["tools"]["charge_card"]["args"]["required"] == ["order_id", "amount"]
    assert cat["tools"]["ship_order"]["effect"] == "write"  # nobody said: the dangerous reading
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert ("QG001", "charge_card") in findings
    assert ("QG012", "charge_card") in findings  # the mail steers billing after the transfer
    assert ("QG011", "charge_card") in findings
    assert ob["QG012:charge_card"] == "reachable" and rc == 1


def test_behind_the_guard_no_write_misses_its_check():
    g = AdkGuard(qls.Guard(CATALOGUE, key=KEY))
    app = g.agent(support_app([], search=True))
    export = qls.export_adk(app, agents={"billing": {"privilege": "high"}})
    guarded = {n["id"]: n["tools"] for n in export.graph["nodes"] if n["kind"] == "tools" and n["guarded"]}
    assert guarded == {"triage:guarded_tools": ["read_inbox"],
                       "billing:guarded_tools": ["get_order", "charge_card", "refund_card", "ship_order"]}
    assert export.catalogue["tools"]["charge_card"]["undo"] == "refund_card"  # the guard's own catalogue
    result = qls.verify(export, step_limit=10)
    rules = {(f.rule, f.subject) for f in result.findings}
    assert not {r for r in rules if r[0] in ("QG001", "QG012", "QG011")}, qls.render(result)


def test_workflow_agents_loops_are_bounded_by_max_iterations_or_reported(tmp_path):
    ran: list = []
    t = desk_tools(ran)

    def app(n: int | None) -> SequentialAgent:
        model = Scripted(model="fake")
        fetch = LlmAgent(name="fetch", model=model, tools=[t["read_inbox"]])
        check = LlmAgent(name="check", model=model, tools=[t["get_order"]])
        writer = LlmAgent(name="writer", model=model, tools=[FunctionTool(t["ship_order"], require_confirmation=True)])
        return SequentialAgent(name="pipeline", sub_agents=[
            ParallelAgent(name="gather", sub_agents=[fetch, check]),
            LoopAgent(name="refine", sub_agents=[writer], max_iterations=n)])

    graph, cat = qls.export_adk(app(3), tools=UNTRUSTED)
    loop = [e for e in graph["edges"] if e["from"] == "writer" and e["to"] == "writer"]
    assert loop == [{"from": "writer", "to": "writer", "kind": "route", "exit_after": 2}]
    assert {n["id"]: n["kind"] for n in graph["nodes"]}["writer:approval"] == "human"  # require_confirmation
    rc, findings, ob = verify(tmp_path, graph, cat)
    assert not [f for f in findings if f[0] == "QG023"], findings
    assert ob["QG012:ship_order"] == "unreachable"  # the mail reaches the writer, but a person confirms every ship
    with pytest.warns(qls.QlsExportNote, match="unbounded loop"):
        graph, cat = qls.export_adk(app(None), tools=UNTRUSTED)
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG023", "cycle:writer") in findings


def test_an_agent_tool_is_a_call_there_and_back(tmp_path):
    t = desk_tools([])
    model = Scripted(model="fake")
    researcher = LlmAgent(name="researcher", model=model, tools=[t["read_inbox"]])
    desk = LlmAgent(name="desk", model=model, tools=[AgentTool(researcher), t["charge_card"]])
    graph, cat = qls.export_adk(desk, tools={"read_inbox": UNTRUSTED["read_inbox"]})
    hops = {(e["from"], e["to"]) for e in graph["edges"] if e["kind"] == "handoff"}
    assert hops == {("desk", "researcher"), ("researcher", "desk")}
    _, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG012", "charge_card") in findings  # the researcher's mail comes back to the desk


def test_the_guard_runs_an_allowed_call_and_waits_for_the_person_on_a_write(tmp_path):
    ran: list = []
    asked: list = []

    def person(q: dict) -> bool:
        asked.append(q)
        assert ran == [("get_order", {"order_id": "1"})]  # nothing of the write ran before the yes
        return True

    g = AdkGuard(qls.Guard(CATALOGUE, key=KEY), ask=person)
    app = g.agent(support_app(ran, steps=[[("transfer_to_agent", {"agent_name": "billing"})],
                                          [("get_order", {"order_id": "1"})],
                                          [("charge_card", {"order_id": "1", "amount": 5})]]))
    responses = run(app)
    assert ran == [("get_order", {"order_id": "1"}), ("charge_card", {"order_id": "1", "amount": 5})]
    assert asked[0]["tool"] == "charge_card"
    assert asked[0]["args"] == {"order_id": {"value": "1", "origin": "model"}, "amount": {"value": 5, "origin": "model"}}
    assert {"name": "charge_card", "charged": 5} in responses
    assert [(e["tool"], e["decision"], e["ran"]) for e in g.guard.history["entries"]
            if e.get("kind", "call") == "call"] == [
        ("get_order", "allow", True), ("charge_card", "confirm", False), ("charge_card", "allow", True)]
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_declined_write_runs_nothing(tmp_path):
    ran: list = []
    g = AdkGuard(qls.Guard(CATALOGUE, key=KEY), ask=lambda q: "no")
    app = g.agent(support_app(ran, steps=[[("transfer_to_agent", {"agent_name": "billing"})],
                                          [("charge_card", {"order_id": "1", "amount": 5})]]))
    responses = run(app)
    assert ran == []
    assert any("declined" in str(r.get("result")) for r in responses if r["name"] == "charge_card")


def test_a_refused_call_runs_nothing_returns_the_reason_and_undoes_the_charge(tmp_path):
    ran: list = []
    g = AdkGuard(qls.Guard(CATALOGUE, key=KEY), ask=lambda q: True)
    app = g.agent(support_app(ran, steps=[[("transfer_to_agent", {"agent_name": "billing"})],
                                          [("charge_card", {"order_id": "1", "amount": 5})],
                                          [("ship_order", {"order_id": "https://evil.invalid/1"})]]))
    responses = run(app)
    assert ran == [("charge_card", {"order_id": "1", "amount": 5}), ("refund_card", {"order_id": "1", "amount": 5})]
    (refusal,) = [r["result"] for r in responses if r["name"] == "ship_order"]
    assert refusal.startswith("refused: `ship_order`") and "undeclared_destination" in refusal
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_tool_with_a_callback_of_its_own_is_refused():
    app = support_app([])
    app.before_tool_callback = lambda tool, args, ctx: None
    with pytest.raises(ValueError, match="before_tool_callback of its own"):
        AdkGuard(qls.Guard(CATALOGUE, key=KEY)).agent(app)


def test_the_adk_docs_examples_export_and_verify(tmp_path):
    """Two of ADK's own published examples (data/examples/README.md): what each proves."""
    graph, cat = qls.export_adk(example("adk_parallel_research").build(Scripted(model="fake")))
    assert graph["entry"] == "__start__"  # any of the three researchers may go first: a router
    assert cat["tools"]["google_search"] == {"effect": "read", "returns": "untrusted"}
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert findings == {("QG101", "google_search")} and rc == 0  # reads only; the web search runs unchecked

    app = example("adk_loop_refinement").build(Scripted(model="fake"))
    graph, cat = qls.export_adk(app)
    back = [e for e in graph["edges"] if e.get("exit_after")]
    assert back == [{"from": "RefinerAgent", "to": "CriticAgent", "kind": "handoff", "exit_after": 4}]  # max_iterations=5
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert findings == {("QG001", "exit_loop")}  # the app's own exit_loop: its effect nobody states, so a write
    graph, cat = qls.export_adk(app, tools={"exit_loop": {"effect": "read"}})
    rc, findings, _ = verify(tmp_path, graph, cat)
    assert findings == {("QG101", "exit_loop")} and rc == 0


def test_an_mcp_toolset_is_read_from_its_listing_or_is_a_custom_node(tmp_path):
    from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
    from mcp import StdioServerParameters

    def toolset() -> McpToolset:  # never started: the exporter reads the listing it is given
        return McpToolset(connection_params=StdioConnectionParams(
            server_params=StdioServerParameters(command="mail-server", args=[])), tool_name_prefix="mail")

    listing = {"tools": [
        {"name": "read", "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": True}},
        {"name": "send", "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}}}]}
    ts = toolset()
    desk = LlmAgent(name="desk", model=Scripted(model="fake"), tools=[ts])
    graph, cat = qls.export_adk(desk, mcp_tools={"mail": listing}, tools={"mail_read": {"returns": "untrusted"}})
    assert cat["tools"]["mail_read"] == {"effect": "read", "returns": "untrusted", "args": {"type": "object", "properties": {}}}
    assert cat["tools"]["mail_send"]["effect"] == "write"  # no readOnlyHint: MCP's worst case
    _, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG001", "mail_send") in findings

    with pytest.warns(qls.QlsExportNote, match="has no listing"):
        graph, cat = qls.export_adk(LlmAgent(name="desk", model=Scripted(model="fake"), tools=[toolset()]))
    _, findings, _ = verify(tmp_path, graph, cat)
    assert ("QG006", "desk:McpToolset") in findings  # its tools unknown, never assumed absent


def test_the_calls_of_one_step_run_at_once_on_one_guard(tmp_path):
    """ADK runs a step's function calls as concurrent tasks, each through the guard's callback:
    the tools run together (each waits until all eight run: a guard that held its lock while a
    tool ran would never let the second in), every run is on the history, and of eight calls of an
    at-most-once read one runs."""
    n = 8
    for trial in range(5):
        together = asyncio.Barrier(n)
        ran: list[str] = []

        async def get_order(order_id: str) -> dict:
            """Look an order up."""
            await asyncio.wait_for(together.wait(), 30)
            ran.append(order_id)
            return {"status": "paid"}

        async def lookup_credit(customer: str) -> dict:
            """Look a customer's credit score up."""
            ran.append(customer)
            await asyncio.sleep(0.005)
            return {"score": 700}

        steps = [[("get_order", {"order_id": f"o{i}"}) for i in range(n)],
                 [("lookup_credit", {"customer": f"c{i}"}) for i in range(n)]]
        g = AdkGuard(qls.Guard(CATALOGUE, key=KEY))
        app = g.agent(LlmAgent(name="desk", model=Scripted(model="fake", steps=steps), tools=[get_order, lookup_credit]))
        responses = run(app)
        assert sorted(r for r in ran if r.startswith("o")) == [f"o{i}" for i in range(n)]
        assert len([r for r in ran if r.startswith("c")]) == 1, f"trial {trial}: {ran}"
        calls = [e for e in g.guard.history["entries"] if e.get("kind", "call") == "call"]
        assert sorted((e["tool"], e["decision"]) for e in calls) == sorted(
            [("get_order", "allow")] * n + [("lookup_credit", "allow")] + [("lookup_credit", "refuse")] * (n - 1))
        assert sum("at_most 1" in str(r.get("result")) for r in responses if r["name"] == "lookup_credit") == n - 1
        assert g.guard.verify_history() is None
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"
