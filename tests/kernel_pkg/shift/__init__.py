"""Kernel folder of `shift`."""
