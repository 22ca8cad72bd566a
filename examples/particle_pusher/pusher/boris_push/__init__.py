"""Kernel folder `boris_push`."""
