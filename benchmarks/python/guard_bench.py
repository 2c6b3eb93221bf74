"""The Python guard's cost and concurrency, measured with the installed wheel (issues 57 and 58).

    python benchmarks/python/guard_bench.py decide [DIR]   # decide + record by history length
    python benchmarks/python/guard_bench.py races          # issue 58's two counts, 100 trials each
    python benchmarks/python/guard_bench.py threads        # 8 concurrent slow tools, with and without a guard

Each command runs with the current wheel and with main's wheel from before issues 57 and 58 (no
``Guard.begin``: the script then drives main's ``Guard`` through its own API);
benchmarks/python/run_guard_bench.sh runs both, back to back, in one run.

``decide``: on a session of 10, 100, 1,000 and 10,000 entries (built by the current guard, and
written to ``DIR/<length>.json``), the time of deciding and recording one call through
``qls.Guard.run_step`` — a read, a write with an order rule, and a batch of five — every call with
the guard's default origins, ``"auto"`` (traced against the person's messages, which open each
turn, and the earlier results, which carry an order's note). The current guard
decides each call on the native session's index (``begin``, the tool, ``finish``); main's guard,
run by run_guard_bench.sh right after on the same sessions read from ``DIR``, serialised the whole
history to JSON per call, and its native module parsed it, verified every MAC and scanned every
entry to decide (``Checker.decide``), then did it all again to record (``Checker.record``). Each
figure is the median, p95 and p99 of the per-call times, wall clock and the calling thread's CPU.

``races``: issue 58's measurements, for threads and asyncio tasks, 100 trials each.

``threads``: 8 workers (threads, then asyncio tasks), each calling a tool that sleeps 50 ms 10
times, on one guard and with no guard; the wall time of each and their ratio (the guard's lock is
not held while a tool runs, so the ratio should stay near 1).
"""

from __future__ import annotations

import asyncio
import gc
import json
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import qls
from qls import _native

HERE = Path(__file__).resolve().parent
DESK = HERE.parent / "fixtures" / "guard"
KEY = b"bench-key"
LENGTHS = [10, 100, 1_000, 10_000]


def guard() -> qls.Guard:
    """The desk's guard: its calls are the `desk` agent's (the mail is read by `mail`)."""
    return qls.Guard(DESK / "desk.catalogue.yaml", settings=DESK / "agent.yaml", key=KEY, session="bench",
                     agent="desk")


def typed(tool: str, **args: Any) -> qls.Call:
    return qls.Call(tool, args, {k: "typed" for k in args})


def auto(tool: str, **args: Any) -> qls.Call:
    """A call with the guard's default origins (``"auto"``: traced against the session's record)."""
    return qls.Call(tool, args)


def result(tool: str, args: Any) -> dict[str, Any]:
    """What the desk's tools return: the order looked up carries text (an order's note) the trace
    of a later ``auto`` argument reads; the mail, untrusted, names no order of the desk's."""
    i = args.get("order_id", "")
    if tool == "read_inbox":
        return {"messages": [{"from": "newsletter@shop.example", "body": "This week's offers: two for one on "
                              "gift wrap, free delivery over fifty pounds."}]}
    return {"status": "ok", "order_id": i,
            "note": f"Order {i}: two items, 23.50 each, to be shipped to 221B Baker Street, London NW1 6XE; "
                    f"customer c-{i} asked for gift wrap and a paper receipt."}


