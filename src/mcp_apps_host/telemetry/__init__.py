"""Traces, metrics and logs for running the host as a service: nothing leaves the process unless configured."""
