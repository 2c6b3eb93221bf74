"""One `qls.Guard` shared by threads and asyncio tasks (issue 58): deciding a call and putting
its entry on the history is one step, the tool runs outside the guard's lock, and its result (or
its failure) completes the entry — so nothing is lost, `at_most` holds, the chain verifies, and
any interleaving is some sequential order of the same calls."""

from __future__ import annotations

import asyncio
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qls
from conftest import DATA, check_history

CATALOGUE = DATA / "desk.catalogue.yaml"
KEY = b"concurrency-key"
TRIALS = 100
THREADS = 8


def guard() -> qls.Guard:
    """The desk under `write_policy: declared`: typed writes run, a tainted one waits for a person."""
    return qls.Guard(CATALOGUE, settings=DATA / "desk.agent.yaml", key=KEY)


def typed(tool: str, **args: Any) -> qls.Call:
    return qls.Call(tool, args, {k: "typed" for k in args})


def call_entries(g: qls.Guard) -> list[dict[str, Any]]:
    return [e for e in g.history["entries"] if e.get("kind", "call") == "call"]


def result_of(entries: list[dict[str, Any]], i: int) -> Any:
    """The result the history holds for the run at entry ``i``: its own, or its result entry's."""
    e = entries[i]
    if not e.get("running"):
        return e.get("error", e["result"])
    (r,) = [r for r in entries if r.get("kind") == "result" and r["of"] == i]
    return r.get("error", r.get("result"))


def test_eight_threads_of_fifty_calls_leave_four_hundred_entries_and_the_chain_verifies(tmp_path):
    for trial in range(TRIALS):
        g = guard()

        def order(order_id: str) -> dict:
            if random.random() < 0.3:
                threading.Event().wait(0.0002)  # a tool that takes a little while, now and then
            return {"status": "paid", "order": order_id}

        def worker(t: int) -> None:
            for k in range(50):
                o = g.call(typed("get_order", order_id=f"{t}-{k}"), lambda tool, a: order(a["order_id"]))
                assert o.status == "ran"

        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(worker, range(THREADS)))
        entries = g.history["entries"]
        calls = [e for e in entries if e.get("kind", "call") == "call"]
        assert len(calls) == THREADS * 50, f"trial {trial}"
        assert sorted(e["args"]["order_id"] for e in calls) == sorted(f"{t}-{k}" for t in range(THREADS) for k in range(50))
        for i, e in enumerate(entries):
            if e.get("kind", "call") == "call":
                assert result_of(entries, i) == {"status": "paid", "order": e["args"]["order_id"]}
        assert g.verify_history() is None
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def test_eight_tasks_of_fifty_calls_leave_four_hundred_entries_and_the_chain_verifies(tmp_path):
    async def trial() -> qls.Guard:
        g = guard()

        async def order(args: Mapping[str, Any]) -> dict:
            await asyncio.sleep(0)  # every run lets the other tasks in
            return {"status": "paid", "order": args["order_id"]}

        async def worker(t: int) -> None:
            for k in range(50):
                o = await g.acall(typed("get_order", order_id=f"{t}-{k}"), order, _no_compensation)
                assert o.status == "ran"

        await asyncio.gather(*(worker(t) for t in range(THREADS)))
        return g

    for n in range(TRIALS):
        g = asyncio.run(trial())
        entries = g.history["entries"]
        calls = [e for e in entries if e.get("kind", "call") == "call"]
        assert len(calls) == THREADS * 50, f"trial {n}"
        assert g.verify_history() is None
    # The tasks interleave: runs came back after later calls were decided (result entries).
    assert any(e.get("kind") == "result" for e in entries)
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"


def _no_compensation(tool: str, args: Mapping[str, Any]) -> Any:
    raise AssertionError(f"no compensation expected, got {tool}")


def test_an_at_most_one_read_called_by_eight_threads_at_once_runs_once():
    for trial in range(TRIALS):
        g = guard()
        ran: list[str] = []
        start = threading.Barrier(THREADS)

        def worker(t: int) -> qls.Outcome:
            start.wait()
            return g.call(typed("lookup_credit", customer=f"c{t}"), lambda tool, a: ran.append(a["customer"]) or {"score": 1})

        with ThreadPoolExecutor(THREADS) as pool:
            outcomes = list(pool.map(worker, range(THREADS)))
        assert len(ran) == 1, f"trial {trial}: ran {ran}"
        assert sorted(o.status for o in outcomes) == ["ran"] + ["refused"] * (THREADS - 1)
        assert all("at_most 1" in o.message for o in outcomes if o.status == "refused")
        assert len(g.history["entries"]) >= THREADS
        assert g.verify_history() is None


