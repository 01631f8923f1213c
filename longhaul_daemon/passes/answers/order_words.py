"""How a user names an order given earlier and says it is over or lasts: vocabulary only, read by
:mod:`.reversal_cues` (whose docstring says how each weighs).

Kept apart from the cue words (:mod:`.reversal_words`) so either can grow on its own.
"""

from __future__ import annotations

__all__ = [
    "COMPLETED",
    "EARLIER_ORDERS",
    "ENDED",
    "ENDING_VERBS",
    "LASTING",
    "ORDERS",
    "PRACTICES",
]

# ours: an order named by a verb that ends it ("kill the secrets rule", "strike the changelog rule")
ENDING_VERBS: tuple[str, ...] = (
    "kill",
    "strike",
    "delete",
    "remove",
    "undo",
    "revert",
    "reverting",
    "override",
    "overriding",
    "lift",
    "lifting",
    "withdraw",
    "withdrawing",
    "rescind",
    "nix",
    "unlearn",
    "outgrown",
    "outgrew",
    "let go of",
)
# ours: what an order is said to be once it ends ("the top-level tests/ requirement - gone")
ENDED: tuple[str, ...] = (
    "gone",
    "off",
    "dead",
    "history",
    "lifted",
    "retired",
    "dropped",
    "scrapped",
    "cancelled",
    "canceled",
    "removed",
    "withdrawn",
    "moot",
    "void",
    "obsolete",
    "defunct",
    "discontinued",
    "a mistake",
    "run its course",
)
# ours: what an order is said to be once it ends, and a piece of work once it is complete: "the freeze is
# over" ends an order, "the lint check is done" is news
COMPLETED: tuple[str, ...] = ("done", "over", "finished")
# ours: a way of working said to be over ("the dry-run step is gone", "that check is off now"); a thing said
# to be gone is news ("the integration flake is gone"), so the subject must name a practice
PRACTICES: tuple[str, ...] = (
    "step",
    "check",
    "habit",
    "routine",
    "business",
    "thing",
    "arrangement",
    "process",
    "practice",
    "ritual",
    "dance",
    "stuff",
    "workflow",
    "procedure",
    "ceremony",
)
# ours: the order itself, or a period it held for
ORDERS: tuple[str, ...] = (
    "rule",
    "restriction",
    "requirement",
    "constraint",
    "instruction",
    "policy",
    "ban",
    "freeze",
    "lockdown",
    "period",
    "convention",
    "directive",
    "guideline",
    "mandate",
)
# ours: a sentence that says its change lasts, so a cue in it withdraws something even when code cannot tell
# which rule ("scrap the code style stuff I mentioned", "use print whenever you like from here on"): a
# lasting time ("anymore", "from now on"), or a pointer to something the user ordered before
LASTING: tuple[str, ...] = (
    "anymore",
    "any more",
    "any longer",
    "no longer",
    "from now on",
    "from here on",
    "from here out",
    "going forward",
    "henceforth",
    "these days",
)
EARLIER_ORDERS: tuple[str, ...] = (
    "rule",
    "rules",
    "restriction",
    "restrictions",
    "requirement",
    "requirements",
    "constraint",
    "constraints",
    "instruction",
    "instructions",
    "policy",
    "what i said",
    "what i asked",
    "what i told you",
    "i mentioned",
    "i said",
    "i asked",
    "earlier",
    "thing",
)
