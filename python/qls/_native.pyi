"""Type stubs of ``qls._native``, the wheel's Rust module (``python/src/lib.rs``)."""

from os import PathLike

NOT_RUN: str
__version__: str

def main(argv: list[str]) -> int: ...
def verify(argv: list[str]) -> tuple[int, str, str]: ...
def check(
    catalogue: str | PathLike[str],
    history: str | PathLike[str],
    call: str | PathLike[str],
    rulebook: str | PathLike[str] | None = None,
    settings: str | PathLike[str] | None = None,
    key_file: str | PathLike[str] | None = None,
    append: bool = False,
) -> str: ...

class Checker:
    def __init__(
        self,
        catalogue: str | PathLike[str],
        key: bytes,
        rulebook: str | PathLike[str] | None = None,
        settings: str | PathLike[str] | None = None,
    ) -> None: ...
    def decide(self, history: str, calls: str) -> str: ...
    def record(self, history: str, call: str, decision: str, ran: bool, result: str) -> str: ...
    def first_invalid(self, history: str) -> int | None: ...
    def catalogue_json(self) -> str: ...
    def declared_marks(self, tool: str) -> list[str]: ...
