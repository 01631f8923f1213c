"""A model's answer in either stage: its schema, finding it in a reply, and the checks it passes in code."""