def fill(g: qls.Guard, length: int, origins: str = "auto") -> None:
    """A session like the one benches/toolcheck.rs builds: turns of ten calls, each opened by
    the person's message — orders looked up, shipped, charged, the mail read by its own agent,
    the credit looked up (``at_most: 1``: refused after the first time, and the turn's charge
    refunded) — each recorded with its result. One charge a turn (the Rust bench has two), so
    each refund is the history's head when it returns and is completed in place. ``origins``:
    ``auto`` (the guard's default) or ``typed`` (the table before 2026-12-06 evening)."""
    make = auto if origins == "auto" else typed
    i = 0
    while len(g._session) < length:
        g.turn = i // 10
        k = i % 10
        if k == 0 and origins == "auto":
            g.user(f"Please look up orders {i} to {i + 9}, ship them and charge what they cost.")
        c = (make("get_order", order_id=str(i)) if k in (0, 3, 6)
             else make("ship_order", order_id=str(i)) if k in (1, 4, 5, 7)
             else make("charge_card", order_id=str(i), amount=5) if k == 2
             else qls.Call("read_inbox", {}, {}, agent="mail") if k == 8
             else make("lookup_credit", customer="c"))
        g.call(c, result)
        i += 1
    g.turn = 1_000_000
    # The measured turn's message: the measured calls' values are the person's (and, once looked
    # up, an order's), so the writes run without a person.
    g.user("Now look up orders ord-42, ord-43 and ord-44, ship them, and charge 5 for ord-43.")


def quantiles(xs: list[float]) -> tuple[float, float, float]:
    xs = sorted(xs)
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    return statistics.median(xs), q(0.95), q(0.99)


def timed(f: Callable[[], Any], n: int, reset: Callable[[], Any], every: int) -> tuple[list[float], list[float]]:
    """``n`` timings of ``f`` in milliseconds — wall clock, and the thread's own CPU time (what the
    call cost, without the time the machine's other work took the core) — the history put back
    (``reset``, untimed) every ``every`` calls so that it stays at the length measured."""
    wall, cpu = [], []
    for i in range(n):
        if i % every == 0:
            reset()
        c, t = time.thread_time_ns(), time.perf_counter_ns()
        f()
        wall.append((time.perf_counter_ns() - t) / 1e6)
        cpu.append((time.thread_time_ns() - c) / 1e6)
    return wall, cpu


def decide(snapshots: Path | None = None) -> None:
    """The decide + record table. With the current wheel: the current guard, each session it
    built written to ``snapshots/<length>.json`` when given; with main's wheel (no
    ``Guard.begin``): main's own ``Guard.run_step`` on the sessions read from there."""
    cases = {
        "read": [auto("get_order", order_id="ord-42")],
        "write (after, at_most)": [auto("ship_order", order_id="ord-42")],
        "batch of five": [auto("get_order", order_id="ord-43"), auto("ship_order", order_id="ord-43"),
                          auto("charge_card", order_id="ord-43", amount=5), auto("get_order", order_id="ord-44"),
                          auto("ship_order", order_id="ord-44")],
    }
    ok = result
    print("Every call's origins are the default, `auto`.")
    print("Wall clock (CPU time of the calling thread in brackets), milliseconds per decide + record:")
    print()
    if not NEW:
        assert snapshots is not None, "main's wheel reads the sessions the current one wrote"
        print("| history entries | call | main's Guard: median | p95 | p99 |")
        print("|---|---|---|---|---|")
        for length in LENGTHS:
            saved = json.loads((snapshots / f"{length}.json").read_text())
            snapshot, turn = saved["history"], saved["turn"]
            for name, calls in cases.items():
                gc.collect()
                g = guard()
                g.turn = turn
                g.history = json.loads(snapshot)
                assert all(o.status == "ran" for o in g.run_step(calls, ok)), "main's guard allows the calls"

                def reload() -> None:
                    g.history = json.loads(snapshot)

                wall, cpu = timed(lambda: g.run_step(calls, ok), 200 if length <= 1_000 else 30, reload, 10)
                row = [f"{length:,}", name] + [f"{w:.2f} ({c:.2f})" for w, c in zip(quantiles(wall), quantiles(cpu))]
                print("| " + " | ".join(row) + " |", flush=True)
        return
    print("| history entries | call | current Guard: median | p95 | p99 |")
    print("|---|---|---|---|---|")
    for length in LENGTHS:
        base = guard()
        fill(base, length)
        turn = base.turn
        # The session kept as JSON text, so the new guard's process holds no Python copy of the
        # history (the old guard held one, a dict, which it serialised on every call).
        snapshot = base.history_json()
        del base
        if snapshots is not None:
            snapshots.mkdir(parents=True, exist_ok=True)
            (snapshots / f"{length}.json").write_text(json.dumps({"history": snapshot, "turn": turn}))
        for name, calls in cases.items():
            gc.collect()
            g = guard()
            g.turn = turn
            g._session.load(snapshot)
            assert all(o.status == "ran" for o in g.run_step(calls, ok)), "the guard allows the calls"
            # Up to 1,000 entries: 1,000 calls, the session loaded afresh every 50. At 10,000: 200
            # calls on one session (it grows by at most 10%), as loading 10,000 entries re-derives
            # every recorded trace — a scan of the history per entry before this branch.
            n, every = (1000, 50) if length <= 1_000 else (200, 200)
            new = timed(lambda: g.run_step(calls, ok), n, lambda: g._session.load(snapshot), every)
            row = [f"{length:,}", name] + [f"{w:.3f} ({c:.3f})" for w, c in zip(*map(quantiles, new))]
            print("| " + " | ".join(row) + " |", flush=True)


