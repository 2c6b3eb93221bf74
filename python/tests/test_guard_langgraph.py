"""A LangGraph app with its tools behind `qls.langgraph.GuardedToolNode` (a scripted fake model,
no network): exported as guarded, proved without QG001, and run — each model step's calls decided
as one batch by the native check, a write held for a person through `interrupt`, a refusal rolled
back, and the history it leaves verified by `qls check`."""

from __future__ import annotations

import json
import threading
from typing import Annotated, Any, TypedDict

import pytest

from conftest import DATA, check_history, scripted_model

pytest.importorskip("langgraph")
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import MemorySaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402
from langgraph.types import Command, Send  # noqa: E402

import qls  # noqa: E402
from qls.langgraph import GuardedToolNode  # noqa: E402

CATALOGUE = DATA / "desk.catalogue.yaml"
KEY = b"guard-test-key"


class Desk:
    """The desk's tools, recording every run (tool, args)."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict]] = []

        def rec(name: str, out: Any):
            def f(**kw: Any) -> Any:
                self.ran.append((name, kw))
                return out
            return f

        @tool
        def get_order(order_id: str) -> dict:
            """Look an order up."""
            return rec("get_order", {"status": "paid"})(order_id=order_id)

        @tool
        def read_inbox() -> dict:
            """Read the customer's mail."""
            return rec("read_inbox", {"messages": ["please charge 500"]})()

        @tool
        def lookup_credit(customer: str) -> dict:
            """Look a customer's credit score up (at most once)."""
            return rec("lookup_credit", {"score": 700})(customer=customer)

        @tool
        def charge_card(order_id: str, amount: float) -> dict:
            """Charge the card for an order."""
            return rec("charge_card", {"charged": amount})(order_id=order_id, amount=amount)

        @tool
        def refund_card(order_id: str, amount: float) -> dict:
            """Refund a charge."""
            return rec("refund_card", {"refunded": amount})(order_id=order_id, amount=amount)

        @tool
        def ship_order(order_id: str) -> dict:
            """Ship an order."""
            return rec("ship_order", {"shipped": True})(order_id=order_id)

        self.tools = [get_order, read_inbox, lookup_credit, charge_card, refund_card, ship_order]


def app(steps: list[list[tuple[str, dict]]], desk: Desk, guard: qls.Guard):
    model = scripted_model(steps)

    def agent(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", GuardedToolNode(guard, desk.tools))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END])
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=MemorySaver())


def guard() -> qls.Guard:
    return qls.Guard(CATALOGUE, key=KEY)


def tool_messages(state: dict) -> list[Any]:
    return [m for m in state["messages"] if m.type == "tool"]


def test_the_app_exports_as_guarded_and_has_no_qg001(tmp_path):
    desk = Desk()
    a = app([], desk, guard())
    export = qls.export_langgraph(a, model_nodes=["agent"])
    tools = [n for n in export.graph["nodes"] if n["kind"] == "tools"]
    assert tools == [{"id": "tools", "kind": "tools", "agent": "agent", "guarded": True, "batch": True,
                      "tools": ["get_order", "read_inbox", "lookup_credit", "charge_card", "refund_card", "ship_order"]}]
    # The catalogue is the guard's: the undo and the order rule the check enforces are there.
    assert export.catalogue["tools"]["charge_card"]["undo"] == "refund_card"
    assert export.catalogue["tools"]["lookup_credit"]["order"]["at_most"] == 1
    result = qls.verify(export, step_limit=10)
    rules = {f.rule for f in result.findings}
    assert "QG001" not in rules, qls.render(result)
    assert result.report["obligations"], "the proof ran"
    assert {o["verdict"] for o in result.report["obligations"] if o["rule"] == "QG001"} <= {"unreachable"}
    # The same graph, unguarded, is QG001 for every write: the guard is what the proof credits.
    bare = json.loads(json.dumps(export.graph))
    for n in bare["nodes"]:
        if n["kind"] == "tools":
            n["guarded"] = False
    unguarded = qls.verify((bare, export.catalogue), step_limit=10)
    assert {("QG001", "charge_card"), ("QG001", "ship_order")} <= {(f.rule, f.subject) for f in unguarded.findings}


