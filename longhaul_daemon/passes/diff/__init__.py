"""The Diff stage: the model's answer, its labels, and the prompt that asks for them (DIFF, LABEL)."""
