"""Benchmarks of bundlewise (``make bench``): each ``bench_*.py`` module has ``main() -> dict``."""
