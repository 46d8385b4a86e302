"""Bundle splitting: WHEN to split (``conditions``, ``detector``) apart from WHERE (``algorithms``)."""
