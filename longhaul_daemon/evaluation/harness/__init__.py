"""What `replay`, `score`, the e2e suite and the benchmarks share: a scripted model, pi, a daemon."""
