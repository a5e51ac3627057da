"""Benchmarks (``make bench``): never part of ``make test``; numbers go to bench/results/."""
