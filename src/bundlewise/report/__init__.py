"""Rendering of run results, simulated or live, from ``bundlewise.results`` alone (HTML with embedded matplotlib
PNGs, and the verdict it opens with)."""
