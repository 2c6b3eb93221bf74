"""The tool check in front of an OpenAI Agents SDK agent's function tools.

``AgentsGuard(guard).agent(agent)`` returns the agent with each function tool behind the guard:

- When the model answers, the agent's ``on_llm_end`` hook decides every function call of that
  answer as one batch (SPEC §2) through the native check, before the SDK runs any of them.
- A call decided ``confirm`` needs approval (the tool's ``needs_approval``): the SDK interrupts the
  run with a ``ToolApprovalItem`` that shows the exact arguments (``AgentsGuard.question`` adds
  each argument's origin and the reasons); the person approves with ``state.approve(item)`` and
  the run resumes. The approved call is checked again under the check's token and runs with the
  arguments approved; a rejected one runs nothing (the SDK tells the model).
- An allowed call runs, and its result is recorded with the marks the catalogue declares.
- A refused call runs nothing; the model gets the reason, and the run's earlier writes are undone
  by their compensations (which must be tools of the agent too).
- The calls after a held one return "not run: an earlier call of this step waits for a person".
- Origins are ``"auto"`` by default (SPEC §2 "Provenance, not authorship"): the hook's
  ``on_llm_start`` records each of the person's messages among the run's input items as a ``user``
  history entry, once, and each argument is traced from its value; ``origins`` overrides it.

The SDK runs a step's tools concurrently; each wrapped tool waits until the earlier calls of
its step were *decided* (not run), then is decided with its entry in one step (``Guard.begin``):
the history holds the step's calls in the model's order, an allowed one as run while it still
runs, and the allowed tools run concurrently (each awaited on the SDK's loop). A compensation is
run on a worker thread with its own event loop.

``export_openai_agents`` (also ``qls.export_openai_agents``; ``qls.export``'s code) writes tools behind this guard as a guarded tools node, with the guard's
catalogue: the proof is about the check that runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from qls._shared import FrameworkGuard, Origins, QlsInputError, human_texts
from qls.export import export_agents, export_openai_agents
from qls.guard import NOT_RUN, Call, Guard

__all__ = ["export_openai_agents", "AgentsGuard", "export_agents"]


@dataclass
class _Planned:
    index: int
    calls: list[Call]
    decision: dict[str, Any]
    #: Per call of the step: set once it was decided (and its entry appended).
    decided: list[asyncio.Event] = field(default_factory=list)


def _in_thread(coro: Any) -> Any:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class AgentsGuard(FrameworkGuard):
    """The Agents SDK's function tools behind a ``Guard``."""

    def __init__(self, guard: Guard, *, origins: Origins | None = None) -> None:
        self._setup(guard, origins)
        self._tools: dict[str, Any] = {}
        self._plans: dict[str, _Planned] = {}

    # -- wiring ---------------------------------------------------------------------------------

    def tool(self, t: Any) -> Any:
        """A function tool behind the guard (the SDK's own ``FunctionTool``, rebuilt)."""
        self._tools[t.name] = t
        wrapped = dataclasses.replace(t, on_invoke_tool=self._invoke, needs_approval=self._needs_approval)
        wrapped.qls_guard = self.guard
        return wrapped

    def agent(self, agent: Any) -> Any:
        """The agent with every function tool behind the guard and the hook that decides each
        model answer's calls as a batch. An agent with hooks of its own is refused (the guard's
        hook must see every answer)."""
        from agents import FunctionTool

        if agent.hooks is not None:
            raise QlsInputError(f"agent `{agent.name}` has hooks of its own: the guard needs `on_llm_end`")
        tools = [self.tool(t) if isinstance(t, FunctionTool) else t for t in agent.tools]
        return agent.clone(tools=tools, hooks=self._hooks())

    def _hooks(self) -> Any:
        from agents import AgentHooks

        guard = self

        class _Hooks(AgentHooks):  # type: ignore[misc,type-arg]
            async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
                # The person's messages among the model's input items (`{"role": "user", …}`),
                # each recorded once: what an argument typed by them is traced to.
                guard.guard.user_said(human_texts(input_items))

            async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
                guard._plan(response)

        return _Hooks()

    # -- one model answer -------------------------------------------------------------------------

    def _call(self, name: str, arguments: str, call_id: str) -> Call:
        args = json.loads(arguments or "{}")
        return Call(name, args, self.origins_of(name, args), call_id=call_id)

    def _plan(self, response: Any) -> None:
        calls = [self._call(item.name, item.arguments, item.call_id) for item in response.output
                 if getattr(item, "type", None) == "function_call" and item.name in self._tools]
        if not calls:
            return
        decisions = self.guard.decide(calls)
        decided = [asyncio.Event() for _ in calls]
        for i, (c, d) in enumerate(zip(calls, decisions)):
            self._plans[c.call_id or ""] = _Planned(i, calls, d, decided)

    def question(self, call_id: str) -> dict[str, Any]:
        """What the person is asked about a call waiting for approval: each argument with its
        value and origin, and the check's reasons."""
        p = self._plans[call_id]
        c = p.calls[p.index]
        traced = p.decision.get("detail", {}).get("origins", {})
        given = {} if c.origins == "auto" else c.origins
        return {"tool": c.tool,
                "args": {k: {"value": v, "origin": traced.get(k, given.get(k, "model"))} for k, v in c.args.items()},  # type: ignore[union-attr]
                "reasons": list(p.decision["reasons"])}

    async def _needs_approval(self, ctx: Any, params: Mapping[str, Any], call_id: str) -> bool:
        p = self._plans.get(call_id)
        return p is not None and p.decision["decision"] == "confirm"

    def _runner(self, ctx: Any) -> Callable[[str, Mapping[str, Any]], Any]:
        def run(tool: str, args: Mapping[str, Any]) -> Any:
            t = self._tools.get(tool)
            if t is None:
                raise KeyError(f"`{tool}` is not a tool behind this guard (a compensation must be one too)")
            return _in_thread(t.on_invoke_tool(ctx, json.dumps(dict(args))))
        return run

    async def _invoke(self, ctx: Any, arguments: str) -> Any:
        p = self._plans.get(ctx.tool_call_id)
        if p is None:
            return (f"refused: the guard did not see the model step that asked for `{ctx.tool_name}` "
                    "(build the agent with AgentsGuard.agent); nothing ran")
        try:
            # Decided in the model's order: wait for the earlier calls the SDK runs in this step
            # to be decided (a call planned for a person runs only after the approval, later).
            for j in range(p.index):
                if self._plans[p.calls[j].call_id or ""].decision["decision"] in ("allow", "refuse"):
                    await p.decided[j].wait()
            planned = p.decision["decision"]
            if planned == "not_run":
                return NOT_RUN
            c = p.calls[p.index]
            t = self.guard.begin(c)
            if t.answer == "confirm" and planned == "confirm":
                # The SDK invokes a tool that needs approval only after the person approved it.
                t = self.guard.begin(c, token=t.decision.get("detail", {}).get("token"))
        finally:
            p.decided[p.index].set()
        tool = self._tools[c.tool]

        async def invoke(args: Mapping[str, Any]) -> Any:
            return await tool.on_invoke_tool(ctx, json.dumps(dict(args)))

        o = await self.guard.acarry_out(t, invoke, self._runner(ctx))
        self.outcomes.append(o)
        return o.for_model()
