"""Provenance, not authorship (SPEC §2), through AutoGen AgentChat's `AutogenGuard`
(`autogen-agentchat`, AutoGen's own `ReplayChatCompletionClient` as the model, no network): the
guard's model context records the task and the user's messages an agent is given, and its input
function a `UserProxyAgent`'s replies, as `user` history entries; each call is decided with
`origins="auto"`. A recipient the person typed is `typed` (it runs without a person); one copied
from an untrusted file is `tool`, traced to the file's entry, which carries `external` (taint
applies); a made-up one is the model's (the person is asked), and so is one another agent wrote.
A recorded origin changed afterwards fails the history's chain."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest

from conftest import DATA, check_history, qls_bin
from provenance import BILL, IN_FILE, MADE_UP, TYPED, assert_asked, assert_task_possible, assert_typed, calls, users

pytest.importorskip("autogen_agentchat")
from autogen_agentchat.agents import AssistantAgent, UserProxyAgent  # noqa: E402
from autogen_agentchat.conditions import MaxMessageTermination  # noqa: E402
from autogen_agentchat.teams import RoundRobinGroupChat  # noqa: E402
from autogen_core.model_context import BufferedChatCompletionContext  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402
from test_autogen import INFO, model  # noqa: E402  (the AutoGen tests' scripted model)

import qls  # noqa: E402
from qls.autogen import AutogenGuard  # noqa: E402

KEY = b"autogen-provenance-key"


def guard(asked: list) -> AutogenGuard:
    def person(q: dict) -> bool:
        asked.append(q)
        return False

    return AutogenGuard(qls.Guard(DATA / "bank.catalogue.yaml", settings=DATA / "bank.agent.yaml", key=KEY),
                        ask=person)


def bank(g: AutogenGuard, steps: list, ran: list, **kw: Any) -> AssistantAgent:
    def read_file(file_path: str) -> str:
        """Read a file."""
        ran.append(("read_file", {"file_path": file_path}))
        return BILL

    def send_money(recipient: str, amount: float, subject: str) -> str:
        """Send money."""
        ran.append(("send_money", {"recipient": recipient, "amount": amount, "subject": subject}))
        return "sent"

    return AssistantAgent("bank", model(*steps), tools=g.tools([read_file, send_money]),
                          max_tool_iterations=len(steps) + 1, model_context=g.model_context(**kw))


def pay(recipient: str, amount: float) -> tuple[str, dict]:
    return ("send_money", {"recipient": recipient, "amount": amount, "subject": "as asked"})


def test_a_recipient_the_person_typed_runs_without_a_person(tmp_path) -> None:
    ran: list = []
    asked: list = []
    g = guard(asked)
    task = f"Please pay my landlord 120 at {TYPED}"
    asyncio.run(bank(g, [[pay(TYPED, 120)]], ran).run(task=task))
    assert asked == []
    assert ran == [("send_money", {"recipient": TYPED, "amount": 120.0, "subject": "as asked"})]
    assert_typed(g.guard.history, task)
    # The history, its user entry and traced origins included, verifies with `qls check`.
    assert check_history(tmp_path, g.guard.history_json(), KEY)["decision"] == "allow"


def test_a_changed_origin_fails_the_chain(tmp_path) -> None:
    ran: list = []
    g = guard([])
    asyncio.run(bank(g, [[pay(TYPED, 120)]], ran).run(task=f"Please pay my landlord 120 at {TYPED}"))
    history = g.guard.history
    at = next(i for i, e in enumerate(history["entries"]) if e.get("tool") == "send_money")
    # Each forgery of the recorded trace, its MAC left as signed: refused as history_invalid.
    for field, forged in [("origins", {**history["entries"][at]["origins"], "recipient": "model"}),
                          ("sources", {"amount": 0})]:
        tampered = json.loads(json.dumps(history))
        tampered["entries"][at][field] = forged
        out = check_history(tmp_path, json.dumps(tampered), KEY)
        assert (out["decision"], out["reasons"]) == ("refuse", ["history_invalid"]), (field, out)
    # Signed again with the key (every MAC verifies): the trace, re-derived, does not.
    tampered = json.loads(json.dumps(history))
    tampered["entries"][at]["origins"]["subject"] = "typed"
    for e in tampered["entries"]:
        e.pop("mac")
    out = check_history(tmp_path, sign(tmp_path, tampered), KEY)
    assert (out["decision"], out["reasons"]) == ("refuse", ["history_invalid"]), out
    assert out["detail"]["entry"] == at and "records origins" in out["detail"]["why"]
    assert check_history(tmp_path, json.dumps(history), KEY)["decision"] == "allow"


def sign(tmp_path: Any, history: dict) -> str:
    """``qls history sign`` (the installed command) with the test's key: the signed history."""
    plain, key = tmp_path / "plain.json", tmp_path / "sign.key"
    plain.write_text(json.dumps(history))
    key.write_bytes(KEY)
    p = subprocess.run([qls_bin(), "history", "sign", str(plain), "--key-file", str(key)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_recipient_copied_from_an_untrusted_file_is_tool_and_tainted() -> None:
    ran: list = []
    asked: list = []
    g = guard(asked)
    asyncio.run(bank(g, [[("read_file", {"file_path": "bill.txt"})], [pay(IN_FILE, 98.70)]], ran)
                .run(task="Pay the bill in bill.txt"))
    assert_asked(g.guard.history, ran, asked, made_up=False)


def test_a_made_up_recipient_is_the_models_and_the_person_is_asked() -> None:
    ran: list = []
    asked: list = []
    g = guard(asked)
    asyncio.run(bank(g, [[pay(MADE_UP, 120)]], ran).run(task="Please pay my landlord 120"))
    assert_asked(g.guard.history, ran, asked, made_up=True)


def team(g: AutogenGuard, first: Any, ran: list, steps: list) -> RoundRobinGroupChat:
    return RoundRobinGroupChat([first, bank(g, steps, ran, inner=BufferedChatCompletionContext(buffer_size=20))],
                               termination_condition=MaxMessageTermination(3))


def test_a_user_proxys_reply_is_the_persons_and_another_agents_words_are_not() -> None:
    ran: list = []
    asked: list = []
    g = guard(asked)

    async def client(prompt: str, cancellation_token: Any) -> str:
        return f"Pay my landlord at {TYPED}, 120"

    proxy = UserProxyAgent("client", input_func=g.input(client))
    asyncio.run(team(g, proxy, ran, [[pay(TYPED, 120)]]).run(task="Hello"))
    assert asked == [] and [t for t, _ in ran] == ["send_money"]
    # The reply as the person typed it; the team's task when the bank is given it, on its turn.
    assert users(g.guard.history) == [f"Pay my landlord at {TYPED}, 120", "Hello"]
    (e,) = calls(g.guard.history, "send_money")
    assert e["origins"]["recipient"] == "typed" and e["sources"]["recipient"] == 0

    # Another agent's message reaches the bank under that agent's name: the model's words.
    ran, asked = [], []
    g = guard(asked)
    writer = AssistantAgent("writer", ReplayChatCompletionClient([f"Pay {MADE_UP}, 120."], model_info=INFO))
    asyncio.run(team(g, writer, ran, [[pay(MADE_UP, 120)]]).run(task="Please pay my landlord 120"))
    assert users(g.guard.history) == ["Please pay my landlord 120"]
    (e,) = calls(g.guard.history, "send_money")
    assert e["origins"]["recipient"] == "model" and e["origins"]["amount"] == "typed"
    assert [q["reasons"] for q in asked] == [["argument_origin"]] and ran == []


def test_a_bad_people_list_or_input_function_is_an_input_error() -> None:
    g = guard([])
    with pytest.raises(qls.QlsInputError, match="people"):
        g.model_context(people="user")
    with pytest.raises(qls.QlsInputError, match="input function"):
        g.input(42)


def test_the_run_becomes_a_task_verify_finds_possible(tmp_path) -> None:
    """`qls tasks from-trace` on the guard's history: the transfer the person asked for, a task
    that stays possible (issue 51's done-when)."""
    ran: list = []
    asked: list = []
    g = guard(asked)
    asyncio.run(bank(g, [[pay(TYPED, 120)]], ran).run(task=f"Please pay my landlord 120 at {TYPED}"))
    assert asked == [] and [t for t, _ in ran] == ["send_money"]
    assert_task_possible(tmp_path, g.guard.history)
