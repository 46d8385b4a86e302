"""Rendering of simulation results (HTML with embedded matplotlib PNGs)."""
