"""Kernel folder `deposit_charge`."""