NEW = hasattr(qls.Guard, "begin")  # the guard of issue 58 (``begin``/``call``/``acall``); else main's


def _run_one(g: qls.Guard, c: qls.Call, tool: Callable[[str, Any], Any]) -> str:
    """One call through the guard from a thread, the status of its outcome: ``Guard.call`` now;
    before issue 58, ``run_step`` (``decide`` then ``act``, the documented pair)."""
    if NEW:
        return g.call(c, tool).status
    return g.run_step([c], tool)[0].status


async def _arun_one(g: qls.Guard, c: qls.Call, tool: Callable[[dict[str, Any]], Any]) -> str:
    """One call from an asyncio task: ``Guard.acall`` now; before issue 58 (no async path) what a
    host wrote with the documented pair: ``decide``, await the tool, ``act`` with its result."""
    if NEW:
        return (await g.acall(c, tool, lambda t, a: None)).status
    d = g.decide([c])[0]
    result = await tool(c.args) if d["decision"] == "allow" else None
    return g.act(c, d, lambda t, a: result).status


def _in_threads(n: int, f: Callable[[int], None]) -> None:
    """``f(0)`` … ``f(n - 1)``, each on its own thread, all joined."""
    ts = [threading.Thread(target=f, args=(t,)) for t in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def _calls_in(g: qls.Guard) -> int:
    return sum(1 for e in g.history["entries"] if e.get("kind", "call") == "call")


def races() -> None:
    """Issue 58's two measurements, 100 trials each, for threads and for asyncio tasks: 8 × 50
    calls of a read on one guard (entries on the history; whether the chain verifies), and a read
    declared ``at_most: 1`` called once by each of 8 threads (tasks) on a fresh guard (how often
    it ran). The tool sleeps 0.2 ms on 30% of calls (a seeded draw), so runs overlap."""
    trials, n, per = 100, 8, 50
    rng = random.Random(58)

    def slow_now_and_then() -> bool:
        return rng.random() < 0.3

    def sync_tool(tool: str, args: Any) -> dict[str, Any]:
        if slow_now_and_then():
            time.sleep(0.0002)
        return {"status": "ok"}

    async def async_tool(args: Any) -> dict[str, Any]:
        await asyncio.sleep(0.0002 if slow_now_and_then() else 0)
        return {"status": "ok"}

    def report(what: str, entries: list[int], verified: list[bool], runs: list[int]) -> None:
        full = sum(1 for e in entries if e == n * per)
        once = sum(1 for r in runs if r == 1)
        print(f"| {what} | {full} of {trials} | {min(entries)} | {sum(verified)} of {trials} "
              f"| {once} of {trials} | {max(runs)} |", flush=True)

    print(f"{trials} trials each; {n} workers x {per} calls of `get_order`; {n} workers x 1 call of "
          "`lookup_credit` (`at_most: 1`):")
    print()
    print("| workers | trials with 400 of 400 entries | fewest entries | chain verifies "
          "| trials where the at_most: 1 read ran once | most runs of it |")
    print("|---|---|---|---|---|---|")

    entries, verified, runs = [], [], []
    for _ in range(trials):
        g = guard()
        barrier = threading.Barrier(n)

        def worker(t: int) -> None:
            barrier.wait()
            for k in range(per):
                assert _run_one(g, typed("get_order", order_id=f"{t}-{k}"), sync_tool) == "ran"

        _in_threads(n, worker)
        entries.append(_calls_in(g))
        verified.append(g.verify_history() is None)
        g, ran = guard(), []
        barrier = threading.Barrier(n)

        def once(t: int) -> None:
            barrier.wait()
            _run_one(g, typed("lookup_credit", customer=f"c{t}"),
                     lambda tool, a: ran.append(t) or sync_tool(tool, a))

        _in_threads(n, once)
        runs.append(len(ran))
    report("8 threads", entries, verified, runs)

    async def tasks_trial() -> tuple[int, bool, int]:
        g = guard()

        async def worker(t: int) -> None:
            for k in range(per):
                assert await _arun_one(g, typed("get_order", order_id=f"{t}-{k}"), async_tool) == "ran"

        await asyncio.gather(*(worker(t) for t in range(n)))
        g2, ran = guard(), []

        async def lookup(args: Any) -> Any:
            ran.append(args["customer"])
            return await async_tool(args)

        await asyncio.gather(*(_arun_one(g2, typed("lookup_credit", customer=f"c{t}"), lookup) for t in range(n)))
        return _calls_in(g), g.verify_history() is None, len(ran)

    entries, verified, runs = [], [], []
    for _ in range(trials):
        e, v, r = asyncio.run(tasks_trial())
        entries.append(e)
        verified.append(v)
        runs.append(r)
    report("8 asyncio tasks", entries, verified, runs)


def threads() -> None:
    """8 concurrent tools each sleeping 50 ms, 10 calls each, with no guard and on one guard: the
    wall time of each and their ratio — by threads and by asyncio tasks; 3 trials."""
    n_workers, n_calls, sleep = 8, 10, 0.05

    def tool(tool: str, args: Any) -> str:
        time.sleep(sleep)
        return "ok"

    async def atool(args: Any) -> str:
        await asyncio.sleep(sleep)
        return "ok"

    def check(g: qls.Guard) -> None:
        assert _calls_in(g) == n_workers * n_calls and g.verify_history() is None

    def by_threads(with_guard: bool) -> float:
        g = guard()
        barrier = threading.Barrier(n_workers)

        def worker(t: int) -> None:
            barrier.wait()
            for k in range(n_calls):
                c = typed("get_order", order_id=f"{t}-{k}")
                if with_guard:
                    assert _run_one(g, c, tool) == "ran"
                else:
                    tool(c.tool, c.args)

        ts = [threading.Thread(target=worker, args=(t,)) for t in range(n_workers)]
        start = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        wall = time.perf_counter() - start
        if with_guard and NEW:
            check(g)
        return wall

    def by_tasks(with_guard: bool) -> float:
        g = guard()

        async def worker(t: int) -> None:
            for k in range(n_calls):
                c = typed("get_order", order_id=f"{t}-{k}")
                if with_guard:
                    assert await _arun_one(g, c, atool) == "ran"
                else:
                    await atool(c.args)

        async def main() -> float:
            start = time.perf_counter()
            await asyncio.gather(*(worker(t) for t in range(n_workers)))
            return time.perf_counter() - start

        wall = asyncio.run(main())
        if with_guard and NEW:
            check(g)
        return wall

    for name, run in (("threads", by_threads), ("asyncio tasks", by_tasks)):
        for trial in range(3):
            bare, guarded = run(False), run(True)
            print(f"{name}, trial {trial}: {n_workers} x {n_calls} calls of a {sleep * 1000:.0f} ms tool: "
                  f"no guard {bare:.3f} s, one guard {guarded:.3f} s, ratio {guarded / bare:.3f}", flush=True)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "decide"
    print(f"qls {_native.__version__} ({'current guard' if NEW else 'main before issues 57 and 58'}), "
          f"python {sys.version.split()[0]}")
    if what == "decide":
        decide(Path(sys.argv[2]) if len(sys.argv) > 2 else None)
    else:
        {"threads": threads, "races": races}[what]()
