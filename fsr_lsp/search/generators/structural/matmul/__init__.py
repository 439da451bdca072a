"""A matrix product, one thread per output -> a family of tiled kernels, searched as a space.

`product.py` reads the naive kernel (which factor walks which thread index, the guard, what is
done with each sum), `layout.py` which index of each operand is adjacent in memory, `tile_space.py`
the configurations a hand-tuner writes (block tile, depth, a thread's register tile, double
buffering, 128-bit loads, padding) with the constraints that make one valid and a prior order,
and `tile_text.py` the plain CUDA of one configuration.
"""
