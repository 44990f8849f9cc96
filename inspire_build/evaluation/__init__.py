"""Scoring agents' runs and search trajectories against a split's graded antecedents."""
