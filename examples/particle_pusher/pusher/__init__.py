"""The kernel package of the particle pusher walk-through.

One folder per kernel: ``<name>/<name>_kernels.py`` (the host reference, plain Python),
``<name>_numba.py`` (the fast host version), ``<name>_cuda.cu`` (the CUDA port, same name and
argument order) and ``<name>_test_args.py`` (arguments for the parity test).
"""
