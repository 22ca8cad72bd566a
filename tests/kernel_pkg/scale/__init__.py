"""Kernel folder of `scale`."""
