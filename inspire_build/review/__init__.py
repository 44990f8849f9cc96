"""Curator review: a local web app that reads a split version's instances, records each curator
decision as a ``reviews`` row, and makes a new version with the decisions applied.

``decisions`` (pure) says which decisions stand and what they do to a version's records;
``highlight`` (pure) finds the redaction terms and result numbers in a brief; ``curation`` reads
and writes the warehouse; ``app`` serves the pages.
"""
