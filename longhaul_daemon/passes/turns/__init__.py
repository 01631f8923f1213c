"""Turns mode (TURNS-1..17): the span's part of the state written in one conversation, one section per turn.

For small models that cannot write the Diff's whole answer in one call. The pass hands :func:`run_turns` the
same inputs the Diff gets; the conversation carries a Digest of the span in its first turn, lets the model
look items up with a read-only ``show`` tool, and passes every answer through a gate written in code.
"""
