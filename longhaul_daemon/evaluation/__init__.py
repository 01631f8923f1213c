"""Measuring Longhaul: synthetic sessions for the benchmarks, and (later) replay, facts and score."""
