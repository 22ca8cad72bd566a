"""A kernel package whose kernel has host, CUDA and Metal versions (tests of the Metal pair)."""
