"""Command-line tools of habitat-ver."""
