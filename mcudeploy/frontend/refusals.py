"""Every unsupported node of a model in one sentence. The importers note each node they refuse and go on
past it (a node reading what a refused one makes is not imported, but is refused too if its own operator
is unknown), then raise once: one refusal keeps its own sentence (with its reason), several are listed by
operator, capped so that a huge model still gets one readable sentence."""
from __future__ import annotations

from mcudeploy.errors import UnsupportedError

MAX_OPERATORS = 8  # operators named in the list; the rest are counted
MAX_NODES = 3  # nodes named per operator; the rest are counted


class Refusals:
    def __init__(self, where: str, noun: str = "node", quote: bool = True):
        self.where = where
        self.noun = noun  # "node" (ONNX) or "operator" (TFLite, named by index)
        self.quote = quote
        self.found: list[tuple[str, str, UnsupportedError]] = []  # (operator, node, its own refusal)
        self.skipped: set = set()  # tensors refused nodes would have made

    def __bool__(self) -> bool:
        return bool(self.found)

    def note(self, operator: str, node: str, error: UnsupportedError, outputs) -> None:
        self.found.append((operator, node, error))
        self.skipped.update(outputs)

    def reads_refused(self, inputs) -> bool:
        return any(i in self.skipped for i in inputs)

    def skip(self, outputs) -> None:
        self.skipped.update(outputs)

    def raise_any(self) -> None:
        if len(self.found) == 1:
            raise self.found[0][2]
        if self.found:
            raise UnsupportedError(self.sentence())

    def sentence(self) -> str:
        groups: dict[str, list[str]] = {}
        for operator, node, _ in self.found:
            groups.setdefault(operator, []).append(f"'{node}'" if self.quote else node)
        parts = []
        for operator, nodes in list(groups.items())[:MAX_OPERATORS]:
            shown = ", ".join(nodes[:MAX_NODES]) + (f" and {len(nodes) - MAX_NODES} more"
                                                     if len(nodes) > MAX_NODES else "")
            parts.append(f"{operator} ({self.noun}{'s' if len(nodes) > 1 else ''} {shown})")
        rest = len(groups) - MAX_OPERATORS
        if rest > 0:
            others = sum(len(nodes) for nodes in list(groups.values())[MAX_OPERATORS:])
            parts.append(f"and {rest} other operator{'s' if rest > 1 else ''} ({others} {self.noun}"
                         f"{'s' if others > 1 else ''})")
        return (f"{self.where}: {len(self.found)} unsupported {self.noun}s: {', '.join(parts)} "
                f"(mcudeploy ops lists the operators mcudeploy supports)")
