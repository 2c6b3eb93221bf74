"""Provenance, not authorship (SPEC §2), through LangGraph's `GuardedToolNode` and LangChain's
`GuardMiddleware` with a scripted fake model (no network): the guards record each of the person's
messages (`HumanMessage` in the state) as a `user` history entry and decide with
`origins="auto"` by default. A recipient the person typed is `typed` (the transfer runs without a
person); one copied from an untrusted file's content is `tool` with `external` (taint applies);
a made-up one is the model's (a person confirms)."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import DATA, check_history, scripted_model
from provenance import BILL, IN_FILE, MADE_UP, TYPED, assert_from_file, assert_made_up, assert_task_possible, assert_typed, calls

pytest.importorskip("langgraph")
from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import MemorySaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402

import qls  # noqa: E402
from qls.langgraph import GuardedToolNode  # noqa: E402
from test_guard_langgraph import app as node_app  # noqa: E402  (the guard tests' graph: agent, tools)

KEY = b"provenance-test-key"


class Bank:
    """The bank's tools, recording every run."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict]] = []

        @tool
        def read_file(file_path: str) -> str:
            """Read a file."""
            self.ran.append(("read_file", {"file_path": file_path}))
            return BILL

        @tool
        def send_money(recipient: str, amount: float, subject: str) -> dict:
            """Send money."""
            self.ran.append(("send_money", {"recipient": recipient, "amount": amount, "subject": subject}))
            return {"sent": True}

        self.tools = [read_file, send_money]


def guard() -> qls.Guard:
    return qls.Guard(DATA / "bank.catalogue.yaml", settings=DATA / "bank.agent.yaml", key=KEY)


def pay(recipient: str, amount: float) -> tuple[str, dict]:
    return ("send_money", {"recipient": recipient, "amount": amount, "subject": "as asked"})


def middleware_app(steps: list[list[tuple[str, dict]]], bank: Bank, g: qls.Guard) -> Any:
    from langchain.agents import create_agent

    from qls.langchain import GuardMiddleware

    return create_agent(scripted_model(steps), bank.tools, middleware=[GuardMiddleware(g, bank.tools)],
                        checkpointer=MemorySaver())


APPS = {"GuardedToolNode": node_app, "GuardMiddleware": middleware_app}


def run(make: Any, text: str, steps: list[list[tuple[str, dict]]]) -> tuple[Bank, qls.Guard, dict]:
    bank, g = Bank(), guard()
    state = make(steps, bank, g).invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t"}})
    return bank, g, state


@pytest.mark.parametrize("name", sorted(APPS))
def test_a_recipient_the_person_typed_runs_without_a_person(name: str, tmp_path) -> None:
    bank, g, _ = run(APPS[name], f"Please pay my landlord 120 at {TYPED}", [[pay(TYPED, 120)]])
    assert bank.ran == [("send_money", {"recipient": TYPED, "amount": 120, "subject": "as asked"})]
    assert_typed(g.history, f"Please pay my landlord 120 at {TYPED}")
    # The history, user entry and traced origins included, verifies with `qls check`.
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


@pytest.mark.parametrize("name", sorted(APPS))
def test_a_recipient_copied_from_an_untrusted_file_is_tool_and_tainted(name: str) -> None:
    bank, g, state = run(APPS[name], "Pay the bill in bill.txt",
                         [[("read_file", {"file_path": "bill.txt"})], [pay(IN_FILE, 98.70)]])
    assert [t for t, _ in bank.ran] == ["read_file"]
    assert_from_file(g.history, state["__interrupt__"][0].value)


@pytest.mark.parametrize("name", sorted(APPS))
def test_a_made_up_recipient_is_the_models_and_waits_for_a_person(name: str) -> None:
    bank, g, state = run(APPS[name], "Please pay my landlord 120", [[pay(MADE_UP, 120)]])
    assert bank.ran == []
    question = state["__interrupt__"][0].value
    assert_made_up(g.history, question)
    assert question["args"]["amount"] == {"value": 120, "origin": "typed"}


def test_origins_stays_an_override() -> None:
    bank, g = Bank(), guard()
    node = GuardedToolNode(g, bank.tools, origins=lambda tool, args: {a: "model" for a in args})
    sg = StateGraph(MessagesState)
    model = scripted_model([[pay(TYPED, 120)]])
    sg.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    sg.add_node("tools", node)
    sg.add_edge(START, "agent")
    sg.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END])
    sg.add_edge("tools", "agent")
    state = sg.compile(checkpointer=MemorySaver()).invoke(
        {"messages": [HumanMessage(f"pay {TYPED}")]}, {"configurable": {"thread_id": "t"}})
    assert bank.ran == []
    assert state["__interrupt__"][0].value["reasons"] == ["argument_origin"]
    (e,) = calls(g.history, "send_money")
    assert "sources" not in e and e["origins"]["recipient"] == "model"


def test_each_message_is_recorded_once_across_steps() -> None:
    bank, g, _ = run(APPS["GuardedToolNode"], f"pay {TYPED} 120, then read bill.txt",
                     [[pay(TYPED, 120)], [("read_file", {"file_path": "bill.txt"})]])
    assert [e.get("kind", "call") for e in g.history["entries"]] == ["user", "call", "call"]


@pytest.mark.parametrize("name", sorted(APPS))
def test_the_run_becomes_a_task_verify_finds_possible(name: str, tmp_path) -> None:
    """`qls tasks from-trace` on the guard's history, and on the run's own messages as
    `messages_to_dict` and `dumpd` write them: the transfer the person asked for, a task that
    stays possible (issue 51's done-when)."""
    from langchain_core.load import dumpd
    from langchain_core.messages import messages_to_dict

    _, g, state = run(APPS[name], f"Please pay my landlord 120 at {TYPED}", [[pay(TYPED, 120)]])
    assert_task_possible(tmp_path, g.history)
    assert_task_possible(tmp_path, messages_to_dict(state["messages"]))
    assert_task_possible(tmp_path, {"messages": [dumpd(m) for m in state["messages"]]})
