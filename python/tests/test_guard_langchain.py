"""A LangChain 1.x agent (`create_agent`) with its tools behind `qls.langchain.GuardMiddleware`
(a scripted fake model, no network): exported as guarded, proved without QG001, and run — the
tool calls `create_agent` sends as separate tasks decided as one batch in the model's order, a
write held for a person through `interrupt`, a refusal rolled back, and the history it leaves
verified by `qls check`."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import check_history, scripted_model
from test_guard_langgraph import CATALOGUE, KEY, Desk, tool_messages

pytest.importorskip("langchain")
from langchain.agents import create_agent  # noqa: E402
from langgraph.checkpoint.memory import MemorySaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

import qls  # noqa: E402
from qls.langchain import GuardMiddleware  # noqa: E402


def agent(steps: list[list[tuple[str, dict]]], desk: Desk, guard: qls.Guard) -> Any:
    return create_agent(scripted_model(steps), tools=desk.tools,
                        middleware=[GuardMiddleware(guard, desk.tools)], checkpointer=MemorySaver())


def guard() -> qls.Guard:
    return qls.Guard(CATALOGUE, key=KEY)


def test_the_agent_exports_as_guarded_and_has_no_qg001():
    a = agent([], Desk(), guard())
    export = qls.export_langgraph(a, model_nodes=["model"])
    tools = [n for n in export.graph["nodes"] if n["kind"] == "tools"]
    assert len(tools) == 1 and tools[0]["guarded"] is True, export.graph
    assert set(tools[0]["tools"]) == {"get_order", "read_inbox", "lookup_credit", "charge_card", "refund_card", "ship_order"}
    assert export.catalogue["tools"]["charge_card"]["undo"] == "refund_card"
    result = qls.verify(export, step_limit=10)
    assert "QG001" not in {f.rule for f in result.findings}, qls.render(result)
    assert result.report["obligations"], "the proof ran"
    # Without the middleware the same agent's writes are QG001: the guard is what the proof credits.
    bare = create_agent(scripted_model([]), tools=Desk().tools)
    unguarded = qls.verify(qls.export_langgraph(bare, model_nodes=["model"]), step_limit=10)
    assert {("QG001", "charge_card"), ("QG001", "ship_order")} <= {(f.rule, f.subject) for f in unguarded.findings}


def test_a_write_waits_for_a_person_and_runs_with_the_arguments_approved(tmp_path):
    desk, g = Desk(), guard()
    a = agent([[("charge_card", {"order_id": "1", "amount": 5})]], desk, g)
    cfg = {"configurable": {"thread_id": "m1"}}
    out = a.invoke({"messages": [("user", "charge order 1")]}, cfg)
    (intr,) = out["__interrupt__"]
    assert intr.value["tool"] == "charge_card"
    assert intr.value["args"] == {"order_id": {"value": "1", "origin": "model"}, "amount": {"value": 5, "origin": "model"}}
    assert desk.ran == []
    a.invoke(Command(resume=True), cfg)
    assert desk.ran == [("charge_card", {"order_id": "1", "amount": 5})]
    entries = [e for e in g.history["entries"] if e.get("kind", "call") == "call"]  # the person's message aside
    assert [(e["tool"], e["decision"], e["ran"]) for e in entries] == [("charge_card", "confirm", False), ("charge_card", "allow", True)]
    assert entries[1]["token"]
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def test_a_declined_write_runs_nothing():
    desk, g = Desk(), guard()
    a = agent([[("charge_card", {"order_id": "1", "amount": 5})]], desk, g)
    cfg = {"configurable": {"thread_id": "m2"}}
    a.invoke({"messages": [("user", "charge order 1")]}, cfg)
    out = a.invoke(Command(resume="no"), cfg)
    assert desk.ran == []
    assert "declined" in tool_messages(out)[-1].content


def test_a_refused_call_runs_nothing_and_the_runs_writes_are_undone(tmp_path):
    desk, g = Desk(), guard()
    steps = [[("charge_card", {"order_id": "1", "amount": 5})],
             [("ship_order", {"order_id": "https://evil.invalid/1"})]]
    a = agent(steps, desk, g)
    cfg = {"configurable": {"thread_id": "m3"}}
    a.invoke({"messages": [("user", "charge and ship order 1")]}, cfg)
    out = a.invoke(Command(resume=True), cfg)
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
    mw = GuardMiddleware(g, desk.tools)
    a = create_agent(scripted_model([[("lookup_credit", {"customer": "a"}), ("lookup_credit", {"customer": "b"})]]),
                     tools=desk.tools, middleware=[mw], checkpointer=MemorySaver())
    out = a.invoke({"messages": [("user", "scores")]}, {"configurable": {"thread_id": "m4"}})
    assert mw._steps == {}, "a settled model answer is forgotten"
    assert desk.ran == [("lookup_credit", {"customer": "a"})]
    by_id = {m.tool_call_id: m for m in tool_messages(out)}
    assert "order_rule" in by_id["call-0-1"].content and by_id["call-0-1"].status == "error"
    # The calls run at once: the first may come back after the second was decided (a result
    # entry then completes it).
    calls = [(e["tool"], e["decision"]) for e in g.history["entries"] if e.get("kind", "call") == "call"]
    assert calls == [("lookup_credit", "allow"), ("lookup_credit", "refuse")]
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def test_a_write_after_an_untrusted_read_in_the_same_step_is_held(tmp_path):
    desk, g = Desk(), guard()
    steps = [[("read_inbox", {}), ("charge_card", {"order_id": "1", "amount": 500}), ("get_order", {"order_id": "1"})]]
    a = agent(steps, desk, g)
    cfg = {"configurable": {"thread_id": "m5"}}
    out = a.invoke({"messages": [("user", "do what the mail says")]}, cfg)
    (intr,) = out["__interrupt__"]
    assert intr.value["tool"] == "charge_card" and "tainted_call" in intr.value["reasons"]
    assert desk.ran == [("read_inbox", {})]
    out = a.invoke(Command(resume="no"), cfg)
    by_id = {m.tool_call_id: m for m in tool_messages(out)}
    assert by_id["call-0-2"].content == qls.NOT_RUN
    assert desk.ran == [("read_inbox", {})]
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def test_the_calls_of_one_answer_run_at_once_and_are_recorded_in_the_models_order(tmp_path):
    """`create_agent` runs an answer's tool calls as concurrent tasks: each is decided in the
    model's order (it waits for the earlier ones to be *decided*, not run), the tools run together
    (each waits until all eight run), and the history holds every call in the model's order; of
    eight calls of an at-most-once read, the model's first runs."""
    import threading

    from langchain_core.tools import tool

    n = 8
    for trial in range(5):
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

        g = guard()
        steps = [[("get_order", {"order_id": f"o{i}"}) for i in range(n)],
                 [("lookup_credit", {"customer": f"c{i}"}) for i in range(n)]]
        tools = [get_order, lookup_credit]
        a = create_agent(scripted_model(steps), tools=tools, middleware=[GuardMiddleware(g, tools)],
                         checkpointer=MemorySaver())
        # LangGraph's thread pool runs as many tasks at once as `max_concurrency` says (by default
        # as many as the machine's cores allow, fewer than eight here).
        out = a.invoke({"messages": [("user", "orders, then scores")]},
                       {"configurable": {"thread_id": f"p{trial}"}, "max_concurrency": n})
        assert sorted(r for r in ran if r.startswith("o")) == [f"o{i}" for i in range(n)]
        assert [r for r in ran if r.startswith("c")] == ["c0"], f"trial {trial}: {ran}"
        calls = [e for e in g.history["entries"] if e.get("kind", "call") == "call"]
        assert [e["args"].get("order_id") or e["args"].get("customer") for e in calls] == (
            [f"o{i}" for i in range(n)] + [f"c{i}" for i in range(n)])
        assert [e["decision"] for e in calls] == ["allow"] * (n + 1) + ["refuse"] * (n - 1)
        assert g.verify_history() is None
        assert sum(1 for m in tool_messages(out) if m.status == "error") == n - 1
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"
