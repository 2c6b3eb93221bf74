"""The checker `qls certify` runs, one process per certificate: cvc5 (through its Python API,
the `cvc5` package on PyPI) reads the SMT-LIB 2 file and answers each (check-sat).

Prints `cvc5 VERSION` first, then one line per answer (`sat`, `unsat`, `unknown`). An error
(the file does not parse, a command fails) is printed as `error: ...` and ends the run with exit
code 3; a missing cvc5 with exit code 4. Nothing here is Z3: the answers are another solver's.
"""

import sys


def main() -> int:
    try:
        import cvc5
    except ImportError as e:
        print(f"error: cvc5 is not installed for {sys.executable} (pip install cvc5): {e}")
        return 4
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("incremental", "true")
    symbols = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(solver, symbols)
    version = solver.getVersion()
    if isinstance(version, bytes):
        version = version.decode()
    print(f"cvc5 {version}", flush=True)
    try:
        parser.setFileInput(cvc5.InputLanguage.SMT_LIB_2_6, sys.argv[1])
        while True:
            command = parser.nextCommand()
            if command.isNull():
                return 0
            out = command.invoke(solver, symbols).strip()
            if out.startswith("(error"):
                print(f"error: {out}")
                return 3
            for line in out.splitlines():
                print(line, flush=True)
    except Exception as e:  # cvc5 raises RuntimeError (and others) on a bad script
        print(f"error: {e}".replace("\n", " "))
        return 3


if __name__ == "__main__":
    sys.exit(main())
