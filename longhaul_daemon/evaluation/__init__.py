"""Measuring Longhaul on real pi: facts, replay, score, the corpus with its answer key, synthetic sessions."""