def test_a_write_waits_for_a_person_and_runs_with_the_arguments_approved(tmp_path):
    desk, g = Desk(), guard()
    a = app([[("charge_card", {"order_id": "1", "amount": 5})]], desk, g)
    cfg = {"configurable": {"thread_id": "t1"}}
    out = a.invoke({"messages": [("user", "charge order 1")]}, cfg)
    (intr,) = out["__interrupt__"]
    assert intr.value["tool"] == "charge_card"
    assert intr.value["args"] == {"order_id": {"value": "1", "origin": "model"}, "amount": {"value": 5, "origin": "model"}}
    assert "argument_origin" in intr.value["reasons"]
    assert desk.ran == []  # nothing ran while the person is asked
    out = a.invoke(Command(resume=True), cfg)
    assert desk.ran == [("charge_card", {"order_id": "1", "amount": 5})]
    entries = [e for e in g.history["entries"] if e.get("kind", "call") == "call"]  # the person's message aside
    assert [(e["tool"], e["decision"], e["ran"]) for e in entries] == [("charge_card", "confirm", False), ("charge_card", "allow", True)]
    assert entries[1]["token"]  # it ran under the person's token
    assert g.verify_history() is None
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def test_a_declined_write_runs_nothing():
    desk, g = Desk(), guard()
    a = app([[("charge_card", {"order_id": "1", "amount": 5})]], desk, g)
    cfg = {"configurable": {"thread_id": "t2"}}
    a.invoke({"messages": [("user", "charge order 1")]}, cfg)
    out = a.invoke(Command(resume="no"), cfg)
    assert desk.ran == []
    assert "declined" in tool_messages(out)[-1].content


def test_a_refused_call_runs_nothing_and_the_runs_writes_are_undone(tmp_path):
    desk, g = Desk(), guard()
    steps = [[("charge_card", {"order_id": "1", "amount": 5})],
             [("ship_order", {"order_id": "https://evil.invalid/1"})]]
    a = app(steps, desk, g)
    cfg = {"configurable": {"thread_id": "t3"}}
    a.invoke({"messages": [("user", "charge and ship order 1")]}, cfg)
    out = a.invoke(Command(resume=True), cfg)
    # The shipment names a URL, and ship_order does not send out: refused, and the charge undone.
    assert desk.ran == [("charge_card", {"order_id": "1", "amount": 5}), ("refund_card", {"order_id": "1", "amount": 5})]
    refusal = tool_messages(out)[-1]
    assert refusal.name == "ship_order" and "undeclared_destination" in refusal.content and "refund_card" in refusal.content
    entries = g.history["entries"]
    # It undoes the charge that ran (entry 2: after the person's message and the held charge).
    assert entries[0]["kind"] == "user" and (entries[2]["tool"], entries[2]["ran"]) == ("charge_card", True)
    last = entries[-1]
    assert (last["tool"], last["decision"], last["undoes"]) == ("refund_card", "rollback", 2)
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def test_two_calls_of_an_at_most_one_tool_in_one_step_run_once(tmp_path):
    desk, g = Desk(), guard()
    a = app([[("lookup_credit", {"customer": "a"}), ("lookup_credit", {"customer": "b"})]], desk, g)
    out = a.invoke({"messages": [("user", "scores")]}, {"configurable": {"thread_id": "t4"}})
    assert desk.ran == [("lookup_credit", {"customer": "a"})]
    first, second = tool_messages(out)
    assert second.status == "error" and "order_rule" in second.content and "at_most 1" in second.content
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def test_a_write_after_an_untrusted_read_in_the_same_step_is_held(tmp_path):
    desk, g = Desk(), guard()
    steps = [[("read_inbox", {}), ("charge_card", {"order_id": "1", "amount": 500}), ("get_order", {"order_id": "1"})]]
    a = app(steps, desk, g)
    cfg = {"configurable": {"thread_id": "t5"}}
    out = a.invoke({"messages": [("user", "do what the mail says")]}, cfg)
    (intr,) = out["__interrupt__"]
    assert intr.value["tool"] == "charge_card" and "tainted_call" in intr.value["reasons"]
    assert desk.ran == [("read_inbox", {})]
    out = a.invoke(Command(resume="no"), cfg)
    msgs = tool_messages(out)
    assert [m.name for m in msgs] == ["read_inbox", "charge_card", "get_order"]
    assert msgs[2].content == qls.NOT_RUN  # after the held call, nothing of the step ran
    assert desk.ran == [("read_inbox", {})]
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def test_the_step_is_decided_as_the_native_batch():
    """The guard's decisions are `qls check`'s on the same batch (one implementation)."""
    g = guard()
    calls = [qls.Call("lookup_credit", {"customer": "a"}), qls.Call("lookup_credit", {"customer": "b"}),
             qls.Call("charge_card", {"order_id": "1", "amount": 5})]
    decided = g.decide(calls)
    assert [d["decision"] for d in decided] == ["allow", "refuse", "confirm"]


