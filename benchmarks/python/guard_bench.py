"""The Python guard's cost and concurrency, measured with the installed wheel (issues 57 and 58).

    python benchmarks/python/guard_bench.py decide     # decide + record by history length, old and new
    python benchmarks/python/guard_bench.py threads    # 8 concurrent slow tools, with and without a guard

``decide``: on a session of 10, 100, 1,000 and 10,000 entries (built by the guard itself), the
time of deciding and recording one call through ``qls.Guard`` — a read, a write with an order rule,
and a batch of five — by the current guard (``Guard.call``: ``begin`` on the native session's
index, the tool, ``finish``) and by the old code side by side, in the same process on the same
history: the guard before issue 57 serialised the whole history to JSON, the native module parsed
it, verified every MAC and scanned every entry to decide (``Checker.decide``), and did it again to
record (``Checker.record``) — ``_old_call`` below is that code path, line for line (python/qls/
guard.py before issue 57: ``decide`` then ``_record``), on the same native functions, which are
unchanged. Each figure is the median, p95 and p99 of the per-call times.

``threads``: 8 threads, each running a tool that sleeps 50 ms, 10 calls each, on one guard and
with no guard; the wall time of each and their ratio (the guard's lock is not held while a tool
runs, so the ratio should stay near 1).
"""

from __future__ import annotations

import gc
import json
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
    return qls.Guard(DESK / "desk.catalogue.yaml", settings=DESK / "agent.yaml", key=KEY, session="bench")


def typed(tool: str, **args: Any) -> qls.Call:
    return qls.Call(tool, args, {k: "typed" for k in args})


def fill(g: qls.Guard, length: int) -> None:
    """The session benches/toolcheck.rs builds: turns of ten calls — orders looked up, shipped,
    charged, the mail read now and then — each recorded with its result."""
    i = 0
    while len(g._session) < length:
        g.turn = i // 10
        k = i % 10
        c = (typed("get_order", order_id=str(i)) if k in (0, 3, 6)
             else typed("ship_order", order_id=str(i)) if k in (1, 4, 7)
             else typed("charge_card", order_id=str(i), amount=5) if k in (2, 5)
             else typed("read_inbox") if k == 8
             else typed("lookup_credit", customer="c"))
        g.call(c, lambda tool, args: {"status": "ok"})
        i += 1
    g.turn = 1_000_000


def _old_call(checker: Any, history: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The guard before issue 57 deciding and recording a step's calls (``run_step``: each call
    decided as the head of the calls not yet acted on — ``Guard.decide`` — then, allowed, run and
    recorded — ``Guard._record``), each on the whole history as JSON."""
    for i, c in enumerate(calls):
        out = json.loads(checker.decide(json.dumps(history), json.dumps(calls[i:])))
        d = out["decisions"][0]
        history = json.loads(checker.record(json.dumps(history), json.dumps(c), d["decision"],
                                            d["decision"] == "allow", json.dumps({"status": "ok"})))
    return history


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


def decide() -> None:
    cases = {
        "read": [typed("get_order", order_id="42")],
        "write (after, at_most)": [typed("ship_order", order_id="42")],
        "batch of five": [typed("get_order", order_id="43"), typed("ship_order", order_id="43"),
                          typed("charge_card", order_id="43", amount=5), typed("get_order", order_id="44"),
                          typed("ship_order", order_id="44")],
    }
    print("Wall clock (CPU time of the calling thread in brackets), milliseconds per decide + record:")
    print()
    print("| history entries | call | new: median | new: p95 | new: p99 | old: median | old: p95 | old: p99 |")
    print("|---|---|---|---|---|---|---|---|")
    for length in LENGTHS:
        base = guard()
        fill(base, length)
        turn = base.turn
        # The session kept as JSON text, so the new guard's process holds no Python copy of the
        # history (the old guard held one, a dict, which it serialised on every call).
        snapshot = base.history_json()
        del base
        for name, calls in cases.items():
            gc.collect()
            g = guard()
            g.turn = turn
            new = timed(lambda: g.run_step(calls, lambda tool, args: {"status": "ok"}), 1000,
                        lambda: g._session.load(snapshot), 50)
            as_json = [g._call(c) for c in calls]
            old_history: dict[str, Any] = {}

            def old() -> None:
                nonlocal old_history
                old_history = _old_call(g._checker, old_history, as_json)

            def old_reload() -> None:
                nonlocal old_history
                old_history = json.loads(snapshot)

            olds = timed(old, 200 if length <= 1_000 else 30, old_reload, 10)
            del old_history
            row = [f"{length:,}", name]
            for (wall, cpu), digits in ((new, 3), (olds, 2)):
                for w, c in zip(quantiles(wall), quantiles(cpu)):
                    row.append(f"{w:.{digits}f} ({c:.{digits}f})")
            print("| " + " | ".join(row) + " |", flush=True)


def threads() -> None:
    n_threads, n_calls, sleep = 8, 10, 0.05

    def tool(tool: str, args: Any) -> str:
        time.sleep(sleep)
        return "ok"

    def run(with_guard: bool) -> float:
        g = guard()
        barrier = threading.Barrier(n_threads)

        def worker(t: int) -> None:
            barrier.wait()
            for k in range(n_calls):
                c = typed("get_order", order_id=f"{t}-{k}")
                if with_guard:
                    assert g.call(c, tool).status == "ran"
                else:
                    tool(c.tool, c.args)

        ts = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
        start = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        wall = time.perf_counter() - start
        if with_guard:
            calls = [e for e in g.history["entries"] if e.get("kind", "call") == "call"]
            assert len(calls) == n_threads * n_calls and g.verify_history() is None
        return wall

    for trial in range(3):
        bare, guarded = run(False), run(True)
        print(f"trial {trial}: {n_threads} threads x {n_calls} calls of a {sleep * 1000:.0f} ms tool: "
              f"no guard {bare:.3f} s, one guard {guarded:.3f} s, ratio {guarded / bare:.3f}", flush=True)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "decide"
    print(f"qls {_native.__version__}, python {sys.version.split()[0]}")
    {"decide": decide, "threads": threads}[what]()
