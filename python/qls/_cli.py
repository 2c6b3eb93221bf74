"""The ``qls`` console script: the native module's command line, the same code as the Rust
``qls`` binary (``prover::cmd_run::run``)."""

from __future__ import annotations

import sys

from qls import _native


def main() -> None:
    """Runs ``qls`` with this process's arguments and exits with its code."""
    sys.stdout.flush()
    raise SystemExit(_native.main(["qls", *sys.argv[1:]]))


if __name__ == "__main__":  # pragma: no cover - `python -m qls._cli`
    main()