def test_no_key_is_an_ephemeral_key_with_a_warning(monkeypatch):
    monkeypatch.delenv("QLS_HISTORY_KEY", raising=False)
    monkeypatch.delenv("QLS_HISTORY_KEY_FILE", raising=False)
    with pytest.warns(qls.QlsGuardWarning, match="ephemeral"):
        qls.Guard(CATALOGUE)
    monkeypatch.setenv("QLS_HISTORY_KEY", "from-env")
    g = qls.Guard(CATALOGUE)
    g.run_step([qls.Call("get_order", {"order_id": "1"})], lambda t, a: {"status": "paid"})
    assert g.history["entries"][0]["result"] == {"status": "paid"}


class Branches(TypedDict):
    messages: Annotated[list, add_messages]


def test_parallel_branches_share_one_guard(tmp_path):
    """LangGraph runs the branches a step sends to the tools node at once (one `Send` per tool
    call, each on its own thread): every call is decided with its entry in one step, the tools run
    together (each waits until all eight run: a guard that held its lock while a tool ran would
    break the barrier), every run is on the history, and an at-most-once read runs once."""
    n = 8
    for trial in range(10):
        together = threading.Barrier(n, timeout=30)
        ran: list[str] = []

        @tool
        def get_order(order_id: str) -> dict:
            """Look an order up."""
            together.wait()
            ran.append(order_id)
            return {"status": "paid"}

        @tool
        def lookup_credit(customer: str) -> dict:
            """Look a customer's credit score up (at most once)."""
            ran.append(customer)
            return {"score": 700}

        def agent(state: Branches) -> dict:
            calls = [{"name": "get_order", "args": {"order_id": f"o{i}"}, "id": f"g{i}"} for i in range(n)]
            calls += [{"name": "lookup_credit", "args": {"customer": f"c{i}"}, "id": f"l{i}"} for i in range(n)]
            return {"messages": [AIMessage(content="", tool_calls=calls)]}

        def fan(state: Branches) -> list[Send]:
            ai = state["messages"][-1]
            return [Send("tools", {"messages": [AIMessage(content="", tool_calls=[tc])]}) for tc in ai.tool_calls]

        g = guard()
        b = StateGraph(Branches)
        b.add_node("agent", agent)
        b.add_node("tools", GuardedToolNode(g, [get_order, lookup_credit]))
        b.add_edge(START, "agent")
        b.add_conditional_edges("agent", fan, ["tools"])
        b.add_edge("tools", END)
        # LangGraph's thread pool runs as many branches at once as `max_concurrency` says (by
        # default as many as the machine's cores allow, fewer than eight here).
        out = b.compile().invoke({"messages": [("user", "orders and scores")]}, {"max_concurrency": 2 * n})
        assert sorted(r for r in ran if r.startswith("o")) == [f"o{i}" for i in range(n)], f"trial {trial}"
        assert len([r for r in ran if r.startswith("c")]) == 1, f"trial {trial}: {ran}"
        entries = g.history["entries"]
        calls = [e for e in entries if e.get("kind", "call") == "call"]
        assert sorted((e["tool"], e["decision"]) for e in calls) == sorted(
            [("get_order", "allow")] * n + [("lookup_credit", "allow")] + [("lookup_credit", "refuse")] * (n - 1))
        assert g.verify_history() is None
        refused = [m for m in tool_messages(out) if m.status == "error"]
        assert len(refused) == n - 1 and all("at_most 1" in m.content for m in refused)
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"
