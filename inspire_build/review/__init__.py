"""Curator review: a local web app that reads a split version's instances, records each curator
decision as a ``reviews`` row, and makes a new version with the decisions applied.

``decisions`` (pure) says which decisions stand and what they do to a version's records;
``highlight`` (pure) finds the redaction terms and result numbers in a brief; ``curation`` reads
what the pages show and records each decision; ``apply`` writes the version the decisions make
(``inspire build --apply-reviews``) and adds curators' leak marks to the audit; ``app`` serves
the pages.
"""
