"""qls — the agent-graph prover, from Python.

One wheel: the ``qls`` command (the same code as the Rust binary), the proof and the tool check
as functions, the exporters, and guards that put SPEC §2's check in front of a framework's tools.

- ``qls.verify(path_or_graph, **options)`` → ``Result`` (findings, gate, ``exit_code``);
  ``qls.render(result)`` → the text report.
- ``qls.check(catalogue, history, call_or_calls, …)`` → what ``qls check`` prints (one call, or a
  model step's batch).
- ``qls.tasks_from_trace(run, *, name=None, catalogue=None)`` → the tasks file (YAML) a recorded
  run makes (a guard's history, LangChain messages, Agents SDK items), as ``qls tasks from-trace``.
- ``qls.export_<framework>(app, *, tools=None, …)`` → ``Export`` (graph, catalogue), one per
  framework module: ``export_langgraph(app, model_nodes=[...])`` (LangGraph),
  ``export_openai_agents(agent)`` (OpenAI Agents SDK), ``export_adk(root_agent)`` (Google ADK),
  ``export_crewai(crew_or_flow)`` (CrewAI), ``export_autogen(team_or_agent)`` (AutoGen
  AgentChat). The old ``export_graph``, ``export_agents`` and ``export_crew`` warn (one release).
- ``qls.Guard`` with a framework guard, each taking the ``Guard`` first (then the ``tools`` where
  the framework needs them) and the rest by keyword (``origins=``, ``ask=``), each keeping it as
  ``.guard`` and what became of each call as ``.outcomes``: ``qls.langgraph.GuardedToolNode``,
  ``qls.langchain.GuardMiddleware``, ``qls.openai_agents.AgentsGuard``, ``qls.adk.AdkGuard``,
  ``qls.crewai.CrewGuard`` and ``qls.autogen.AutogenGuard``;
  ``qls.replay_through(guard, finding, export)`` replays a finding's witness through the guard.
- A bad input to any of them raises ``qls.QlsInputError`` (a ``ValueError``).
"""

from __future__ import annotations

from qls._native import __version__
from qls._build import FORMAT, Export, QlsExportNote
from qls._shared import Origin, Origins, QlsInputError
from qls.api import Finding, Result, check, render, tasks_from_trace, verify
from qls.export import export_agents, export_graph, lower, write
from qls.langgraph import export_langgraph
from qls.openai_agents import export_openai_agents
from qls.adk import export_adk
from qls.autogen import export_autogen
from qls.crewai import export_crew, export_crewai
from qls.guard import NOT_RUN, Call, Guard, Held, Outcome, QlsGuardWarning, Ticket
from qls.replay import TRACE_FORMAT, GuardReplay, replay_through

__all__ = [
    "__version__",
    "verify", "render", "check", "tasks_from_trace", "Result", "Finding", "QlsInputError",
    "export_langgraph", "export_openai_agents", "export_adk", "export_crewai", "export_autogen",
    "lower", "write", "Export", "QlsExportNote", "FORMAT", "Origin", "Origins",
    "export_graph", "export_agents", "export_crew",
    "Guard", "Call", "Held", "Outcome", "Ticket", "NOT_RUN", "QlsGuardWarning",
    "replay_through", "GuardReplay", "TRACE_FORMAT",
]
