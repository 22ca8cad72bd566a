"""A small kernel package in the folder convention of ``KernelCatalog.from_package``: four
kernels, two with a CUDA version (``scale``, ``axpy``) and two without (``shift``,
``square_sum``), with Python, Numba and NumPy host implementations."""
