"""``qls_export`` is now ``qls`` (``qls.export_graph``, ``qls.export_agents``, …): this alias
package stays for one release and then goes away."""

from __future__ import annotations

import warnings

from qls.export import FORMAT, QlsExportNote, export_agents, export_graph, lower, write

__all__ = ["export_graph", "export_agents", "lower", "write", "QlsExportNote", "FORMAT"]

warnings.warn("`qls_export` is now `qls`: import from `qls` (this alias goes away next release)",
              DeprecationWarning, stacklevel=2)
