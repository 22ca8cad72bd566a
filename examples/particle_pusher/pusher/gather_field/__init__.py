"""Kernel folder `gather_field`."""
