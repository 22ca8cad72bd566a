"""Kernel folder of `axpy`."""
