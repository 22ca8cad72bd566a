"""Kernel folder of `square_sum`."""
