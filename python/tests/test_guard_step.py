"""`Guard.run_step` runs a step's allowed calls in one crossing of the native module (issue 57):
on random steps of every kind of call the guard takes — reads, writes, taint, an `at_most`
refusal and its rollback, a held write and the calls after it, an undo, arguments that are not
a plain dict, context and marks, results of every JSON shape and some that are not JSON, a tool
that raises — it leaves the same outcomes and a byte-identical history as deciding the calls
one at a time through `Guard.call`, the path of a single call."""

from __future__ import annotations

import datetime
from collections import OrderedDict
from typing import Any, Callable, Mapping

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import qls
from conftest import DATA

KEY = b"step-key"


def guard() -> qls.Guard:
    return qls.Guard(DATA / "desk.catalogue.yaml", settings=DATA / "desk.agent.yaml", key=KEY, session="s",
                     agent="desk")


class Boom(Exception):
    pass


#: The results a tool may return: every JSON shape, floats the text crossing reads digit by digit,
#: values `json.dumps(default=str)` writes as text, and one that is no JSON at all (NaN).
RESULTS: list[Any] = [
    {"status": "ok", "note": "Order 7: two items, to 221B Baker Street"},
    {"price": 23.5, "tax": 0.1 + 0.2, "big": 1e300, "tiny": 5e-324, "n": -3, "huge": 2 ** 70},
    ("a", 2, [None, True], {"k": 1.0}),
    None,
    "plain text",
    {"when": datetime.date(2026, 12, 6), 1: "int key", None: "none key", 2.5: "float key"},
    OrderedDict([("x", 1)]),
    {"bad": float("nan")},
    Boom("the tool failed"),
    Boom(),
]


class Args(dict):  # type: ignore[type-arg]
    """Arguments that are a dict, but not a plain one: the guard's own path."""


def pool(g: qls.Guard) -> list[Callable[[], qls.Call]]:
    def undo() -> qls.Call:
        charges = [i for i, e in enumerate(g.history["entries"]) if e.get("tool") == "charge_card" and e.get("ran")]
        return qls.Call("refund_card", {"order_id": "o1", "amount": 5}, {"order_id": "typed", "amount": "typed"},
                        undoes=charges[-1] if charges else 0)

    return [
        lambda: qls.Call("get_order", {"order_id": "o1"}, {"order_id": "typed"}),
        lambda: qls.Call("get_order", {"order_id": "Order 7"}),
        lambda: qls.Call("read_inbox", {}, {}),
        lambda: qls.Call("lookup_credit", {"customer": "c1"}, {"customer": "typed"}),
        lambda: qls.Call("charge_card", {"order_id": "o1", "amount": 5}, {"order_id": "typed", "amount": "typed"}),
        lambda: qls.Call("charge_card", {"order_id": "o1", "amount": 5.25}),
        lambda: qls.Call("ship_order", {"order_id": "o1"}, {"order_id": "model"}),
        lambda: qls.Call("ship_order", {"order_id": "o1"}, {"order_id": "typed"}, context={"$paid": True},
                         marks=("steered_from_lower",)),
        lambda: qls.Call("charge_card", Args(order_id="o1", amount=5), {"order_id": "typed", "amount": "typed"}),
        lambda: qls.Call("get_order", {"order_id": ("o", 1)}, {"order_id": "typed"}),
        lambda: qls.Call("get_order", {"order_id": "o2"}, {"order_id": "typed"}, agent="mail"),
        undo,
    ]


def one_by_one(g: qls.Guard, calls: list[qls.Call], run: Any) -> list[qls.Outcome]:
    """The step as `run_step` decided it before the one crossing: `Guard.call` per call."""
    out: list[qls.Outcome] = []
    held_by = None
    for c in calls:
        if held_by is not None:
            out.append(qls.Outcome(c, "not_run", {"decision": "not_run", "reasons": [],
                                                  "detail": {"held_by": held_by, "message": qls.NOT_RUN}},
                                   message=qls.NOT_RUN))
            continue
        o = g.call(c, run)
        if o.status == "held":
            held_by = len(out)
        out.append(o)
    return out


def runner(picks: list[int]) -> Callable[[str, Mapping[str, Any]], Any]:
    n = iter(picks * 50)

    def run(tool: str, args: Mapping[str, Any]) -> Any:
        r = RESULTS[next(n) % len(RESULTS)]
        if isinstance(r, Boom):
            raise Boom(*r.args)
        return r

    return run


def attempt(step: Callable[[], list[qls.Outcome]]) -> tuple[str, Any]:
    try:
        return "ok", [(o.status, o.decision, o.result if o.status == "ran" else None, o.message, o.undone)
                      for o in step()]
    except Exception as e:  # noqa: BLE001 - what each path raises is compared
        return "raised", (type(e).__name__, str(e))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.lists(st.integers(0, 11), min_size=1, max_size=6), min_size=1, max_size=4),
       results=st.lists(st.integers(0, len(RESULTS) - 1), min_size=1, max_size=12))
def test_the_one_crossing_step_decides_and_records_as_calls_one_at_a_time(steps: list[list[int]],
                                                                         results: list[int]) -> None:
    fast, slow = guard(), guard()
    for turn, picks in enumerate(steps):
        fast.turn = slow.turn = turn
        fast.user("Please look up order o1, charge 5 for it and ship it.")
        slow.user("Please look up order o1, charge 5 for it and ship it.")
        a = attempt(lambda: fast.run_step([pool(fast)[p]() for p in picks], runner(results)))
        b = attempt(lambda: one_by_one(slow, [pool(slow)[p]() for p in picks], runner(results)))
        assert a == b
        event(a[0] if a[0] == "raised" else "statuses: " + " ".join(sorted({x[0] for x in a[1]})))
        assert fast.history_json() == slow.history_json()
    assert fast.verify_history() is None


def test_a_step_of_allowed_calls_crosses_once_per_step() -> None:
    """The plain step runs in the native module: `Guard.call` is not used for an allowed call."""
    g = guard()
    g.user("Please look up orders o1 and o2.")
    used: list[str] = []
    real = g.call
    g.call = lambda c, run, **kw: used.append(c.tool) or real(c, run, **kw)  # type: ignore[method-assign]
    out = g.run_step([qls.Call("get_order", {"order_id": "o1"}), qls.Call("get_order", {"order_id": "o2"}),
                      qls.Call("charge_card", Args(order_id="o1", amount=5), {"order_id": "typed", "amount": "typed"})],
                     lambda tool, a: {"ok": a["order_id"]})
    assert [o.status for o in out] == ["ran", "ran", "ran"]
    assert [o.result for o in out[:2]] == [{"ok": "o1"}, {"ok": "o2"}]
    assert used == ["charge_card"], "only the call whose arguments are not a plain dict takes the guard's own path"


def test_a_tool_that_raises_in_the_native_step_is_recorded_and_raised() -> None:
    g = guard()

    def run(tool: str, args: Mapping[str, Any]) -> Any:
        raise Boom("down")

    with pytest.raises(Boom, match="down"):
        g.run_step([qls.Call("get_order", {"order_id": "o1"}, {"order_id": "typed"})], run)
    (e,) = [e for e in g.history["entries"] if e.get("tool") == "get_order"]
    assert e["error"] == "Boom: down" and not e.get("running")
    assert g.verify_history() is None