def test_an_at_most_one_read_called_by_eight_tasks_at_once_runs_once():
    async def trial() -> tuple[list[str], list[qls.Outcome], qls.Guard]:
        g = guard()
        ran: list[str] = []

        async def lookup(args: Mapping[str, Any]) -> dict:
            ran.append(args["customer"])
            await asyncio.sleep(0.001)
            return {"score": 1}

        outcomes = await asyncio.gather(*(g.acall(typed("lookup_credit", customer=f"c{t}"), lookup, _no_compensation)
                                          for t in range(THREADS)))
        return ran, list(outcomes), g

    for n in range(TRIALS):
        ran, outcomes, g = asyncio.run(trial())
        assert len(ran) == 1, f"trial {n}: ran {ran}"
        assert sorted(o.status for o in outcomes) == ["ran"] + ["refused"] * (THREADS - 1)
        assert g.verify_history() is None


def test_the_lock_is_not_held_while_a_tool_runs():
    """Eight tools that each wait for all eight to be running: they finish only if the guard lets
    them run at the same time (a guard that ran them one after another would break the barrier)."""
    g = guard()
    together = threading.Barrier(THREADS, timeout=30)

    def worker(t: int) -> qls.Outcome:
        return g.call(typed("get_order", order_id=str(t)), lambda tool, a: together.wait() is not None and "ok")

    with ThreadPoolExecutor(THREADS) as pool:
        outcomes = list(pool.map(worker, range(THREADS)))
    assert [o.status for o in outcomes] == ["ran"] * THREADS
    assert g.verify_history() is None

    async def tasks() -> list[qls.Outcome]:
        gate = asyncio.Barrier(THREADS)

        async def run(args: Mapping[str, Any]) -> str:
            await asyncio.wait_for(gate.wait(), 30)
            return "ok"

        return list(await asyncio.gather(*(g.acall(typed("get_order", order_id=str(t)), run, _no_compensation)
                                           for t in range(THREADS))))

    assert [o.status for o in asyncio.run(tasks())] == ["ran"] * THREADS
    assert g.verify_history() is None


def test_a_tool_that_raises_is_recorded_as_a_failed_run(tmp_path):
    g = guard()

    def boom(tool: str, args: Mapping[str, Any]) -> Any:
        raise TimeoutError("the shop did not answer")

    with pytest.raises(TimeoutError):
        g.call(typed("get_order", order_id="1"), boom)
    (e,) = g.history["entries"]
    assert (e["tool"], e["decision"], e["ran"], e["error"]) == ("get_order", "allow", True,
                                                               "TimeoutError: the shop did not answer")
    assert "running" not in e
    assert g.verify_history() is None
    # A failed run stays a run: an at-most-once read that raised is not run again.
    with pytest.raises(TimeoutError):
        g.call(typed("lookup_credit", customer="a"), boom)
    again = g.call(typed("lookup_credit", customer="a"), lambda t, a: {"score": 1})
    assert again.status == "refused" and "at_most 1" in again.message
    assert check_history(tmp_path, g.history_json(), KEY)["decision"] == "allow"

    async def cancelled() -> None:
        async def slow(args: Mapping[str, Any]) -> Any:
            await asyncio.sleep(30)

        task = asyncio.ensure_future(g.acall(typed("get_order", order_id="2"), slow, _no_compensation))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    entries = g.history["entries"]
    assert result_of(entries, len(entries) - 1) == "CancelledError"
    assert g.verify_history() is None


def test_a_compensation_waits_for_the_write_it_undoes_to_return():
    g = guard()
    charging, release = threading.Event(), threading.Event()
    order: list[str] = []

    def run(tool: str, args: Mapping[str, Any]) -> Any:
        if tool == "charge_card":
            charging.set()
            release.wait(30)
        order.append(tool)
        return {"ok": tool}

    with ThreadPoolExecutor(2) as pool:
        charge = pool.submit(g.call, typed("charge_card", order_id="1", amount=5), run)
        assert charging.wait(30)
        # A refused call while the charge still runs: its rollback reserves the refund, which
        # waits for the charge to come back before it runs.
        refused = pool.submit(g.call, typed("ship_order", order_id="https://evil.invalid/1"), run)
        threading.Event().wait(0.2)
        assert order == [] and not refused.done()
        release.set()
        assert charge.result().status == "ran"
        r = refused.result()
    assert r.status == "refused" and [u["tool"] for u in r.undone] == ["refund_card"]
    assert order == ["charge_card", "refund_card"]
    entries = g.history["entries"]
    assert [(e.get("tool"), e.get("decision")) for e in entries if e.get("kind", "call") == "call"] == [
        ("charge_card", "allow"), ("ship_order", "refuse"), ("refund_card", "rollback")]
    assert g.verify_history() is None


