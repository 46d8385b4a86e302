"""Local files every command writes the same way (standard library only).

``atomic``: the one policy for ``--out`` — staged beside the target, renamed into place when complete,
an existing non-empty target refused unless ``--overwrite``, Ctrl-C leaving the previous results as they were.
"""
