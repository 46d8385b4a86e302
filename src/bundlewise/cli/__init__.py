"""The command line: the composition root that reads files and flags, picks strategies and prints."""
