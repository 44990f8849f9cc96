"""The agent search environment: date-filtered search and reading under a budget, logged."""
