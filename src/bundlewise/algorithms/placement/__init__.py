"""Placement: choosing a broker for an unowned bundle (filters + selection strategies)."""
