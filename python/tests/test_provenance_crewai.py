"""Provenance, not authorship (SPEC §2), through CrewAI's `CrewGuard` (`crewai`, a scripted fake
LLM, no network): the guard records what the person says — the outermost run's
`kickoff(inputs=...)` values and a task's human-input feedback — as `user` history entries, and
decides with `origins="auto"`. A recipient the person typed is `typed` (it runs without a
person); one copied from an untrusted file is `tool`, traced to the file's entry, which carries
`external` (taint applies); a made-up one is the model's (the person is asked). A crew a flow
kicks off gets its inputs from code: they are not the person's words."""

from __future__ import annotations

import pytest

from conftest import DATA, check_history
from provenance import BILL, IN_FILE, MADE_UP, TYPED, assert_asked, assert_task_possible, assert_typed, calls, users

pytest.importorskip("crewai")
from crewai import Agent, Crew, Task  # noqa: E402
from crewai.flow.flow import Flow, start  # noqa: E402
from crewai.tools import tool  # noqa: E402
from test_crewai import Scripted  # noqa: E402  (the CrewAI tests' scripted LLM)

import qls  # noqa: E402
from qls.crewai import CrewGuard  # noqa: E402

KEY = b"crewai-provenance-key"


def bank(actions: list[tuple[str, dict]], ran: list, *, human: bool = False) -> Crew:
    @tool("read_file")
    def read_file(file_path: str) -> str:
        """Read a file."""
        ran.append(("read_file", {"file_path": file_path}))
        return BILL

    @tool("send_money")
    def send_money(recipient: str, amount: float, subject: str) -> str:
        """Send money."""
        ran.append(("send_money", {"recipient": recipient, "amount": amount, "subject": subject}))
        return "sent"

    agent = Agent(role="bank", goal="Pay what the person asks", backstory="A bank's assistant.",
                  llm=Scripted(actions), tools=[read_file, send_money], max_iter=len(actions) + 2)
    task = Task(description="Do what the person asks: {request}", expected_output="done", agent=agent,
                human_input=human)
    return Crew(agents=[agent], tasks=[task])


def pay(recipient: str, amount: float) -> tuple[str, dict]:
    return ("send_money", {"recipient": recipient, "amount": amount, "subject": "as asked"})


def guard(asked: list) -> CrewGuard:
    def person(q: dict) -> bool:
        asked.append(q)
        return False

    return CrewGuard(qls.Guard(DATA / "bank.catalogue.yaml", settings=DATA / "bank.agent.yaml", key=KEY), ask=person)


def test_a_recipient_the_person_typed_runs_without_a_person(tmp_path) -> None:
    ran: list = []
    asked: list = []
    request = f"Please pay my landlord 120 at {TYPED}"
    with guard(asked) as g:
        bank([pay(TYPED, 120)], ran).kickoff(inputs={"request": request})
    assert asked == []
    assert ran == [("send_money", {"recipient": TYPED, "amount": 120.0, "subject": "as asked"})]
    assert_typed(g.guard.history, request)
    # The history, its user entry and traced origins included, verifies with `qls check`.
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_recipient_copied_from_an_untrusted_file_is_tool_and_tainted() -> None:
    ran: list = []
    asked: list = []
    with guard(asked) as g:
        bank([("read_file", {"file_path": "bill.txt"}), pay(IN_FILE, 98.70)], ran).kickoff(
            inputs={"request": "Pay the bill in bill.txt"})
    assert_asked(g.guard.history, ran, asked, made_up=False)


def test_a_made_up_recipient_is_the_models_and_the_person_is_asked() -> None:
    ran: list = []
    asked: list = []
    with guard(asked) as g:
        bank([pay(MADE_UP, 120)], ran).kickoff(inputs={"request": "Please pay my landlord 120"})
    assert_asked(g.guard.history, ran, asked, made_up=True)


def test_the_persons_feedback_on_a_task_is_recorded_before_the_agent_works_on_it(monkeypatch) -> None:
    ran: list = []
    asked: list = []
    feedback = iter([f"Pay it to {TYPED} instead, 120", ""])
    monkeypatch.setattr("builtins.input", lambda *a: next(feedback))
    crew = bank([pay(TYPED, 120)], ran, human=True)
    # The first answer is a final one (no action); the person's feedback sends the agent back.
    crew.agents[0].llm._replies.insert(0, "Thought: done\nFinal Answer: which account?")
    with guard(asked) as g:
        crew.kickoff(inputs={"request": "Pay my landlord"})
    assert asked == []
    assert users(g.guard.history) == ["Pay my landlord", f"Pay it to {TYPED} instead, 120"]
    (e,) = calls(g.guard.history, "send_money")
    assert e["origins"]["recipient"] == "typed" and e["sources"]["recipient"] == 1
    assert ran == [("send_money", {"recipient": TYPED, "amount": 120.0, "subject": "as asked"})]


def test_a_crew_a_flow_kicks_off_gets_no_words_of_the_persons() -> None:
    ran: list = []
    asked: list = []
    crew = bank([pay(MADE_UP, 120)], ran)

    class Payments(Flow):  # type: ignore[type-arg]
        @start()
        def pay(self) -> None:
            # The flow's code (here: a value it made up) hands the crew its inputs.
            crew.kickoff(inputs={"request": f"{self.state['request']} to {MADE_UP}"})

    with guard(asked) as g:
        Payments().kickoff(inputs={"request": "Please pay my landlord 120"})
    # The flow's own inputs are the person's; the crew's, built by the flow's code, are not.
    assert users(g.guard.history) == ["Please pay my landlord 120"]
    (e,) = calls(g.guard.history, "send_money")
    assert e["origins"]["recipient"] == "model" and e["origins"]["amount"] == "typed"
    assert [q["reasons"] for q in asked] == [["argument_origin"]]
    assert ran == []


def test_uninstalled_the_guard_records_nothing_more() -> None:
    ran: list = []
    asked: list = []
    g = guard(asked)
    with g:
        pass
    bank([], ran).kickoff(inputs={"request": f"pay {TYPED}"})
    assert g.guard.history["entries"] == []


def test_the_run_becomes_a_task_verify_finds_possible(tmp_path) -> None:
    """`qls tasks from-trace` on the guard's history: the transfer the person asked for, a task
    that stays possible (issue 51's done-when)."""
    ran: list = []
    asked: list = []
    with guard(asked) as g:
        bank([pay(TYPED, 120)], ran).kickoff(inputs={"request": f"Please pay my landlord 120 at {TYPED}"})
    assert asked == [] and [t for t, _ in ran] == ["send_money"]
    assert_task_possible(tmp_path, g.guard.history)
