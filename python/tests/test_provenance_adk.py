"""Provenance, not authorship (SPEC §2), through Google ADK's `AdkGuard` (`google-adk`, a
scripted fake model, no network): the guard records the user content that starts each invocation
as a `user` history entry, and decides with `origins="auto"`. A recipient the person typed is
`typed` (it runs without a person); one copied from an untrusted file is `tool` with `external`
(taint applies); a made-up one is the model's (the person is asked)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import DATA, check_history
from provenance import BILL, IN_FILE, MADE_UP, TYPED, assert_asked, assert_task_possible, assert_typed, users

pytest.importorskip("google.adk")
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402
from test_adk import Scripted  # noqa: E402  (the ADK tests' scripted model)

import qls  # noqa: E402
from qls.adk import AdkGuard  # noqa: E402

KEY = b"adk-provenance-key"


def bank(steps: list, ran: list, asked: list) -> tuple[Any, AdkGuard]:
    def read_file(file_path: str) -> dict:
        """Read a file."""
        ran.append(("read_file", {"file_path": file_path}))
        return {"content": BILL}

    def send_money(recipient: str, amount: float, subject: str) -> dict:
        """Send money."""
        ran.append(("send_money", {"recipient": recipient, "amount": amount, "subject": subject}))
        return {"sent": True}

    def person(q: dict) -> bool:
        asked.append(q)
        return False

    g = AdkGuard(qls.Guard(DATA / "bank.catalogue.yaml", settings=DATA / "bank.agent.yaml", key=KEY), ask=person)
    agent = g.agent(LlmAgent(name="bank", model=Scripted(model="fake", steps=steps), instruction="Pay.",
                             tools=[read_file, send_money]))
    return agent, g


def run(agent: Any, text: str) -> None:
    async def go() -> None:
        r = InMemoryRunner(agent=agent, app_name="qls")
        s = await r.session_service.create_session(app_name="qls", user_id="u")
        async for _ in r.run_async(user_id="u", session_id=s.id,
                                   new_message=types.Content(role="user", parts=[types.Part(text=text)])):
            pass
    asyncio.run(go())


def pay(recipient: str, amount: float) -> tuple[str, dict]:
    return ("send_money", {"recipient": recipient, "amount": amount, "subject": "as asked"})


def test_a_recipient_the_person_typed_runs_without_a_person(tmp_path) -> None:
    ran: list = []
    asked: list = []
    agent, g = bank([[pay(TYPED, 120)]], ran, asked)
    run(agent, f"Please pay my landlord 120 at {TYPED}")
    assert asked == []
    assert ran == [("send_money", {"recipient": TYPED, "amount": 120, "subject": "as asked"})]
    assert_typed(g.guard.history, f"Please pay my landlord 120 at {TYPED}")
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_recipient_copied_from_an_untrusted_file_is_tool_and_tainted() -> None:
    ran: list = []
    asked: list = []
    agent, g = bank([[("read_file", {"file_path": "bill.txt"})], [pay(IN_FILE, 98.70)]], ran, asked)
    run(agent, "Pay the bill in bill.txt")
    assert_asked(g.guard.history, ran, asked, made_up=False)


def test_a_made_up_recipient_is_the_models_and_the_person_is_asked() -> None:
    ran: list = []
    asked: list = []
    agent, g = bank([[pay(MADE_UP, 120)]], ran, asked)
    run(agent, "Please pay my landlord 120")
    assert_asked(g.guard.history, ran, asked, made_up=True)
    assert asked[0]["args"]["amount"] == {"value": 120, "origin": "typed"}
    # One invocation, one user entry.
    assert users(g.guard.history) == ["Please pay my landlord 120"]


def test_the_run_becomes_a_task_verify_finds_possible(tmp_path) -> None:
    """`qls tasks from-trace` on the guard's history: the transfer the person asked for, a task
    that stays possible (issue 51's done-when)."""
    ran: list = []
    asked: list = []
    agent, g = bank([[pay(TYPED, 120)]], ran, asked)
    run(agent, f"Please pay my landlord 120 at {TYPED}")
    assert asked == [] and [t for t, _ in ran] == ["send_money"]
    assert_task_possible(tmp_path, g.guard.history)