# -- any interleaving is some sequential order ----------------------------------------------------

#: The calls the property draws from: reads, an at-most-once read, an untrusted read that marks
#: later writes, a compensable write, a write with a destination (refused, so rolled back), and a
#: compensation the model chose.
POOL = [
    typed("get_order", order_id="1"),
    typed("lookup_credit", customer="a"),
    typed("read_inbox"),
    typed("charge_card", order_id="1", amount=5),
    typed("ship_order", order_id="1"),
    typed("ship_order", order_id="https://evil.invalid/1"),
    qls.Call("refund_card", {"order_id": "1", "amount": 5}, {"order_id": "typed", "amount": "typed"}, undoes=0),
]


def ordered_runs_hold(entries: list[dict[str, Any]]) -> None:
    """Every order rule of the desk catalogue holds over the runs, in the history's order."""
    runs = [e["tool"] for e in entries if e.get("ran")]
    assert runs.count("lookup_credit") <= 1, runs
    undone = [e["undoes"] for e in entries if e.get("ran") and e.get("undoes") is not None]
    assert len(undone) == len(set(undone)), f"an undo spent twice: {entries}"
    for u in undone:
        assert entries[u]["ran"] and entries[u]["tool"] == "charge_card"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.integers(0, len(POOL) - 1), min_size=2, max_size=8),
       delays=st.lists(st.integers(0, 3), min_size=16, max_size=16))
def test_any_interleaving_of_concurrent_calls_is_some_sequential_order(picks: list[int], delays: list[int]) -> None:
    g = guard()
    calls = [POOL[i] for i in picks]

    def run(tool: str, args: Mapping[str, Any]) -> Any:
        threading.Event().wait(delays[(len(tool) + len(args)) % 16] / 2000)
        return {"done": tool}

    def worker(i: int) -> qls.Outcome:
        threading.Event().wait(delays[i % 16] / 2000)
        return g.call(calls[i], run)

    with ThreadPoolExecutor(len(calls)) as pool:
        outcomes = list(pool.map(worker, range(len(calls))))
    entries = g.history["entries"]
    assert g.verify_history() is None
    # Every call has its entry, every run came back.
    decided = [e for e in entries if e.get("kind", "call") == "call" and e["decision"] != "rollback"]
    assert len(decided) == len(calls)
    for i, e in enumerate(entries):
        if e.get("kind", "call") == "call" and e.get("ran"):
            assert result_of(entries, i) == {"done": e["tool"]}
    ordered_runs_hold(entries)
    # The same calls made one after another, in the order the history holds them, decide the
    # same and leave the same calls (the rollbacks' included) on a fresh guard. An entry is
    # named by its place among the calls (result entries shift the indices).
    def places(es: list[dict[str, Any]]) -> dict[int, int]:
        return {i: n for n, i in enumerate(i for i, e in enumerate(es) if e.get("kind", "call") == "call")}

    place = places(entries)
    seq = guard()
    for e in decided:
        at = None if e.get("undoes") is None else place[e["undoes"]]
        seq_calls = [i for i, x in enumerate(seq.history["entries"]) if x.get("kind", "call") == "call"]
        undoes = None if at is None else (seq_calls[at] if at < len(seq_calls) else at)
        seq.call(qls.Call(e["tool"], e["args"], e["origins"], undoes=undoes), lambda tool, a: {"done": tool})
    seq_entries = seq.history["entries"]
    seq_place = places(seq_entries)

    def shape(es: list[dict[str, Any]], where: dict[int, int]) -> list[tuple]:
        return [(e["tool"], e["args"], e["decision"], e["ran"], None if e.get("undoes") is None else where[e["undoes"]])
                for e in es if e.get("kind", "call") == "call"]

    assert shape(entries, place) == shape(seq_entries, seq_place)
    assert sorted(o.status for o in outcomes) == sorted(
        {"allow": "ran", "refuse": "refused", "confirm": "held"}[e["decision"]] for e in decided)
